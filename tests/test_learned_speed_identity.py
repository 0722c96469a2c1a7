"""The learned scorer's faster pricing and ranking give what the frozen copies give (issue 24):
stubs counted by their shape (a bid's digits as zeros, :func:`~lrlab.reducers.budget.page_costs`)
on odd bids, roles and indentation, the searched rows found only for goal terms on the page,
BM25 summed over the scored terms only, and the guard read only where a line could be shown."""

from __future__ import annotations

import legacy_budget
import legacy_features as legacy
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lrlab.reducers.bm25 import bm25_scores
from lrlab.reducers.budget import digit_pieces, page_costs, searched_rows
from lrlib.core.step import Step
from lrlib.core.tokens import count_each

_BIDS = st.one_of(
    st.integers(0, 10**9).map(str),
    st.integers(0, 10**9).map(str),
    st.from_regex(r"[a-z]{1,2}[0-9]{0,8}", fullmatch=True),
    st.from_regex(r"[a-z]{1,3}[0-9]{0,8}", fullmatch=True),
    st.sampled_from(["A1", "a1b", "1a", "a_1", "é12", "١٢", "12.5", "0007", "a000"]),
)
_KNOWN = st.sampled_from(
    ["button", "link", "StaticText", "LayoutTableCell", "RootWebArea", "option", "gridcell"]
)
_ROLES = st.one_of(_KNOWN, _KNOWN, _KNOWN, st.sampled_from(["x-widget", "h1", "Date", "URL", "aé"]))
_INDENT = st.one_of(
    st.integers(0, 6).map("\t".__mul__),
    st.integers(0, 6).map("\t".__mul__),
    st.text(alphabet="\t ", max_size=4),
    st.integers(60, 70).map("\t".__mul__),
)


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


_IDS = st.sampled_from(["2065555555", "A-1007", "x@y.com", "1007", "007", "2065", "Ab12"])


@st.composite
def _tables(draw) -> tuple[str, str]:
    """A goal naming identifiers and a page of table rows, some showing them."""
    lines = ["[1] textbox 'Search' value='" + draw(_IDS) + "'", "[2] table ''"]
    for r in range(draw(st.integers(0, 6))):
        lines.append(f"\t[{10 * r + 3}] {draw(st.sampled_from(['row', 'rowgroup']))} ''")
        for c in range(draw(st.integers(0, 3))):
            role = draw(st.sampled_from(["cell", "gridcell", "rowheader", "StaticText"]))
            lines.append(
                f"\t\t[{10 * r + 4 + c}] {role} '{draw(_IDS)} {draw(st.sampled_from(['x', 'Y', '']))}'"
            )
    goal = " ".join(
        draw(st.lists(_IDS | st.sampled_from(["Find", "the", "order", "a1,"]), max_size=5))
    )
    return goal, "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(_tables())
def test_searched_rows_equal_the_frozen_copy(case):
    goal, tree = case
    step = Step(goal=goal, tree=tree)
    assert searched_rows(step) == legacy_budget.searched_rows(step)


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
    from lrlab.reducers.features import line_features

    names = ["cart_order", "cartéorder x", "order_order", "the_cart", "ordering_1_cart", ""]
    tree = "\n".join(f"[{k}] link '{name}'" for k, name in enumerate(names))
    for goal in ("Order 1 cart", "the cart", "", "ordering carts"):
        step = Step(goal=goal, tree=tree, history=("click('2')",))
        assert np.array_equal(line_features(step), legacy.line_features(step))


@st.composite
def _pages(draw) -> tuple:
    """Random ranked pages: probabilities, costs, a forest, form controls, companions,
    carriers and the lines a guard would flag."""
    n = draw(st.integers(1, 30))
    p = np.array(
        draw(st.lists(st.sampled_from([0.0, 0.01, 0.2, 0.5, 0.9]), min_size=n, max_size=n))
    )
    tokens = np.array(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n)), float)
    stubs = np.minimum(tokens, 3.0)
    parents = [-1] + [draw(st.integers(-1, i - 1)) for i in range(1, n)]
    whole = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    companions = [draw(st.lists(st.integers(0, n - 1), max_size=2)) for _ in range(n)]
    first = draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True))
    flagged = set(draw(st.lists(st.integers(0, n - 1), max_size=n)))
    knobs = (draw(st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0])), draw(st.sampled_from([0, 5, 30])),
             draw(st.sampled_from([0.0, 0.05, 0.3])))  # fmt: skip
    return p, tokens, stubs, parents, whole, companions, first, flagged, knobs


@settings(max_examples=400, deadline=None)
@given(_pages())
def test_the_lazy_guard_keeps_what_banning_every_flagged_line_keeps(page):
    """Reading only the lines that could be shown gives the cut of banning all flagged
    lines first (``budget.guarded_lines``), whatever the page, the knobs and the flags."""
    from lrlab.reducers.budget import guarded_lines, kept_lines, n_kept, rank_lines

    p, tokens, stubs, parents, whole, companions, first, flagged, knobs = page

    def rank(banned):
        keep_first = [i for i in first if i not in banned]
        return rank_lines(p, tokens, stubs, parents, whole, keep_first, banned, companions)

    asked = []
    eager = rank(sorted(flagged))
    lazy = guarded_lines(rank, knobs, lambda i: asked.append(i) or i in flagged)
    assert lazy == kept_lines(eager, n_kept(eager, *knobs))
    assert len(asked) == len(set(asked))  # each line's text read at most once


def test_the_lazy_guard_on_planted_attacks():
    """Real trees with the injection benchmark's attacks planted: the learned reducer keeps
    what it keeps when every suspect line of the page is banned first, at several budgets."""
    from lrlab.injection.injection_sets import build_set
    from lrlab.reducers.budget import kept_lines, n_kept
    from lrlab.reducers.suspect import suspect_lines
    from lrlib.data.dataset import load_steps
    from lrlib.reducers import get_reducer

    learned = get_reducer("learned")
    attacked = [item.step for item in build_set(load_steps(), n=30)]
    flagged = 0
    for s in attacked:
        full = learned.ranking(s)  # every suspect line banned up front
        flagged += bool(suspect_lines(s))
        for budget in (0.05, 0.24, 0.6):
            k = n_kept(full, budget, learned.overhead, learned.floor)
            assert learned.keep(s, budget=budget) == kept_lines(full, k), s.step_id
    assert flagged >= len(attacked) // 2  # the attacks are what the guard flags
