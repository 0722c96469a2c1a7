"""Chunking and BM25 against AgentLab's retrieval baselines (bm25_agent, embedding_agent).

lrlib's ``token_chunks`` are AgentLab's ``get_chunks_from_tokenizer`` windows, except
(documented) AgentLab's last windows that lie inside the one before, and a character split
by a window edge, which AgentLab decodes as U+FFFD and lrlib leaves out. BM25 scores are
identical: AgentLab's ranking of all chunks is lrlib's ranking by score.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peer_import import peer, recorded_steps

from lrlab.reducers.bm25 import bm25_scores
from lrlab.reducers.chunking import query_of, token_chunks
from lrlib.core.axtree import parse
from lrlib.reducers import get_reducer


def check_chunks(tree, size: int, overlap: int, utils) -> int:
    """Assert lrlib's windows are AgentLab's; returns the number of extra AgentLab windows."""
    ours = [c.text for c in token_chunks(tree, size, overlap)]
    theirs = [
        t.replace("\ufffd", "") for t in utils.get_chunks_from_tokenizer(tree.text, size, overlap)
    ]
    assert ours == theirs[: len(ours)]
    for extra in theirs[len(ours) :]:  # AgentLab's trailing windows repeat the last one's end
        assert ours[-1].endswith(extra)
    return len(theirs) - len(ours)


@pytest.mark.parametrize(
    ("size", "overlap", "module"), [(200, 50, "bm25_utils"), (100, 10, "embedding_utils")]
)
def test_chunks_on_recorded_trees(size, overlap, module):
    utils = getattr(peer(), module)
    steps = recorded_steps()
    extra = [check_chunks(s.axtree, size, overlap, utils) for s in steps]
    assert len(steps) >= 100 and any(extra)  # the documented difference occurs, and only it


texts = st.lists(
    st.sampled_from(["[12] button 'Añadir al carrito'", "\tStaticText '日本語のテキスト'",
                     "\t\t[a7] link '😀 emoji'", "[3] textbox 'Ünïcödé'", "row ''"]),
    min_size=1, max_size=80,
)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=texts, size=st.integers(2, 60), overlap=st.integers(0, 40))
def test_chunks_on_generated_multibyte_trees(lines, size, overlap):
    if overlap >= size:
        overlap = size - 1
    check_chunks(parse("\n".join(lines)), size, overlap, peer().bm25_utils)


def test_bm25_scores_and_ranking_on_recorded_steps():
    retriever = peer().bm25_retriever.BM25SRetriever
    utils = peer().bm25_utils
    checked = same = 0
    for step in recorded_steps()[::2]:
        chunks = utils.get_chunks_from_tokenizer(step.axtree.text, 200, 50)
        query = query_of(step)
        ranking = retriever(step.axtree.text, 200, 50, len(chunks) + 1, False).retrieve(query)
        scores = dict(zip(chunks, bm25_scores(chunks, query).tolist(), strict=True))
        ranked = np.array([scores[c] for c in ranking])
        assert len(ranking) == len(chunks)
        assert np.all(np.diff(ranked) <= 1e-5)  # AgentLab's order is lrlib's order by score
        # the bm25 reducer with AgentLab's settings picks AgentLab's top chunks (score > 0),
        # where AgentLab has no trailing window (an extra document changes every IDF)
        checked += 1
        if len(token_chunks(step.axtree, 200, 50)) != len(chunks):
            continue
        k = 5
        out = get_reducer(
            "bm25", unit="chunks", size=200, overlap=50, top_k=k, order="score"
        ).select(step)
        mine = [
            scores[c.text]
            for c in [token_chunks(step.axtree, 200, 50)[i] for i in out.extra["chunks"]]
        ]
        best = sorted(scores.values(), reverse=True)
        assert mine == [s for s in best[:k] if s > 0]
        same += 1
    assert checked >= 50 and same >= 30
