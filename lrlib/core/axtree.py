"""BrowserGym's flattened accessibility tree as a list of lines.

``flatten_axtree_to_str`` writes one node per line, indented with one tab per depth:
``[bid] role 'name', attr=value, ...``; some lines carry no bid (``StaticText 'x'``,
``RootWebArea 'title'``); iframe bids look like ``a51``. :func:`parse` reads such text into
columns (depth, bid, role, parent), tolerating spaces instead of tabs, CRLF, blank lines
and lines it cannot read (kept as *opaque* lines: no bid, no role).

Numbering and pruning use the same split: the tree's lines are the non-blank lines of the
text, numbered from 1, and :attr:`AxTree.texts` holds them verbatim (without ``\\r``).

>>> tree = parse("RootWebArea 'Home'\\n\\t[12] button 'Go'\\n\\t\\tStaticText 'Go'")
>>> tree.line(2).bid, tree.line(2).role, tree.line(3).parent
('12', 'button', 2)
>>> tree.numbered().split("\\n")[1]
"2: \\t[12] button 'Go'"
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat

# indentation, optional "[bid]", optional role; one match per line (the pattern can match "")
LINE_HEAD = re.compile(
    r"^([\t ]*)(?:\[([^\]\s]{1,64})\](?= |$) ?)?(?:([A-Za-z][\w-]{0,63})(?=[ ,]|$))?",
    re.MULTILINE,
)
# the same after a newline: ``findall`` on ``"\n" + "\n".join(lines)`` (one match per line)
# jumps from newline to newline instead of trying every position as ``^`` does
LINE_HEADS = re.compile("\n" + LINE_HEAD.pattern.removeprefix("^"), re.MULTILINE)
NUMBER_FORMAT = "{n}: "


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the tree. ``number`` is 1-based; ``parent`` is a line number or 0."""

    number: int
    depth: int
    bid: str | None
    role: str | None
    rest: str
    text: str
    parent: int

    @property
    def opaque(self) -> bool:
        """True when neither a bid nor a role could be read."""
        return self.bid is None and self.role is None


class AxTree:
    """Parsed tree: parallel columns over the non-blank lines, numbered from 1.

    Column lists are 0-based (``texts[i]`` is line ``i + 1``). ``bids`` and ``roles`` are
    read on first use (pruning with ``remove`` and token counting never need them).
    """

    __slots__ = ("texts", "indents", "depths", "parents", "__dict__")

    def __init__(
        self, texts: list[str], indents: list[int], depths: list[int], parents: list[int]
    ) -> None:
        self.texts = texts
        self.indents = indents  # characters of leading whitespace
        self.depths = depths
        self.parents = parents  # 0-based index of the parent line, -1 for roots

    @cached_property
    def bids(self) -> list[str | None]:
        """Bid of each line, or None."""
        return [b or None for _, b, _ in self._heads]

    @cached_property
    def roles(self) -> list[str | None]:
        """Role of each line, or None (opaque lines have neither bid nor role)."""
        return [r or None for _, _, r in self._heads]

    @cached_property
    def _heads(self) -> list[tuple[str, str, str]]:
        heads = LINE_HEADS.findall("\n" + "\n".join(self.texts))
        if len(heads) != len(self.texts):  # cannot happen for "\n"-free lines; be safe anyway
            heads = [LINE_HEAD.match(t).groups("") for t in self.texts]
        return heads

    def __len__(self) -> int:
        return len(self.texts)

    def __iter__(self) -> Iterator[Line]:
        return (self.line(n) for n in range(1, len(self.texts) + 1))

    def line(self, number: int) -> Line:
        """The line with 1-based ``number``."""
        if not 1 <= number <= len(self.texts):
            raise IndexError(f"line {number} is outside 1..{len(self.texts)}")
        i = number - 1
        text = self.texts[i]
        head = LINE_HEAD.match(text)
        rest = text[head.end() :] if head else text
        return Line(
            number,
            self.depths[i],
            self.bids[i],
            self.roles[i],
            rest.lstrip(" "),
            text,
            self.parents[i] + 1,
        )

    @property
    def text(self) -> str:
        """The canonical text: the tree's lines joined by ``\\n``."""
        return "\n".join(self.texts)

    @cached_property
    def bid_lines(self) -> dict[str, int]:
        """Map bid -> 1-based line number (the first line carrying it)."""
        out: dict[str, int] = {}
        for i, bid in enumerate(self.bids):
            if bid is not None and bid not in out:
                out[bid] = i + 1
        return out

    def line_of(self, bid: str) -> int | None:
        """1-based line number of ``bid``, or None when the tree does not contain it."""
        return self.bid_lines.get(str(bid))

    def ancestors(self, number: int) -> list[int]:
        """1-based numbers of the ancestors of line ``number``, nearest first."""
        out, p = [], self.parents[number - 1]
        while p >= 0:
            out.append(p + 1)
            p = self.parents[p]
        return out

    def numbered(self, fmt: str = NUMBER_FORMAT, texts: Sequence[str] | None = None) -> str:
        """The tree with 1-based line numbers, as the retriever sees it.

        ``texts`` lets a view (e.g. a compact rendering) replace line contents while keeping
        the numbering; it must have one entry per line.
        """
        body = self.texts if texts is None else texts
        if len(body) != len(self.texts):
            raise ValueError(f"a view must keep one entry per line ({len(self.texts)})")
        if fmt == NUMBER_FORMAT:  # the common case, fast: no None, the shared prefixes
            return "\n".join(map(operator.add, _prefixes(len(body)), body))
        return "\n".join(number_lines(body, fmt))  # type: ignore[arg-type]

    def stub(self, index: int) -> str:
        """``[bid] role`` (or ``role``) of the 0-based line ``index``, with its indentation."""
        text, bid, role = self.texts[index], self.bids[index], self.roles[index]
        indent = text[: self.indents[index]]
        if bid is None and role is None:
            return indent + text[self.indents[index] :][:40]
        if bid is None:
            return indent + role
        return f"{indent}[{bid}] {role}" if role else f"{indent}[{bid}]"


_PREFIXES: list[str] = []  # "1: ", "2: ", ...: formatted once per process
_MAX_PREFIXES = 1 << 17


def _prefixes(n: int) -> list[str]:
    """``NUMBER_FORMAT`` for 1..n (kept up to :data:`_MAX_PREFIXES`, a few MB)."""
    global _PREFIXES
    if n > _MAX_PREFIXES:
        return [NUMBER_FORMAT.format(n=k) for k in range(1, n + 1)]
    table = _PREFIXES
    if len(table) < n:  # a new table, swapped in whole: threads never see a partial one
        size = min(_MAX_PREFIXES, max(n, 2 * len(table)))
        table = table + [NUMBER_FORMAT.format(n=k) for k in range(len(table) + 1, size + 1)]
        _PREFIXES = table
    return table[:n]


def number_lines(
    texts: Sequence[str | None], fmt: str = NUMBER_FORMAT, first: int = 1
) -> list[str | None]:
    """The one line numbering: each line prefixed by its number (the first is ``first``),
    hidden lines (None) staying None, so numbers stay global whatever is shown.

    >>> number_lines(["a", None, "c"]), number_lines(["x"], first=7)
    (['1: a', None, '3: c'], ['7: x'])
    """
    if fmt == NUMBER_FORMAT and first == 1:
        prefixes = _prefixes(len(texts))
        return [None if t is None else p + t for p, t in zip(prefixes, texts, strict=True)]
    return [None if t is None else fmt.format(n=n) + t for n, t in enumerate(texts, first)]


def split_lines(text: str) -> list[str]:
    """The tree's lines: split on ``\\n`` / ``\\r\\n`` / ``\\r``, blank lines dropped.

    This is the only split lrlib uses, so numbering and pruning always agree.

    >>> split_lines("a\\r\\n\\n  \\n\\tb")
    ['a', '\\tb']
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [t for t in text.split("\n") if t and not t.isspace()]


def parse(text: str) -> AxTree:
    """Parse flattened AxTree text. Linear in its size; never raises on odd content.

    >>> parse("[a51] link 'Next', url='x'").line(1).bid
    'a51'
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the tree as str, not {type(text).__name__}")
    texts = split_lines(text)
    bodies = list(map(str.lstrip, texts, repeat("\t")))  # never "": blank lines are dropped
    tabs = list(map(operator.sub, map(len, texts), map(len, bodies)))
    if " " not in map(operator.itemgetter(0), bodies):  # no indentation holds a space
        return AxTree(texts, tabs, tabs, _parents(tabs))
    indents = [len(t) - len(t.lstrip("\t ")) for t in texts]
    if tabs == indents:
        depths = indents
    else:  # some indentation uses spaces
        depths = _space_depths([t[:i] for t, i in zip(texts, indents, strict=True)])
    return AxTree(texts, indents, depths, _parents(depths))


def _space_depths(indents: list[str]) -> list[int]:
    """Depth from indentation that uses spaces (tabs count one level each)."""
    widths = [ind.count(" ") for ind in indents]
    positive = [w for w in widths if w]
    unit = min(positive) if positive else 1
    # a common unit is the smallest step; e.g. 2 or 4 spaces per level
    return [
        ind.count("\t") + (w + unit - 1) // unit for ind, w in zip(indents, widths, strict=True)
    ]


def _parents(depths: list[int]) -> list[int]:
    """Parent of each line: the nearest earlier line with a smaller depth (-1 if none)."""
    if not depths:
        return []
    # where no line is more than one level deeper than the line before it (every tree
    # BrowserGym writes), the parent of a line at depth d is the last line seen at d - 1
    top = max(depths)
    last = [-1] * (top + 2)  # last[d + 1]: the last line seen at depth d
    parents = []
    deeper = depths[0]
    for i, d in enumerate(depths):
        if d > deeper:
            return _parents_by_stack(depths)
        parents.append(last[d])
        last[d + 1] = i
        deeper = d + 1
    return parents


def _parents_by_stack(depths: list[int]) -> list[int]:
    parents = [-1] * len(depths)
    stack: list[int] = []  # indices with strictly increasing depth
    for i, d in enumerate(depths):
        while stack and depths[stack[-1]] >= d:
            stack.pop()
        parents[i] = stack[-1] if stack else -1
        stack.append(i)
    return parents
