"""lrlib.core.pruning on real trees: kept lines are input lines, in order; ancestors survive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.core.axtree import parse
from lrlib.core.pruning import MARKER, STRATEGIES, prune
from lrlib.core.ranges import Selection


@pytest.fixture(scope="module")
def ipad(real_trees):
    return parse(real_trees["workarena_ipad"]["tree"])


def test_structure_keeps_the_target_and_its_ancestors(ipad):
    target = ipad.line_of("a225")
    out = prune(ipad, [target], "structure", markers=False)
    chain = sorted([target, *ipad.ancestors(target)])
    assert out.kept == [target]
    assert out.stubs == chain[:-1]
    assert len(out.lines) == len(chain)
    assert out.lines[-1] == ipad.texts[target - 1]
    for number, line in zip(out.stubs, out.lines, strict=False):
        bid, role = ipad.bids[number - 1], ipad.roles[number - 1]
        stub = f"[{bid}] {role}" if bid else role
        assert line == "\t" * ipad.depths[number - 1] + stub


def test_remove_markers_are_indented_like_the_next_line(ipad):
    out = prune(ipad, Selection.from_ranges([(10, 12), (40, 41)], len(ipad)), "remove")
    assert out.n_markers == 3
    assert out.lines[0] == ipad.texts[9][: ipad.indents[9]] + MARKER.format(n=9)
    assert out.lines[4] == ipad.texts[39][: ipad.indents[39]] + MARKER.format(n=27)
    assert out.lines[-1].endswith(MARKER.format(n=len(ipad) - 41))
    assert out.kept == [10, 11, 12, 40, 41]


def test_placeholders_keep_every_bid(ipad):
    for strategy, render in (("bid", "[{b}]"), ("bid+role", "[{b}] {r}")):
        out = prune(ipad, [5], strategy, markers=False)
        assert out.kept == [5]
        with_bid = [i + 1 for i, b in enumerate(ipad.bids) if b is not None]
        assert sorted(out.kept + out.stubs) == sorted(set(with_bid) | {5})
        stub_line = out.lines[out.stubs.index(with_bid[-1]) + (1 if with_bid[-1] > 5 else 0)]
        i = with_bid[-1] - 1
        assert stub_line.strip() == render.format(b=ipad.bids[i], r=ipad.roles[i])


def test_empty_and_full_selections(ipad):
    full = Selection.all(len(ipad))
    for strategy in STRATEGIES:
        assert prune(ipad, full, strategy).text == ipad.text
    assert prune(ipad, [], "remove", markers=False).text == ""
    assert prune(ipad, [], "remove").lines == [MARKER.format(n=len(ipad))]


def test_unknown_strategy_lists_the_valid_ones(ipad):
    with pytest.raises(ValueError, match="remove, structure, bid, bid\\+role"):
        prune(ipad, [1], "keep")  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_pruning_properties(real_trees, data):
    name = data.draw(st.sampled_from(sorted(real_trees)))
    tree = parse(real_trees[name]["tree"])
    n = len(tree)
    raw = data.draw(st.lists(st.tuples(st.integers(1, n), st.integers(1, n)), max_size=20))
    sel = Selection.from_ranges(raw, n)
    strategy = data.draw(st.sampled_from(STRATEGIES))
    markers = data.draw(st.booleans())
    out = prune(tree, sel, strategy, markers)
    assert out.kept == sel.lines()  # every selected line survives, verbatim
    shown = sorted(out.kept + out.stubs)
    assert len(set(shown)) == len(shown)
    if strategy.endswith("-agentlab"):  # AgentLab's forms: tests/test_peer_pruning.py
        assert out.n_markers == 0 or strategy == "remove-agentlab"
        if strategy != "remove-agentlab":  # a placeholder for every dropped line
            assert shown == list(range(1, n + 1)) and len(out.lines) == n
        return
    # output = kept/stub lines in input order, plus markers
    content = [ln for ln in out.lines if not ln.lstrip().startswith("... ")]
    assert len(content) == len(shown)
    for number, line in zip(shown, content, strict=True):
        if number in set(out.kept):
            assert line == tree.texts[number - 1]
        else:
            assert line == tree.stub(number - 1) or line.strip() == f"[{tree.bids[number - 1]}]"
    if strategy == "structure":
        visible = set(shown)
        for number in out.kept:
            assert set(tree.ancestors(number)) <= visible
        assert set(out.stubs) <= {a for k in out.kept for a in tree.ancestors(k)}
    if not markers:
        assert out.n_markers == 0 and len(out.lines) == len(shown)


@settings(max_examples=200, deadline=None)
@given(
    depths=st.lists(st.integers(0, 6), min_size=1, max_size=60),
    raw=st.lists(st.tuples(st.integers(1, 60), st.integers(1, 60)), max_size=8),
    markers=st.booleans(),
    parsed=st.booleans(),
)
def test_structure_fast_path_equals_the_line_by_line_walk(depths, raw, markers, parsed):
    """_structure walks one ancestor chain per range; the reference marks every kept
    line's ancestors, line by line (_with_stubs). Same output, bids parsed or not."""
    from lrlib.core.pruning import _structure, _with_stubs

    lines = [
        ("\t" * d) + (f"[{i}] button 'b{i}'" if i % 3 else "StaticText 'x'")
        for i, d in enumerate(depths)
    ]
    tree = parse("\n".join(lines))
    sel = Selection.from_ranges(raw, len(tree))
    reference = _with_stubs(parse(tree.text), sel, "structure", markers)
    if parsed:
        _ = tree.bids
    assert _structure(tree, sel, markers) == reference


@settings(max_examples=200, deadline=None)
@given(
    raw=st.lists(st.tuples(st.integers(-3, 70), st.integers(-3, 70)), max_size=8),
    n_claimed=st.integers(0, 80),
    strategy=st.sampled_from(STRATEGIES),
)
def test_hand_made_selections_are_normalised_as_from_ranges_would(ipad, raw, n_claimed, strategy):
    """prune trusts a Selection's ranges only when they are already normal for the tree
    (ints, sorted, disjoint, not touching, within 1..n); anything else is re-normalised."""
    tree = parse("\n".join(ipad.texts[:60]))
    hand_made = Selection(tuple(raw), n_claimed)
    normal = Selection.from_ranges(raw, len(tree))
    assert prune(tree, hand_made, strategy) == prune(tree, normal, strategy)
    assert prune(tree, Selection(((True, 2),), 9), strategy) == prune(tree, [1, 2], strategy)
