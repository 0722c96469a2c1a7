"""Where lrlib reads and writes: resolved from the package, never from the working directory.

Every location can be redirected with an environment variable (read by
:mod:`lrlib.settings`, or set there with ``settings.override``), so a notebook can point
lrlib at another results folder without editing code. The files that runs fill and other
processes read (cache entries, the dataset, vector packs, `lrlib run` tables, the tiktoken
files) are written with :func:`atomic_write`: a reader or a crash never sees half of one.

>>> from lrlib import paths
>>> paths.data_dir().name
'data'
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from lrlib.settings import current

__all__ = [
    "PACKAGE_DIR",
    "REPO_DIR",
    "data_dir",
    "shipped_data_dir",
    "is_shipped",
    "refuse_shipped",
    "portable",
    "miniwob_path",
    "figures_dir",
    "cache_dir",
    "shipped_cache_dir",
    "user_cache_dir",
    "results_dir",
    "work_dir",
    "notebooks_dir",
    "atomic_write",
]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def _resolved(value: Path | None, default: Path) -> Path:
    return value.resolve() if value is not None else default


def data_dir() -> Path:
    """The dataset folder (``$LRLIB_DATA_DIR`` or ``<repo>/data``)."""
    return _resolved(current().data_dir, REPO_DIR / "data")


def shipped_data_dir() -> Path:
    """The repository's own ``data/`` folder, whatever ``$LRLIB_DATA_DIR`` says: the shipped,
    tracked files that no command overwrites unless told to explicitly."""
    return REPO_DIR / "data"


def is_shipped(path: str | Path) -> bool:
    """True when ``path`` lies inside the repository's shipped ``data/`` folder.

    >>> is_shipped(shipped_data_dir() / "observations.jsonl.gz"), is_shipped("/tmp/x.gz")
    (True, False)
    """
    return Path(path).expanduser().resolve().is_relative_to(shipped_data_dir().resolve())


def refuse_shipped(path: str | Path, allowed: bool = False) -> None:
    """Raise ``FileExistsError`` (one line, naming the flag) when ``path`` lies in the shipped
    ``data/`` and writing there was not ``allowed`` (``--overwrite-shipped``, maintainers).

    >>> refuse_shipped("/tmp/mine.jsonl.gz")
    >>> refuse_shipped(shipped_data_dir() / "x.gz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileExistsError: ... is in the repository's shipped, tracked data/: write elsewhere (-o/--out), or pass --overwrite-shipped (maintainers)
    """
    if is_shipped(path) and not allowed:
        raise FileExistsError(
            f"{path} is in the repository's shipped, tracked data/: write elsewhere "
            "(-o/--out), or pass --overwrite-shipped (maintainers)"
        )


def portable(path: str | Path) -> str:
    """``path`` as a committed record names it, free of the writing machine's folders:
    relative to the repository when inside it, else the file's name and the first 12 hex
    of its content's sha256 (a dataset named by its hash; a folder by its name).

    >>> portable(REPO_DIR / "data" / "miniwob_ood.jsonl.gz")
    'data/miniwob_ood.jsonl.gz'
    """
    import hashlib

    resolved = Path(path).expanduser().resolve()
    if resolved.is_relative_to(REPO_DIR):
        return resolved.relative_to(REPO_DIR).as_posix()
    if not resolved.is_file():
        return resolved.name
    digest = hashlib.sha256()
    with resolved.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"{resolved.name}@sha256:{digest.hexdigest()[:12]}"


def miniwob_path() -> Path:
    """The shipped out-of-domain MiniWoB set (``<repo>/data/miniwob_ood.jsonl.gz``; also when
    ``$LRLIB_DATA_DIR`` points at your own recorded steps: it is a fixed check set)."""
    return REPO_DIR / "data" / "miniwob_ood.jsonl.gz"


def figures_dir() -> Path:
    """Where figure functions write (``$LRLIB_FIGURES_DIR`` or ``<repo>/figures``)."""
    return _resolved(current().figures_dir, REPO_DIR / "figures")


def cache_dir() -> Path:
    """LLM/embedding response cache (``$LRLIB_CACHE_DIR`` or ``<data>/cache``)."""
    return _resolved(current().cache_dir, data_dir() / "cache")


def shipped_cache_dir() -> Path:
    """The answers shipped with the dataset (``<data>/cache/llm``): read by every run,
    written only by the maintainer command ``lrlib cache --refresh``."""
    return data_dir() / "cache" / "llm"


def user_cache_dir() -> Path:
    """Where new model answers go (``$LRLIB_CACHE_DIR/llm`` or ``<repo>/.lrlib/cache/llm``,
    gitignored): using lrlib never changes tracked files.

    >>> user_cache_dir().parts[-3:]
    ('.lrlib', 'cache', 'llm')
    """
    return _resolved(current().cache_dir, work_dir() / "cache") / "llm"


def results_dir() -> Path:
    """Where commands write their result tables (``$LRLIB_RESULTS_DIR`` or
    ``<repo>/.lrlib/results``, gitignored)."""
    return _resolved(current().results_dir, work_dir() / "results")


def work_dir() -> Path:
    """Scratch state that is never committed, e.g. the tiktoken files
    (``$LRLIB_WORK_DIR`` or ``<repo>/.lrlib``)."""
    return _resolved(current().work_dir, REPO_DIR / ".lrlib")


def notebooks_dir() -> Path:
    """The notebooks folder of the repository."""
    return REPO_DIR / "notebooks"


@contextmanager
def atomic_write(target: str | Path) -> Iterator[BinaryIO]:
    """Write ``target`` all at once: the ``with`` block writes a unique temporary file beside
    it (binary), which is synced and renamed over ``target`` when the block ends, or removed
    if it raises. Concurrent writers of one file leave one whole file, readers never see a
    partial one. The file gets mode 0644 (a temporary file starts private).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "sub" / "x.txt"
    >>> with atomic_write(p) as f:
    ...     _ = f.write(b"whole")
    >>> p.read_bytes(), [q.name for q in p.parent.iterdir()]
    (b'whole', ['x.txt'])
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
