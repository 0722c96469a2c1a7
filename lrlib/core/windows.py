"""Context windows: split a tree that does not fit the retriever's context into parts.

The reference implementation sends the whole numbered tree and fails when it is too long.
Here the tree is cut at line boundaries into windows that each fit a token budget; every
window keeps the global line numbers (line 812 is "812:" in whichever window shows it), the
retriever is asked once per window, and the selections are merged. Cuts prefer shallow lines
near the end of a window, so a form or a table is not split when it can be helped.

>>> from lrlib.core.axtree import parse
>>> tree = parse("\\n".join(f"[{i}] button 'b{i}'" for i in range(1, 7)))
>>> plan_windows(tree.numbered().split("\\n"), tree.depths, budget=25)
[(1, 2), (3, 4), (5, 6)]
"""

from __future__ import annotations

from collections.abc import Sequence

from lrlib.core.axtree import NUMBER_FORMAT, AxTree
from lrlib.core.selection import Selection
from lrlib.core.tokens import DEFAULT_ENCODING, line_token_counts
from lrlib.core.views import get_view

SLACK = 0.25  # a cut may come this share of the budget early, to land on a shallow line


def plan_windows(
    lines: Sequence[str | None],
    depths: Sequence[int],
    budget: int,
    encoding: str = DEFAULT_ENCODING,
) -> list[tuple[int, int]]:
    """Split lines ``1..len(lines)`` into consecutive windows of at most ``budget`` tokens.

    ``lines`` are the rendered lines (``None`` for hidden ones, which cost nothing and go
    with the window around them). A single line longer than the budget gets a window of its
    own. The windows cover every line exactly once, in order.

    >>> plan_windows(["1: a", None, "3: b"], [0, 0, 0], budget=100)
    [(1, 3)]
    """
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    n = len(lines)
    if n == 0:
        return []
    shown = [(i, t) for i, t in enumerate(lines) if t is not None]
    costs = line_token_counts([t for _, t in shown], encoding)
    counts = {i: c for (i, _), c in zip(shown, costs, strict=True)}
    windows: list[tuple[int, int]] = []
    start, used = 0, 0
    i = 0
    while i < n:
        cost = counts.get(i, 0)
        if used + cost > budget and used > 0:
            cut = _best_cut(start, i, depths, counts, budget)
            windows.append((start + 1, cut))
            start, used = cut, sum(counts.get(j, 0) for j in range(cut, i))
            continue
        used += cost
        i += 1
    windows.append((start + 1, n))
    return windows


def _best_cut(
    start: int, end: int, depths: Sequence[int], counts: dict[int, int], budget: int
) -> int:
    """0-based index where the next window starts: ``end`` (the line that did not fit), or
    a shallower line among those past ``1 - SLACK`` of the budget (the latest shallowest)."""
    spent = [0]
    for j in range(start, end):
        spent.append(spent[-1] + counts.get(j, 0))
    best, best_depth = end, depths[end]
    for j in range(end - 1, start, -1):
        if spent[j - start] < budget * (1 - SLACK):
            break
        if depths[j] < best_depth:
            best, best_depth = j, depths[j]
    return best


def window_lines(tree: AxTree, view: str, window: tuple[int, int]) -> str:
    """The numbered text of lines ``window[0]..window[1]`` under ``view``.

    >>> from lrlib.core.axtree import parse
    >>> window_lines(parse("a\\nb\\nc"), "full", (2, 3))
    '2: b\\n3: c'
    """
    a, b = window
    texts = get_view(view)(tree)
    return "\n".join(
        NUMBER_FORMAT.format(n=n) + texts[n - 1]
        for n in range(a, b + 1)
        if texts[n - 1] is not None
    )


def restrict(selection: Selection, window: tuple[int, int]) -> Selection:
    """The part of ``selection`` inside ``window`` (ranges the model gave outside it go).

    >>> restrict(Selection.from_ranges([(1, 4), (9, 12)], 20), (3, 10)).ranges
    ((3, 4), (9, 10))
    """
    a, b = window
    parts = [(max(x, a), min(y, b)) for x, y in selection.ranges if y >= a and x <= b]
    return Selection.from_ranges(parts, selection.n_lines, selection.truncated)


def merge(selections: Sequence[Selection], n_lines: int) -> Selection:
    """Union of the windows' selections.

    >>> merge([Selection.from_lines([1], 9), Selection.from_lines([5, 6], 9)], 9).ranges
    ((1, 1), (5, 6))
    """
    ranges = [r for s in selections for r in s.ranges]
    return Selection.from_ranges(ranges, n_lines, any(s.truncated for s in selections))


def split_window(
    lines: Sequence[str | None], depths: Sequence[int], window: tuple[int, int]
) -> list[tuple[int, int]]:
    """Two halves of ``window``, for a window the endpoint still found too long: cut near
    the middle by tokens (35-65%), on the shallowest line there. One line cannot be split.

    >>> split_window(["1: a", "2: b", "3: c", "4: d"], [0, 0, 0, 0], (1, 4))
    [(1, 2), (3, 4)]
    """
    a, b = window
    if a >= b:
        return [window]
    part = list(lines[a - 1 : b])
    shown = [t for t in part if t is not None]
    costs = iter(line_token_counts(shown) if shown else [])
    prefix, total = [], 0  # prefix[k]: tokens of the window's first k lines
    for t in part:
        prefix.append(total)
        total += next(costs) if t is not None else 0
    best = None
    for k in range(1, len(part)):  # the second half starts at line a + k
        share = prefix[k] / total if total else k / len(part)
        if 0.35 <= share <= 0.65:
            rank = (depths[a - 1 + k], abs(share - 0.5))
            if best is None or rank < best[0]:
                best = (rank, k)
    k = best[1] if best else (len(part) + 1) // 2
    return [(a, a + k - 1), (a + k, b)]
