"""Where a result came from: lrlib version, git commit, time, and the run's parameters.

>>> p = provenance(model="SmolLM2-135M-Instruct")
>>> sorted(p)
['created', 'git_commit', 'lrlib_version', 'model']
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from lrlib.paths import REPO_DIR


@lru_cache(maxsize=1)
def lrlib_version() -> str:
    """The installed lrlib version."""
    try:
        return version("lrlib")
    except PackageNotFoundError:
        return "0+unknown"


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """HEAD of the repository lrlib runs from (``+dirty`` when tracked files changed)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def provenance(**params: Any) -> dict[str, Any]:
    """A provenance record: version, commit, UTC time, plus ``params`` (model, prompt...)."""
    return {
        "lrlib_version": lrlib_version(),
        "git_commit": git_commit(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        **params,
    }
