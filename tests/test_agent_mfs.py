"""Minimal failure sets (issue 23): ddmin on synthetic policies whose set is known, the
scripted policy on real MiniWoB trees, ``lrlib mfs`` resuming, and MFS coverage joining
``lrlib evaluate``."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.agent.mfs import build_mfs, ddmin
from lrlab.agent.policy import NOOP, Decision, Policy
from lrlab.agent.scripted import ScriptedPolicy
from lrlib.cli import main
from lrlib.core.step import Step
from lrlib.data.dataset import load_steps
from lrlib.eval.evaluation import evaluate
from lrlib.paths import miniwob_path

ONE_LINE_TASKS = ("click-button", "click-tab", "click-dialog", "click-test-2", "unicode-test")


class NeedsAll(Policy):
    """Takes the recorded action unless every line of ``needed`` is missing (so the MFS is
    exactly ``needed``); counts its calls."""

    name = "needs-all"

    def __init__(self, needed: set[int]) -> None:
        self.needed, self.calls = needed, 0

    def act(self, goal, history, text, numbers=None):
        self.calls += 1
        shown = set(numbers if numbers is not None else range(1, len(text.split("\n")) + 1))
        return Decision("click('1')" if self.needed & shown else NOOP, sorted(self.needed))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 400).flatmap(
        lambda n: st.tuples(st.just(n), st.sets(st.integers(1, n), min_size=1, max_size=4))
    )
)
def test_ddmin_finds_the_known_set_in_few_calls(case):
    n, needed = case
    calls = set()  # distinct subsets: build_mfs memoises, and an LLM policy is cached

    def fails(s):
        calls.add(frozenset(s))
        return needed <= set(s)

    assert sorted(ddmin(list(range(1, n + 1)), fails)) == sorted(needed)
    # O(|MFS| log n): benchmarks/bench_ddmin.py measures at most 5.6 |MFS| log2 n (n <= 1000,
    # |MFS| <= 6) and 2.0 log2 n for one-line sets
    assert len(calls) <= 6 * len(needed) * math.log2(n) + 2


def test_build_mfs_phase1_falls_back_to_every_line_when_reliance_is_wrong():
    tree = "\n".join(f"[{i}] button 'b{i}'" for i in range(1, 41))
    step = Step(goal="g", tree=tree, step_id="s", target_bids=("1",), meta={"action": "click('1')"})
    policy = NeedsAll({1, 17, 30})
    r = build_mfs(step, policy)
    assert r.usable and r.mfs == [1, 17, 30]
    # it reported all three, so phase 1 needs no fallback; a policy that lies about its lines:
    liar = NeedsAll({1, 17, 30})
    liar.act = lambda *a, **k: Decision(NeedsAll.act(liar, *a, **k).action, [5])  # type: ignore[method-assign]
    r2 = build_mfs(step, liar)
    assert r2.candidates == "all" and r2.mfs == [1, 17, 30] and r2.calls > r.calls


@pytest.fixture(scope="module")
def scripted_steps():
    steps = load_steps(path=miniwob_path())
    return [s for s in steps if s.family.removeprefix("miniwob.") in ONE_LINE_TASKS]


def test_scripted_mfs_is_the_target_line_where_the_policy_reads_one_line(scripted_steps):
    assert len(scripted_steps) >= 20
    policy = ScriptedPolicy()
    for s in scripted_steps:
        r = build_mfs(s, policy)
        assert r.usable, s.step_id
        assert r.mfs == s.target_lines, (s.step_id, r.mfs, s.target_lines)
        # removing it fails, removing nothing does not: 1-minimal
        keep = [i for i in range(1, len(s.axtree) + 1) if i not in r.mfs]
        text = "\n".join(s.axtree.texts[i - 1] for i in keep)
        assert policy.act(s.goal, s.history, text, keep).action != r.recorded_action


def test_unusable_step_has_no_set():
    step = Step(goal='Click on the "Ok" button.', tree="RootWebArea 'T'\n\t[3] button 'Ok'",
                step_id="x", target_bids=("9",), meta={"action": "click('9')"})  # fmt: skip
    r = build_mfs(step, ScriptedPolicy())
    assert not r.usable and r.mfs == [] and r.policy_action == "click('3')"


def test_mfs_command_resumes_and_joins_evaluate(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LRLIB_RESULTS_DIR", str(tmp_path))
    args = ["mfs", "--tasks", "click-button,click-checkboxes", "--limit", "12"]
    assert main(args) == 0
    out = tmp_path / "mfs" / "mfs_scripted.jsonl"
    lines = out.read_text().splitlines()
    assert len(lines) == 12
    rec = json.loads(lines[0])
    assert rec["provenance"]["policy"] == "scripted" and len(rec["provenance"]["prompt_hash"]) == 12
    err = capsys.readouterr().err
    assert "about" in err and "policy calls" in err and "no model" in err
    assert main(args) == 0 and out.read_text().splitlines() == lines  # nothing redone
    assert "12 already done" in capsys.readouterr().err
    steps = [
        s
        for s in load_steps(path=miniwob_path())
        if s.step_id in {json.loads(x)["step_id"] for x in lines}
    ]
    frame = evaluate(["full", "truncate:budget=20"], steps, progress=False)
    full = frame[frame.reducer == "full"]["mfs_scripted"]
    assert full.notna().all() and full.all()
    trunc = frame[frame.reducer == "truncate:budget=20"]["mfs_scripted"]
    assert trunc.notna().all() and not trunc.all()  # a tight budget loses some set


STATE_TASKS = ("click-checkboxes", "click-option", "enter-password", "login-user", "choose-list")


@pytest.fixture(scope="module")
def state_steps():
    steps = load_steps(path=miniwob_path())
    return [s for s in steps if s.family.removeprefix("miniwob.") in STATE_TASKS]


def _without(step, removed, stubbed=()):
    lines = step.axtree.texts
    texts = [
        step.axtree.stub(i - 1) if i in stubbed else lines[i - 1] for i in range(1, len(lines) + 1)
    ]
    keep = [i for i in range(1, len(lines) + 1) if i not in removed]
    return "\n".join(texts[i - 1] for i in keep), keep


def test_all_sets_are_every_line_the_scripted_policy_cannot_lose(state_steps):
    """One ddmin run finds one set; the scripted policy also reads the goal's other boxes,
    the radio it ticked and the second password field. With ``max_sets`` the sets are
    disjoint, each one's loss changes the action, and the lines of all of them are enough."""
    assert len(state_steps) >= 40
    policy = ScriptedPolicy()
    several = 0
    for s in state_steps:
        r = build_mfs(s, policy, max_sets=32, stubs=True)
        assert r.usable and r.sets and r.sets[0] == r.mfs, s.step_id
        union = set().union(*map(set, r.sets))
        assert sum(map(len, r.sets)) == len(union)  # disjoint
        for part in r.sets:
            text, keep = _without(s, set(part))
            assert policy.act(s.goal, s.history, text, keep).action != r.recorded_action
        only = [i for i in range(1, len(s.axtree) + 1) if i not in union]
        text, keep = _without(s, set(only))
        assert policy.act(s.goal, s.history, text, keep).action == r.recorded_action, s.step_id
        several += len(r.sets) > 1
        # labels: the lines whose stub ("[bid] role") changes the action
        for i in union:
            text, keep = _without(s, set(), stubbed={i})
            changed = policy.act(s.goal, s.history, text, keep).action != r.recorded_action
            assert changed == (i in r.labels), (s.step_id, i)
    assert several >= 10


def test_submit_after_a_radio_needs_the_ticked_radio(state_steps):
    """The case the single-set MFS missed live: Submit is the target, the ticked radio's
    state is what decides it; one set is {Submit}, another the radio line (the target alone
    would not say that the radio is needed)."""
    policy = ScriptedPolicy()
    hits = 0
    for s in state_steps:
        if (
            not s.family.endswith("click-option")
            or "Submit" not in s.axtree.texts[s.target_lines[0] - 1]
        ):
            continue
        r = build_mfs(s, policy, max_sets=32, stubs=True)
        radios = [i for i in set().union(*map(set, r.sets)) if "radio" in s.axtree.texts[i - 1]]
        assert s.target_lines in r.sets and len(radios) == 1 and [radios[0]] in r.sets, s.step_id
        assert "checked='true'" in s.axtree.texts[radios[0] - 1] and radios[0] in r.labels
        hits += 1
    assert hits >= 3


def test_read_sets_joins_every_set_of_a_step(tmp_path):
    from lrlib.data.evidence import read_sets

    path = tmp_path / "mfs_x.jsonl"
    rows = [{"step_id": "a", "usable": True, "mfs": [4], "sets": [[4], [9, 2]]},
            {"step_id": "b", "usable": True, "mfs": [3]},  # a file written with one set
            {"step_id": "c", "usable": False, "mfs": []}]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{torn")
    assert read_sets(path) == {"a": [2, 4, 9], "b": [3]}


def test_own_coverage_sees_what_target_coverage_misses(state_steps):
    """Offline, on a real click-option Submit step: a view without the ticked radio keeps
    the target (target coverage says "covered") but the scripted policy stops on it, and
    MFS coverage (every set) says so; a stubbed radio (no label) is not enough either."""
    from lrlab.agent.live_report import LiveStep, episode_coverage, own_coverage

    s = next(x for x in state_steps if x.family.endswith("click-option")
             and "Submit" in x.axtree.texts[x.target_lines[0] - 1])  # fmt: skip
    n = len(s.axtree)
    radio = next(i for i in range(1, n + 1) if "checked='true'" in s.axtree.texts[i - 1])
    views = []
    others = [i for i in range(1, n + 1) if i != radio]
    for kept, stubs in ((range(1, n + 1), ()), (others, ()), (others, (radio,))):
        text, keep = _without(s, set(), stubbed=set(stubs))
        views.append(LiveStep("full", "click-option", len(views), s, list(kept), list(stubs),
                              "\n".join(text.split("\n")[i - 1] for i in sorted(set(kept) | set(stubs)))))  # fmt: skip
    cov = own_coverage(views, ScriptedPolicy())
    assert cov["reproduced"].tolist() == [True, False, False]  # full keeps every line
    cov = cov.assign(reducer=["all", "no-radio", "stub-radio"]).set_index("reducer")
    assert cov.loc["all", ["target", "mfs", "replay", "mfs1"]].all()
    assert cov.loc["no-radio", "target"] and cov.loc["no-radio", "evidence"]  # they say: covered
    assert not cov.loc["no-radio", "mfs"] and not cov.loc["no-radio", "replay"]
    assert not cov.loc["stub-radio", "mfs"] and not cov.loc["stub-radio", "replay"]
    ep = episode_coverage(cov.reset_index())
    assert ep.set_index("reducer")["mfs"].to_dict() == {
        "all": 1.0,
        "no-radio": 0.0,
        "stub-radio": 0.0,
    }


def test_mfs_command_every_set_joins_evaluate_as_their_union(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LRLIB_RESULTS_DIR", str(tmp_path))
    assert main(["mfs", "--sets", "0", "--limit", "1"]) == 2
    assert "--sets must be at least 1" in capsys.readouterr().err
    assert main(["mfs", "--tasks", "click-option", "--sets", "8"]) == 0
    assert "with more than one disjoint set" in capsys.readouterr().out
    rows = [
        json.loads(x) for x in (tmp_path / "mfs" / "mfs_scripted.jsonl").read_text().splitlines()
    ]
    assert rows and all(r["sets"][0] == r["mfs"] for r in rows)
    several = [r for r in rows if len(r["sets"]) > 1]
    assert several  # Submit after the radio: {Submit} and {the ticked radio}
    steps = [s for s in load_steps(path=miniwob_path()) if s.step_id == several[0]["step_id"]]
    frame = evaluate(["full"], steps, progress=False)
    assert frame["mfs_scripted"].tolist() == [True]
    # a reducer that keeps only the first set does not cover the step
    from lrlib.data.evidence import mfs_covered, mfs_sets

    sets = mfs_sets([several[0]["step_id"]])
    assert not mfs_covered(sets, several[0]["step_id"], several[0]["mfs"])["mfs_scripted"]
