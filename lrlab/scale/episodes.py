"""A dataset file read one episode at a time (an episode's rows are contiguous, as the
importers write them), so that peak memory depends on the largest episode, not on the file:
what :mod:`lrlab.scale.sharded` evaluates large files from.

>>> from lrlib.data import dataset
>>> steps, episodes = count_rows(dataset.default_path(), split="validation")
>>> steps >= episodes > 0
True
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby, islice
from pathlib import Path
from typing import Any

from lrlib.core.step import Step
from lrlib.data.dataset import iter_row_batches


def _rows(
    path: str | Path, split: str | None, benchmark: str | None, columns: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of ``path`` of this ``split`` and ``benchmark`` (None: any), one at a time."""
    for batch in iter_row_batches(path, columns=columns):
        yield from (r for r in batch if (split is None or r.get("split") == split)
                    and (benchmark is None or r.get("benchmark") == benchmark))  # fmt: skip


def iter_episode_rows(
    path: str | Path,
    split: str | None = None,
    benchmark: str | None = None,
    limit: int | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """The rows of ``path`` grouped by episode (consecutive rows with one ``episode``),
    filtered by ``split`` / ``benchmark``, at most ``limit`` rows in all."""
    rows = islice(_rows(path, split, benchmark), limit)
    for _, episode in groupby(rows, key=lambda r: r.get("episode")):
        yield list(episode)


def iter_episodes(
    path: str | Path,
    split: str | None = None,
    benchmark: str | None = None,
    limit: int | None = None,
) -> Iterator[list[Step]]:
    """:func:`iter_episode_rows` as :class:`lrlib.core.step.Step` objects, one episode at a time.

    >>> from lrlib.data import dataset
    >>> eps = iter_episodes(dataset.default_path(), split="validation", limit=3)
    >>> all(len({s.episode for s in ep}) == 1 for ep in eps)
    True
    """
    for rows in iter_episode_rows(path, split=split, benchmark=benchmark, limit=limit):
        yield [Step.from_row(r) for r in rows]


def count_rows(
    path: str | Path, split: str | None = None, benchmark: str | None = None
) -> tuple[int, int]:
    """(steps, episodes) of ``path`` after the filters, reading only three columns.

    >>> from lrlib.data import dataset
    >>> count_rows(dataset.default_path(), split="validation")[0] > 0
    True
    """
    steps, episodes, last = 0, 0, None
    for r in _rows(path, split, benchmark, columns=["episode", "split", "benchmark"]):
        steps += 1
        if r["episode"] != last:
            episodes, last = episodes + 1, r["episode"]
    return steps, episodes
