"""Apply a line selection to a tree.

Strategies (all linear in the size of the tree; kept lines are the input lines, verbatim
and in order):

- ``remove``: keep only the selected lines; each dropped run can be replaced by one marker
  ``... N lines pruned ...`` indented like the line that follows it.
- ``structure``: the paper's structure-preserving filter: every kept line also keeps its
  ancestors, rendered as ``[bid] role`` only, so the hierarchy stays readable.
- ``bid`` / ``bid+role``: lrlib's placeholders, *modelled on* AgentLab's (not identical):
  every dropped line with a bid stays as an indented ``[bid]`` (or ``[bid] role``) stub;
  dropped lines without a bid go (and become markers).

AgentLab's own outputs (FocusAgent, ``LlmRetrieverUtils``; identical, checked against its
code by ``tests/test_peer_pruning.py``), on lrlib's lines:

- ``remove-agentlab``: each dropped run becomes ``... pruned N lines ...``, not indented.
- ``bid-agentlab``: *every* dropped line becomes its indentation, its first word and
  `` ... removed ...`` (``[12] ... removed ...``, ``StaticText ... removed ...``).
- ``bid+role-agentlab``: a dropped line with ``[`` or ``]`` anywhere keeps its first two
  words and `` ... removed ...``; one without keeps only its first word.

>>> from lrlib.core.axtree import parse
>>> from lrlib.core.ranges import Selection
>>> tree = parse("RootWebArea 'r'\\n\\t[1] form\\n\\t\\t[2] button 'A'\\n\\t\\t[3] button 'B'")
>>> prune(tree, Selection.from_lines([4], 4), "structure", markers=False).lines
['RootWebArea', '\\t[1] form', "\\t\\t[3] button 'B'"]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from lrlib.core.axtree import LINE_HEADS, AxTree, parse
from lrlib.core.selection import Selection

Strategy = Literal[
    "remove", "structure", "bid", "bid+role", "remove-agentlab", "bid-agentlab", "bid+role-agentlab"
]
STRATEGIES: tuple[str, ...] = (
    "remove", "structure", "bid", "bid+role", "remove-agentlab", "bid-agentlab", "bid+role-agentlab",
)  # fmt: skip
MARKER = "... {n} lines pruned ..."
AGENTLAB_MARKER = "... pruned {n} lines ..."
AGENTLAB_REMOVED = " ... removed ..."


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
    elif not _normalised(selection.ranges, n):  # a hand-made Selection((1, 10**18),) is
        selection = Selection.from_ranges(selection.ranges, n, selection.truncated)  # fixed
    if strategy == "remove":
        return _remove(tree, selection, markers)
    if strategy == "remove-agentlab":
        return _remove(tree, selection, markers, agentlab=True)
    if strategy in ("bid-agentlab", "bid+role-agentlab"):
        return _agentlab_placeholders(tree, selection, strategy)
    if strategy == "structure":
        return _structure(tree, selection, markers)
    if strategy in ("bid", "bid+role"):
        return _with_stubs(tree, selection, strategy, markers)
    raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")


def _normalised(ranges: tuple[tuple[int, int], ...], n: int) -> bool:
    """True when ``ranges`` are what :meth:`Selection.from_ranges` makes for ``n`` lines:
    ints, sorted, within ``1..n``, neither overlapping nor touching."""
    end = -1
    for a, b in ranges:
        if type(a) is not int or type(b) is not int or not end + 1 < a <= b <= n:
            return False
        end = b
    return True


_MARKER_HEAD, _MARKER_TAIL = MARKER.split("{n}")


def _marker(tree: AxTree, follower: int, count: int) -> str:
    """A marker for ``count`` dropped lines, indented like 0-based line ``follower``."""
    return f"{tree.texts[follower][: tree.indents[follower]]}{_MARKER_HEAD}{count}{_MARKER_TAIL}"


def _remove(tree: AxTree, selection: Selection, markers: bool, agentlab: bool = False) -> Pruned:
    texts, out, kept = tree.texts, [], []
    next_line, n_markers = 1, 0  # first line not yet emitted or dropped

    def marker(follower: int, count: int) -> str:
        return AGENTLAB_MARKER.format(n=count) if agentlab else _marker(tree, follower, count)

    for a, b in selection.ranges:
        if markers and a > next_line:
            out.append(marker(a - 1, a - next_line))
            n_markers += 1
        out.extend(texts[a - 1 : b])
        kept.extend(range(a, b + 1))
        next_line = b + 1
    if markers and next_line <= len(texts):
        out.append(marker(next_line - 1, len(texts) - next_line + 1))
        n_markers += 1
    name = "remove-agentlab" if agentlab else "remove"
    return Pruned("\n".join(out), out, kept, [], n_markers, name)


def _agentlab_placeholders(tree: AxTree, selection: Selection, strategy: str) -> Pruned:
    """AgentLab's ``remove_lines_keep_structure`` on lrlib's lines (no markers)."""
    state = bytearray(len(tree))
    for a, b in selection.ranges:
        state[a - 1 : b] = b"\x01" * (b - a + 1)
    with_role = strategy == "bid+role-agentlab"
    out, kept, stubs = [], [], []
    for i, line in enumerate(tree.texts):
        if state[i]:
            out.append(line)
            kept.append(i + 1)
            continue
        words = line.split()  # str.split and str.lstrip, as AgentLab: any Unicode blank
        indent = line[: len(line) - len(line.lstrip())]
        if not with_role:
            out.append(indent + words[0] + AGENTLAB_REMOVED)
        elif "[" not in line and "]" not in line:
            out.append(indent + words[0])
        else:
            out.append(indent + " ".join(words[:2]) + AGENTLAB_REMOVED)
        stubs.append(i + 1)
    return Pruned("\n".join(out), out, kept, stubs, 0, strategy)


def _stub(tree: AxTree, i: int) -> str:
    """``tree.stub(i)``, reading only line ``i`` when the tree's bids are not parsed yet."""
    return _stubs(tree, [i])[0]


def _stubs(tree: AxTree, indices: list[int]) -> list[str]:
    """``tree.stub(i)`` for each 0-based ``i``, reading only those lines when the tree's
    bids are not parsed yet."""
    texts, indents = tree.texts, tree.indents
    heads = None
    if "bids" not in tree.__dict__:
        heads = LINE_HEADS.findall("\n" + "\n".join([texts[i] for i in indices]))
    if heads is None or len(heads) != len(indices):  # a line with a newline of its own
        return [tree.stub(i) for i in indices]
    out = []
    for i, (_, bid, role) in zip(indices, heads, strict=True):
        text, indent = texts[i], indents[i]
        if bid:
            out.append(f"{text[:indent]}[{bid}] {role}" if role else f"{text[:indent]}[{bid}]")
        elif role:
            out.append(text[:indent] + role)
        else:
            out.append(text[:indent] + text[indent:][:40])
    return out


def _structure(tree: AxTree, selection: Selection, markers: bool) -> Pruned:
    """Kept ranges verbatim, their ancestors as stubs. The ancestors outside a range
    [a, b] are all ancestors of line a (a line's parent precedes it, and the subtree of
    that parent holds every line in between), so only line a's chain is walked."""
    n, parents, texts = len(tree), tree.parents, tree.texts
    ranges = [(a, b) for a, b in selection.ranges if a <= b]  # (1, 0) on an empty tree
    marked = bytearray(n)
    for a, b in ranges:
        marked[a - 1 : b] = b"\x01" * (b - a + 1)
    stub_at: list[int] = []
    for a, _ in ranges:
        p = parents[a - 1]
        while p >= 0 and not marked[p]:  # stop at the first marked ancestor
            marked[p] = 2
            stub_at.append(p)
            p = parents[p]
    stub_at.sort()
    # each stub, then each range, after a marker for the lines dropped before it
    pieces = sorted([(i, _STUB, t) for i, t in zip(stub_at, _stubs(tree, stub_at), strict=True)]
                    + [(a - 1, b, "") for a, b in ranges])  # fmt: skip
    out: list[str] = []
    kept: list[int] = []
    n_markers, done = 0, 0  # done: lines before it are emitted or dropped
    for i, b, stub in pieces:
        if markers and i > done:
            out.append(_marker(tree, i, i - done))
            n_markers += 1
        if b == _STUB:
            out.append(stub)
            done = i + 1
        else:
            out.extend(texts[i:b])
            kept.extend(range(i + 1, b + 1))
            done = b
    if markers and done < n:
        out.append(_marker(tree, done, n - done))
        n_markers += 1
    stubs = [i + 1 for i in stub_at]
    return Pruned("\n".join(out), out, kept, stubs, n_markers, "structure")


_STUB = -1  # in _structure's pieces: a stub, not a range's end


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
