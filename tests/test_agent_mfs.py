"""Minimal failure sets (issue 23): ddmin on synthetic policies whose set is known, the
scripted policy on real MiniWoB trees, ``lrlib mfs`` resuming, and MFS coverage joining
``lrlib evaluate``."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.agent.mfs import build_mfs, ddmin
from lrlib.agent.policy import NOOP, Decision, Policy
from lrlib.agent.scripted import ScriptedPolicy
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
