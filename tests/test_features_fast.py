"""The one-pass numpy feature extraction gives the per-line definitions' values exactly, and
the learned, program and bm25 reducers keep the same lines as before it (issue 24).

The reference is ``tests/legacy_features.py``: a frozen copy of the per-line implementation
(lexicon, features, bm25 through the ``bm25s`` package, ``Learned.ranking``), and
``tests/legacy_budget.py``: frozen ``page_costs`` and ``rank_lines``.
"""

from __future__ import annotations

import functools
import re

import legacy_budget
import legacy_features as legacy
import numpy as np
import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lrlab.reducers import bm25 as bm25_module
from lrlab.reducers import program as program_module
from lrlab.reducers.bm25 import STOPWORDS, bm25_scores, token_lines
from lrlab.reducers.budget import companion_lines, page_costs, rank_lines, whole_lines
from lrlab.reducers.features import (
    FEATURES,
    GROUPS,
    kid_pairs,
    kids_text,
    line_features,
    line_names,
)
from lrlab.reducers.lexicon import (
    normalise,
    normalise_lines,
    term_matcher,
    utf8_term_finds,
)
from lrlib.core import tokens
from lrlib.core.step import Step
from lrlib.core.tokens import count_lines, count_tokens
from lrlib.data import dataset as data
from lrlib.reducers import get_reducer

OOD = REPO / "data" / "miniwob_ood.jsonl.gz"


@pytest.fixture(scope="module")
def all_steps() -> list[Step]:
    """Every shipped step (train, validation, test) and every MiniWoB page."""
    return data.load_steps() + data.load_steps(path=OOD)


@pytest.fixture(scope="module")
def legacy_X(all_steps) -> list[np.ndarray]:
    """The frozen per-line features of every step (in ``all_steps`` order), computed once
    for the tests here."""
    return [legacy.line_features(s) for s in all_steps]


@functools.cache
def _learned():
    return get_reducer("learned")


def _differs(a: np.ndarray, b: np.ndarray) -> list[str]:
    return sorted({FEATURES[j] for j in np.flatnonzero((a != b).any(axis=0))})


def test_features_equal_the_per_line_definitions_on_every_real_step(all_steps, legacy_X):
    assert len(all_steps) > 800
    wrong = {}
    for s, old in zip(all_steps, legacy_X, strict=True):
        new = line_features(s)
        if new.shape != old.shape or not np.array_equal(new, old):
            wrong[s.step_id] = _differs(new, old) if new.shape == old.shape else "shape"
    assert not wrong


def test_learned_keeps_the_same_lines_on_every_real_step(all_steps, legacy_X):
    learned = get_reducer("learned")
    pairs = list(zip(all_steps, legacy_X, strict=True))
    changed = [s.step_id for s, X in pairs if learned.keep(s) != legacy.keep(learned, s, X=X)]
    assert not changed
    # and at another budget, where more lines are ranked in
    assert all(
        learned.keep(s, budget=0.6) == legacy.keep(learned, s, 0.6, X) for s, X in pairs[::7]
    )


def test_bm25_gives_bm25s_numbers_bit_for_bit(all_steps):
    from bm25s.stopwords import STOPWORDS_EN

    from lrlab.reducers.chunking import query_of

    assert tuple(STOPWORDS) == tuple(STOPWORDS_EN)
    for s in all_steps[::3]:
        names = line_names(s.axtree)
        for docs in (names, [t.strip() for t in s.axtree.texts]):
            new, old = bm25_scores(docs, query_of(s)), legacy.bm25_scores(docs, query_of(s))
            assert new.dtype == old.dtype == np.float32
            assert np.array_equal(new, old), s.step_id


def test_program_and_bm25_reducers_select_as_before(all_steps, monkeypatch):
    program, bm25 = get_reducer("program"), get_reducer("bm25")
    steps = all_steps
    now = [(program.select(s).kept, bm25.select(s).kept) for s in steps]
    monkeypatch.setattr(program_module, "term_matcher", legacy.term_matcher)
    monkeypatch.setattr(bm25_module, "bm25_scores", legacy.bm25_scores)
    before = [(program.select(s).kept, bm25.select(s).kept) for s in steps]
    assert now == before


def test_kid_pairs_are_the_kids_text(all_steps):
    for s in all_steps[::5]:
        t = s.axtree
        names = line_names(t)
        text = [""] * len(t)
        for q, i in zip(*(a.tolist() for a in kid_pairs(t)), strict=True):
            text[q] += names[i] + "\n"
        assert text == kids_text(t, names)


def test_line_names_equal_the_per_line_definition(all_steps):
    for s in all_steps:
        assert line_names(s.axtree) == legacy.line_names(s.axtree), s.step_id


def _same_ranking(new, old) -> bool:
    return (
        np.array_equal(new.order, old.order)
        and np.array_equal(new.p, old.p)
        and np.array_equal(new.cost, old.cost)
        and new.total == old.total
        and np.array_equal(new.kept_at, old.kept_at)
        and new.kept_at.dtype == old.kept_at.dtype
    )


def _rank_inputs(learned, s: Step):
    from lrlab.reducers.features import carriers
    from lrlab.reducers.suspect import suspect_lines

    X = line_features(s)
    p = learned.model.predict(X)
    banned = [n - 1 for n in suspect_lines(s)]
    first = [i for i in carriers(X, p, learned.rescue) if i not in banned]
    return p, s.axtree.parents, whole_lines(s), first, banned, companion_lines(s)


def test_page_costs_and_rank_lines_equal_the_frozen_copies(all_steps):
    learned = get_reducer("learned")
    for s in all_steps:
        tokens, stubs = page_costs(s, learned.encoding)
        old_tokens, old_stubs = legacy_budget.page_costs(s, learned.encoding)
        assert np.array_equal(tokens, old_tokens) and np.array_equal(stubs, old_stubs), s.step_id
        p, parents, whole, first, banned, companions = _rank_inputs(learned, s)
        for args in (
            (p, tokens, stubs, parents, whole, first, banned, companions),
            (p, tokens, stubs, parents, whole, first, banned, None),
            (p, tokens, stubs, parents),
        ):
            new, old = rank_lines(*args), legacy_budget.rank_lines(*args)
            assert _same_ranking(new, old), s.step_id


def _page_count_from_the_memo(step: Step) -> None:
    """The page's count from the line counts :func:`page_costs` leaves in the memo equals
    its count with no memo (toktok or tiktoken on the whole text)."""
    texts = step.axtree.texts
    tokens.clear_line_memo()
    page_costs.cache_clear()  # its own per-step memo: count this time
    whole = count_lines(texts)
    page_costs(step, "o200k_base")
    assert set(texts[:-1]) <= tokens._line_memo["o200k_base"].keys()  # the memo path
    assert count_lines(texts) == whole == count_tokens("\n".join(texts))


def test_page_count_from_the_line_counts_page_costs_leaves(all_steps):
    for s in all_steps:
        _page_count_from_the_memo(s)


# --- generated trees: odd roles, names, quotes, unicode, attributes, goals, histories ---

_ROLES = sorted({r for roles in GROUPS.values() for r in roles}) + ["x-widget", "Foo"]
_WORDS = ["add", "cart", "the", "their", "theirs", "please", "pleased", "Best-selling",
          "bestsellers", "3", "33", "x", "İstanbul", "ΣΑΣ", "naïve", "ß", "tab #2", "no",
          "Submit", "colour", "é", "_a_", "click", "url", "focused"]  # fmt: skip
_word = st.sampled_from(_WORDS) | st.text(alphabet="abcXY19 _-'\\\"#é", max_size=6)
_text = st.lists(_word, max_size=6).map(" ".join)


# the strategies are built once: a strategy built inside a draw is validated at every draw,
# which cost about a fifth of this test's time
_BID = st.none() | st.integers(0, 30).map(str)
_ROLE = st.none() | st.sampled_from(_ROLES)
_EXTRAS = st.lists(
    st.sampled_from(["url='http://x.example/a'", "focused", "autofocus", "checked='true'",
                     "selected=True", "value='5'", "value=''", "pressed='true'"]),
    max_size=3,
)  # fmt: skip
_GOAL_TAIL = st.sampled_from(["", ' "Submit"', " 'no' button", ' {"cart": False}',
                              " uncheck 'add'", " the text field"])  # fmt: skip
_DEPTH = functools.cache(lambda depth: st.integers(0, depth + 1))  # one strategy per depth
_HISTORY = st.lists(
    st.integers(0, 30).map(lambda b: f"click('{b}')") | st.just("scroll(0, 3)"), max_size=3
)


def _line(draw, depth: int) -> str:
    """One tree line at ``depth``: an optional bid and role, a name, optional attributes."""
    bid, role, name, extras = draw(_BID), draw(_ROLE), draw(_text), draw(_EXTRAS)
    head = (f"[{bid}] " if bid is not None else "") + (role or "")
    quoted = "'" + name.replace("'", "\\'") + "'" if draw(st.booleans()) else name
    return (
        "\t" * depth + " ".join(x for x in (head, quoted) if x) + "".join(", " + e for e in extras)
    )


@st.composite
def _steps(draw) -> Step:
    n = draw(st.integers(0, 40))
    lines, depth = [], 0
    for _ in range(n):
        depth = draw(_DEPTH(depth)) if draw(st.booleans()) else depth
        lines.append(_line(draw, depth))
    if draw(st.booleans()):  # a jump of two levels: parents by the stack
        lines.append("\t" * (depth + 2) + "StaticText 'deep'")
    goal = draw(_text) + draw(_GOAL_TAIL)
    history = draw(_HISTORY)
    return Step(goal=goal, tree="\n".join(t for t in lines if t.strip()), history=tuple(history))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_steps())
def test_features_equal_the_per_line_definitions_on_generated_trees(step):
    new, old = line_features(step), legacy.line_features(step)
    assert new.shape == old.shape
    assert np.array_equal(new, old), _differs(new, old)
    # and line names, page costs and the ranking (one generated tree serves all: drawing
    # one costs more than checking it)
    assert line_names(step.axtree) == legacy.line_names(step.axtree)
    learned = _learned()
    tokens, stubs = page_costs(step, learned.encoding)
    old_tokens, old_stubs = legacy_budget.page_costs(step, learned.encoding)
    assert np.array_equal(tokens, old_tokens) and np.array_equal(stubs, old_stubs)
    p, *rest = _rank_inputs(learned, step)
    args = (p, tokens, stubs, *rest)
    assert _same_ranking(rank_lines(*args), legacy_budget.rank_lines(*args))
    _page_count_from_the_memo(step)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0, 1), min_size=n, max_size=n),
            st.lists(st.integers(1, 40), min_size=n, max_size=n),
            st.lists(st.integers(1, 9), min_size=n, max_size=n),
            st.lists(st.integers(-1, 30), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.lists(st.integers(0, max(0, n - 1)), max_size=3 if n else 0),
            st.lists(st.integers(0, max(0, n - 1)), max_size=3 if n else 0),
            st.lists(st.lists(st.integers(0, max(0, n - 1)), max_size=2), min_size=n, max_size=n),
        )
    )
)
def test_rank_lines_equals_the_frozen_copy_on_generated_arrays(args):
    p, tokens, stubs, parents, whole, first, banned, companions = args
    parents = [q if q < i else -1 for i, q in enumerate(parents)]  # a parent comes first
    a = (np.array(p, float), np.array(tokens, float), np.array(stubs, float), parents,
         np.array(whole, bool), first, sorted(set(banned)), companions)  # fmt: skip
    assert _same_ranking(rank_lines(*a), legacy_budget.rank_lines(*a))


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, max_size=12), _text)
def test_bm25_bit_for_bit_on_generated_text(docs, query):
    new, old = bm25_scores(docs, query), legacy.bm25_scores(docs, query)
    assert new.dtype == old.dtype and np.array_equal(new, old)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=30) | st.text(alphabet="aB1 \t\n\r\x0b\x1c_#@$%&+./:-'\"(é", max_size=30))
def test_normalise_is_the_frozen_normalise(text):
    """ASCII by a byte table: newlines, tabs, other control characters as separators."""
    assert normalise(text) == legacy.normalise(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12).filter(lambda t: "\n" not in t), max_size=8))
def test_normalise_lines_is_normalise_of_each(texts):
    assert normalise_lines(texts) == [normalise(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["best", "pro", "3", "12", "add", "silver", "x1"]), max_size=4),
       _text)  # fmt: skip
def test_term_matcher_finds_what_it_found(terms, text):
    new, old = term_matcher(terms), legacy.term_matcher(terms)
    assert (new is None) == (old is None)
    if new is not None:
        low = text.lower()
        assert [m.span() for m in new.finditer(low)] == [m.span() for m in old.finditer(low)]
        assert re.compile(new.pattern) is not None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["best", "pro", "3", "12", "1", "add", "aa", "aaaa", "x1", "be", "k"]),
             max_size=5, unique=True),
    st.text(alphabet="abestpro1230x _-\néKİ\u212a\ud800\U0001d41a١", max_size=40),
)  # fmt: skip
def test_utf8_term_finds_are_the_matches_of_the_frozen_matcher(terms, text):
    """The same matches in the text's UTF-8 bytes: after a letter other than ASCII (two,
    three or four bytes), a lone surrogate, a digit other than ASCII."""
    low = text.lower()
    data = low.encode("utf-8", "surrogatepass")
    old = legacy.term_matcher(terms)
    expected = [(m.start(), m[0]) for m in old.finditer(low)] if old is not None else []
    found = utf8_term_finds(terms, data)
    assert [(len(data[:p].decode("utf-8", "surrogatepass")), terms[r]) for p, r in found] == (
        expected
    )


@given(st.binary(max_size=60).map(lambda b: bytes(c if c > 32 or c == 10 else 32 for c in b)))
def test_token_lines_are_the_lines_of_split_tokens(data):
    """Bytes above 127 (UTF-8 of other characters), runs of spaces and newlines, leading
    and trailing ones."""
    lines = [i for i, line in enumerate(data.split(b"\n")) for _ in line.split()]
    assert token_lines(data).tolist() == lines


def test_odd_characters_take_the_slow_path_alike():
    """Lines with characters other than ASCII (a lone surrogate, a capital dotted I, a
    Kelvin sign that lower-cases to ASCII) count as the per-line definitions count them."""
    docs = ["Add \ud800 cart", "İstanbul KELVIN \u212a cart", "ΣΑΣ cart_2 x", "", "a b  c"]
    for query in ("cart", "istanbul k cart_2", "σας"):
        assert np.array_equal(bm25_scores(docs, query), legacy.bm25_scores(docs, query))
    assert normalise_lines(docs) == [normalise(t) for t in docs]
    tree = "\n".join(f"[{k}] button '{d}'" for k, d in enumerate(docs))
    step = Step(goal="Click the İstanbul cart", tree=tree)
    assert np.array_equal(line_features(step), legacy.line_features(step))
    # goal terms next to letters other than ASCII, an underscore, a Kelvin sign
    tree = "\n".join(f"[{k}] link '{d}'" for k, d in enumerate(
        ["éstanbul_cart cartés", "Kelvin kelvins 2_cart", "l'ordre ordering 10x 10", ""]))  # fmt: skip
    for goal in ("Order 10 kelvins of cart", "", "the it 10"):
        step = Step(goal=goal, tree=tree, history=("click('1')",))
        assert np.array_equal(line_features(step), legacy.line_features(step))
