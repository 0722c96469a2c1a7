"""The paper's embedding-retrieval baseline.

The tree is cut into chunks of 100 tokens with 10 tokens shared by neighbours
(:mod:`~lrlab.reducers.chunking`); the query is the goal followed by the action history; the
chunks with the highest cosine similarity (dot product of L2-normalised embeddings) to the
query are kept, 10 by default, and shown in page order (``order="score"``: best first).
Embeddings come from :mod:`lrlab.reducers.embeddings` (offline e5 by default, OpenAI's
``text-embedding-3-small`` as in the paper with ``backend="openai"``) and are cached on disk.

``extra`` reports the embedding cache's hits and misses and ``cold_latency_s``: the latency
the step would have had with nothing cached (the vectors' recorded compute time replaces
the time spent reading them from the cache).

>>> from lrlab.reducers.embeddings import normalise
>>> class Bag:  # a toy embedder: counts of a few words
...     model = "bag"
...     def embed(self, texts, kind="passage"):
...         words = ("cart", "search", "menu")
...         return normalise(np.array([[t.lower().count(w) + 1e-3 for w in words]
...                                     for t in texts]))
>>> tree = "\\n".join(["[1] link 'Menu'", "[2] searchbox 'Search'", "[3] button 'Cart'"])
>>> r = EmbeddingRetriever(embedder=Bag(), unit="lines", size=8, overlap=0, top_k=1)
>>> r.reduce(Step(goal="Open the cart", tree=tree)).text
"[3] button 'Cart'"
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from lrlab.reducers.chunking import chunks_of, chunks_output, query_of
from lrlab.reducers.embeddings import CachedEmbedder, Embedder, get_embedder
from lrlib.core.step import Step
from lrlib.reducers.base import Knob, Output, Reducer, register_reducer


@register_reducer
class EmbeddingRetriever(Reducer):
    """Top-``top_k`` chunks by cosine similarity to goal + history.

    ``backend``: ``e5`` (offline) or ``openai``; ``unit``: ``tokens`` (the paper's windows)
    or ``lines`` (whole-line chunks); ``order``: ``page`` or ``score``. Pass ``embedder`` to
    use any :class:`~lrlab.reducers.embeddings.Embedder` (then ``backend`` is ignored).
    """

    name = "embedding"
    listed = 7
    sweep = Knob("top_k", (1, 2, 5, 10, 20, 40))
    embeds_tree = True  # its cost: embedding the tree in chunks (lrlib.eval.costs)

    def __init__(
        self,
        backend: str = "e5",
        top_k: int = 10,
        size: int = 100,
        overlap: int = 10,
        unit: str = "tokens",
        order: str = "page",
        cache: bool = True,
        embedder: Embedder | None = None,
        **kwargs: Any,
    ) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if unit not in ("tokens", "lines") or order not in ("page", "score"):
            raise ValueError(f"unit must be tokens|lines and order page|score, got {unit}, {order}")
        self.embedder = embedder if embedder is not None else get_embedder(backend, cache=cache)
        self.top_k, self.size, self.overlap = top_k, size, overlap
        self.unit, self.order = unit, order
        super().__init__(
            backend=backend if embedder is None else "custom",
            model=self.embedder.model,
            top_k=top_k,
            size=size,
            overlap=overlap,
            unit=unit,
            order=order,
            **kwargs,
        )

    def vector_keys(self, steps: Sequence[Step]) -> list[set[str]]:
        """The cache keys of each step's vectors (its query and every chunk); empty sets
        when the embedder keeps no cache."""
        if not isinstance(self.embedder, CachedEmbedder):
            return [set() for _ in steps]
        out = []
        for step in steps:
            chunks = chunks_of(step.axtree, self.unit, self.size, self.overlap, self.encoding)
            keys = {self.embedder.key(query_of(step) or " ", "query")}
            out.append(keys | {self.embedder.key(c.text, "passage") for c in chunks})
        return out

    def cached_steps(self, steps: Sequence[Step]) -> list[bool]:
        """Whether the vectors of each step are all in the cache (seeded from the shipped
        pack), read without computing anything."""
        wanted = self.vector_keys(steps)
        if not any(wanted):
            return [True] * len(steps)
        found = self.embedder.cached(set().union(*wanted))  # type: ignore[attr-defined]
        return [keys <= found for keys in wanted]

    def live_work(self, steps: Sequence[Step]) -> str | None:
        """What reducing ``steps`` computes live, in words (``lrlib evaluate``'s plan line
        says it first), or None when every vector is cached."""
        missing = len(steps) - sum(self.cached_steps(steps))
        if not missing:
            return None
        from lrlib.report.run import duration

        return (
            f"computes e5 vectors for the {missing} of {len(steps)} steps missing from the "
            f"vector pack, ~{duration(missing * 2.4)}"
        )

    def select(self, step: Step) -> Output:
        tree = step.axtree
        chunks = chunks_of(tree, self.unit, self.size, self.overlap, self.encoding)
        if not chunks:
            return Output(text="", kept=[])
        start = time.perf_counter()
        query = self.embedder.embed([query_of(step) or " "], "query")[0]
        q_cost = getattr(self.embedder, "last_cost", None)
        passages = self.embedder.embed([c.text for c in chunks], "passage")
        p_cost = getattr(self.embedder, "last_cost", None)
        embed_s = time.perf_counter() - start
        scores = passages @ query
        best = np.argsort(-scores, kind="stable")[: self.top_k]
        out = chunks_output(tree, [chunks[i] for i in best], self.order)
        out.extra = {
            "n_chunks": len(chunks),
            "chunks": [int(i) for i in best],
            "scores": [round(float(scores[i]), 5) for i in best],
        }
        if q_cost is not None and p_cost is not None:
            cold = q_cost.cold_seconds + p_cost.cold_seconds
            out.extra.update(
                cache_hits=q_cost.hits + p_cost.hits,
                cache_misses=q_cost.misses + p_cost.misses,
                embed_s=embed_s,
                cold_embed_s=cold,
            )
        return out

    def reduce(self, step: Step):
        """As :meth:`Reducer.reduce`, adding ``extra["cold_latency_s"]``."""
        result = super().reduce(step)
        if "cold_embed_s" in result.extra:
            rest = max(result.latency_s - result.extra["embed_s"], 0.0)
            result.extra["cold_latency_s"] = rest + result.extra["cold_embed_s"]
        return result
