"""Where lrlib reads and writes: resolved from the package, never from the working directory.

Every location can be redirected with an environment variable, so a notebook can point
lrlib at another results folder without editing code.

>>> from lrlib import paths
>>> paths.data_dir().name
'data'
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def _env_path(var: str, default: Path) -> Path:
    value = os.environ.get(var, "").strip()
    return Path(value).expanduser().resolve() if value else default


def data_dir() -> Path:
    """The dataset folder (``$LRLIB_DATA_DIR`` or ``<repo>/data``)."""
    return _env_path("LRLIB_DATA_DIR", REPO_DIR / "data")


def figures_dir() -> Path:
    """Where figure functions write (``$LRLIB_FIGURES_DIR`` or ``<repo>/figures``)."""
    return _env_path("LRLIB_FIGURES_DIR", REPO_DIR / "figures")


def cache_dir() -> Path:
    """LLM/embedding response cache (``$LRLIB_CACHE_DIR`` or ``<data>/cache``)."""
    return _env_path("LRLIB_CACHE_DIR", data_dir() / "cache")


def work_dir() -> Path:
    """Scratch state that is never committed, e.g. the tiktoken files
    (``$LRLIB_WORK_DIR`` or ``<repo>/.lrlib``)."""
    return _env_path("LRLIB_WORK_DIR", REPO_DIR / ".lrlib")


def notebooks_dir() -> Path:
    """The notebooks folder of the repository."""
    return REPO_DIR / "notebooks"
