"""Evaluation at scale: episodes streamed from the dataset file, sharded across processes
(every core by default, joblib), or over a Ray cluster, and written as they come.

:func:`evaluate_shards` runs :func:`lrlib.eval.evaluation.evaluate` on shards of whole
episodes (planning horizons need whole episodes) in worker processes and yields their
frames in input order; the rows are those of a serial ``evaluate`` on the same steps
(provenance is fixed once for the run, so only the measured latencies differ).
:func:`evaluate_file` reads a dataset file episode by episode (:mod:`lrlib.data.dataset`),
writes every row to ``out`` as shards finish, and keeps in memory only what the summary
needs (:class:`lrlab.scale.episode_stats.EpisodeStats`: sums per episode, the numbers of the
medians): peak memory depends on the shard size, not on the trees of the whole file.

Backends: ``"loky"`` (joblib's process pool, the default), ``"serial"`` (in this process),
``"ray"`` (joblib's Ray backend: ``ray.init()`` connects to ``$RAY_ADDRESS`` or starts a
local cluster; needs the ``ray`` extra).

>>> from lrlib.core.step import Step
>>> eps = [[Step(goal="Buy", tree="[4] button 'Buy'", target_bids=("4",), step_id=f"s{i}",
...              episode=f"e{i}")] for i in range(3)]
>>> frames = list(evaluate_shards(["full"], eps, jobs=1, progress=False))
>>> sum(len(f) for f in frames)
3
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib import runinfo
from lrlib.core.step import Step
from lrlib.eval.evaluation import evaluate, reducer_provenance, resolve

if TYPE_CHECKING:
    import pandas as pd

    from lrlab.scale.episode_stats import EpisodeStats

BACKENDS = ("loky", "serial", "ray")
SHARD_STEPS = 64  # steps per task sent to a worker (whole episodes; a long one is one shard)


def check_backend(backend: str) -> str:
    """``backend`` if known (and, for ``ray``, installed); else a one-line error.

    >>> check_backend("loky")
    'loky'
    >>> check_backend("dask")
    Traceback (most recent call last):
    ...
    ValueError: unknown backend 'dask'; valid: loky, serial, ray
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError(
                "backend 'ray' needs Ray: pip install 'lrlib[ray]' (or ray[default]); "
                "valid without it: loky, serial"
            ) from None
    return backend


def default_jobs() -> int:
    """Worker processes by default: every core this process may use.

    >>> default_jobs() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def shards(episodes: Iterable[list[Step]], size: int = SHARD_STEPS) -> Iterator[list[Step]]:
    """Consecutive whole episodes grouped into lists of about ``size`` steps.

    >>> eps = [[1, 2], [3], [4, 5, 6], [7]]
    >>> list(shards(eps, size=3))
    [[1, 2, 3], [4, 5, 6], [7]]
    """
    current: list[Step] = []
    for ep in episodes:
        current.extend(ep)
        if len(current) >= size:
            yield current
            current = []
    if current:
        yield current


_TABLES: dict[tuple, dict] = {}  # in a worker: reducers built once per process, caches kept


def _table(specs: Any) -> dict:
    if isinstance(specs, tuple):  # (label, spec) pairs: rebuilt once in each process
        if specs not in _TABLES:
            _TABLES[specs] = resolve(dict(specs))
        return _TABLES[specs]
    return specs  # Reducer objects, sent with each shard


def _run_shard(specs: Any, bases: dict, steps: list[Step]) -> pd.DataFrame:
    frame = evaluate(_table(specs), steps, progress=False)
    for label, base in bases.items():  # one provenance for the whole run, as in serial
        mask = frame["reducer"] == label
        for key, value in base.items():
            if key in frame.columns:
                frame.loc[mask, key] = value
    return frame


def _bases(table: dict) -> dict[str, dict[str, Any]]:
    out = {}
    for label, reducer in table.items():
        out[label] = runinfo.provenance(**reducer_provenance(reducer))
    return out


def evaluate_shards(
    reducers: Any,
    episodes: Iterable[list[Step]],
    jobs: int | None = None,
    backend: str = "loky",
    progress: bool = True,
    total: int | None = None,
    shard_steps: int = SHARD_STEPS,
) -> Iterator[pd.DataFrame]:
    """:func:`~lrlib.eval.evaluation.evaluate` over ``episodes`` (lists of steps, one per
    episode), shard by shard, in ``jobs`` processes (default: every core; 1 or backend
    ``"serial"``: in this process); frames come back in input order. ``total``: the number
    of steps, for the progress bar's ETA."""
    from tqdm.auto import tqdm

    check_backend(backend)
    table = resolve(reducers)
    bases = _bases(table)
    specs = _specs(reducers, table)
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    parts = shards(episodes, shard_steps)
    bar = tqdm(total=total, disable=not progress, unit="step", desc="evaluate", smoothing=0.05)
    try:
        if backend == "serial" or (jobs == 1 and backend != "ray"):
            results: Iterable[pd.DataFrame] = (_run_shard(table, bases, p) for p in parts)
        else:
            results = _parallel(specs, bases, parts, jobs, backend)
        for frame in results:
            bar.update(len(frame) // max(1, len(table)))
            yield frame
    finally:
        bar.close()


def _specs(reducers: Any, table: dict) -> Any:
    """``(label, spec)`` pairs when every reducer was given by name or spec (workers build
    them once); else the Reducer objects themselves."""
    from collections.abc import Mapping

    if isinstance(reducers, str):
        reducers = [reducers]
    given = list(reducers.values()) if isinstance(reducers, Mapping) else list(reducers)
    if len(given) == len(table) and all(isinstance(r, str) for r in given):
        return tuple(zip(table, given, strict=True))
    return table


def _parallel(
    table: Any, bases: dict, parts: Iterator[list[Step]], jobs: int, backend: str
) -> Iterator[pd.DataFrame]:
    from joblib import Parallel, delayed, parallel_backend

    if backend == "ray":
        from ray.util.joblib import register_ray

        register_ray()
    with parallel_backend(backend, n_jobs=jobs):
        if backend != "ray":
            run = Parallel(return_as="generator", pre_dispatch="2*n_jobs", batch_size=1)
            try:
                yield from run(delayed(_run_shard)(table, bases, p) for p in parts)
            finally:  # the workers (their reducers, ~400 MB each) are not kept for reuse
                if backend == "loky":
                    from joblib.externals.loky import get_reusable_executor

                    get_reusable_executor().shutdown(wait=True)
            return
        # joblib's Ray backend returns whole lists only: a few shards per worker at a time
        run = Parallel(batch_size=1)
        while block := list(islice(parts, 4 * jobs)):
            yield from run(delayed(_run_shard)(table, bases, p) for p in block)


class _Sink:
    """Rows written to ``out`` as they come: ``.parquet`` (a row group per flush) or CSV
    (``.csv``/``.csv.gz``, the header once)."""

    def __init__(self, out: Path) -> None:
        self.out, self.writer, self.fh, self.columns = out, None, None, None
        out.parent.mkdir(parents=True, exist_ok=True)

    def write(self, frame: pd.DataFrame) -> None:
        if self.columns is None:
            self.columns = list(frame.columns)
        frame = frame.reindex(columns=self.columns)
        if self.out.suffix in (".parquet", ".pq"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.out, table.schema, compression="zstd")
            self.writer.write_table(table.cast(self.writer.schema))
            return
        if self.fh is None:
            import gzip

            opener = gzip.open if self.out.name.endswith(".gz") else open
            self.fh = opener(self.out, "wt", encoding="utf-8", newline="")
            frame.to_csv(self.fh, index=False)
        else:
            frame.to_csv(self.fh, index=False, header=False)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.fh is not None:
            self.fh.close()


def evaluate_file(
    reducers: Any,
    path: str | Path,
    out: str | Path,
    split: str | None = None,
    benchmark: str | None = None,
    limit: int | None = None,
    jobs: int | None = None,
    backend: str = "loky",
    progress: bool = True,
) -> EpisodeStats:
    """Evaluate ``reducers`` on the steps of dataset file ``path`` (after ``split`` /
    ``benchmark`` / ``limit``), episode by episode, writing every row to ``out``
    (``.csv``, ``.csv.gz`` or ``.parquet``); returns the summary statistics of all its
    rows, folded into :class:`~lrlab.scale.episode_stats.EpisodeStats` (per-episode sums, the
    numbers of the medians) for the summary table and its intervals."""
    from lrlab.scale import episodes as stream
    from lrlab.scale.episode_stats import EpisodeStats

    total = stream.count_rows(path, split=split, benchmark=benchmark)[0]
    total = min(total, limit) if limit is not None else total
    episodes = stream.iter_episodes(path, split=split, benchmark=benchmark, limit=limit)
    sink = _Sink(Path(out))
    stats = EpisodeStats()
    try:
        for frame in evaluate_shards(reducers, episodes, jobs, backend, progress, total):
            sink.write(frame)
            stats.add(frame)
    finally:
        sink.close()
    return stats
