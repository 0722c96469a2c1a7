"""lrlib.core.axtree on real BrowserGym trees, and on every malformed variant of them."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.core.axtree import parse, split_lines
from lrlib.core.pruning import prune


def test_real_tree_columns(real_trees):
    text = real_trees["workarena_ipad"]["tree"]
    tree = parse(text)
    raw = [t for t in text.split("\n") if t.strip()]
    assert tree.texts == raw
    assert tree.depths == [len(t) - len(t.lstrip("\t")) for t in raw]
    assert tree.roles[0] == "RootWebArea" and tree.bids[0] is None and tree.parents[0] == -1
    # the action of this step targets the iframe bid a225
    n = tree.line_of("a225")
    assert n is not None and "[a225]" in tree.texts[n - 1]
    line = tree.line(n)
    assert line.bid == "a225" and line.depth == tree.depths[n - 1]
    assert line.text.lstrip("\t").startswith(f"[a225] {line.role}")


def test_parents_are_nearest_shallower_line(real_trees):
    for item in real_trees.values():
        tree = parse(item["tree"])
        for i, p in enumerate(tree.parents):
            if p < 0:
                assert all(tree.depths[j] >= tree.depths[i] for j in range(i))
                continue
            assert tree.depths[p] < tree.depths[i]
            assert all(tree.depths[j] >= tree.depths[i] for j in range(p + 1, i))


def test_every_bid_line_is_found(real_trees):
    for item in real_trees.values():
        tree = parse(item["tree"])
        for m in re.finditer(r"^\t*\[([^\]]+)\] ", item["tree"], re.M):
            assert tree.bids[tree.line_of(m.group(1)) - 1] == m.group(1)


def test_crlf_spaces_and_blank_lines_parse_the_same(real_trees):
    text = real_trees["webarena_magento"]["tree"]
    base = parse(text)
    crlf = parse(text.replace("\n", "\r\n"))
    assert crlf.texts == base.texts and crlf.parents == base.parents
    for width in (2, 4):
        spaced = parse(text.replace("\t", " " * width))
        assert spaced.depths == base.depths and spaced.bids == base.bids
        assert spaced.roles == base.roles and spaced.parents == base.parents
    blanks = parse("\n\n" + text.replace("\n", "\n\n  \n") + "\n\n")
    assert blanks.texts == base.texts


def test_numbering_and_pruning_split_the_same_way():
    # the reference pitfall: stripping before numbering but not before pruning
    text = "\n\n\t[5] button 'A'\n\n\t[6] link 'B'\n"
    tree = parse(text)
    numbered = tree.numbered().split("\n")
    assert numbered == ["1: \t[5] button 'A'", "2: \t[6] link 'B'"]
    assert prune(text, [2], "remove", markers=False).text == "\t[6] link 'B'"


def test_odd_lines_are_opaque_not_fatal():
    text = "RootWebArea 'x'\n\t\u2028weird \x00 line\n\t[] button\n\t[7]\n\t\ud800\n\t[8] StaticText 'ok'"
    tree = parse(text)
    assert len(tree) == 6
    assert tree.line(2).opaque and tree.line(2).parent == 1
    assert tree.line(3).opaque  # empty bid
    assert tree.line(4).bid == "7" and tree.line(4).role is None
    assert tree.line(6).bid == "8" and tree.line(6).role == "StaticText"


def test_unicode_line_separators_do_not_split():
    assert split_lines("a\u2028b\x0bc\x1cd\nz") == ["a\u2028b\x0bc\x1cd", "z"]


lines = st.lists(
    st.tuples(st.integers(0, 6), st.text(max_size=30)).map(lambda t: "\t" * t[0] + t[1]),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_parse_never_raises_and_keeps_every_nonblank_line(raw):
    text = "\n".join(raw)
    tree = parse(text)
    assert tree.texts == split_lines(text)
    for i, p in enumerate(tree.parents):
        assert p < i
        assert p < 0 or tree.depths[p] < tree.depths[i]
    for n in range(1, len(tree) + 1):
        assert tree.line(n).text == tree.texts[n - 1]


def _nearest_shallower(depths: list[int]) -> list[int]:
    return [
        next((j for j in range(i - 1, -1, -1) if depths[j] < d), -1) for i, d in enumerate(depths)
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 8), max_size=60), st.booleans())
def test_parents_fast_walk_equals_the_definition(depths, well_formed):
    """_parents reads the last line one level up when no line jumps deeper by more than one
    (BrowserGym's trees), and falls back to a stack otherwise; both are the definition."""
    from lrlib.core.axtree import _parents

    if well_formed:  # every step at most one level deeper
        for i in range(1, len(depths)):
            depths[i] = min(depths[i], depths[i - 1] + 1)
    assert _parents(depths) == _nearest_shallower(depths)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.text("\t ", max_size=4), st.sampled_from(["[1] a 'x'", "b", " c"])),
        max_size=30,
    )
)
def test_indentation_columns_with_and_without_spaces(rows):
    """Tab-only indentation takes the short path; any space in it, the general one."""
    text = "\n".join(ind + body for ind, body in rows)
    tree = parse(text)
    assert tree.indents == [len(t) - len(t.lstrip("\t ")) for t in tree.texts]
    if not re.search(r"^\t* ", "\n".join(tree.texts), re.M):
        assert tree.depths == [len(t) - len(t.lstrip("\t")) for t in tree.texts]
    assert tree.parents == _nearest_shallower(tree.depths)


def test_numbered_prefixes_past_the_table(monkeypatch):
    from lrlib.core import axtree

    tree = parse("\n".join(f"[{i}] button" for i in range(40)))
    expected = "\n".join(f"{n}: {t}" for n, t in enumerate(tree.texts, 1))
    assert tree.numbered() == expected
    monkeypatch.setattr(axtree, "_MAX_PREFIXES", 16)
    assert tree.numbered() == expected
    assert tree.numbered("<{n}> ").startswith("<1> [0] button\n<2> ")
