"""BM25 retrieval (the ``bm25s`` package) over the tree's lines or over its chunks.

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

from collections.abc import Sequence

import numpy as np

from lrlib.core.step import Step
from lrlib.reducers.base import Output, Reducer
from lrlib.reducers.chunking import chunks_of, chunks_output, lines_output, query_of
from lrlib.reducers.registry import register_reducer


def bm25_scores(documents: Sequence[str], query: str) -> np.ndarray:
    """BM25 score of every document for ``query`` (English stop words removed).

    >>> (bm25_scores(["add to cart", "home page", "cart total"], "cart") > 0).tolist()
    [True, False, True]
    """
    import bm25s

    if not documents:
        return np.zeros(0, dtype=np.float32)
    corpus = bm25s.tokenize(list(documents), stopwords="en", show_progress=False)
    words = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    words = [w for w in words if w in corpus.vocab]
    if not words:
        return np.zeros(len(documents), dtype=np.float32)
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    return np.asarray(index.get_scores(words), dtype=np.float32)


@register_reducer("bm25")
class BM25(Reducer):
    """The ``top_k`` lines (``unit="lines"``) or chunks (``unit="chunks"``) by BM25."""

    name = "bm25"

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
        tree, query = step.axtree, query_of(step)
        if self.unit == "lines":
            docs = [t.strip() for t in tree.texts]
        else:
            chunks = chunks_of(tree, "tokens", self.size, self.overlap, self.encoding)
            docs = [c.text for c in chunks]
        scores = bm25_scores(docs, query)
        best = [int(i) for i in np.argsort(-scores, kind="stable")[: self.top_k] if scores[i] > 0]
        if self.unit == "lines":
            return lines_output(tree, [i + 1 for i in best], self.strategy, self.markers)
        out = chunks_output(tree, [chunks[i] for i in best], self.order)
        out.extra = {"n_chunks": len(chunks), "chunks": best}
        return out
