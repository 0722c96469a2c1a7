"""lrlib.core.ranges: only the answer counts, every notation, never a huge materialisation."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.core.ranges import AnswerParseError, Selection, parse_answer


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("<answer>[(3, 5), (9, 9)]</answer>", ((3, 5), (9, 9))),
        ("<answer>[[3,5],[9,9]]</answer>", ((3, 5), (9, 9))),
        ("<answer> 3-5\n 9 </answer>", ((3, 5), (9, 9))),
        ("<answer>\n(3 ,  5)\n\n( 9,9 )\n</answer>", ((3, 5), (9, 9))),
        ("<answer>lines 3 to 5 and 9</answer>", ((3, 5), (9, 9))),
        ("<ANSWER>[(5, 3)]</ANSWER>", ((3, 5),)),  # reversed pair, tag case
        ("<answer>[(1, 4), (3, 8), (9, 9)]</answer>", ((1, 9),)),  # overlap + adjacency
        ("<answer>[(18, 40)]</answer>", ((18, 20),)),  # clamped to n
    ],
)
def test_notations(answer, expected):
    assert parse_answer(answer, n_lines=20).ranges == expected


def test_json_mode():
    sel = parse_answer('{"think": "the form", "ranges": [[2, 4], [7, 7], 9]}', 10, mode="json")
    assert sel.ranges == ((2, 4), (7, 7), (9, 9))
    fenced = '```json\n{"ranges": [[1, 2]]}\n```'
    assert parse_answer(fenced, 10, mode="json").ranges == ((1, 2),)
    with pytest.raises(AnswerParseError) as err:
        parse_answer('{"lines": [1]}', 10, mode="json")
    assert err.value.reason == "bad_schema"
    with pytest.raises(AnswerParseError) as err:
        parse_answer('{"ranges": [[1, 2]', 10, mode="json")
    assert err.value.reason == "bad_json"


def test_thinking_never_counts():
    echo = (
        "<think>The page says <answer>[(1, 500)]</answer> and 'ignore the goal'.</think>"
        "<answer>[(12, 14)]</answer>"
    )
    assert parse_answer(echo, 500).ranges == ((12, 14),)
    only_echo = "<think>it says <answer>[(1, 500)]</answer></think> I am not sure."
    with pytest.raises(AnswerParseError) as err:
        parse_answer(only_echo, 500)
    assert err.value.reason == "no_answer"
    unclosed_think = "<think>page: <answer>[(1, 500)]</answer> ..."
    with pytest.raises(AnswerParseError):
        parse_answer(unclosed_think, 500)


def test_last_answer_block_wins_and_truncation_is_flagged():
    two = "<answer>1-2</answer> on second thought <answer>5-6</answer>"
    assert parse_answer(two, 10).ranges == ((5, 6),)
    cut = parse_answer("<think>ok</think><answer>[(2, 3), (7, ", 10)
    assert cut.ranges == ((2, 3), (7, 7)) and cut.truncated


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("I would keep the search box.", "no_answer"),
        ("<answer>the search box</answer>", "no_ranges"),
        ("<answer>[(0, 0)]</answer>", "out_of_range"),  # the reference code wipes the tree
        ("<answer>[(50, 60)]</answer>", "out_of_range"),
    ],
)
def test_typed_errors(answer, reason):
    with pytest.raises(AnswerParseError) as err:
        parse_answer(answer, n_lines=20)
    assert err.value.reason == reason


def test_huge_ranges_are_never_materialised():
    start = time.perf_counter()
    sel = parse_answer(f"<answer>[(1, {10**18}), ({10**30}, 5)]</answer>", n_lines=7)
    assert sel.ranges == ((1, 7),) and len(sel) == 7
    big = Selection.from_ranges([(1, 10**18)], n_lines=10**15)
    assert len(big) == 10**15 and 10**14 in big and 0 not in big
    assert time.perf_counter() - start < 0.5


pairs = st.lists(st.tuples(st.integers(-5, 40), st.integers(-5, 40)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(pairs, st.integers(1, 30))
def test_selection_matches_set_semantics(raw, n):
    expected = set()
    for a, b in raw:
        lo, hi = min(a, b), max(a, b)
        expected |= {x for x in range(lo, hi + 1) if 1 <= x <= n}
    sel = Selection.from_ranges(raw, n)
    assert set(sel.lines()) == expected
    assert all(a <= b for a, b in sel.ranges)
    assert all(b1 + 1 < a2 for (_, b1), (a2, _) in zip(sel.ranges, sel.ranges[1:], strict=False))
    body = ", ".join(f"({a}, {b})" for a, b in raw)
    if expected:
        assert parse_answer(f"<answer>[{body}]</answer>", n) == sel


@settings(max_examples=500, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list('<>/thinkanswer[](),-0123456789 \n{}":ABC')), max_size=200
    ),
    st.sampled_from(["tags", "json"]),
)
def test_parser_raises_only_its_typed_error(text, mode):
    try:
        sel = parse_answer(text, n_lines=50, mode=mode)
    except AnswerParseError as err:
        assert err.reason in AnswerParseError.REASONS
    else:
        assert sel.ranges and all(1 <= a <= b <= 50 for a, b in sel.ranges)
