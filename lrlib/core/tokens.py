"""Exact token counts, offline, and bottom truncation at line boundaries.

The encoders and counters (tiktoken, the reference; riptoken and toktok, faster, used
when they agree with it) and their offline files are in :mod:`lrlib.core.bpe`; their names are
re-exported here.

Counting is exact. For o200k/cl100k a pre-token never crosses the boundary that follows a
newline (unless the next line is empty, starts with ``\\r`` or, for o200k, with ``/``;
such texts are counted whole), so the count of a text is the sum of the counts of any
whole-line pieces of it. With toktok, an ASCII text is counted whole, and a text with
other lines in runs of ASCII lines (toktok) plus those lines (memoised, encoded).
Without it, long multi-line texts are counted line by line with a memo of line counts:
steps of one episode share most of their lines, so a whole run over a dataset encodes each
line once; the lines missing from the memo are encoded in one call, as one text (on all
cores when it is long), and split into lines where its newline-ending tokens are.

>>> count_tokens("[12] button 'Submit'")
7
>>> truncate_bottom("a\\nb\\nc", budget=3)
'a\\nb'
"""

from __future__ import annotations

import operator
import os
import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain, compress, filterfalse, islice

import numpy as np

from lrlib.core.bpe import (  # noqa: F401  (re-exported: lrlib.core.tokens is where callers find them)
    DEFAULT_ENCODING,
    TokenizerUnavailable,
    _counter,
    _encode_by_pieces,
    _ends_with_newline,
    _fast,
    _seed_tiktoken_cache,
    _token_bytes,
    backend_name,
    count_each,
    encode_many,
    get_encoding,
)
from lrlib.core.bpe import count as _count
from lrlib.core.bpe import encode as _encode

_LINE_MEMO_MAX = 400_000
_SHORT = 2_000  # below this many characters a text is simply encoded whole
# a text of lines is encoded in whole-line pieces of at least this many characters, one per
# core (up to 4): the encoders release the GIL, so the pieces run at the same time
_PARALLEL_CHARS = 1 << 18
_PARALLEL_PARTS = max(1, min(4, os.cpu_count() or 1))
_FEW_TOKENS = 512  # below this many tokens, line ends are found in Python (numpy's set-up
# costs more)

_line_memo: dict[str, dict[str, int]] = {}

# a newline followed by a line that is empty, blank, or starts with "\r" (or "/" for o200k)
_UNSEPARABLE = re.compile(r"\n(?:\r|[^\S\n]*+(?:\n|\Z))")
_UNSEPARABLE_O200K = re.compile(r"\n(?:[\r/]|[^\S\n]*+(?:\n|\Z))")


def _text_is_separable(text: str, encoding: str) -> bool:
    """True when every newline of ``text`` is a pre-token boundary."""
    pattern = _UNSEPARABLE_O200K if encoding == "o200k_base" else _UNSEPARABLE
    return pattern.search(text) is None


def _lines_are_separable(lines: Sequence[str], encoding: str) -> bool:
    """True when every newline of "\\n".join(lines) is a pre-token boundary."""
    return _text_is_separable("\n".join(lines), encoding)


@lru_cache(maxsize=8)
def _newline_ranks(encoding: str) -> frozenset[int]:
    return frozenset(np.flatnonzero(_ends_with_newline(encoding)).tolist())


def _line_counts(lines: Sequence[str], encoding: str, tail: bool, n_chars: int = -1) -> list[int]:
    """Tokens of each line of the separable text ``"\\n".join(lines)`` (plus ``"\\n"`` when
    ``tail``): every line with its newline; the last one with a newline only when ``tail``.

    In a separable text each newline is the last byte of a pre-token, so it ends a token,
    and no other token ends with one: the line ends are those tokens. The encoded text is
    cut into whole-line pieces, encoded at the same time, whose tokens are the text's.
    ``n_chars``: the length of the text, when the caller knows it.
    """
    if n_chars < 0:
        n_chars = sum(map(len, lines)) + len(lines)
    if _counter(encoding) is not None:  # toktok counts lines one by one, without tokens
        texts = [line + "\n" for line in lines]
        if not tail:
            texts[-1] = lines[-1]
        return count_each(texts, encoding)
    parts = max(1, min(_PARALLEL_PARTS, n_chars // _PARALLEL_CHARS, len(lines)))
    end = "\n" if tail else ""
    if parts == 1:
        found = _encode("\n".join(lines) + end, encoding)
    else:
        step = -(-len(lines) // parts)
        cuts = range(0, len(lines), step)
        pieces = ["\n".join(lines[i : i + step]) + ("\n" if i + step < len(lines) else end)
                  for i in cuts]  # fmt: skip
        found = list(chain.from_iterable(encode_many(pieces, encoding)))
    ends = _newline_ends(found, encoding)
    if len(ends) == len(lines) - (not tail):
        counts = (
            [b - a for a, b in zip([-1, *ends], ends, strict=False)]
            if isinstance(ends, list)
            else np.diff(ends, prepend=-1).tolist()
        )
    else:  # a line holding a newline of its own: locate the line ends by byte offsets
        offsets = np.cumsum(_token_bytes(encoding)[np.asarray(found, dtype=np.int64)])
        sizes = [len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines]
        line_ends = np.cumsum(sizes[: len(sizes) - (not tail)])
        counts = np.diff(np.searchsorted(offsets, line_ends, side="right"), prepend=0).tolist()
    if not tail:
        counts.append(len(found) - sum(counts))
    return counts


def _newline_ends(found: list[int], encoding: str) -> Sequence[int]:
    """Positions of the tokens of ``found`` whose bytes end with a newline."""
    if len(found) < _FEW_TOKENS:
        ranks = _newline_ranks(encoding)
        return [i for i, t in enumerate(found) if t in ranks]
    tokens = np.fromiter(found, np.int64, len(found))
    return np.flatnonzero(_ends_with_newline(encoding)[tokens])


def _remember(
    memo: dict[str, int], missing: list[str], counts: Sequence[int], lines: Sequence[str]
) -> list[int]:
    """Add the counts of the ``missing`` lines to ``memo`` (emptied first when it would grow
    too large) and return the counts of ``lines``."""
    if len(memo) + len(missing) <= _LINE_MEMO_MAX:
        memo.update(zip(missing, counts, strict=True))
        return list(map(memo.__getitem__, lines))
    found = dict(zip(missing, counts, strict=True))
    out = [found[line] if line in found else memo[line] for line in lines]
    memo.clear()
    memo.update(found)
    return out


def line_token_counts(
    lines: Sequence[str], encoding: str = DEFAULT_ENCODING, _separable: bool = False
) -> list[int]:
    """Tokens of ``line + "\\n"`` for every line (memoised; misses encoded in one call).

    >>> line_token_counts(["a", "b"])
    [2, 2]
    """
    memo = _line_memo.setdefault(encoding, {})
    try:
        return list(map(memo.__getitem__, lines))  # the common case: every line seen before
    except KeyError:
        pass
    # the missing lines, each once, in order of first appearance (all C-level loops); they
    # keep their order and the first line stays first: a separable text of lines gives a
    # separable text of its missing lines
    missing = list(filterfalse(memo.__contains__, dict.fromkeys(lines)))
    # with toktok each line is counted alone either way (no separability to check)
    alone = _counter(encoding) is not None
    if alone or (not _separable and not _lines_are_separable(missing, encoding)):
        counts = count_each([line + "\n" for line in missing], encoding)
    else:
        counts = _line_counts(missing, encoding, tail=True)
    return _remember(memo, missing, counts, lines)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact number of tokens of ``text`` (special-token strings count as plain text).

    >>> count_tokens("")
    0
    """
    if len(text) < _SHORT or "\n" not in text or _whole(text, encoding):
        return _count(text, encoding)
    return _count_separable(text.split("\n"), len(text), encoding)


def count_lines(lines: Sequence[str], encoding: str = DEFAULT_ENCODING) -> int:
    """Exact tokens of ``"\\n".join(lines)``, for any lines (memoised by line when the
    join is separable).

    >>> count_lines(["RootWebArea 'x'", "\\t[1] button 'Go'"]) == count_tokens("RootWebArea 'x'\\n\\t[1] button 'Go'")
    True
    """
    if not lines:
        return 0
    text = "\n".join(lines)
    memo = _line_memo.get(encoding)
    # the lines but the last counted before (a reducer priced them: probed by the first and
    # the one before the last): the sum of their counts, when the text is separable
    if memo and lines[0] in memo and lines[max(0, len(lines) - 2)] in memo:
        if not _text_is_separable(text, encoding):
            return _count(text, encoding)
        try:
            head = islice(lines, len(lines) - 1)
            return sum(map(memo.__getitem__, head)) + _count(lines[-1], encoding)
        except KeyError:
            pass
    if _whole(text, encoding):
        return _count(text, encoding)
    return _count_separable(lines, len(text), encoding)


def _whole(text: str, encoding: str) -> bool:
    """Is ``text`` counted whole: ASCII text toktok counts at once, or not separable."""
    ascii_whole = text.isascii() and _counter(encoding) is not None
    return ascii_whole or not _text_is_separable(text, encoding)


def _count_separable(lines: Sequence[str], n_chars: int, encoding: str) -> int:
    """Tokens of the separable text ``"\\n".join(lines)`` (``n_chars`` long). With toktok:
    by runs of ASCII lines. Without: memoised counts of its lines but the last, plus the
    last; what the memo misses (and the last line) encoded in one call."""
    if _counter(encoding) is not None:
        return _count_by_runs(lines, encoding)
    memo = _line_memo.setdefault(encoding, {})
    try:
        head = islice(lines, len(lines) - 1)
        return sum(map(memo.__getitem__, head)) + _count(lines[-1], encoding)
    except KeyError:
        pass
    missing = list(filterfalse(memo.__contains__, dict.fromkeys(islice(lines, len(lines) - 1))))
    # the last line goes at the end of the text (no newline after it); the text stays
    # separable: every line but the first is a line that followed a newline before
    if len(missing) == len(lines) - 1:  # cold: every line new (and the join is the text)
        counts = _line_counts(lines, encoding, tail=False, n_chars=n_chars)
        _remember(memo, missing, counts[:-1], ())
        return sum(counts)
    counts = _line_counts([*missing, lines[-1]], encoding, tail=False)
    head_counts = _remember(memo, missing, counts[:-1], lines[:-1])
    return sum(head_counts) + counts[-1]


def _count_by_runs(lines: Sequence[str], encoding: str) -> int:
    """Tokens of the separable text ``"\\n".join(lines)`` when toktok counts ASCII text:
    each run of ASCII lines counted as one text by toktok, the other lines one by one
    (memoised, encoded); a separable text's count is the sum over such whole-line pieces."""
    odd = list(compress(range(len(lines)), map(operator.not_, map(str.isascii, lines))))
    last = len(lines) - 1
    pieces, start = [], 0
    for i in odd:
        if i > start:
            pieces.append("\n".join(lines[start:i]) + "\n")
        start = i + 1
    if start <= last:
        pieces.append("\n".join(lines[start:]))
    total = sum(count_each(pieces, encoding))
    if odd and odd[-1] == last:
        total += _count(lines[last], encoding)
        odd.pop()
    return total + sum(line_token_counts([lines[i] for i in odd], encoding, _separable=True))


def truncate_bottom(text: str, budget: int, encoding: str = DEFAULT_ENCODING) -> str:
    """The longest prefix of whole lines of ``text`` with at most ``budget`` tokens.

    Exact: the result's token count is <= budget, and adding the next line would exceed it.
    A budget smaller than the first line gives ``""``.

    >>> truncate_bottom("one\\ntwo\\nthree", budget=100)
    'one\\ntwo\\nthree'
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if count_tokens(text, encoding) <= budget:
        return text
    lines = text.split("\n")
    if not _lines_are_separable(lines, encoding):
        return _truncate_slow(lines, budget, encoding)
    with_nl = line_token_counts(lines, encoding)
    prefix = np.cumsum([0, *with_nl]).tolist()  # prefix[k]: tokens of the first k lines + "\n"
    # k lines cost prefix[k-1] + tokens(lines[k-1]) <= prefix[k]; search near bisect's guess
    k = max(0, bisect_right(prefix, budget) - 1)
    while k < len(lines) and prefix[k] + _count(lines[k], encoding) <= budget:
        k += 1
    while k > 0 and prefix[k - 1] + _count(lines[k - 1], encoding) > budget:
        k -= 1
    return "\n".join(lines[:k])


def _truncate_slow(lines: list[str], budget: int, encoding: str) -> str:
    lo, hi = 0, len(lines)  # invariant: lines[:lo] fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _count("\n".join(lines[:mid]), encoding) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "\n".join(lines[:lo])


def clear_line_memo() -> None:
    """Forget memoised line counts (benchmarks use this to measure cold counting)."""
    _line_memo.clear()
