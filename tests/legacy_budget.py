"""Frozen copies of :mod:`lrlab.reducers.budget`'s ``rank_lines`` and ``page_costs`` as of
commit 1daa0d0 (issue 24): ``tests/test_features_fast.py`` holds the faster ones to them;
and of ``page_costs`` (stubs counted by shape) and ``searched_rows`` as of commit 58e13d1,
for ``tests/test_learned_speed_identity.py``. Do not edit: they are the reference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lrlab.reducers.budget import Ranking
from lrlab.reducers.features import unfocused
from lrlib.core.step import Step


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
    shown = np.zeros(n, np.int8)  # 0 hidden, 1 stub, 2 verbatim
    kept_at = np.full(n, n, int)
    steps = np.zeros(n)
    for k, a in enumerate(order):
        if barred[a]:
            continue  # costs nothing: never shown (the floor stops before it)
        add = 0.0
        todo = [int(a)]
        while todo:
            b = todo.pop()
            if shown[b] == 2 or barred[b]:
                continue
            add += tokens[b] - (stub_tokens[b] if shown[b] else 0.0)
            shown[b], kept_at[b] = 2, k
            if companions is not None:
                todo += companions[b]
            q = parents[b]
            while q >= 0 and shown[q] == 0:
                if whole is not None and whole[q] and not barred[q]:
                    shown[q] = 1  # priced as a stub, then made verbatim below
                    add += stub_tokens[q]
                    todo.append(int(q))
                else:
                    shown[q] = 1
                    add += stub_tokens[q]
                q = parents[q]
        steps[k] = add
    return Ranking(order, np.minimum(rank[order], 1.0), np.cumsum(steps), float(np.sum(tokens)),
                   kept_at)  # fmt: skip


def page_costs(step: Step, encoding: str) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of every line of ``step``'s tree and of its ``[bid] role`` stub. A line is
    priced without the ``focused`` state the page sets (two tokens), so that focus cannot
    change what fits.

    """
    from lrlib.core.pruning import _stubs
    from lrlib.core.tokens import line_token_counts

    t = step.axtree
    stubs = _stubs(t, list(range(len(t))))
    return (
        np.asarray(line_token_counts([unfocused(x) for x in t.texts], encoding), float),
        np.asarray(line_token_counts(stubs, encoding), float),
    )


def searched_rows(step: Step) -> dict[int, list[int]]:
    """``searched_rows`` as of commit 58e13d1."""
    from lrlab.reducers.budget import PUNCT, SEARCHED_ROWS_MAX
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
    texts = [x.casefold() for x in t.texts]
    rows: dict[str, list[list[int]]] = {}
    levels: list[int] = []
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
