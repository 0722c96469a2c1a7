"""Where a result came from: lrlib version, git commit, time, the settings that change
results (:meth:`lrlib.settings.Settings.recorded`, never a key), and the run's parameters.

>>> p = provenance(model="SmolLM2-135M-Instruct")
>>> sorted(p)
['created', 'git_commit', 'lrlib_version', 'model', 'settings']
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from lrlib.paths import REPO_DIR
from lrlib.settings import current


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
    """A provenance record: version, commit, UTC time, ``settings`` (the settings that
    change results, as sorted JSON: one column in a results frame), plus ``params``
    (model, prompt...).

    >>> from lrlib import settings
    >>> with settings.override(quick=True, api_key="sk-secret"):
    ...     p = provenance()
    >>> json.loads(p["settings"])["quick"], "sk-secret" in str(p)
    (True, False)
    """
    return {
        "lrlib_version": lrlib_version(),
        "git_commit": git_commit(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": settings_record(),
        **params,
    }


def settings_record() -> str:
    """The settings in effect that change results, as sorted JSON (``None``: the default).

    >>> sorted(json.loads(settings_record()))  # doctest: +NORMALIZE_WHITESPACE
    ['base_url', 'cache_dir', 'context_tokens', 'data_dir', 'model', 'offline', 'prices',
     'quick']
    """
    from lrlib.paths import portable

    record = current().recorded()
    for key in ("data_dir", "cache_dir"):  # no folder of the writing machine in a record
        if isinstance(record.get(key), str):
            record[key] = portable(record[key])
    return json.dumps(record, sort_keys=True)
