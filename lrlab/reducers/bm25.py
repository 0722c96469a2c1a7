"""BM25 retrieval over the tree's lines or over its chunks, scored as the ``bm25s`` package
scores them (number for number: ``tests/test_features_fast.py``), without depending on it.

The query is the goal followed by the action history, so the bids of past actions (for
example ``a51`` in ``click('a51')``) match the lines that carry them. Each step is its own
corpus: the index is built over that step's lines (or chunks) and scored once.

- ``unit="lines"``: the ``top_k`` best-scoring lines, rendered with ``strategy`` (the
  structure-preserving filter by default: ancestors shown as ``[bid] role`` stubs).
- ``unit="chunks"``: the ``top_k`` best chunks (the same chunks as the embedding
  baseline: 100 tokens, 10 shared), in page order or score order.

Only documents sharing at least one term with the query can be chosen (BM25 scores the rest
zero), so a step may keep fewer than ``top_k``.

AgentLab's BM25 retriever (``bm25_agent``) scores chunks identically (bm25s, English stop
words removed; ``tests/test_peer_retrieval.py``). It always cuts 200-token windows sharing
50 (it ignores its own ``chunk_size``/``overlap``): ``size=200, overlap=50, order="score"``
reproduce its ranking. It also returns zero-score chunks to fill ``top_k``, and a last
window lying inside the previous one; lrlib does neither.

>>> tree = "\\n".join(["RootWebArea 'Shop'", "\\t[3] link 'Home'", "\\t[4] button 'Add to cart'"])
>>> BM25(top_k=1).reduce(Step(goal="Add the item to the cart", tree=tree)).text
"RootWebArea\\n\\t[4] button 'Add to cart'"
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Sequence
from itertools import chain, compress, repeat

import numpy as np

from lrlab.reducers.chunking import chunks_of, chunks_output, query_of
from lrlab.reducers.memo import per_step
from lrlib.core.step import Step
from lrlib.reducers.base import Knob, Output, Reducer, lines_output, register_reducer

K1, B = 1.5, 0.75  # bm25s's defaults
STOPWORDS = (
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "but",
    "by",
    "for",
    "if",
    "in",
    "into",
    "is",
    "it",
    "no",
    "not",
    "of",
    "on",
    "or",
    "such",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "to",
    "was",
    "will",
    "with",
)  # fmt: skip  (bm25s's English list)
_STOP = frozenset(STOPWORDS)
_RUN = re.compile(r"\w\w+")  # as r"\b\w\w+\b": a run of word characters is one token
_BYTE_SEPARATORS = bytes(
    c if c == 10 or c > 127 or re.fullmatch(r"\w", chr(c)) else 32 for c in range(256)
)  # ASCII other than word characters to a space
_SHORT = {chr(c).encode(): 1 for c in range(128) if re.fullmatch(r"\w", chr(c))}  # 1-char runs
_STOP_BYTES = {w.encode(): 1 for w in STOPWORDS}
_SHORT_AND_STOP = {**_SHORT, **_STOP_BYTES}


def tokens(text: str) -> list[str]:
    """``bm25s``'s tokens of ``text``: lower-cased runs of two or more word characters
    (scikit-learn's pattern), stop words included (:func:`term_counts` drops them).

    >>> tokens("Add to Cart_2, x")
    ['add', 'to', 'cart_2']
    """
    return _RUN.findall(text.lower())


def term_counts(
    docs: Sequence[Sequence[str]], words: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """For every document's :func:`tokens`: how many are not stop words (its BM25 length),
    and how often each of ``words`` occurs (one column per word).

    >>> n, tf = term_counts([["add", "to", "cart"], ["cart", "cart"]], ["cart"])
    >>> n.tolist(), tf.tolist()
    ([2, 2], [[1], [2]])
    """
    n = len(docs)
    flat = list(chain.from_iterable(docs))
    doc = np.repeat(np.arange(n), np.fromiter(map(len, docs), np.int64, n))
    stop = np.fromiter(map(_STOP.__contains__, flat), bool, len(flat))
    lengths = np.bincount(doc[~stop], minlength=n)
    column = {w: k for k, w in enumerate(words)}
    ids = np.fromiter(map(column.get, flat, repeat(-1)), np.int64, len(flat))
    hit = ids >= 0
    q = len(words)
    tf = np.bincount(doc[hit] * q + ids[hit], minlength=n * q).reshape(n, q)
    return lengths, tf


def line_term_counts(lines: Sequence[str], words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`term_counts` of the :func:`tokens` of each of ``lines`` (texts without
    ``\\n``, such as a tree's lines), from one scan of their joined text.

    >>> n, tf = line_term_counts(["Add to cart", "", "cart, cart"], ["cart"])
    >>> n.tolist(), tf.tolist()
    ([2, 0, 2], [[1], [0], [2]])
    """
    n = len(lines)
    text = "\n".join(lines).lower()
    if text.count("\n") != max(n - 1, 0):  # a line holds a newline: line by line
        return term_counts([tokens(t) for t in lines], words)
    return joined_term_counts(text, n, words)


def token_lines(data: bytes) -> np.ndarray:
    """The line (0-based: newlines before it) of each of ``data.split()``'s tokens, for
    ``data`` whose bytes below 33 are all spaces or newlines.

    >>> token_lines(b"add to\\n\\n cart").tolist()
    [0, 0, 2]
    """
    a = np.frombuffer(data, np.uint8)
    solid = a > 32
    start = solid.copy()
    start[1:] &= ~solid[:-1]
    return np.searchsorted(np.flatnonzero(a == 10), np.flatnonzero(start))


def joined_term_counts(text: str, n: int, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`line_term_counts` of ``n`` lines given as their lower-cased text joined by
    ``\\n`` (which must hold exactly ``n - 1`` newlines).

    >>> [a.tolist() for a in joined_term_counts("add to cart\\n\\ncart", 3, ["cart"])]
    [[2, 0, 1], [[1], [0], [1]]]
    """
    found, line = word_tokens(text)
    kind = token_kinds(words)
    code = np.fromiter(map(kind.get, found, repeat(0)), np.int64, len(found))
    return counts_from_kinds(code, line, text, n, words)


def word_tokens(text: str) -> tuple[list[bytes], np.ndarray]:
    """The runs of word characters of ``text`` (lower-cased lines joined by ``\\n``) as UTF-8
    bytes, a byte of a character other than ASCII counting as one (so they are
    :func:`tokens` on ASCII lines only: :func:`counts_from_kinds`), and the line of each.

    >>> found, line = word_tokens("add to\\n\\ncart_2, é")
    >>> found, line.tolist()
    ([b'add', b'to', b'cart_2', b'\\xc3\\xa9'], [0, 0, 2, 2])
    """
    data = text.encode("utf-8", "surrogatepass").translate(_BYTE_SEPARATORS)
    return data.split(), token_lines(data)


def token_kinds(words: Sequence[str]) -> dict[bytes, int]:
    """The kind of a token (UTF-8 bytes): 1 a stop word or one character, ``3 + k`` the
    ``k``-th of ``words``; a token not here (0) is another word.

    >>> kind = token_kinds(["cart"])
    >>> kind[b"the"], kind[b"x"], kind[b"cart"], kind.get(b"home", 0)
    (1, 1, 3, 0)
    """
    return {**_SHORT_AND_STOP, **{w.encode(): 3 + k for k, w in enumerate(words)}}


def counts_from_kinds(
    code: np.ndarray,
    line: np.ndarray,
    text: str,
    n: int,
    words: Sequence[str],
    kinds: dict[bytes, int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`joined_term_counts` from the kind (:func:`token_kinds`) and line of each of
    :func:`word_tokens`; the lines with characters other than ASCII are tokenised again,
    by the regex of :func:`tokens` (``kinds``: ``token_kinds(words)``, if at hand).

    >>> text = "add to cart\\n\\ncart"
    >>> found, line = word_tokens(text)
    >>> code = np.array([token_kinds(["cart"]).get(t, 0) for t in found])
    >>> [a.tolist() for a in counts_from_kinds(code, line, text, 3, ["cart"])]
    [[2, 0, 1], [[1], [0], [1]]]
    """
    if not text.isascii():
        lines = text.split("\n")
        odd = list(compress(range(n), map(operator.not_, map(str.isascii, lines))))
        other = np.zeros(n, bool)
        other[odd] = True
        mine = ~other[line]
        runs = [[t.encode() for t in _RUN.findall(lines[i])] for i in odd]
        more = list(chain.from_iterable(runs))
        kind = token_kinds(words) if kinds is None else kinds
        more_code = np.fromiter(map(kind.get, more, repeat(0)), np.int64, len(more))
        code = np.concatenate((code[mine], more_code))
        line = np.concatenate((line[mine], np.repeat(odd, list(map(len, runs)))))
    q = len(words)
    lengths = np.bincount(line[code != 1], minlength=n)  # kinds 0 and 3 + k: not 1 (nor 2)
    hit = code >= 3
    tf = np.bincount(line[hit] * q + code[hit] - 3, minlength=n * q).reshape(n, q)
    return lengths, tf


def query_terms(query: str) -> tuple[list[str], list[int]]:
    """The query's distinct non-stop :func:`tokens` and, in query order with repeats, the
    index of each (``bm25s`` sums a repeated word twice).

    >>> query_terms("cart the cart home")
    (['cart', 'home'], [0, 0, 1])
    """
    seq = [w for w in tokens(query) if w not in _STOP]
    words = list(dict.fromkeys(seq))
    index = {w: k for k, w in enumerate(words)}
    return words, [index[w] for w in seq]


def scores_from_counts(lengths: np.ndarray, tf: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """BM25 (Lucene variant, ``k1=1.5``, ``b=0.75``) of documents of ``lengths`` with term
    counts ``tf`` (:func:`term_counts`), for a query whose terms are the columns ``order``,
    computed as ``bm25s`` does: float32 pair scores from float64, added in query order in
    float32 (the same numbers bit for bit, ``tests/test_features_fast.py``). Leading axes
    are separate corpora: ``lengths`` (..., documents), ``tf`` (..., documents, terms).

    >>> (scores_from_counts(np.array([2, 2]), np.array([[1], [0]]), [0]) > 0).tolist()
    [True, False]
    """
    lengths = np.asarray(lengths)
    n = lengths.shape[-1]
    if not n or not tf.size:
        return np.zeros(lengths.shape, dtype=np.float32)
    q = tf.shape[-1]
    flat = np.flatnonzero(tf != 0)  # the counts: a zero scores zero
    doc, term = np.divmod(flat, q)  # doc: the corpora's documents one after another
    key = doc // n * q + term  # (corpus, term)
    df = np.bincount(key, minlength=lengths.size // n * q)
    idf = np.zeros(len(df))
    some = np.flatnonzero(df)  # the other terms have no pair to score
    logs = [math.log(1 + (n - f + 0.5) / (f + 0.5)) for f in df[some].tolist()]
    idf[some] = np.array(logs, np.float32)
    total = lengths.sum(axis=-1, keepdims=True)
    average = np.where(total > 0, total, n) / n  # no token at all: no score either way
    norm = K1 * ((1 - B) + B * lengths / average)
    count = tf.ravel()[flat].astype(float)
    pair = (idf[key] * (count / (norm.ravel()[doc] + count))).astype(np.float32)
    # each document's pairs added in query order, one term (a row, zero where absent)
    # after another; a term without a pair is a row of zeros, which changes no float32 sum
    dense = np.zeros((q, lengths.size), np.float32)
    dense[term, doc] = pair
    scored = np.zeros(q, bool)
    scored[term] = True
    rows = list(compress(order, scored[list(order)].tolist()))
    if not rows:
        return np.zeros(lengths.shape, dtype=np.float32)
    out = dense[rows[0]].copy()
    for k in rows[1:]:
        out += dense[k]
    return out.reshape(lengths.shape)


def bm25_scores(documents: Sequence[str], query: str) -> np.ndarray:
    """BM25 score of every document for ``query`` (English stop words removed), the
    numbers ``bm25s`` gives, counted with numpy for the query's words only.

    >>> (bm25_scores(["add to cart", "home page", "cart total"], "cart") > 0).tolist()
    [True, False, True]
    """
    words, order = query_terms(query)
    return scores_from_counts(*line_term_counts(documents, words), order)


@per_step
def ranked(
    step: Step, unit: str, size: int, overlap: int, encoding: str
) -> tuple[np.ndarray, np.ndarray]:
    """``step``'s lines (``unit="lines"``) or token chunks, best first by BM25 score for
    :func:`lrlab.reducers.chunking.query_of`, and their scores (computed once per step
    whatever ``top_k``).

    >>> s = Step(goal="cart", tree="[1] link 'Home'\\n[2] link 'Cart'")
    >>> order, scores = ranked(s, "lines", 100, 10, "o200k_base")
    >>> order.tolist(), bool(scores[1] > 0 == scores[0])
    ([1, 0], True)
    """
    tree = step.axtree
    if unit == "lines":
        docs = [t.strip() for t in tree.texts]
    else:
        docs = [c.text for c in chunks_of(tree, "tokens", size, overlap, encoding)]
    scores = bm25_scores(docs, query_of(step))
    return np.argsort(-scores, kind="stable"), scores


@register_reducer
class BM25(Reducer):
    """The ``top_k`` lines (``unit="lines"``) or chunks (``unit="chunks"``) by BM25."""

    name = "bm25"
    listed = 5
    sweep = (
        Knob("top_k", (5, 10, 20, 40, 80, 160)),
        Knob("top_k", (1, 2, 5, 10, 20, 40), "unit=chunks"),
    )

    def __init__(
        self,
        unit: str = "lines",
        top_k: int | None = None,
        size: int = 100,
        overlap: int = 10,
        order: str = "page",
        strategy: str = "structure",
        markers: bool = False,
        **kwargs,
    ) -> None:
        if unit not in ("lines", "chunks"):
            raise ValueError(f"unknown unit {unit!r}; valid: chunks, lines")
        top_k = top_k if top_k is not None else (40 if unit == "lines" else 10)
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.unit, self.top_k, self.size, self.overlap = unit, top_k, size, overlap
        self.order, self.strategy, self.markers = order, strategy, markers
        params = {"unit": unit, "top_k": top_k}
        if unit == "chunks":
            params.update(size=size, overlap=overlap, order=order)
        else:
            params.update(strategy=strategy, markers=markers)
        super().__init__(**params, **kwargs)

    def select(self, step: Step) -> Output:
        tree = step.axtree
        order, scores = ranked(step, self.unit, self.size, self.overlap, self.encoding)
        best = [int(i) for i in order[: self.top_k] if scores[i] > 0]
        if self.unit == "lines":
            return lines_output(tree, [i + 1 for i in best], self.strategy, self.markers)
        chunks = chunks_of(tree, "tokens", self.size, self.overlap, self.encoding)
        out = chunks_output(tree, [chunks[i] for i in best], self.order)
        out.extra = {"n_chunks": len(chunks), "chunks": best}
        return out
