"""Numbering and pruning against AgentLab's own FocusAgent code (add_line_numbers_to_tree,
LlmRetrieverUtils.remove_lines / remove_lines_keep_structure), on recorded and generated trees.

``remove-agentlab``, ``bid-agentlab`` and ``bid+role-agentlab`` must be identical to the
peer; lrlib's own ``remove`` equals it once markers are normalised; lrlib's own ``bid`` /
``bid+role`` differ in the documented ways only (`docs/fidelity.md`).
"""

from __future__ import annotations

import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peer_import import peer, recorded_steps, tree_lines

from lrlib.core.axtree import AxTree, parse
from lrlib.core.pruning import prune
from lrlib.core.ranges import Selection

PLACEHOLDERS = {"bid-agentlab": "bid", "bid+role-agentlab": "bid+role"}


def random_selection(n: int, rng: random.Random) -> list[int]:
    """Line numbers of 0-8 random ranges (what a retriever answer expands to)."""
    lines: set[int] = set()
    for _ in range(rng.randint(0, 8)):
        a = rng.randint(1, n)
        lines.update(range(a, min(n, a + rng.randint(0, max(1, n // 5))) + 1))
    return sorted(lines)


def check_faithful(tree: AxTree, lines: list[int]) -> None:
    utils = peer().retriever_utils
    text = tree.text
    sel = Selection.from_lines(lines, len(tree))
    assert prune(tree, sel, "remove-agentlab").text == utils.remove_lines(text, lines)
    for ours, theirs in PLACEHOLDERS.items():
        expected = utils.remove_lines_keep_structure(text, lines, strategy=theirs)
        assert prune(tree, sel, ours).text == expected
    # lrlib's own remove: the same lines, markers placed and worded differently
    canon = re.compile(r"^\s*\.\.\. (?:pruned (\d+) lines|(\d+) lines pruned) \.\.\.$", re.M)
    norm = lambda s: canon.sub(lambda m: f"<{m[1] or m[2]}>", s)  # noqa: E731
    assert norm(prune(tree, sel, "remove").text) == norm(utils.remove_lines(text, lines))


def test_numbering_is_agentlabs_on_recorded_trees():
    number = peer().focus_utils.add_line_numbers_to_tree
    steps = recorded_steps()
    assert len(steps) >= 100
    for step in steps:
        assert step.axtree.numbered("{n:>4} ") == number(step.tree)
        # and lrlib's line n is the peer's line n (the numbering pruning relies on)
        assert step.axtree.texts == step.tree.strip().splitlines()


def test_pruning_is_agentlabs_on_recorded_trees():
    rng = random.Random(13)
    utils = peer().retriever_utils
    differ = {"bid": 0, "bid+role": 0}
    for step in recorded_steps():
        tree = step.axtree
        lines = random_selection(len(tree), rng)
        check_faithful(tree, lines)
        for ours in differ:
            theirs = utils.remove_lines_keep_structure(tree.text, lines, strategy=ours)
            if prune(tree, lines, ours, markers=False).text != theirs:
                differ[ours] += 1
    # lrlib's own placeholders are not AgentLab's (they were once documented as such)
    assert min(differ.values()) >= 0.9 * len(recorded_steps()), differ


def test_own_placeholders_differ_only_as_documented():
    """lrlib's bid / bid+role = AgentLab's, minus the placeholders of lines without a bid,
    minus " ... removed ...", and with the parsed role instead of the second word."""
    utils = peer().retriever_utils
    rng = random.Random(7)
    for step in recorded_steps()[::4]:
        tree = step.axtree
        lines = random_selection(len(tree), rng)
        kept = set(lines)
        for strategy in ("bid", "bid+role"):
            theirs = utils.remove_lines_keep_structure(tree.text, lines, strategy).split("\n")
            ours = prune(tree, lines, strategy, markers=False).lines
            expected = [
                line if i + 1 in kept else tree.stub(i) if strategy == "bid+role" else
                tree.texts[i][: tree.indents[i]] + f"[{tree.bids[i]}]"
                for i, line in enumerate(theirs)
                if i + 1 in kept or tree.bids[i] is not None
            ]  # fmt: skip
            assert ours == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=tree_lines(), seed=st.integers(0, 2**16))
def test_generated_trees(lines, seed):
    tree = parse("\n".join(lines))
    assert tree.texts == lines
    check_faithful(tree, random_selection(len(tree), random.Random(seed)))
    number = peer().focus_utils.add_line_numbers_to_tree
    text = "\n".join(lines)
    if text == text.strip():  # AgentLab strips the tree before numbering (documented)
        assert tree.numbered("{n:>4} ") == number(text)


def test_documented_numbering_differences():
    number = peer().focus_utils.add_line_numbers_to_tree
    utils = peer().retriever_utils
    # blank lines: AgentLab numbers them; lrlib drops them, so line 3 is "[2] b" for lrlib
    raw = "RootWebArea 'x'\n\n\t[2] b"
    assert number(raw).split("\n")[2] == "   3 \t[2] b"
    assert parse(raw).numbered("{n:>4} ").split("\n")[1] == "   2 \t[2] b"
    # str.splitlines separators inside page text ("\x0c", "\u2028") split AgentLab's lines
    odd = "RootWebArea 'x'\n\t[2] StaticText 'a\u2028b'\n\t[3] button 'c'"
    assert len(parse(odd)) == 3 and len(number(odd).split("\n")) == 4
    # AgentLab numbers the stripped text but prunes the raw one: a leading blank line
    # shifts every line it prunes by one
    shifted = "\nRootWebArea 'x'\n\t[2] button 'b'"
    assert number(shifted).split("\n")[1] == "   2 \t[2] button 'b'"
    assert (
        utils.remove_lines(shifted, [2])
        == "... pruned 1 lines ...\nRootWebArea 'x'\n... pruned 1 lines ..."
    )
    assert prune(shifted, [2], "remove-agentlab").text == "... pruned 1 lines ...\n\t[2] button 'b'"


def test_special_token_text_in_a_page():
    """AgentLab's get_nb_tokens refuses page text that spells a special token; lrlib counts it."""
    import pytest

    from lrlib.core.tokens import count_tokens

    page = "RootWebArea 'x'\n\t[2] StaticText 'see <|endoftext|> here'"
    with pytest.raises(ValueError, match="special token"):
        peer().focus_utils.get_nb_tokens(page)
    assert count_tokens(page) > 0
