"""Policies and the observation preprocessor (issue 23) on real MiniWoB trees, offline.

The MiniWoB check set (``data/miniwob_ood.jsonl.gz``) holds real BrowserGym trees whose
recorded actions were verified by the task's reward; the scripted policy must reproduce
them from labels and page text, and stop when a reducer removed what it reads.
"""

from __future__ import annotations

import re

import pytest
from fake_openai import Script, serve
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.agent.live import TASKS
from lrlab.agent.policies import get_policy
from lrlab.agent.policy import ACTION, NOOP, LLMPolicy, numbered, parse_decision
from lrlab.agent.preprocess import ObsPreprocessor, line_numbers
from lrlab.agent.scripted import ScriptedPolicy
from lrlib.core.axtree import parse
from lrlib.data.dataset import read_rows
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMClient
from lrlib.paths import miniwob_path

# the task types whose goals the scripted policy reads
SCRIPTED = set(TASKS)


@pytest.fixture(scope="module")
def miniwob_rows():
    rows = [r for r in read_rows(miniwob_path()) if r["task"].split(".", 1)[1] in SCRIPTED]
    assert len({r["task"] for r in rows}) >= 35
    return rows


def test_scripted_reproduces_every_verified_action(miniwob_rows):
    policy = ScriptedPolicy()
    wrong = []
    for r in miniwob_rows:
        d = policy.act(r["goal"], r["history"], r["axtree_txt"])
        if d.action.replace('"', "'") != r["action"].replace('"', "'"):
            wrong.append((r["step_id"], r["action"], d.action, d.raw))
    assert not wrong, wrong[:5]
    assert len(miniwob_rows) > 60


def test_scripted_relies_on_the_target_and_fails_without_it(miniwob_rows):
    policy = ScriptedPolicy()
    checked = 0
    for r in miniwob_rows:
        tree = parse(r["axtree_txt"])
        d = policy.act(r["goal"], r["history"], r["axtree_txt"])
        assert set(r["target_lines"]) <= set(d.lines), r["step_id"]
        # drop the target line(s): the policy must not find the recorded action any more
        keep = [n for n in range(1, len(tree) + 1) if n not in r["target_lines"]]
        text = "\n".join(tree.texts[n - 1] for n in keep)
        d2 = policy.act(r["goal"], r["history"], text, keep)
        assert d2.action != d.action, r["step_id"]
        checked += 1
    assert checked == len(miniwob_rows)


def test_scripted_choice_depends_on_labels_not_bids():
    tree = "RootWebArea 'T'\n\t[7] button 'Cancel'\n\t[9] button 'OK'"
    swapped = "RootWebArea 'T'\n\t[7] button 'OK'\n\t[9] button 'Cancel'"
    p = ScriptedPolicy()
    goal = 'Click the button in the dialog box labeled "OK".'
    assert p.act(goal, (), tree).action == "click('9')"
    assert p.act(goal, (), swapped).action == "click('7')"
    unknown = p.act("Book the cheapest flight.", (), tree)
    assert unknown.stop and unknown.action == NOOP


def test_registry_lists_valid_names():
    with pytest.raises(KeyError, match="valid policies: greedy, llm, scripted"):
        get_policy("gpt")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.sets(st.integers(0, 50), max_size=10))
def test_parse_decision_never_raises_and_only_returns_actions(answer, shown):
    action, lines = parse_decision(answer, shown)
    assert (
        action == NOOP or ACTION.match(action) or re.match(r"(click|fill|select_option)\(", action)
    )
    assert set(lines) <= shown


def test_llm_policy_asks_once_then_replays_from_cache(httpserver, tmp_path, real_trees):
    tree = next(iter(real_trees.values()))["tree"]
    n_lines = len(parse(tree))
    answer = '{"lines": [2, 3, 100000], "action": "click(\'42\')"}'
    script = Script(lambda body, n: answer)
    url = serve(httpserver, script)

    def policy():
        client = LLMClient("fake-model", base_url=url, api_key="x",
                           cache=ResponseCache(tmp_path / "llm"), max_retries=0)  # fmt: skip
        return LLMPolicy(client=client)

    d = policy().act("Open the issues", ["click('3')"], tree)
    assert (d.action, d.lines, d.model, d.from_cache) == (
        "click('42')",
        [2, 3],
        "fake-model",
        False,
    )
    body = script.bodies[0]
    assert body["response_format"]["json_schema"]["name"] == "next_action"
    user = body["messages"][1]["content"]
    assert "Open the issues" in user and "click('3')" in user and f"{n_lines}: " in user
    again = policy().act("Open the issues", ["click('3')"], tree)
    assert again.from_cache and again.action == d.action and script.calls == 1
    assert len(d.prompt_hash) == 12 and d.prompt_hash == again.prompt_hash


@pytest.mark.parametrize("reducer", ["full", "truncate", "bm25", "program", "learned"])
def test_preprocessor_numbers_are_full_tree_lines(real_trees, reducer):
    pre = ObsPreprocessor(reducer)
    for name, t in list(real_trees.items())[:6]:
        full = parse(t["tree"]).texts
        out = pre({"goal": t["goal"], "axtree_txt": t["tree"]}, ["click('1')"])
        info = out.info
        assert info["reducer"] == reducer and info["n_lines"] == len(full), name
        assert 0 <= info["latency_s"] < 5 and info["tokens_after"] <= info["tokens_before"]
        shown = numbered(out.text, out.numbers)
        kept = set(info["kept"])
        for n, line in shown:
            if n in kept:  # kept lines are verbatim copies of the full tree's line n
                assert line == full[n - 1], (name, n)


def test_preprocessor_flattens_axtree_object_when_not_flat():
    pytest.importorskip("browsergym.utils.obs")
    axtree = {"nodes": [
        {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "T"},
         "childIds": ["2"], "browsergym_id": None, "properties": []},
        {"nodeId": "2", "role": {"value": "button"}, "name": {"value": "Ok"},
         "childIds": [], "browsergym_id": "15", "properties": []},
    ]}  # fmt: skip
    out = ObsPreprocessor("full")({"goal": "Click Ok", "axtree_object": axtree})
    assert "[15] button 'Ok'" in out.text and out.numbers == [1, 2]


def test_line_numbers_fall_back_when_text_is_rewritten():
    assert line_numbers("x\ny\nz", [1, 3], [], 5) == [1, 2, 3]
    assert line_numbers("x\ny", [2], [1], 5) == [1, 2]
