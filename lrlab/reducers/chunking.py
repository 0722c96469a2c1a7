"""Helpers shared by the retrieval baselines: the query, chunks of a tree, line outputs.

Two ways to cut a tree into chunks of about ``size`` tokens with ``overlap`` tokens shared
by neighbours:

- ``tokens`` (the paper's): windows of exactly ``size`` tokens of the tree text, each
  starting ``size - overlap`` tokens after the previous one; windows cut lines anywhere.
- ``lines``: runs of whole lines of at most ``size`` tokens (a longer line is a chunk of its
  own); the next run starts with the last lines of the previous one that fit in ``overlap``
  tokens. Every chunk is then a set of verbatim lines.

>>> from lrlib.core.axtree import parse
>>> tree = parse("\\n".join(f"[{i}] button 'item {i}'" for i in range(30)))
>>> chunks = line_chunks(tree, size=40, overlap=10)
>>> [(c.first, c.last) for c in chunks][:3]
[(1, 4), (4, 7), (7, 10)]
>>> windows = token_chunks(tree, size=40, overlap=10)
>>> len(windows[0].text) > 0 and windows[1].start < windows[0].end
True
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from lrlab.reducers.memo import per_step
from lrlib.core.axtree import AxTree
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING, line_token_counts
from lrlib.core.tokens import encode as _encode
from lrlib.core.tokens import token_byte_lengths as _token_bytes
from lrlib.reducers.base import Output


def query_of(step: Step) -> str:
    """The retrieval query: the goal, then the past actions, one per line.

    >>> query_of(Step(goal="Buy milk", tree="", history=("click('3')",)))
    "Buy milk\\nclick('3')"
    """
    return "\n".join([step.goal.strip(), *(h.strip() for h in step.history)]).strip()


@dataclass(frozen=True)
class Chunk:
    """A piece of the tree. ``start``/``end`` are byte offsets into the UTF-8 tree text;
    ``first``/``last`` the 1-based lines it touches."""

    text: str
    start: int
    end: int
    first: int
    last: int
    whole: tuple[int, ...] = field(default=())  # lines entirely inside the chunk


def _line_offsets(tree: AxTree) -> list[int]:
    """Byte offset where each line starts in ``tree.text``, plus the end (len + 1)."""
    sizes = [len(t.encode("utf-8", "surrogatepass")) + 1 for t in tree.texts]
    return [0, *accumulate(sizes)]


def line_chunks(
    tree: AxTree, size: int = 100, overlap: int = 10, encoding: str = DEFAULT_ENCODING
) -> list[Chunk]:
    """Runs of whole lines of at most ``size`` tokens, sharing up to ``overlap`` tokens."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got {size}, {overlap}")
    n = len(tree)
    cost = line_token_counts(tree.texts, encoding)
    offsets = _line_offsets(tree)
    chunks, i = [], 0
    while i < n:
        j, total = i + 1, cost[i]
        while j < n and total + cost[j] <= size:
            total += cost[j]
            j += 1
        text = "\n".join(tree.texts[i:j])
        chunks.append(Chunk(text, offsets[i], offsets[j] - 1, i + 1, j, tuple(range(i + 1, j + 1))))
        if j >= n:
            break
        k, shared = j, 0  # step back over the last lines that fit in the overlap
        while k - 1 > i and shared + cost[k - 1] <= overlap:
            k -= 1
            shared += cost[k]
        i = k
    return chunks


def token_chunks(
    tree: AxTree, size: int = 100, overlap: int = 10, encoding: str = DEFAULT_ENCODING
) -> list[Chunk]:
    """Windows of ``size`` tokens of the tree text, one every ``size - overlap`` tokens."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got {size}, {overlap}")
    raw = tree.text.encode("utf-8", "surrogatepass")
    tokens = _encode(tree.text, encoding)
    if not tokens:
        return []
    ends = list(accumulate(int(b) for b in _token_bytes(encoding)[tokens]))
    starts = [0, *ends[:-1]]
    offsets = _line_offsets(tree)
    chunks, s = [], 0
    while True:
        e = min(s + size, len(tokens))
        a, b = starts[s], ends[e - 1]
        chunks.append(_span_chunk(raw, a, b, offsets))
        if e >= len(tokens):
            return chunks
        s += size - overlap


def _span_chunk(raw: bytes, a: int, b: int, offsets: Sequence[int]) -> Chunk:
    """The chunk of bytes ``[a, b)`` with the lines it touches and those it holds whole."""
    first = bisect_right(offsets, a)  # 1-based line containing byte a
    last = max(first, bisect_left(offsets, b))  # 1-based line containing byte b - 1
    whole = tuple(n for n in range(first, last + 1) if offsets[n - 1] >= a and offsets[n] - 1 <= b)
    return Chunk(raw[a:b].decode("utf-8", "ignore"), a, b, first, last, whole)


@per_step
def chunks_of(
    tree: AxTree, unit: str, size: int, overlap: int, encoding: str = DEFAULT_ENCODING
) -> list[Chunk]:
    """:func:`token_chunks` or :func:`line_chunks` by ``unit``."""
    if unit == "tokens":
        return token_chunks(tree, size, overlap, encoding)
    if unit == "lines":
        return line_chunks(tree, size, overlap, encoding)
    raise ValueError(f"unknown chunk unit {unit!r}; valid: lines, tokens")


def chunks_output(tree: AxTree, chunks: Sequence[Chunk], order: str) -> Output:
    """The text of the chosen ``chunks`` (given best first).

    ``order="page"``: the page restricted to the union of the chunks, in page order
    (overlaps appear once; separate spans are joined by a newline). ``order="score"``: the
    chunks as retrieved, best first. ``kept`` are the lines shown whole; ``stubs`` the lines
    shown only in part but with their ``[bid]`` visible.
    """
    if order not in ("page", "score"):
        raise ValueError(f"unknown order {order!r}; valid: page, score")
    raw = tree.text.encode("utf-8", "surrogatepass")
    spans = sorted((c.start, c.end) for c in chunks)
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + 1:  # touching spans (a newline apart) join
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if order == "page":
        text = "\n".join(raw[a:b].decode("utf-8", "ignore").strip("\n") for a, b in merged)
    else:
        text = "\n".join(c.text.strip("\n") for c in chunks)
    kept, stubs = _visible_lines(tree, merged)
    return Output(text=text, kept=kept, stubs=stubs)


def _visible_lines(tree: AxTree, spans: Iterable[Sequence[int]]) -> tuple[list[int], list[int]]:
    offsets = _line_offsets(tree)
    kept, stubs = set(), set()
    for a, b in spans:
        first = bisect_right(offsets, a)
        last = max(first, bisect_left(offsets, b))
        for n in range(first, min(last, len(tree)) + 1):
            lo, hi = offsets[n - 1], offsets[n] - 1  # the line's bytes, without "\n"
            if a <= lo and hi <= b:
                kept.add(n)
                continue
            bid = tree.bids[n - 1]
            if bid is None:
                continue
            head = lo + tree.indents[n - 1]  # "[bid]" starts after the indentation
            if a <= head and head + len(bid.encode()) + 2 <= b:
                stubs.add(n)
    return sorted(kept), sorted(stubs - kept)
