"""The scripted policy's 46 task types (issue 33), and the greedy second policy, offline.

Real trees only: the MiniWoB check set (``data/miniwob_ood.jsonl.gz``, oracle actions
verified by the task's reward) holds steps of most types; the others are steps recorded by
``lrlib live`` in chromium on development seed 0 (``tests/fixtures/scripted_steps.json``,
successful episodes, with ``tests/fixtures/record_scripted_steps.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lrlab.agent.greedy import GreedyPolicy, goal_names
from lrlab.agent.live import TASKS, task_types
from lrlab.agent.live_command import _choices
from lrlab.agent.scripted import ScriptedPolicy
from lrlab.agent.split import task_split
from lrlib.core.axtree import parse
from lrlib.data.dataset import read_rows
from lrlib.paths import miniwob_path

FIXTURE = Path(__file__).parent / "fixtures" / "scripted_steps.json"


@pytest.fixture(scope="module")
def recorded():
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def check_rows():
    return [r for r in read_rows(miniwob_path()) if r["task"].split(".", 1)[1] in TASKS]


def test_every_task_type_has_real_trees_to_test_on(recorded, check_rows):
    have = {r["task"].split(".", 1)[1] for r in check_rows} | {s["task"] for s in recorded}
    assert len(TASKS) >= 40 and len(set(TASKS)) == len(TASKS)
    assert set(TASKS) <= have, sorted(set(TASKS) - have)
    assert set(TASKS) <= set(task_split()["tuning"] + task_split()["heldout"])


def test_reproduces_the_recorded_successful_steps(recorded):
    policy = ScriptedPolicy()
    for s in recorded:
        d = policy.act(s["goal"], s["history"], s["tree"])
        assert d.action == s["action"] and not d.stop, (s["task"], s["step"], d.raw)
        assert d.lines, (s["task"], s["step"])  # it says what it read


def test_without_the_lines_it_relied_on_it_acts_otherwise(recorded):
    policy = ScriptedPolicy()
    for s in recorded:
        d = policy.act(s["goal"], s["history"], s["tree"])
        n = len(parse(s["tree"]))
        keep = [i for i in range(1, n + 1) if i not in d.lines]
        text = "\n".join(s["tree"].split("\n")[i - 1] for i in keep)
        d2 = policy.act(s["goal"], s["history"], text, keep)
        assert d2.action != d.action or d2.stop, (s["task"], s["step"])


def test_reported_lines_are_the_lines_read():
    tree = ("RootWebArea 'T'\n\t[14] table ''\n\t\t[15] row ''\n\t\t\t[16] cell 'Gender'\n"
            "\t\t\t[17] cell 'Male'\n\t[31] textbox ''\n\t[32] button 'Submit'")  # fmt: skip
    goal = "Enter the value of Gender into the text field and press Submit."
    d = ScriptedPolicy().act(goal, (), tree)
    assert d.action == "fill('31', 'Male')" and d.lines == [4, 5, 6]
    d = ScriptedPolicy().act(goal, (), tree.replace("cell 'Gender'", "cell 'Sex'"))
    assert d.stop and d.action == "noop()"


def _args(policy: str, tasks: str) -> argparse.Namespace:
    return argparse.Namespace(policy=policy, tasks=tasks, seeds=1, jobs=1, max_steps=4,
                              reducers="full", reducers_file=None, retrievers_file=None)  # fmt: skip


def test_llm_accepts_every_registered_type_scripted_only_its_own():
    every = task_types("llm")
    assert len(every) == 125 and set(TASKS) < set(every)
    for policy in ("llm", "greedy"):
        assert _choices(_args(policy, "click-pie,drag-box"))[1] == ["click-pie", "drag-box"]
    with pytest.raises(ValueError) as err:
        _choices(_args("scripted", "click-pie"))
    msg = str(err.value)
    assert "\n" not in msg and "lrlab.agent.live.TASKS" in msg and "click-test" in msg
    with pytest.raises(ValueError, match="task_split.json"):
        _choices(_args("llm", "no-such-task"))


def test_greedy_decides_differently_on_real_trees(check_rows):
    greedy, scripted = GreedyPolicy(), ScriptedPolicy()
    same = differ = 0
    for r in check_rows:
        g = greedy.act(r["goal"], r["history"], r["axtree_txt"])
        s = scripted.act(r["goal"], r["history"], r["axtree_txt"])
        assert len(g.lines) <= 1  # only the element it acts on
        same += g.action == s.action
        differ += g.action != s.action
    assert same > 50 and differ > 50  # agrees on simple clicks, not on the rest


def test_greedy_ignores_state_and_labels():
    tree = ("RootWebArea 'T'\n\t[4] checkbox 'ab', checked='true'\n"
            "\t[6] checkbox 'cd', checked='false'\n\t[8] button 'Submit'")  # fmt: skip
    goal = "Select cd and click Submit."
    assert GreedyPolicy().act(goal, (), tree).action == "click('6')"
    assert ScriptedPolicy().act(goal, (), tree).action == "click('4')"  # unticks ab first
    assert goal_names('Enter "a" and "b"') == ["a", "b"]
    assert GreedyPolicy().act("Click on Tab #2.", (), tree).action == "click('8')"
