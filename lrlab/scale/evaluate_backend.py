"""``lrlib evaluate`` on large datasets: the offline reducers evaluated episode by episode
from the file, sharded across processes (:mod:`lrlab.scale.sharded`), rows written as they
come. The research wing's ``EVALUATE_BACKEND`` (:mod:`lrlab.plugin`, read by
:mod:`lrlib.plugins`): :mod:`lrlib.report.evaluate_command` adds its options and hands its
work here when it applies (:func:`applies`: no model-backed reducer, no knob sweep).

``--jobs`` (default: every core once the selection has :data:`PARALLEL_FROM` steps or more;
smaller selections keep the command's in-memory path, where starting workers would cost
more than it saves) and ``--backend`` (``loky``; ``ray`` for a Ray cluster,
``$RAY_ADDRESS`` or a local one). Rows are written shard by shard (whole episodes, each
shard reducer by reducer), not sorted by reducer over the whole file.

>>> ns = argparse.Namespace(reducers="program;bm25", curves=False, jobs=2)
>>> applies(ns), applies(argparse.Namespace(reducers="lineretriever", curves=False, jobs=2))
(True, False)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lrlab.scale.sharded import BACKENDS, check_backend, default_jobs, evaluate_file
from lrlib.eval.evaluation import markdown_table, specs_of
from lrlib.reducers import describe

#: below this many selected steps the evaluation runs in one process (measured on 2 cores:
#: 117 steps x 4 reducers took 4.5 s in-process and 14 s with 2 fresh workers)
PARALLEL_FROM = 1000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--jobs`` and ``--backend``.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args(["--jobs", "2", "--backend", "ray"]).backend
    'ray'
    """
    parser.add_argument(
        "--jobs", type=int, default=None,
        help=f"worker processes (default: every core from {PARALLEL_FROM} steps on, else 1; "
        "with --prompts/--plugins files: this process, where their reducers are registered)",
    )  # fmt: skip
    parser.add_argument(
        "--backend", default="loky", choices=BACKENDS,
        help="loky: processes on this machine; ray: a Ray cluster ($RAY_ADDRESS, or local); "
        "serial: this process",
    )  # fmt: skip


def _specs(args: argparse.Namespace) -> list[str]:
    return [spec.label for spec in specs_of(args)]


def applies(args: argparse.Namespace) -> bool:
    """True when every reducer is offline (no cached-answer replay), no curves are asked,
    no user file (``--prompts``/``--plugins``) registers reducers that fresh worker processes
    would not know, and either ``--jobs`` / a backend other than ``loky`` is given or the selection has
    :data:`PARALLEL_FROM` steps or more (smaller ones keep the in-memory path)."""
    if getattr(args, "curves", False):
        return False
    if any(describe(spec.name).model_answers for spec in specs_of(args)):
        return False
    if getattr(args, "user_files", None):  # their reducers are registered in this process only
        return False
    if getattr(args, "jobs", None) is not None or getattr(args, "backend", "loky") != "loky":
        return True
    return _counts(args)[0] >= PARALLEL_FROM


def _path(args: argparse.Namespace) -> Path:
    from lrlib.data import dataset

    return Path(args.data) if getattr(args, "data", None) else dataset.default_path()


def _counts(args: argparse.Namespace) -> tuple[int, int]:
    if getattr(args, "counts", None) is None:
        from lrlab.scale.episodes import count_rows
        from lrlib.data.dataset import missing_dataset

        path = _path(args)
        if not path.is_file():
            raise FileNotFoundError(missing_dataset(path))
        n, eps = count_rows(path, split=args.split, benchmark=args.benchmark)
        if args.limit is not None:
            n = min(n, args.limit)
        if not n:
            where = f"split {args.split!r}" if args.split else "the dataset"
            which = f" of benchmark {args.benchmark!r}" if args.benchmark else ""
            raise ValueError(f"no steps in {where}{which}; try --split all")
        args.counts = (n, eps)
    return args.counts


def _jobs(args: argparse.Namespace) -> int:
    if getattr(args, "jobs", None) is not None:
        return max(1, args.jobs)
    return default_jobs() if _counts(args)[0] >= PARALLEL_FROM else 1


def plan(args: argparse.Namespace) -> str:
    """The plan line: reducers x steps, where they run; counted from the file's three
    grouping columns, without loading the trees."""
    check_backend(getattr(args, "backend", "loky"))
    n, _ = _counts(args)
    where = f"the {args.split} split" if args.split else "every split"
    jobs, backend = _jobs(args), getattr(args, "backend", "loky")
    how = (
        "in this process" if jobs == 1 and backend != "ray"
        else f"in {jobs} {'Ray workers' if backend == 'ray' else 'processes'}, by episode"
    )  # fmt: skip
    line = f"{len(_specs(args))} reducers x {n} steps of {where} of {_path(args).name}, {how}"
    specs = list(_specs(args))
    embedding = [s for s in specs if s.startswith("embedding")]
    if args.split != "validation" and embedding:
        others = ";".join(s for s in specs if s not in embedding)
        line += (
            f"; '{embedding[0]}' computes e5 vectors live for the steps not in the vector pack: "
            f"up to ~{n * 2.4 / 60:.0f} min (to skip it: --reducers '{others}')"
        )
    return line


def run(args: argparse.Namespace) -> int:
    """Evaluate from the file, write every row, print the summary table with intervals
    (from per-episode sums, :class:`lrlab.scale.episode_stats.EpisodeStats`: its memory does
    not hold the rows)."""
    from lrlib import paths
    from lrlib.report.tables import interval_table

    suffix = f"-{args.split}" if args.split else ""
    out = Path(args.out) if args.out else paths.results_dir() / f"evaluation{suffix}.csv.gz"
    kept = evaluate_file(
        _specs(args), _path(args), out, split=args.split, benchmark=args.benchmark,
        limit=args.limit, jobs=_jobs(args), backend=getattr(args, "backend", "loky"),
        progress=not args.no_progress,
    )  # fmt: skip
    print(markdown_table(interval_table(kept)))
    print(f"\n{_counts(args)[0]} steps; per-step rows written to {out}")
    return 0
