"""The learned scorer's faster pricing and ranking give what the frozen copies give (issue 24):
stubs counted by their shape (a bid's digits as zeros, :func:`~lrlib.reducers.budget.page_costs`)
on odd bids and indentation, and BM25 summed over the scored terms only."""

from __future__ import annotations

import legacy_budget
import legacy_features as legacy
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lrlib.core.step import Step
from lrlib.core.tokens import count_each
from lrlib.reducers.bm25 import bm25_scores
from lrlib.reducers.budget import digit_pieces, page_costs

_BIDS = st.one_of(
    st.integers(0, 10**9).map(str),
    st.from_regex(r"[a-z]{1,3}[0-9]{0,8}", fullmatch=True),
    st.sampled_from(["A1", "a1b", "1a", "a_1", "é12", "١٢", "12.5", "0007", "a000"]),
)
_ROLES = st.sampled_from(["button", "link", "StaticText", "LayoutTableCell", "x-widget", "h1"])
_INDENT = st.text(alphabet="\t ", max_size=4)


@st.composite
def _trees(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        bid = draw(st.none() | _BIDS)
        role = draw(st.none() | _ROLES)
        head = " ".join(x for x in (f"[{bid}]" if bid is not None else None, role) if x)
        lines.append(draw(_INDENT) + (head or "'x'") + draw(st.sampled_from(["", " 'Go'"])))
    return "\n".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees(), st.sampled_from(["o200k_base", "cl100k_base"]))
def test_stubs_priced_by_shape_cost_what_they_cost(tree, encoding):
    step = Step(goal="g", tree=tree)
    tokens, stubs = page_costs(step, encoding)
    old_tokens, old_stubs = legacy_budget.page_costs(step, encoding)
    assert np.array_equal(tokens, old_tokens) and np.array_equal(stubs, old_stubs)
    t = step.axtree
    exact = count_each([t.stub(i) + "\n" for i in range(len(t))], encoding)
    assert stubs.tolist() == exact


def test_digit_pieces_only_for_the_encodings_it_knows():
    assert digit_pieces("o200k_base") and digit_pieces("cl100k_base")
    assert not digit_pieces("p50k_base")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab cd ab_ é1 2", max_size=20), max_size=8),
    st.text(alphabet="ab cd 12 the", max_size=20),
)
def test_bm25_over_the_scored_terms_only_is_bit_for_bit(docs, query):
    """Repeated query words, words absent from every document, empty documents."""
    new, old = bm25_scores(docs, query), legacy.bm25_scores(docs, query)
    assert new.dtype == old.dtype and np.array_equal(new, old)


def test_goal_terms_inside_one_token_are_each_found():
    """A BM25 token holding runs of several goal terms (cut at ``_`` or at a character
    other than ASCII), of one term twice, or of a term and a stop word."""
    from lrlib.reducers.features import line_features

    names = ["cart_order", "cartéorder x", "order_order", "the_cart", "ordering_1_cart", ""]
    tree = "\n".join(f"[{k}] link '{name}'" for k, name in enumerate(names))
    for goal in ("Order 1 cart", "the cart", "", "ordering carts"):
        step = Step(goal=goal, tree=tree, history=("click('2')",))
        assert np.array_equal(line_features(step), legacy.line_features(step))
