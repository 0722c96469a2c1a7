"""The reduction part of the peer's own tests (AgentLab PR 302, tests/agents/), rewritten
to run against lrlib. The peer's tests run a MiniWoB click-test episode with a scripted
retriever and a cheating agent that clicks the first ``[bid] ... button`` line it sees; the
reduction has to leave that line in the observation. Two checks differ by policy, and are
asserted as such: lrlib treats a selection under ``min_lines=3`` lines as a failure
(``near_empty``), and it does not re-ask the retriever after an unreadable answer.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from fake_openai import Script, serve
from peer_import import peer, recorded_steps

from lrlab.reducers.embedding import EmbeddingRetriever
from lrlab.reducers.embeddings import normalise
from lrlib.core.step import Step
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMClient
from lrlib.reducers import get_reducer
from lrlib.reducers.lineretriever import LineRetriever

# MiniWoB click-test as BrowserGym flattens it: the page, then its one button on line 2
CLICK_TEST = Step(
    goal="Click the button.",
    tree="RootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'\n\t[14] generic\n"
    "\t\t[15] StaticText 'Click the button.'",
)
# the peer's MockRetrieverLLM answer
MOCK_ANSWER = """<think>
I need to identify the relevant lines for the button click task.
</think>
<answer>
[(2, 2)]
</answer>"""
# the cheating agent's way to find its target (CheatMiniWoBLLM_ParseRetryFocus)
BUTTON = re.compile(r"^\s*\[(\d+)\].*button", re.MULTILINE | re.IGNORECASE)


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))


def retriever(url: str, tmp_path, **kw) -> LineRetriever:
    client = LLMClient("mock-retriever", base_url=url, cache=ResponseCache(tmp_path / "llm"))
    paper = {"view": "full", "answer": "tags", "think": True, "max_ranges": None}  # the peer's
    return LineRetriever(client=client, **{**paper, **kw})


def test_focus_agent_keeps_the_button(httpserver, tmp_path):
    """test_focus_agent: strategy="bid", keep_structure=False, i.e. remove_lines."""
    script = Script(lambda body, n: MOCK_ANSWER)
    url = serve(httpserver, script)
    out = retriever(url, tmp_path, strategy="remove-agentlab", min_lines=1).reduce(CLICK_TEST)
    expected = peer().retriever_utils.remove_lines(CLICK_TEST.tree, [2])
    assert out.text == expected and out.kept == [2]
    assert BUTTON.search(out.text)[1] == "13"  # the agent can still click the button


def test_focus_agent_structure_strategies_keep_the_button(httpserver, tmp_path):
    utils = peer().retriever_utils
    url = serve(httpserver, Script(lambda body, n: MOCK_ANSWER))
    for ours, theirs in (("bid-agentlab", "bid"), ("bid+role-agentlab", "bid+role")):
        r = retriever(url, tmp_path, strategy=ours, min_lines=1)
        out = r.reduce(CLICK_TEST)
        assert out.text == utils.remove_lines_keep_structure(CLICK_TEST.tree, [2], theirs)
        assert BUTTON.search(out.text)[1] == "13"


def test_policy_min_lines_three(httpserver, tmp_path):
    """Documented difference: AgentLab prunes to the one selected line; lrlib's default
    (min_lines=3) treats a selection under 3 lines as near-empty and keeps the full tree."""
    url = serve(httpserver, Script(lambda body, n: MOCK_ANSWER))
    out = retriever(url, tmp_path, strategy="remove-agentlab").reduce(CLICK_TEST)
    assert out.failure == "near_empty" and out.text == CLICK_TEST.axtree.text
    assert BUTTON.search(out.text)[1] == "13"


def test_policy_no_re_asking(httpserver, tmp_path):
    """test_focus_agent_parse_retry's retriever side. FocusAgent re-asks its retriever
    (retry, n_retry=3) after an unreadable answer; lrlib asks once and applies its failure
    policy (here: the full tree)."""
    answers = ["I'm retrying", MOCK_ANSWER]
    script = Script(lambda body, n: answers[min(n, 1)])
    url = serve(httpserver, script)
    out = retriever(url, tmp_path, strategy="remove-agentlab", min_lines=1).reduce(CLICK_TEST)
    assert script.calls == 1
    assert out.failure.startswith("parse:") and out.text == CLICK_TEST.axtree.text


def test_bm25_retriever_agent_keeps_the_button():
    """test_bm25_retriever_agent: chunk_size=100, overlap=10, top_k=5."""
    out = get_reducer("bm25", unit="chunks", size=100, overlap=10, top_k=5).reduce(CLICK_TEST)
    assert BUTTON.search(out.text)[1] == "13"
    # AgentLab's retriever ranks the same single chunk first
    chunks = peer().bm25_retriever.BM25SRetriever(CLICK_TEST.tree, 100, 10, 5, False)
    assert chunks.retrieve(CLICK_TEST.goal)[0] == CLICK_TEST.tree


def test_recursive_splitter_is_not_offered():
    """test_*_with_recursive_splitter: langchain's splitter is not part of lrlib; the error
    names the valid chunk units."""
    with pytest.raises(ValueError, match="valid: chunks, lines"):
        get_reducer("bm25", unit="recursive")


class FirstChunksFirst:
    """The peer's MockEmbeddingRetriever: earlier chunks score higher (0.9, 0.8, ...)."""

    model = "mock-first-chunks"

    def __init__(self, page: str) -> None:
        self.page = page

    def embed(self, texts, kind="passage"):
        if kind == "query":
            return normalise(np.array([[1.0, 0.0]] * len(texts)))
        pos = [self.page.find(t) / max(1, len(self.page)) for t in texts]
        return normalise(np.array([[1.0, -p] for p in pos]))


def test_embedding_retriever_agent_keeps_the_first_chunks():
    """test_embedding_retriever_agent: top_k=5, chunk_size=100 (overlap 10), mock scores."""
    out = EmbeddingRetriever(embedder=FirstChunksFirst(CLICK_TEST.tree), top_k=5, cache=False)
    assert BUTTON.search(out.reduce(CLICK_TEST).text)[1] == "13"
    step = max(recorded_steps()[:20], key=lambda s: len(s.axtree))  # a real tree, many chunks
    reducer = EmbeddingRetriever(
        embedder=FirstChunksFirst(step.axtree.text), top_k=5, order="score", cache=False
    )
    first = peer().embedding_utils.get_chunks_from_tokenizer(step.axtree.text, 100, 10)[:5]
    assert reducer.select(step).text == "\n".join(c.strip("\n") for c in first)
