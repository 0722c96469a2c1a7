"""Content-addressed cache of model answers: replay a run with no network and no model.

The key is the sha256 of everything that determines an answer: the endpoint kind, the model,
the messages and the sampling parameters (temperature, max_tokens, seed, response_format...).
One small JSON file per answer under ``<cache_dir>/llm/<key[:2]>/<key>.json``, holding
the answer text, its usage (prompt / completion / cached tokens), the latency of the
original call and a checksum; never the messages (the data rebuilds them) and never a key
or header. A deterministic refusal (the prompt does not fit the model's context) is stored
as ``error``, so that a replay takes the same path as the original run.

Writes are atomic (a unique temporary file, then ``os.replace``), so any number of
processes can fill one cache at once: a reader sees a whole entry or none, and two writers
of one key leave one whole entry. An entry that fails its checksum is ignored (a miss).

The default cache is layered: new answers go to the user's gitignored area
(:func:`lrlib.paths.user_cache_dir`, ``.lrlib/cache/llm``), lookups also read the answers
shipped in ``data/cache/llm`` (:func:`lrlib.paths.shipped_cache_dir`), which only the
maintainer command ``lrlib cache --refresh`` (``make cache``) rewrites.

>>> import tempfile
>>> cache = ResponseCache(tempfile.mkdtemp())
>>> key = request_key("embedded", "m", [{"role": "user", "content": "hi"}], {"temperature": 0})
>>> cache.get(key) is None
True
>>> _ = cache.put(key, {"text": "hello", "usage": {"prompt_tokens": 3}, "latency_s": 0.1})
>>> cache.get(key)["text"]
'hello'
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lrlib import paths

FORMAT_VERSION = 1
# the only fields an entry may hold; anything else given to put() is refused
# fmt: off
ENTRY_FIELDS = frozenset({
    "text", "finish_reason", "usage", "latency_s", "endpoint", "model", "params", "meta",
    "created", "runtime", "error",
})
# fmt: on
_SECRET_MARKERS = ("authorization", "bearer ", "api_key", "api-key")


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(
    endpoint: str, model: str, messages: Iterable[Mapping[str, Any]], params: Mapping[str, Any]
) -> str:
    """The cache key of a chat request: sha256 over endpoint kind, model, messages, params.

    Parameters set to ``None`` do not count, so leaving one out and passing ``None`` agree.

    >>> a = request_key("openai", "gpt-4o", [{"role": "user", "content": "x"}], {"seed": None})
    >>> a == request_key("openai", "gpt-4o", [{"role": "user", "content": "x"}], {})
    True
    """
    blob = {
        "v": FORMAT_VERSION,
        "endpoint": endpoint,
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": {k: v for k, v in params.items() if v is not None},
    }
    return hashlib.sha256(_canonical(blob).encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    """Counts since the cache object was made."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0


class ResponseCache:
    """Answers on disk under ``root``, where new entries are written (default: the user
    area, :func:`lrlib.paths.user_cache_dir`); lookups fall back to the read-only
    ``layers`` (default with no ``root``: the shipped answers, otherwise none).

    ``refresh=True`` ignores stored answers (every lookup misses) and overwrites them with
    new ones in ``root``; ``readonly=True`` never writes.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        refresh: bool = False,
        readonly: bool = False,
        layers: Iterable[str | Path] | None = None,
    ) -> None:
        self.root = Path(root) if root is not None else paths.user_cache_dir()
        if layers is None:
            layers = [paths.shipped_cache_dir()] if root is None else []
        self.layers = [Path(p) for p in layers if Path(p).resolve() != self.root.resolve()]
        self.refresh = refresh
        self.readonly = readonly
        self.stats = CacheStats()
        self._lock = threading.Lock()

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives."""
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key (64 lowercase hex): {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for ``key``, or None (missing, refreshing, or corrupt)."""
        if self.refresh:
            self._count("misses")
            return None
        entry = self.load(key)
        self._count("hits" if entry is not None else "misses")
        return entry

    def load(self, key: str) -> dict[str, Any] | None:
        """Read and verify an entry regardless of ``refresh`` (None when absent or corrupt)."""
        self.path(key)  # validates the key
        for root in (self.root, *self.layers):
            try:
                raw = (root / key[:2] / f"{key}.json").read_bytes()
                break
            except (FileNotFoundError, NotADirectoryError):
                continue
        else:
            return None
        try:
            entry = json.loads(raw)
            ok = (
                isinstance(entry, dict)
                and entry.get("key") == key
                and entry.get("checksum") == _checksum(entry)
            )
        except (ValueError, UnicodeDecodeError):
            ok = False
        if not ok:
            self._count("corrupt")
            return None
        return entry

    def put(self, key: str, entry: Mapping[str, Any], *, secrets: Iterable[str] = ()) -> Path:
        """Store ``entry`` (fields from :data:`ENTRY_FIELDS`) for ``key``, atomically.

        Refuses entries that carry an unknown field, any of ``secrets`` (e.g. the API key in
        use) or anything that looks like an auth header.
        """
        unknown = set(entry) - ENTRY_FIELDS
        if unknown:
            raise ValueError(f"cache entries cannot hold {sorted(unknown)}")
        record = {**entry, "key": key, "v": FORMAT_VERSION}
        record["checksum"] = _checksum(record)
        text = _canonical(record) + "\n"
        _refuse_secrets(text, {k: v for k, v in record.items() if k != "text"}, secrets)
        target = self.path(key)
        if self.readonly:
            return target
        with paths.atomic_write(target) as f:
            f.write(text.encode("utf-8"))
        self._count("writes")
        return target

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.load(key) is not None

    def keys(self) -> Iterator[str]:
        """Keys of the entries written under ``root`` (not verified; layers not included)."""
        yield from _keys(self.root)

    def __len__(self) -> int:
        return sum(1 for _ in self.keys())

    def size_bytes(self) -> int:
        """Total size of the entry files (the bytes a checkout holds)."""
        return sum(self.path(k).stat().st_size for k in self.keys())

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def __repr__(self) -> str:
        layers = f", layers={[str(p) for p in self.layers]!r}" if self.layers else ""
        return f"ResponseCache({str(self.root)!r}{layers}, refresh={self.refresh})"


def _checksum(entry: Mapping[str, Any]) -> str:
    body = {k: v for k, v in entry.items() if k != "checksum"}
    return hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()[:16]


def _refuse_secrets(text: str, fields: Mapping[str, Any], secrets: Iterable[str]) -> None:
    """Raise if the entry holds a secret anywhere, or an auth marker outside the answer."""
    for secret in secrets:
        if secret and len(secret) >= 8 and secret in text:
            raise ValueError("refusing to cache an entry that contains the API key")
    lowered = _canonical(fields).lower()  # the answer itself may mention "authorization"
    for marker in _SECRET_MARKERS:
        if marker in lowered:
            raise ValueError(f"refusing to cache an entry that contains {marker.strip()!r}")


def _keys(root: Path) -> Iterator[str]:
    if root.is_dir():
        for shard in sorted(root.iterdir()):
            if shard.is_dir() and len(shard.name) == 2:
                yield from sorted(p.stem for p in shard.glob("*.json"))


# ---- command line: ``lrlib cache`` ------------------------------------------------------
