"""Apply a line selection to a tree.

Strategies (all linear in the size of the tree; kept lines are the input lines, verbatim
and in order):

- ``remove``: keep only the selected lines; each dropped run can be replaced by one marker
  ``... N lines pruned ...`` indented like the line that follows it.
- ``structure``: the paper's structure-preserving filter: every kept line also keeps its
  ancestors, rendered as ``[bid] role`` only, so the hierarchy stays readable.
- ``bid`` / ``bid+role``: the reference implementation's placeholders: every dropped line
  with a bid stays as an indented ``[bid]`` (or ``[bid] role``) stub; lines without a bid go.

>>> from lrlib.axtree import parse
>>> from lrlib.ranges import Selection
>>> tree = parse("RootWebArea 'r'\\n\\t[1] form\\n\\t\\t[2] button 'A'\\n\\t\\t[3] button 'B'")
>>> prune(tree, Selection.from_lines([4], 4), "structure", markers=False).lines
['RootWebArea', '\\t[1] form', "\\t\\t[3] button 'B'"]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .axtree import AxTree, parse
from .ranges import Selection

Strategy = Literal["remove", "structure", "bid", "bid+role"]
STRATEGIES: tuple[str, ...] = ("remove", "structure", "bid", "bid+role")
MARKER = "... {n} lines pruned ..."


@dataclass(frozen=True)
class Pruned:
    """A pruned tree. ``kept`` are the 1-based numbers of lines kept verbatim;
    ``stubs`` those rendered as ``[bid] role`` (ancestors or placeholders)."""

    text: str
    lines: list[str]
    kept: list[int]
    stubs: list[int]
    n_markers: int
    strategy: str


def prune(
    tree: AxTree | str,
    selection: Selection | Iterable[int],
    strategy: Strategy = "remove",
    markers: bool = True,
) -> Pruned:
    """Apply ``selection`` (a :class:`Selection` or 1-based line numbers) to ``tree``.

    >>> prune("a\\nb\\nc", [1, 3], "remove").lines
    ['a', '... 1 lines pruned ...', 'c']
    """
    if isinstance(tree, str):
        tree = parse(tree)
    n = len(tree)
    if not isinstance(selection, Selection):
        selection = Selection.from_lines(selection, n)
    else:  # always re-normalised: a hand-made Selection((1, 10**18),) must not be trusted
        selection = Selection.from_ranges(selection.ranges, n, selection.truncated)
    if strategy == "remove":
        return _remove(tree, selection, markers)
    if strategy in ("structure", "bid", "bid+role"):
        return _with_stubs(tree, selection, strategy, markers)
    raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")


def _marker(tree: AxTree, follower: int, count: int) -> str:
    """A marker for ``count`` dropped lines, indented like 0-based line ``follower``."""
    return tree.texts[follower][: tree.indents[follower]] + MARKER.format(n=count)


def _remove(tree: AxTree, selection: Selection, markers: bool) -> Pruned:
    texts, out, kept = tree.texts, [], []
    next_line, n_markers = 1, 0  # first line not yet emitted or dropped
    for a, b in selection.ranges:
        if markers and a > next_line:
            out.append(_marker(tree, a - 1, a - next_line))
            n_markers += 1
        out.extend(texts[a - 1 : b])
        kept.extend(range(a, b + 1))
        next_line = b + 1
    if markers and next_line <= len(texts):
        out.append(_marker(tree, next_line - 1, len(texts) - next_line + 1))
        n_markers += 1
    return Pruned("\n".join(out), out, kept, [], n_markers, "remove")


def _with_stubs(tree: AxTree, selection: Selection, strategy: str, markers: bool) -> Pruned:
    n, parents = len(tree), tree.parents
    state = bytearray(n)  # 0 dropped, 1 kept verbatim, 2 stub
    for a, b in selection.ranges:
        state[a - 1 : b] = b"\x01" * (b - a + 1)
    if strategy == "structure":
        for a, b in selection.ranges:
            for i in range(a - 1, b):
                p = parents[i]
                while p >= 0 and not state[p]:  # stop at the first marked ancestor:
                    state[p] = 2  # its own ancestors were marked when it was
                    p = parents[p]
    else:
        bids = tree.bids
        for i in range(n):
            if not state[i] and bids[i] is not None:
                state[i] = 2
    with_role = strategy != "bid"
    texts, out, kept, stubs = tree.texts, [], [], []
    dropped, n_markers = 0, 0
    for i in range(n):
        s = state[i]
        if not s:
            dropped += 1
            continue
        if dropped and markers:
            out.append(_marker(tree, i, dropped))
            n_markers += 1
        dropped = 0
        if s == 1:
            out.append(texts[i])
            kept.append(i + 1)
        else:
            stub = tree.stub(i)
            if not with_role and tree.bids[i] is not None:
                stub = f"{texts[i][: tree.indents[i]]}[{tree.bids[i]}]"
            out.append(stub)
            stubs.append(i + 1)
    if dropped and markers:
        out.append(_marker(tree, n - dropped, dropped))
        n_markers += 1
    return Pruned("\n".join(out), out, kept, stubs, n_markers, strategy)
