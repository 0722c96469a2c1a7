"""Vector packs: the embeddings the notebooks need, shipped with the dataset.

A pack (``<data>/embeddings/<model>.npz``) holds cache keys (hashes of kind and text, see
:meth:`lrlab.reducers.embeddings.CachedEmbedder.key`), the unit vectors exactly as computed
(``float32``: ``float16`` would halve the file but changed the embedding baseline's
selection on 2 of 161 steps, near-ties flipping) and the seconds each vector cost when it
was computed. :class:`~lrlab.reducers.embeddings.CachedEmbedder` copies the pack of its model into
its SQLite cache on first use, so the embedding baseline replays on a fresh clone without
computing anything. A pack is read with ``allow_pickle=False`` and checked; one that does
not check out is ignored with a warning, and the vectors get computed instead.
``lrlib embeddings`` (run by ``make data``) rebuilds the pack.

>>> import tempfile
>>> from lrlab.reducers.embeddings import CachedEmbedder, normalise
>>> class Two:
...     model = "two"
...     def embed(self, texts, kind="passage"):
...         return normalise(np.array([[len(t), 1.0] for t in texts]))
>>> folder = Path(tempfile.mkdtemp())
>>> emb = CachedEmbedder(Two(), path=folder / "a.sqlite", pack=None)
>>> _ = emb.embed(["ab", "abc"])
>>> pack = write_pack(emb, [emb.key("ab", "passage")], folder / "two.npz")
>>> fresh = CachedEmbedder(Two(), path=folder / "b.sqlite", pack=pack)
>>> len(fresh.cached([emb.key("ab", "passage"), emb.key("abc", "passage")]))
1
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lrlab.reducers.embeddings import CachedEmbedder
from lrlab.reducers.vectors import FORMAT, pack_path
from lrlib import paths
from lrlib.core.step import Step


def write_pack(embedder: CachedEmbedder, keys: Iterable[str], out: Path | None = None) -> Path:
    """Write the cached vectors of ``keys`` (every one must be cached) as a pack, by default
    at :func:`pack_path` of the embedder's model; returns its path.
    """
    keys = sorted(set(keys))
    rows = embedder.stored(keys)
    missing = [k for k in keys if k not in rows]
    if missing:
        raise KeyError(
            f"{len(missing)} of {len(keys)} keys have no cached vector (first: {missing[0]})"
        )
    vecs = (
        np.stack([np.frombuffer(rows[k][0], dtype=np.float32) for k in keys])
        if keys
        else np.zeros((0, 0))
    )
    meta = {"model": embedder.model, "n": len(keys), "dtype": "float32", "format": FORMAT}
    out = Path(out) if out else pack_path(embedder.model)
    with paths.atomic_write(out) as f:
        np.savez_compressed(
            f,
            keys=np.array(keys, dtype="S32"),
            vectors=vecs.astype(np.float32),
            seconds=np.array([rows[k][1] for k in keys], dtype=np.float32),
            meta=np.array(json.dumps(meta, sort_keys=True)),
        )
    return out


INJECTION_SETS = ("core", "realistic", "wide")


def notebook_steps(
    splits: Sequence[str] = ("validation", "test"), sets: Sequence[str] = INJECTION_SETS
) -> list[Step]:
    """Every step the notebooks embed: the clean steps of ``splits`` ("all" for every row)
    and the attacked steps of the injection ``sets`` (:func:`lrlab.injection.injection_sets.pinned_set`
    "core"/"wide", :func:`lrlab.injection.injection_sets.realistic_set`). ``lrlib embeddings`` packs exactly
    these, so `make figures` computes no vector on a fresh clone.

    >>> from lrlib.data.dataset import load_steps
    >>> len(notebook_steps(["test"], [])) == len(load_steps(split="test"))
    True
    """
    from lrlab.injection import injection_sets
    from lrlib.data import dataset as data

    steps = [s for v in splits for s in data.load_steps(split=None if v == "all" else v)]
    every = data.load_steps()
    for name in sets:
        if name == "realistic":
            items = injection_sets.realistic_set(steps=every)
        else:
            items = injection_sets.pinned_set(name, steps=every)
        steps += [it.step for it in items]
    return steps


# ---- command line: ``lrlib embeddings`` ----------------------------------------------------


def add_arguments(parser: Any) -> None:
    """Arguments of ``lrlib embeddings``."""
    parser.add_argument("--reducer", default="embedding", help="embedding reducer spec")
    parser.add_argument(
        "--split", default="validation,test",
        help="steps of these splits, comma-separated (or 'all'); the attacked steps are drawn "
        "from the first one",
    )  # fmt: skip
    parser.add_argument(
        "--inject", default="core,realistic,wide", metavar="SET,...",
        help="also the attacked steps of these injection sets (notebook 06): core and wide "
        "(`lrlib inject --pinned`), realistic (`--realistic`); '' for none",
    )  # fmt: skip
    parser.add_argument("--out", default=None, help="pack path (default: data/embeddings/)")


def run(args: Any) -> int:
    """``lrlib embeddings``: compute what is missing, then write the pack the notebooks use."""
    from tqdm.auto import tqdm

    from lrlib.eval.evaluation import resolve

    names = [v.strip() for v in args.split.split(",") if v.strip()] or ["all"]
    sets = [v.strip() for v in args.inject.split(",") if v.strip()]
    unknown = sorted(set(sets) - set(INJECTION_SETS))
    if unknown:
        valid = ", ".join(INJECTION_SETS)
        print(f"embeddings: unknown injection set {unknown[0]!r}; valid: {valid}", file=sys.stderr)
        return 2
    steps = notebook_steps(names, sets)
    reducer = resolve([args.reducer])[args.reducer]
    if not isinstance(getattr(reducer, "embedder", None), CachedEmbedder):
        print(f"embeddings: {args.reducer!r} is not a cached embedding reducer", file=sys.stderr)
        return 2
    todo = [s for s, ok in zip(steps, reducer.cached_steps(steps), strict=True) if not ok]
    for step in tqdm(todo, desc="embedding", unit="step"):
        reducer.reduce(step)
    keys = set().union(*reducer.vector_keys(steps))
    out = write_pack(reducer.embedder, keys, Path(args.out) if args.out else None)
    print(f"{len(keys)} vectors of {len(steps)} steps ({len(todo)} computed now) -> {out}")
    return 0
