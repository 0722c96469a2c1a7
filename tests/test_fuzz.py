"""Hostile input to the pure-text core: the answer parser, the tree parser, pruning, tokens.

Property tests over grammar-shaped random input (hypothesis): nothing raises but the typed
errors, every result keeps its invariants, echoed page text never becomes the answer, and
token counts stay exact on every path. Timing is measured by benchmarks/bench_hostile.py.
"""

from __future__ import annotations

import json
import os
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lrlib.core.axtree import parse, split_lines
from lrlib.core.pruning import STRATEGIES, prune
from lrlib.core.ranges import (
    _EXPR,
    AnswerParseError,
    Selection,
    answer_block,
    parse_answer,
    ranges_in,
)
from lrlib.core.tokens import (
    _encode_by_pieces,
    count_lines,
    count_tokens,
    get_encoding,
    line_token_counts,
    truncate_bottom,
)

REASONS = set(AnswerParseError.REASONS)
# LRLIB_FUZZ_EXAMPLES=10000 for a long campaign; the default keeps the file to ~15 s
EXAMPLES = int(os.environ.get("LRLIB_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- answers: pieces a model (or a page) writes ------------------------------------------

TAGS = ["<think>", "</think>", "<answer>", "</answer>", "< / answer >", "<ANSWER>", "</Think>",
        "<answer", "think>", "<", ">", "</", "<answer \x0b\t>", "< think>", "</ANSWER\n>"]  # fmt: skip
SEPARATORS = ["-", "–", "..", "...", " to ", ":", ",", ";", " ", "\n", "\t", "and", "\r\n"]
JSON = ['{"ranges": ', "[[", "]]", "[", "]", '"think": "', '"', "}", "{", "```json", "```",
        "null", "true", "1e5", "-0", "0.5"]  # fmt: skip
numbers = st.one_of(
    st.integers(-5, 300).map(str),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["0", "-0", "007", str(10**18), str(10**18 + 1), str(2**63), "9" * 5000]),
)
pieces = st.one_of(
    st.sampled_from(TAGS),
    st.sampled_from(SEPARATORS),
    st.sampled_from(JSON),
    st.sampled_from(["(", ")", "[", "]"]),
    numbers,
    st.text(max_size=8),
)
answer_text = st.lists(pieces, max_size=40).map("".join)
tag_free = st.lists(
    st.one_of(st.sampled_from(SEPARATORS), st.sampled_from(["(", ")", "[", "]"]), numbers,
              st.text(alphabet=st.characters(exclude_characters="<>"), max_size=6)),
    max_size=20,
).map("".join)  # fmt: skip
json_numbers = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from([str(10**18 + 1), "9" * 5000, "-" + "9" * 5000]),
)
n_lines = st.one_of(st.integers(1, 400), st.integers(1, 10**18))


def _valid(sel: Selection, n: int) -> None:
    assert sel.n_lines == n and sel.ranges
    assert all(1 <= a <= b <= n for a, b in sel.ranges)
    assert all(b1 + 1 < a2 for (_, b1), (a2, _) in zip(sel.ranges, sel.ranges[1:], strict=False))


@FUZZ
@given(answer_text, n_lines, st.sampled_from(["tags", "json"]), st.none() | answer_text)
def test_parse_answer_raises_only_typed_errors(text, n, mode, page):
    try:
        sel = parse_answer(text, n, mode=mode, page=page)
    except AnswerParseError as err:
        assert err.reason in REASONS
    else:
        _valid(sel, n)


@FUZZ
@given(st.text(max_size=300), n_lines, st.sampled_from(["tags", "json"]))
def test_parse_answer_on_arbitrary_unicode(text, n, mode):
    try:
        _valid(parse_answer(text, n, mode=mode), n)
    except AnswerParseError as err:
        assert err.reason in REASONS


@FUZZ
@given(st.lists(st.tuples(json_numbers, json_numbers), min_size=1, max_size=6), n_lines)
def test_json_answers_with_huge_numbers(pairs, n):
    body = '{"ranges": [' + ", ".join(f"[{a}, {b}]" for a, b in pairs) + "]}"
    json.loads(body, parse_int=str)  # well-formed JSON (int() would refuse 5,000 digits)
    try:
        _valid(parse_answer(body, n, mode="json"), n)
    except AnswerParseError as err:
        assert err.reason == "out_of_range"


@FUZZ
@given(answer_text, tag_free)
def test_echo_while_thinking_never_replaces_the_answer(echo, real):
    """Whatever the model copies while thinking (tags included), its own answer wins."""
    try:
        expected = parse_answer(f"<answer>{real}</answer>", 500)
    except AnswerParseError as err:
        expected = err.reason
    output = f"<think>{echo}</think><answer>{real}</answer>"
    try:
        got = parse_answer(output, 500)
    except AnswerParseError as err:
        got = err.reason
    assert got == expected


@FUZZ
@given(answer_text, tag_free)
def test_echo_alone_is_never_an_answer(echo, tail):
    with pytest.raises(AnswerParseError) as err:
        parse_answer(f"<think>{echo}</think>{tail}", 500)
    assert err.value.reason == "no_answer"


@FUZZ
@given(answer_text, answer_text, st.data())
def test_output_cut_while_copying_the_page_is_never_an_answer(before, page, data):
    """A model that copies the page while thinking and is cut off: given the page, no
    answer is read from the copy, wherever the cut falls."""
    page = before + page
    k = data.draw(st.integers(0, len(page)))
    with pytest.raises(AnswerParseError):
        parse_answer("<think>" + page[:k], 500, page=page)


@FUZZ
@given(answer_text)
def test_answer_block_and_ranges_agree_with_parse(text):
    try:
        body, _ = answer_block(text)
    except AnswerParseError:
        with pytest.raises(AnswerParseError):
            parse_answer(text, 500)
        return
    if any(max(a, b) >= 1 and min(a, b) <= 500 for a, b in ranges_in(body)):
        if _EXPR.search(body):  # a number written as an expression: unreadable, typed
            with pytest.raises(AnswerParseError, match="expression"):
                parse_answer(text, 500)
            return
        _valid(parse_answer(text, 500), 500)


# ---- trees ------------------------------------------------------------------------------

ROLES = ["RootWebArea", "link", "button", "StaticText", "generic", "Iframe", "heading", "a-b"]
tree_line = st.tuples(
    st.sampled_from(["", "\t", "\t\t", " ", "  ", "    ", "\t ", "\t\t\t\t\t\t"]),
    st.sampled_from(["", "[12] ", "[a51] ", "[]", "[x y] ", "[" + "9" * 70 + "] ", "[5]"]),
    st.sampled_from([*ROLES, "", "9lives", "ü", "[", "]"]),
    st.text(max_size=12),
)
tree_text = st.one_of(
    st.lists(tree_line, max_size=40).map(lambda ls: "\n".join("".join(p) for p in ls)),
    st.text(alphabet=st.sampled_from(list("\t []\n\r a1b'=,") + ["\x00", "\u2028"]), max_size=200),
    st.text(max_size=200),
)


@FUZZ
@given(tree_text)
def test_parse_never_raises_and_keeps_invariants(text):
    tree = parse(text)
    lines = split_lines(text)
    assert tree.texts == lines and len(tree) == len(lines)
    for i in range(len(tree)):
        p = tree.parents[i]
        assert -1 <= p < i and tree.depths[i] >= 0
        if p >= 0:
            assert tree.depths[p] < tree.depths[i]
        bid = tree.bids[i]
        assert bid is None or (
            0 < len(bid) <= 64 and "]" not in bid and not any(c.isspace() for c in bid)
        )
        line = tree.line(i + 1)
        assert line.text == lines[i] and line.parent == p + 1
        if bid is not None:
            assert tree.line_of(bid) <= i + 1
    assert parse(tree.text).texts == tree.texts
    assert len(tree.numbered().split("\n")) == len(tree) if len(tree) else tree.numbered() == ""


selections = st.lists(
    st.one_of(st.integers(-3, 60), st.sampled_from([10**18, -(10**18), 2**64])), max_size=30
)


@FUZZ
@given(tree_text, selections, st.sampled_from(STRATEGIES), st.booleans())
def test_prune_keeps_only_selected_lines_verbatim(text, chosen, strategy, markers):
    tree = parse(text)
    n = len(tree)
    out = prune(tree, chosen, strategy, markers=markers)
    wanted = sorted({c for c in chosen if 1 <= c <= n})
    assert out.kept == wanted
    assert not set(out.stubs) & set(out.kept)
    lines = iter(out.lines)  # kept lines appear verbatim, in order
    for k in out.kept:
        assert any(line == tree.texts[k - 1] for line in lines)
    if strategy == "structure":
        shown = set(out.kept) | set(out.stubs)
        assert all(set(tree.ancestors(k)) <= shown for k in out.kept)
    if not markers:
        assert out.n_markers == 0 and len(out.lines) == len(out.kept) + len(out.stubs)
    # a hand-made Selection with absurd ranges is re-normalised, never materialised
    wild = Selection(((-(10**18), 10**18), (5, 2)), n_lines=n)
    assert prune(tree, wild, strategy).kept == list(range(1, n + 1))


# ---- tokens -----------------------------------------------------------------------------

token_text = st.lists(
    st.one_of(
        st.sampled_from(["\n", "\r\n", "\r", "/", " ", "\t", "  \n", "\u00a0", "<|endoftext|>",
                         "'s", "[12] button 'Go'", "123456", "\ud800", "😀", "ab" * 40]),
        st.text(max_size=10),
    ),
    max_size=400,
).map("".join)  # fmt: skip


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(token_text)
def test_token_counts_are_exact_on_every_path(text):
    enc = get_encoding()
    expected = len(enc.encode_ordinary(text))
    assert count_tokens(text) == expected
    # the Python splitter agrees with tiktoken's wherever both Unicode tables do (characters
    # assigned by Python's own table, Unicode 14 in 3.11; the regex module may be newer)
    if all(unicodedata.category(c) != "Cn" for c in text):
        assert len(_encode_by_pieces(text, "o200k_base")) == expected
    long = (text + "\n") * 8 + "x" * 2100  # over the length where counting goes line by line
    assert count_tokens(long) == len(enc.encode_ordinary(long))
    lines = long.split("\n")
    assert count_lines(lines) == len(enc.encode_ordinary(long))
    assert all(c >= 1 for c in line_token_counts(lines))


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(token_text, st.integers(0, 400))
def test_truncate_bottom_is_exact(text, budget):
    out = truncate_bottom(text, budget)
    assert count_tokens(out) <= budget
    assert text.startswith(out)
    if out != text:
        lines = text.split("\n")
        # whole lines only; "" may be zero lines or one empty line: take the longest reading
        k = max(k for k in range(len(lines) + 1) if "\n".join(lines[:k]) == out)
        assert count_tokens("\n".join(lines[: k + 1])) > budget


def test_long_blank_runs_do_not_crash_the_tokenizer():
    """tiktoken panics (a BaseException) on ~1M spaces; lrlib splits such text itself.
    (Exactness of that split is the property test above; here: no crash, sane counts.)"""
    run = 1_200_000
    text = "[7] button 'a" + " " * run + "b'\n\t" + "\t" * 70_000 + "StaticText 'x'"
    longest = max(len(t) for t in get_encoding()._mergeable_ranks if t.strip() == b"")
    assert run // longest <= count_tokens(text) <= run // longest + 70_000
    assert truncate_bottom(text, 10) == ""
