"""Answer parsing against AgentLab's FocusAgent: parse_html_tags_raise(keys=["think",
"answer"], merge_multiple=True) (a stand-in, see peer_import), then its own clean_list,
ast.literal_eval and range expansion (focus_agent.py), then remove_lines' filter to 1..n.

Well-formed answers give identical lines. Each row of the table in `docs/fidelity.md`
(answer parsing) is pinned here by an example: what AgentLab does, what lrlib does.
"""

from __future__ import annotations

import ast
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from peer_import import peer

from lrlib.core.ranges import AnswerParseError, parse_answer

N = 20  # lines in the tree the answers refer to


def agentlab(text: str, n: int = N) -> list[int] | str:
    """The lines FocusAgent keeps: a list, "full" (no pruning: empty range list) or
    "retry" (parse error: the model is asked again, up to 3 times)."""
    p = peer()
    parse = sys.modules["agentlab.llm.llm_utils"].parse_html_tags_raise
    try:
        tags = parse(text, keys=["think", "answer"], merge_multiple=True)
    except Exception:
        return "retry"
    ranges = ast.literal_eval(p.focus_agent.FocusAgent.clean_list(tags["answer"]))
    if len(ranges) <= 0:
        return "full"
    numbers = {k for a, b in ranges for k in range(a, min(b, n + 1) + 1)}  # bounded expansion
    return sorted(k for k in numbers if 1 <= k <= n)  # remove_lines keeps only these


def lrlib(text: str, n: int = N) -> list[int] | str:
    try:
        return parse_answer(text, n).lines()
    except AnswerParseError as err:
        return f"error:{err.reason}"


# (answer, AgentLab, lrlib): realistic answers first, then the malformed ones, each pinned
T = "<think>The search box and the results are needed.</think>\n"
SAME = [
    T + "<answer>[(1, 3), (7, 8)]</answer>",
    T + "<answer>\n[(10,12), (123, 456)]\n</answer>",  # AgentLab's own concrete example
    "<think>\nLine 4 is the button.\n</think>\n\n<answer>\n[(4, 4)]\n</answer>\n",
    T + "<answer>[(1,2),(2,4)]</answer>",  # overlapping ranges
    T + "<answer>[(5, 30)]</answer>",  # partly beyond the tree
    T + "<answer>[(0, 2)]</answer>",  # line 0 does not exist
    T + "<answer>The relevant lines are [(2, 5), (9, 9)].</answer>",
    T + "<answer>[(3, 4)]</answer> Hope this helps.",
]
DIFFERENT = {  # table row -> (answer, AgentLab, lrlib)
    "no <think> block": ("<answer>[(1, 3)]</answer>", "retry", [1, 2, 3]),
    "several <answer> blocks": (
        T + "<answer>[(1, 3)]</answer><answer>[(5, 6)]</answer>",
        [1, 2, 3, 5, 6],
        [5, 6],
    ),
    "answer tags inside <think>": (
        "<think>Maybe <answer>[(9, 9)]</answer>, no.</think><answer>[(1, 2)]</answer>",
        [1, 2, 9],
        [1, 2],
    ),
    "upper-case tags": (T + "<ANSWER>[(1, 2)]</ANSWER>", "retry", [1, 2]),
    "unclosed <answer> (output cut off)": (T + "<answer>[(1, 2), (4", "retry", [1, 2, 4]),
    "reversed range": (T + "<answer>[(8, 3)]</answer>", [], [3, 4, 5, 6, 7, 8]),
    "range entirely beyond the tree": (T + "<answer>[(40, 50)]</answer>", [], "error:out_of_range"),
    "empty list": (T + "<answer>[]</answer>", "full", "error:no_ranges"),
    "no numbers": (T + "<answer>none of them</answer>", "full", "error:no_ranges"),
    "other notations": (T + "<answer>[[1, 3]], 5-6, 9</answer>", "full", [1, 2, 3, 5, 6, 9]),
    "space before the comma": (T + "<answer>[(1 , 2)]</answer>", "full", [1, 2]),
    "negative numbers": (T + "<answer>[(-2, 3)]</answer>", "full", [1, 2, 3]),
    "expressions (security rule)": (
        T + "<answer>[(1, 10**18)]</answer>",
        "full",
        "error:expression",
    ),
    "floats (security rule)": (T + "<answer>[(1, 1e3)]</answer>", "full", "error:expression"),
    "empty output": ("", "retry", "error:empty"),
}


@pytest.mark.parametrize("answer", SAME)
def test_well_formed_answers_agree(answer):
    assert isinstance(agentlab(answer), list) and agentlab(answer) == lrlib(answer)


@pytest.mark.parametrize("row", sorted(DIFFERENT))
def test_each_documented_difference(row):
    answer, theirs, ours = DIFFERENT[row]
    assert agentlab(answer) == theirs
    assert lrlib(answer) == ours
    assert theirs != ours


def test_huge_ranges_cost_nothing_in_lrlib():
    # AgentLab expands every range into a list of line numbers: (1, 10**9) is a billion ints
    # (agentlab() above bounds the expansion to n); lrlib never materialises a range
    assert lrlib(T + "<answer>[(1, 1000000000)]</answer>", 10**6)[-1] == 10**6


pairs = st.lists(st.tuples(st.integers(0, N + 5), st.integers(0, N + 5)), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(pairs=pairs, sep=st.sampled_from([",", ", ", ",\n", ",  "]), think=st.text(max_size=30))
def test_generated_well_formed_answers_agree(pairs, sep, think):
    pairs = [(min(a, b), max(a, b)) for a, b in pairs]  # AgentLab drops reversed pairs
    if not any(b >= 1 and a <= N for a, b in pairs):
        return  # nothing in range: a documented difference (empty selection vs error)
    think = think.replace("<", "(").replace(">", ")")
    body = "[" + sep.join(f"({a},{' ' * (a % 2)}{b})" for a, b in pairs) + "]"
    answer = f"<think>{think}</think>\n<answer>{body}</answer>"
    assert agentlab(answer) == lrlib(answer)
