"""Vector packs: the shipped embeddings seed the cache, match the model, and bad packs are
ignored rather than trusted."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from test_embeddings import Counting  # the toy embedder that records its calls

from lrlab.reducers.embeddings import CachedEmbedder, LocalE5
from lrlab.reducers.vectors import pack_path, read_pack
from lrlab.report import packs
from lrlab.report.packs import write_pack
from lrlib.eval.evaluation import resolve

TEXTS = ["[12] button 'Add to Cart'", "[13] link 'Privacy policy'", "a" * 40]


@pytest.fixture
def packed(tmp_path):
    """A pack of three vectors made by the toy embedder, and the vectors themselves."""
    source = CachedEmbedder(Counting(), path=tmp_path / "source.sqlite", pack=None)
    vectors = source.embed(TEXTS)
    keys = [source.key(t, "passage") for t in TEXTS]
    return write_pack(source, keys, tmp_path / "counting.npz"), vectors


def test_pack_seeds_a_fresh_cache_and_nothing_is_computed(tmp_path, packed):
    pack, vectors = packed
    inner = Counting()
    fresh = CachedEmbedder(inner, path=tmp_path / "fresh.sqlite", pack=pack)
    got = fresh.embed(TEXTS)
    assert inner.calls == [] and fresh.last_cost.hits == 3  # nothing computed
    np.testing.assert_array_equal(got, vectors)  # stored exactly
    _, _, seconds = read_pack(pack, "counting")  # the cold cost travels with the vectors
    assert fresh.last_cost.cold_seconds == pytest.approx(float(seconds.sum()))
    fresh.embed(["not in the pack"])
    assert inner.calls == [["not in the pack"]]  # only the text the pack lacks
    fresh.close()
    # seeding happens once per pack content; what the cache computed itself is kept
    again = CachedEmbedder(Counting(), path=tmp_path / "fresh.sqlite", pack=pack)
    assert len(again.cached(again.key(t, "passage") for t in TEXTS + ["not in the pack"])) == 4


def test_write_pack_refuses_keys_without_vectors(tmp_path):
    emb = CachedEmbedder(Counting(), path=tmp_path / "c.sqlite", pack=None)
    emb.embed(["a"])
    with pytest.raises(KeyError, match="1 of 2 keys have no cached vector"):
        write_pack(emb, [emb.key("a", "passage"), emb.key("b", "passage")], tmp_path / "p.npz")


def _rewrite(pack, **arrays):
    """A copy of ``pack`` with some arrays replaced (written with numpy, like a real pack)."""
    with np.load(pack, allow_pickle=False) as z:
        content = {k: z[k] for k in z.files}
    content.update(arrays)
    out = pack.with_name("bad.npz")
    np.savez(out, **content)
    return out


def _truncated(pack):
    out = pack.with_name("cut.npz")
    out.write_bytes(pack.read_bytes()[:200])
    return out


def _pickled(pack):
    """The pack with its vectors replaced by a pickled object array."""
    out = pack.with_name("pickled.npz")
    with zipfile.ZipFile(pack) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            if name != "vectors.npy":
                dst.writestr(name, src.read(name))
        buf = io.BytesIO()
        np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
        dst.writestr("vectors.npy", buf.getvalue())
    return out


@pytest.mark.parametrize(
    "damage",
    [
        _truncated,
        lambda p: _rewrite(p, vectors=np.full((3, 3), np.nan, dtype=np.float16)),
        lambda p: _rewrite(p, vectors=np.zeros((2, 3), dtype=np.float16)),  # 3 keys
        lambda p: _rewrite(p, meta=np.array('{"format": 1, "model": "another"}')),
        lambda p: _rewrite(p, meta=np.array("[1, 2]")),
        lambda p: _rewrite(p, keys=np.array([1, 2, 3])),
        lambda p: _rewrite(p, vectors=np.zeros((3, 3), dtype=np.int64)),
        _pickled,
    ],
    ids=["truncated", "nan", "short", "other-model", "bad-meta", "bad-keys", "ints", "pickle"],
)
def test_a_bad_pack_is_ignored_with_a_warning_never_trusted(tmp_path, packed, damage):
    bad = damage(packed[0])
    with pytest.raises(ValueError):
        read_pack(bad, "counting")
    inner = Counting()
    emb = CachedEmbedder(inner, path=tmp_path / "c.sqlite", pack=bad)
    with pytest.warns(UserWarning, match="ignored, vectors will be computed"):
        emb.embed(TEXTS)
    assert inner.calls == [TEXTS]


@pytest.fixture(scope="module")
def notebook_steps():
    """Validation and test steps, then the attacked steps of notebook 06's injection sets."""
    return packs.notebook_steps()


def test_shipped_pack_covers_every_step_the_notebooks_embed(tmp_path, monkeypatch, notebook_steps):
    """A fresh clone has no embeddings cache: the pack alone must cover the validation and
    test splits and every injection set, so `make figures` computes no vector."""
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path))
    reducer = resolve(["embedding"])["embedding"]
    assert reducer.embedder.pack == pack_path(reducer.embedder.model)
    assert reducer.embedder.pack.is_file(), "run `lrlib embeddings` to rebuild the pack"
    assert all(reducer.cached_steps(notebook_steps))
    keys, vectors, seconds = read_pack(reducer.embedder.pack, reducer.embedder.model)
    assert vectors.shape == (len(keys), 384) and (seconds > 0).all()


def test_shipped_vectors_match_the_model_and_rank_alike(tmp_path, monkeypatch, notebook_steps):
    """Recompute one real step's vectors with e5 now: the pack holds the same vectors (up to
    the engine's float noise), and the embedding reducer keeps the same chunks either way."""
    clean = packs.notebook_steps(["validation"], [])
    step = min(clean, key=lambda s: abs(len(s.axtree) - 120))
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "packed"))
    from_pack = resolve(["embedding"])["embedding"]
    kept = from_pack.reduce(step).kept
    assert from_pack.embedder.last_cost.misses == 0  # served by the pack
    live = CachedEmbedder(LocalE5(), path=tmp_path / "live.sqlite", pack=None)
    again = resolve(["embedding"])["embedding"]
    again.embedder = live
    packed_out, live_out = from_pack.reduce(step), again.reduce(step)
    assert live.last_cost.misses > 5  # really computed
    assert packed_out.kept == kept
    # Same ranking up to float noise: the engine's SIMD kernels may round differently from
    # the machine that built the pack, so two chunks whose scores tie to ~1e-3 may trade
    # places at the top-k boundary (seen once in CI). Any chunk that changed sides must be
    # such a near-tie; everything else is kept either way.
    a = dict(zip(packed_out.extra["chunks"], packed_out.extra["scores"], strict=True))
    b = dict(zip(live_out.extra["chunks"], live_out.extra["scores"], strict=True))
    tol = 2e-3
    for chunk in a.keys() & b.keys():
        assert abs(a[chunk] - b[chunk]) < tol, (chunk, a[chunk], b[chunk])
    for only, other in ((a.keys() - b.keys(), b), (b.keys() - a.keys(), a)):
        for chunk in only:
            score = a.get(chunk, b.get(chunk))
            assert score - min(other.values()) < tol, f"chunk {chunk} is not a boundary tie"
    assert len(a.keys() ^ b.keys()) <= 2
    keys = sorted(set().union(*again.vector_keys([step])))
    packed = {
        k: np.frombuffer(v, np.float32) for k, (v, _) in from_pack.embedder.stored(keys).items()
    }
    fresh = {k: np.frombuffer(v, np.float32) for k, (v, _) in live.stored(keys).items()}
    cosines = [float(packed[k] @ fresh[k]) for k in keys]
    # e5 through the engine is not bit-stable across CPUs: the pack, built on one machine,
    # and a live run on another agree to a cosine of ~0.99997 (seen on two CI-like hosts);
    # a different model or pooling would be far below 0.999.
    assert min(cosines) > 0.9999


def test_the_command_rebuilds_the_pack_from_the_cache_alone(tmp_path, monkeypatch, capsys):
    """`lrlib embeddings` on a cache seeded from the shipped pack computes nothing and writes
    a pack with the same vectors for the same steps; a reducer without vectors is refused."""
    from lrlib.cli import main

    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "rebuilt.npz"
    assert main(["embeddings", "--out", str(out)]) == 0  # the defaults build the shipped pack
    assert "(0 computed now)" in capsys.readouterr().out
    model = resolve(["embedding"])["embedding"].embedder.model
    keys, vectors, seconds = read_pack(out, model)
    shipped_keys, shipped_vectors, shipped_seconds = read_pack(pack_path(model), model)
    assert keys == shipped_keys
    np.testing.assert_array_equal(vectors, shipped_vectors)
    np.testing.assert_array_equal(seconds, shipped_seconds)
    assert main(["embeddings", "--reducer", "bm25", "--out", str(out)]) == 2
    assert "not a cached embedding reducer" in capsys.readouterr().err
    assert main(["embeddings", "--inject", "core,bogus", "--out", str(out)]) == 2
    assert "valid: core, realistic, wide" in capsys.readouterr().err
