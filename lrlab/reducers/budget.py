"""Keeping a page's best lines within a token budget (the learned scorer's selection rule).

Lines are taken best first; each brings the ``[bid] role`` stubs of its ancestors not shown
yet (the structure-preserving rendering), and an ancestor that is a form control (a
``combobox`` or ``listbox`` around a kept option: ``whole``) comes verbatim instead, since the
option is chosen *through* it. :func:`rank_lines` prices every prefix of that order once;
:func:`n_kept` then answers "how many fit in ``budget * page tokens + overhead``, none below
probability ``floor``" with two binary searches, so a knob grid costs microseconds a step.

>>> p = np.array([0.1, 0.9, 0.5])
>>> r = rank_lines(p, np.array([5.0, 4, 3]), np.array([2.0, 2, 2]), [-1, 0, 0])
>>> r.order.tolist(), r.cost.tolist(), kept_lines(r, n_kept(r, 0.75))
([1, 2, 0], [6.0, 9.0, 12.0], [2, 3])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from lrlab.reducers.features import ROLE_OF, role_group, unfocused
from lrlab.reducers.memo import per_step
from lrlib.core.step import Step


@dataclass(frozen=True)
class Ranking:
    """A step's lines best first: ``order`` (0-based lines), their probabilities ``p``
    (descending), ``cost[k]`` the tokens of keeping ``order[:k + 1]`` with the stubs of
    their ancestors, ``total`` the page's tokens, and ``kept_at[i]`` the prefix index from
    which line ``i`` is shown verbatim (its own turn, or earlier as a ``whole`` ancestor)."""

    order: np.ndarray
    p: np.ndarray
    cost: np.ndarray
    total: float
    kept_at: np.ndarray


def rank_lines(
    p: np.ndarray,
    tokens: np.ndarray,
    stub_tokens: np.ndarray,
    parents: Sequence[int],
    whole: np.ndarray | None = None,
    first: Sequence[int] = (),
    banned: Sequence[int] = (),
    companions: Sequence[Sequence[int]] | None = None,
) -> Ranking:
    """Order lines by ``p`` (ties: page order; the 0-based lines ``first`` before all) and
    price every prefix: a line costs its ``tokens`` (nothing when already shown verbatim,
    less its stub's when shown as a stub), plus its ancestors not shown yet: ``stub_tokens``
    each, or ``tokens`` for those flagged ``whole`` (kept verbatim). The 0-based lines
    ``banned`` rank last with probability -1 (so no ``floor`` admits them), and are never
    shown verbatim: an ancestor among them is a stub even when ``whole``. ``companions[i]``:
    0-based lines shown verbatim, at its cost, whenever line ``i`` is (a choice's question,
    a field's label: :func:`lrlib.data.evidence.context_lines`).

    >>> r = rank_lines(np.array([0.2, 0.1, 0.9]), np.array([5.0, 6, 3]), np.array([2.0, 2, 2]),
    ...                [-1, 0, 1], whole=np.array([False, True, False]))
    >>> r.order.tolist(), r.cost.tolist(), r.kept_at.tolist()  # line 1 comes whole with 2
    ([2, 0, 1], [11.0, 14.0, 14.0], [1, 0, 0])
    >>> r = rank_lines(np.array([0.2, 0.1, 0.9]), np.array([5.0, 6, 3]), np.array([2.0, 2, 2]),
    ...                [-1, 0, 1], whole=np.array([False, True, False]), banned=[1])
    >>> r.p.tolist(), r.cost.tolist(), r.kept_at.tolist()  # banned 1: a stub, never verbatim
    ([0.9, 0.2, -1.0], [7.0, 10.0, 10.0], [1, 3, 0])
    >>> r = rank_lines(np.array([0.2, 0.1, 0.9]), np.array([5.0, 6, 3]), np.array([2.0, 2, 2]),
    ...                [-1, -1, -1], companions=[[], [], [1]])
    >>> r.cost.tolist(), r.kept_at.tolist()  # line 1, the companion of 2, comes with it
    ([9.0, 14.0, 14.0], [1, 0, 0])
    """
    n = len(p)
    rank = np.asarray(p, float).copy()
    if len(first):
        rank[list(first)] = 2.0  # above any probability
    barred = np.zeros(n, bool)
    if len(banned):
        barred[list(banned)] = True
        rank[barred] = -1.0  # below any probability
    order = np.argsort(-rank, kind="stable")
    # plain Python lists and floats in the loop (numpy scalars cost more to index; the same
    # IEEE additions, so the same costs)
    cost, stub = np.asarray(tokens, float).tolist(), np.asarray(stub_tokens, float).tolist()
    up = np.asarray(parents, np.int64).reshape(n).tolist()
    whole_ = np.asarray(whole, bool).tolist() if whole is not None else [False] * n
    bar = barred.tolist()
    shown = [0] * n  # 0 hidden, 1 stub, 2 verbatim
    kept_at = [n] * n
    steps = [0.0] * n
    for k, a in enumerate(order.tolist()):
        if bar[a] or shown[a] == 2:
            continue  # costs nothing: never shown (the floor stops before it), or shown
        q = up[a]
        if (q < 0 or shown[q]) and (companions is None or not companions[a]):
            # the usual line: its parent shown already, nothing brought along (the sum
            # below for this one line: 0.0 plus its cost, the same float)
            steps[k] = cost[a] - (stub[a] if shown[a] else 0.0)
            shown[a], kept_at[a] = 2, k
            continue
        add = 0.0
        todo = [a]
        while todo:
            b = todo.pop()
            if shown[b] == 2 or bar[b]:
                continue
            add += cost[b] - (stub[b] if shown[b] else 0.0)
            shown[b], kept_at[b] = 2, k
            if companions is not None:
                todo += companions[b]
            q = up[b]
            while q >= 0 and shown[q] == 0:
                shown[q] = 1  # a stub (a ``whole`` one made verbatim below)
                add += stub[q]
                if whole_[q] and not bar[q]:
                    todo.append(q)
                q = up[q]
        steps[k] = add
    return Ranking(order, np.minimum(rank[order], 1.0), np.cumsum(np.array(steps, float)),
                   float(np.sum(tokens)), np.array(kept_at, int))  # fmt: skip


def n_kept(r: Ranking, budget: float, overhead: float = 0.0, floor: float = 0.0) -> int:
    """How many of the best lines fit in ``budget * r.total + overhead`` tokens, none below
    probability ``floor`` (at least one line whenever the page has one).

    >>> r = Ranking(np.arange(4), np.array([0.9, 0.5, 0.2, 0.01]), np.array([3.0, 6, 9, 12]), 12,
    ...             np.arange(4))
    >>> n_kept(r, 0.5), n_kept(r, 0.5, overhead=3), n_kept(r, 1.0, floor=0.1), n_kept(r, 0.0)
    (2, 3, 3, 1)
    """
    fits = int(np.searchsorted(r.cost, budget * r.total + overhead, side="right"))
    above = int(np.searchsorted(-r.p, -floor, side="right"))
    return max(min(fits, above), min(1, len(r.order)))


def kept_lines(r: Ranking, k: int) -> list[int]:
    """The 1-based lines shown verbatim when the best ``k`` are taken."""
    return (np.flatnonzero(r.kept_at < k) + 1).tolist()


def guarded_lines(
    rank: Callable[[Sequence[int]], Ranking],
    knobs: tuple[float, float, float],
    suspect: Callable[[int], bool],
) -> list[int]:
    """The 1-based lines shown verbatim when every 0-based line that ``suspect`` flags is
    banned (``rank``: the page's :func:`rank_lines` for a list of banned lines; ``knobs``:
    :func:`n_kept`'s budget, overhead and floor), asking ``suspect`` only about lines that
    could be shown. Banning a line moves it last, so the lines before the cut, and the
    line at the cut that does not fit, are the same whatever else is banned: once none of
    the lines they show verbatim is suspect, the cut is the one banning every suspect line
    gives. Until then, the suspect ones are banned and the page ranked again.

    >>> rank = lambda banned: rank_lines(np.array([0.9, 0.8, 0.1]), np.array([4.0, 4, 4]),
    ...                                  np.array([1.0, 1, 1]), [-1, -1, -1], banned=banned)
    >>> kept_lines(rank([]), n_kept(rank([]), 0.7)), guarded_lines(rank, (0.7, 0, 0), lambda i: i == 0)
    ([1, 2], [2, 3])
    """
    banned: list[int] = []
    read: set[int] = set()
    while True:
        r = rank(banned)
        k = n_kept(r, *knobs)
        new = [i for i in np.flatnonzero(r.kept_at <= k).tolist() if i not in read]
        read.update(new)
        bad = [i for i in new if suspect(i)]
        if not bad:
            return kept_lines(r, k)
        banned = sorted({*banned, *bad})


@per_step
def page_costs(step: Step, encoding: str) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of every line of ``step``'s tree and of its ``[bid] role`` stub. A line is
    priced without the ``focused`` state the page sets (two tokens), so that focus cannot
    change what fits. A stub is counted by its shape: a bid of lower-case letters then
    digits (``12``, ``a51``) with each digit a zero, which has its tokens
    (:func:`digit_pieces`), so that a page's stubs are a few dozen strings to count.

    >>> cost = lambda tree: page_costs(Step(goal="g", tree=tree), "o200k_base")[0].tolist()
    >>> cost("[1] button 'Go', focused") == cost("[1] button 'Go'")
    True
    >>> page_costs(Step(goal="g", tree="[1] button 'Go'\\n\\t[a23] link"), "o200k_base")[1].tolist()
    [5.0, 6.0]
    """
    from lrlib.core.tokens import line_token_counts

    t = step.axtree
    n = len(t)
    # one count for the lines and the stubs; only a line holding "focus" can hold the state
    # (such a line is counted as it is too, after the rest: the memo of line counts then
    # holds every line of the page, for the page's count, lrlib.core.tokens.count_lines)
    lines = [unfocused(x) if "focus" in x else x for x in t.texts]
    zeros = _ZEROS if digit_pieces(encoding) else _SAME
    stubs = [  # AxTree.stub of every line (its shape), in one loop
        f"{x[:k]}[{b.translate(zeros) if b.isascii() and b.lstrip(_LOWER).isdigit() else b}]"
        + (f" {r}" if r else "")
        if b is not None
        else x[:k] + (r if r is not None else x[k : k + 40])
        for x, k, b, r in zip(t.texts, t.indents, t.bids, t.roles, strict=True)
    ]
    focused = [x for x in t.texts if "focus" in x]
    counts = np.asarray(line_token_counts(lines + stubs + focused, encoding), float)
    return counts[:n], counts[n : 2 * n]


_LOWER = "abcdefghijklmnopqrstuvwxyz"
_ZEROS = str.maketrans("123456789", "000000000")
_SAME: dict[int, int] = {}
# encodings whose pre-tokenizer cuts a run of digits into pieces of one to three digits, each
# a pre-token of its own whatever surrounds it: before it "[" (a piece of punctuation, with
# the indentation's last space if a space) or "[" and the bid's letters ("[a": a piece of
# letters), after it "]" (punctuation); so a stub's digits cost one token per three
_DIGIT_PIECES = ("o200k_base", "cl100k_base")


@functools.lru_cache(maxsize=8)
def digit_pieces(encoding: str) -> bool:
    """True when the encoding is one of :data:`_DIGIT_PIECES` and every string of one to
    three digits is one token (checked here on all 1,110): a stub's bid digits then cost
    one token per three, whatever digits they are.

    >>> digit_pieces("o200k_base")
    True
    """
    from lrlib.core.tokens import count_each

    if encoding not in _DIGIT_PIECES:
        return False
    digits = ["".join(d) for k in (1, 2, 3) for d in product("0123456789", repeat=k)]
    return set(count_each(digits, encoding)) == {1}


@per_step
def whole_lines(step: Step) -> np.ndarray:
    """True for the lines kept verbatim when a descendant is kept: form controls (a
    ``combobox`` or ``listbox`` holding options, a text field holding its value).

    >>> whole_lines(Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'")).tolist()
    [True, False]
    """
    roles = step.axtree.roles
    return np.fromiter(map(_FORM_ROLES.__contains__, roles), bool, len(roles))


_FORM_ROLES = frozenset(r for r in ROLE_OF if role_group(r) == "form")


@per_step
def step_context(step: Step) -> list[list[int]]:
    """:func:`lrlib.data.evidence.context_lines` of ``step``'s tree, once per step (the
    program reducer's context and the learned reducer's companions both read it).

    >>> step_context(Step(goal="g", tree="[1] radiogroup 'Size'\\n\\t[2] radio 'S'"))
    [[], [1]]
    """
    from lrlib.data.evidence import context_lines

    return context_lines(step.axtree)


@per_step
def companion_lines(step: Step) -> list[list[int]]:
    """What a kept line of ``step`` brings with it, for :func:`rank_lines`'s ``companions``
    (0-based): its question, label or name text (:func:`lrlib.data.evidence.context_lines`)
    and, for a line showing an identifier the goal names, the rows that show it
    (:func:`searched_rows`).

    >>> companion_lines(Step(goal="g", tree="[1] radiogroup 'Size'\\n\\t[2] radio 'S'"))
    [[], [0]]
    """
    out = [[m - 1 for m in c] if c else [] for c in step_context(step)]  # most: none
    if SEARCHED_ROWS:
        for i, row in searched_rows(step).items():
            out[i] = out[i] + [j for j in row if j != i and j not in out[i]]
    return out


SEARCHED_ROWS = True
PUNCT = ".?!:;'\"()"
SEARCHED_ROWS_MAX = 3  # more matching rows than this: the term does not pick a record


def searched_rows(step: Step) -> dict[int, list[int]]:
    """What a line showing an identifier the goal names brings: the cells of the table rows
    that show it (0-based lines; at most :data:`SEARCHED_ROWS_MAX` rows). An identifier is
    a goal word of 3+ characters with a digit or an ``@`` (a phone or order number, an
    e-mail); the agent that searched for it reads the matching record's other cells.

    >>> tree = ("[1] textbox 'Search' value='2065555555'\\n[2] table ''\\n\\t[3] row ''\\n"
    ...         "\\t\\t[4] cell 'Adam Garcia'\\n\\t\\t[5] cell '2065555555'\\n\\t[6] row ''\\n"
    ...         "\\t\\t[7] cell 'Bob'\\n\\t\\t[8] cell '2065550000'")
    >>> searched_rows(Step(goal="Find the customer with phone 2065555555", tree=tree))
    {0: [3, 4], 4: [3, 4]}
    """
    from lrlib.data.evidence import CONTEXT_MAX_CHARS, line_name

    terms = {
        w
        for w in step.goal.casefold().replace(",", " ").split()
        if len(w.strip(PUNCT)) >= 3 and any(c.isdigit() or c == "@" for c in w)
    }
    terms = {w.strip(PUNCT) for w in terms}
    if not terms:
        return {}
    t = step.axtree
    # a term on no line brings nothing (a term holds no newline, so the page's text holds it
    # only where a line does; casefold maps character by character, so the page's casefold
    # is its lines' joined)
    page = "\n".join(t.texts).casefold()
    terms = {w for w in terms if w in page}
    if not terms:
        return {}
    texts = [x.casefold() for x in t.texts]
    rows: dict[str, list[list[int]]] = {}
    levels: list[int] = []  # ancestors of each line (its parent's plus one)
    for p in t.parents:
        levels.append(levels[p] + 1 if p >= 0 else 0)
    for r, role in enumerate(t.roles):
        if role != "row":
            continue
        cells, depth = [], levels[r]
        for j in range(r + 1, len(t)):
            if levels[j] <= depth:
                break
            if t.roles[j] in ("cell", "gridcell", "rowheader"):
                name = line_name(t.texts[j])
                if name and len(name) <= CONTEXT_MAX_CHARS:
                    cells.append(j)
        names = [line_name(t.texts[j]) for j in cells]
        for w in terms:
            if any(w in n for n in names):
                rows.setdefault(w, []).append(cells)
    out: dict[int, list[int]] = {}
    for w, found in rows.items():
        if len(found) > SEARCHED_ROWS_MAX:
            continue
        cells = sorted({j for c in found for j in c})
        for i, x in enumerate(texts):
            if w in x:
                out.setdefault(i, [])
                out[i] += [j for j in cells if j not in out[i]]
    return out
