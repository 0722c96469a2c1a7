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

Views (the last section): how the retriever sees a tree before it is pruned, as numbered
renderings that keep the global line numbers. A view maps each line of an
:class:`~lrlib.core.axtree.AxTree` to the text shown to the retriever (possibly shortened,
or ``None`` to hide it) while the number in front of it stays the line's number in the
original tree, so a selection always maps back to original lines.

>>> render(parse("RootWebArea 'x'\\n\\t[3] link 'a'"), "full")
"1: RootWebArea 'x'\\n2: \\t[3] link 'a'"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from lrlib.core.axtree import LINE_HEADS, NUMBER_FORMAT, AxTree, number_lines, parse
from lrlib.core.selection import Selection

__all__ = [
    "Strategy",
    "STRATEGIES",
    "MARKER",
    "AGENTLAB_MARKER",
    "AGENTLAB_REMOVED",
    "Pruned",
    "prune",
    "View",
    "register_view",
    "get_view",
    "list_views",
    "render",
    "attach_hidden",
    "NOISE_ATTRIBUTES",
    "LAYOUT_ROLES",
    "PARENT_NAME_CHARS",
    "LEAF_NAME_CHARS",
    "INSTRUCTION_LIKE",
    "compact_lines",
]

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


# --- views: how the retriever sees a tree -------------------------------------------------

# a view returns one entry per line: the text to show, or None to hide the line
View = Callable[[AxTree], list[str | None]]
_VIEWS: dict[str, View] = {}


def register_view(name: str, view: View, *, overwrite: bool = False) -> None:
    """Add a named view (``overwrite=True`` to replace one)."""
    if name in _VIEWS and not overwrite:
        raise ValueError(f"view {name!r} exists; pass overwrite=True to replace it")
    _VIEWS[name] = view


def get_view(name: str) -> View:
    """The view called ``name``; the error lists the valid names."""
    try:
        return _VIEWS[name]
    except KeyError:
        raise KeyError(f"unknown view {name!r}; valid views: {', '.join(sorted(_VIEWS))}") from None


def list_views() -> list[str]:
    """Names of the registered views."""
    return sorted(_VIEWS)


def render(
    tree: AxTree,
    view: str = "full",
    fmt: str = NUMBER_FORMAT,
    window: tuple[int, int] | None = None,
) -> str:
    """The numbered text of ``tree`` under ``view``; hidden lines keep their numbers unused.
    ``window=(a, b)``: only lines ``a..b``, with their global numbers.

    >>> from lrlib.core.axtree import parse
    >>> render(parse("a\\nb\\nc"), "full", window=(2, 3))
    '2: b\\n3: c'
    """
    texts = get_view(view)(tree)
    if len(texts) != len(tree):
        raise ValueError(f"view {view!r} returned {len(texts)} entries for {len(tree)} lines")
    if window is not None and window != (1, len(tree)):
        a, b = window
        part = number_lines(texts[a - 1 : b], fmt, first=a)
        return "\n".join(t for t in part if t is not None)
    if texts is tree.texts or None not in texts:
        return tree.numbered(fmt, texts)  # type: ignore[arg-type]
    return "\n".join(t for t in number_lines(texts, fmt) if t is not None)


def _full(tree: AxTree) -> list[str | None]:
    """The paper's view: every line verbatim."""
    return tree.texts  # type: ignore[return-value]


register_view("full", _full)


def attach_hidden(selection: Selection, shown: Sequence[str | None]) -> Selection:
    """Extend each selected range over the hidden lines (``None`` in ``shown``) around it.

    A view hides a line because a neighbour stands for it (a row for its cells, a link for
    its repeated text), so the hidden lines next to a selected line go with it.

    >>> attach_hidden(Selection.from_lines([3], 5), ["a", None, "c", None, "e"]).ranges
    ((2, 4),)
    """
    n = len(shown)
    ranges = []
    for a, b in selection.ranges:
        while a > 1 and shown[a - 2] is None:
            a -= 1
        while b < n and shown[b] is None:
            b += 1
        ranges.append((a, b))
    return Selection.from_ranges(ranges, selection.n_lines, selection.truncated)


# --- the compact view ---------------------------------------------------------------------

_STR = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_NAME = re.compile(rf" +({_STR})")
_ATTR = re.compile(  # ", key", ", key=value", or " key=value" (BrowserGym writes " value=...")
    rf"(?:, ([A-Za-z_][\w-]*)(?:=({_STR}|[^,'\"\s]*))?| ([A-Za-z_][\w-]*)=({_STR}|[^,'\"\s]*))"
)
_GLYPHS = re.compile(r"(?:\\u[ef][0-9a-f]{3}|\\x[0-9a-f]{2}|\s)*")  # icon fonts, nbsp only

# fmt: off
# attributes that say nothing about what a line is for: links' targets, ARIA plumbing
NOISE_ATTRIBUTES = frozenset({
    "url", "live", "relevant", "atomic", "busy", "describedby", "controls", "owns",
    "flowto", "details", "labelledby", "hasPopup", "autocomplete", "orientation",
    "multiselectable", "keyshortcuts", "roledescription", "errormessage",
})
# roles that only structure the page: without a name or a state they carry no information
LAYOUT_ROLES = frozenset({
    "generic", "group", "list", "listitem", "table", "row", "rowgroup", "cell", "gridcell",
    "LayoutTable", "LayoutTableRow", "LayoutTableCell", "paragraph", "section", "Section",
    "article", "region", "navigation", "main", "banner", "contentinfo", "complementary",
    "form", "search", "figure", "image", "img", "none", "presentation", "separator",
    "ListMarker", "DescriptionList", "term", "definition", "strong", "emphasis",
    "superscript", "subscript", "Iframe", "Canvas", "document", "log", "status",
})
# fmt: on
PARENT_NAME_CHARS = 80  # a line with children shows this much of its name (children repeat it)
LEAF_NAME_CHARS = 200  # any other name is cut here
# what the retriever must not be spared when it sits in the part a cut would hide: the
# acting model reads the whole line, so a name whose tail holds markup, an address or an
# instruction to an assistant is shown whole (the retriever sees what the agent will see)
INSTRUCTION_LIKE = re.compile(
    r"<\s*+/?\s*+[A-Za-z_|]{2,20}+\s*+>|https?://|\blocalhost\b|\bwww\.|[a-z]\.[a-z]{2,6}:\d{2,5}\b"
    r"|\b(?:ignore|disregard|instructions?|assistants?|AI|agents?|LLM|password|credentials?"
    r"|verify|identity|sign[ -]in|log[ -]in|goto|navigate)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=200_000)  # steps of one episode share most of their lines
def _read_line(body: str, bid: str | None, role: str) -> tuple[str | None, str] | None:
    """(name literal or None, kept attributes as ``", k=v, flag"``) of a line without its
    indentation; None when the part after ``[bid] role`` cannot be read."""
    pos = 0
    if bid is not None:  # skip "[bid] " exactly as lrlib.core.axtree reads it
        pos = len(bid) + 2
        if body[pos : pos + 1] == " ":
            pos += 1
    rest = body[pos + len(role) :]
    name = None
    m = _NAME.match(rest)
    if m:
        name, rest = m.group(1), rest[m.end() :]
    kept, pos = [], 0
    for a in _ATTR.finditer(rest):
        if a.start() != pos:
            return None
        key, value = (a.group(1), a.group(2)) if a.group(1) else (a.group(3), a.group(4))
        if key not in NOISE_ATTRIBUTES:
            kept.append(key if value is None else f"{key}={value}")
        pos = a.end()
    if pos != len(rest):
        return None
    if name is not None and len(name) <= 2:
        name = None  # '' or ""
    return name, "".join(f", {k}" for k in kept)


def _shorten(literal: str, limit: int) -> str:
    """A string literal cut to ``limit`` characters of content, marked with ``…``; whole
    when the part it would hide is :data:`INSTRUCTION_LIKE`.

    >>> _shorten("'" + "a" * 30 + " then go to localhost:4321'", 20)
    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa then go to localhost:4321'"
    >>> _shorten("'" + "a" * 30 + " and more'", 20)
    "'aaaaaaaaaaaaaaaaaaaa…'"
    """
    body = literal[1:-1]
    if len(body) <= limit or INSTRUCTION_LIKE.search(body, max(0, limit - 20)):
        return literal
    cut = body[:limit]
    slash = cut.rfind("\\", max(0, limit - 10))
    if slash >= 0:  # never end inside an escape sequence
        cut = cut[:slash]
    return f"{literal[0]}{cut.rstrip()}…{literal[0]}"


def _per_tree(view: View) -> View:
    """Remember the result for the last few trees (a run renders each tree several times)."""
    memo: dict[int, tuple[AxTree, list[str | None]]] = {}

    def cached(tree: AxTree) -> list[str | None]:
        hit = memo.get(id(tree))
        if hit is not None and hit[0] is tree and len(hit[1]) == len(tree):
            return list(hit[1])
        out = view(tree)
        memo[id(tree)] = (tree, out)  # holds the tree, so its id cannot be reused meanwhile
        while len(memo) > 32:
            memo.pop(next(iter(memo)), None)
        return list(out)

    cached.__doc__, cached.__wrapped__ = view.__doc__, view  # type: ignore[attr-defined]
    return cached


@_per_tree
def compact_lines(tree: AxTree) -> list[str | None]:
    """The ``compact`` view: what a retriever needs to choose lines, and less of the rest.

    Per line: one space per depth level instead of tabs; attributes in
    :data:`NOISE_ATTRIBUTES` (``url=...``, ``live``, ``relevant``, ``atomic``...) and empty
    names (``''``) dropped; names cut at :data:`LEAF_NAME_CHARS` characters, or at
    :data:`PARENT_NAME_CHARS` when the line has children (which repeat the text), unless
    the hidden part is :data:`INSTRUCTION_LIKE` (then the name is shown whole). Hidden
    (``None``): ``StaticText`` lines that are empty, only icon glyphs, or repeat their
    parent's shown name, and nameless, stateless lines of :data:`LAYOUT_ROLES` (rows, cells,
    list items...). Lines it cannot read are kept, re-indented. Line numbers never change.

    >>> from lrlib.core.axtree import parse
    >>> t = parse("RootWebArea 'x', url='http://a'\\n\\t[2] row ''\\n\\t\\t[3] link 'Go', url='/g'"
    ...           "\\n\\t\\t\\tStaticText 'Go'")
    >>> compact_lines(t)
    ["RootWebArea 'x'", None, "  [3] link 'Go'", None]
    """
    n = len(tree)
    shown_names: list[str | None] = [None] * n  # name literal as displayed, for the dup check
    out: list[str | None] = [None] * n
    for i in range(n):
        text, role, bid = tree.texts[i], tree.roles[i], tree.bids[i]
        indent = " " * tree.depths[i]
        body = text[tree.indents[i] :]
        if role is None:  # opaque or bid-only line: keep it as it is
            out[i] = indent + body
            continue
        parts = _read_line(body, bid, role)
        if parts is None:
            out[i] = indent + body
            continue
        name, attrs = parts
        if role == "StaticText" and _hidden_text(
            name, shown_names[tree.parents[i]] if tree.parents[i] >= 0 else None
        ):
            continue
        if name is None and not attrs and role in LAYOUT_ROLES:
            continue
        has_children = i + 1 < n and tree.parents[i + 1] == i
        head = f"[{bid}] {role}" if bid is not None else role
        if name is not None:
            name = _shorten(name, PARENT_NAME_CHARS if has_children else LEAF_NAME_CHARS)
            shown_names[i] = name
            head = f"{head} {name}"
        out[i] = indent + head + attrs
    return out


def _hidden_text(name: str | None, parent_name: str | None) -> bool:
    """True for a StaticText that adds nothing: empty, icon glyphs, or its parent's text."""
    if name is None or _GLYPHS.fullmatch(name[1:-1]):
        return True
    return parent_name is not None and name[1:-1].strip() in parent_name[1:-1]


register_view("compact", compact_lines)
