"""``lrlib evaluate``: evaluate reducers offline on the dataset, write the per-step frame
and print the summary table with its intervals (:func:`lrlib.eval.evaluation.evaluate`).

Offline means no model is asked behind the user's back: LineRetriever runs in the
configuration whose answers ship (:data:`lrlib.report.run.DEFAULT_CONFIG`, JSON answers)
and replays them; steps without a cached answer are skipped and counted. It asks a model
only when told to (``LRLIB_OFFLINE=0``, an endpoint in ``OPENAI_BASE_URL``, or
``lineretriever:offline=False``), and the plan line says so, with how many answers and
roughly how long, before anything starts.

Large files go to an evaluate backend plugin (:func:`lrlib.plugins.evaluate_backend`; the
research wing's reads them by episode on every core, with ``--jobs`` and ``--backend``).
Without one, smaller selections run here and the others stop with a line naming it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lrlib import plugins
from lrlib.eval.evaluation import (
    KNOBS,
    LLM_REDUCERS,
    ReducerSpec,
    add_step_arguments,
    count_arg,
    curves,
    evaluate,
    markdown_table,
    specs_of,
)

#: without an evaluate backend plugin, the size from which an offline selection needs one
#: (the research wing's backend takes such selections from the same size on)
LARGE_FROM = 1000


class _InMemoryOnly:
    """The backend when no plugin provides one: ``--jobs``/``--backend`` are accepted (not
    shown), and they or an offline selection of :data:`LARGE_FROM` steps or more stop on one
    line that says what to install."""

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--jobs", type=int, default=None, help=argparse.SUPPRESS)
        parser.add_argument("--backend", default=None, help=argparse.SUPPRESS)

    @staticmethod
    def applies(args: argparse.Namespace) -> bool:
        if args.jobs is not None or args.backend is not None:
            return True
        if args.curves or getattr(args, "user_files", None):
            return False
        if any(s.name in LLM_REDUCERS for s in specs_of(args)):
            return False
        return _selected(args) >= LARGE_FROM

    @staticmethod
    def plan(args: argparse.Namespace) -> str:
        what = "--jobs/--backend need" if args.jobs is not None or args.backend is not None else (
            f"{_selected(args)} steps (from {LARGE_FROM} on; --limit selects fewer) need"
        )  # fmt: skip
        raise LookupError(
            f"{what} an evaluate backend plugin (EVALUATE_BACKEND, lrlib.plugins): install "
            "lrlib with its research wing, lrlab, which evaluates large files by episode"
        )

    run = plan


def _selected(args: argparse.Namespace) -> int:
    """The selection's steps, counted from the file's grouping columns (trees not loaded)."""
    from lrlib.data import dataset

    path = Path(args.data) if args.data else dataset.default_path()
    if not path.is_file():
        return 0  # the in-memory path says what is missing
    n = dataset.count_rows(path, split=args.split, benchmark=args.benchmark)[0]
    return n if args.limit is None else min(n, args.limit)


def _backend() -> Any:
    """Where large files go: a plugin's ``EVALUATE_BACKEND``, else :class:`_InMemoryOnly`."""
    return plugins.evaluate_backend() or _InMemoryOnly


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``lrlib evaluate``.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> a = p.parse_args(["--data", "mine.jsonl.gz", "--limit", "3"])
    >>> a.data.name, a.limit, a.split
    ('mine.jsonl.gz', 3, 'validation')
    """
    add_step_arguments(parser, "full;truncate:budget=500")
    parser.set_defaults(split="validation")  # its vectors ship in the pack: nothing to embed
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a dataset file to read (e.g. your own `lrlib import-traces` output; default: "
        "observations.jsonl.gz in LRLIB_DATA_DIR or data/)",
    )
    parser.add_argument("--limit", type=count_arg, default=None, help="at most this many steps")
    parser.add_argument(
        "--out",
        default=None,
        help="where to write the per-step frame (.csv/.csv.gz/.parquet; default: "
        ".lrlib/results/evaluation[-<split>].csv.gz, see lrlib.paths.results_dir)",
    )
    parser.add_argument(
        "--curves",
        action="store_true",
        help="also sweep each reducer's knob and write the curves next to it",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _backend().add_arguments(parser)  # --jobs, --backend (large files: by episode)


def _steps(args: argparse.Namespace) -> list[Any]:
    """The selected steps (loaded once; ``plan`` and ``run`` share them)."""
    if getattr(args, "steps", None) is None:
        from lrlib.data import dataset as data

        steps = data.load_steps(
            split=args.split, benchmark=args.benchmark, limit=args.limit, path=args.data
        )
        if not steps:
            where = f"split {args.split!r}" if args.split else "the dataset"
            which = f" of benchmark {args.benchmark!r}" if args.benchmark else ""
            raise ValueError(f"no steps in {where}{which}; try --split all")
        args.steps = steps
    return args.steps


def build_reducers(specs: list[ReducerSpec]) -> dict[str, Any]:
    """Label -> reducer, each built once; LineRetriever in the shipped configuration (cached
    JSON answers of the embedded model) and offline unless the environment or the spec says
    otherwise.

    >>> from lrlib.eval.evaluation import parse_reducers
    >>> table = build_reducers(parse_reducers("full;lineretriever"))
    >>> table["lineretriever"].params["answer"], table["lineretriever"].client.offline
    ('json', True)
    """
    from lrlib.reducers import get_reducer
    from lrlib.report.replay import lineretriever
    from lrlib.report.run import DEFAULT_ANSWER

    table: dict[str, Any] = {}
    for label, name, params in specs:
        if name == "lineretriever":
            table[label] = lineretriever(**{"answer": DEFAULT_ANSWER, **params})
        else:
            table[label] = get_reducer(name, **params)
    return table


def _cached(args: argparse.Namespace) -> dict[str, list[Any]]:
    """For each model-backed reducer: the selected steps whose answers are all cached
    (computed once, without any network)."""
    if getattr(args, "cached", None) is None:
        from lrlib.report.replay import has_answers

        steps = _steps(args)
        args.cached = {
            label: [s for s in steps if has_answers(reducer, s)]
            for label, reducer in _reducers(args).items()
            if getattr(reducer, "client", None) is not None
        }
    return args.cached


def _work(args: argparse.Namespace, label: str) -> list[Any]:
    """The steps model-backed reducer ``label`` reduces: the cached ones offline, every
    selected step live."""
    return _cached(args)[label] if _reducers(args)[label].client.offline else _steps(args)


def _reducers(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "table", None) is None:
        args.table = build_reducers(specs_of(args))
    return args.table


def plan(args: argparse.Namespace) -> str:
    """``lrlib evaluate``'s first line: what it computes; the slow part (a model asked,
    vectors computed) named up front, before anything starts."""
    from lrlib.report.run import model_time

    if _backend().applies(args):  # a large file (or --jobs/--backend): read by episode
        return _backend().plan(args)
    table, steps = _reducers(args), _steps(args)  # a refused option value fails first
    n = len(steps)
    where = f"the {args.split} split" if args.split else "every split"
    parts = [f"{len(table)} reducers x {n} steps of {where}"]
    for label, ready in _cached(args).items():
        client, cached = table[label].client, len(ready)
        if client.offline:
            parts.append(
                f"{label} replays cached answers of {client.model} ({cached} of {n} steps "
                f"cached; the other {n - cached} are skipped and counted, no model is asked)"
            )
            continue
        new = n - cached
        if not new:
            parts.append(f"{label}: all {n} answers are cached, no model is asked")
            continue
        parts.append(
            f"{label} asks the model {client.model} ({client.endpoint.kind}) live for {new} "
            f"uncached steps, {model_time(client, new)}; {cached} replay from the cache"
        )
    if args.split != "validation" and any(s.startswith("embedding") for s in table):
        parts.append(
            f"'embedding' computes e5 vectors live (not in the pack): ~{n * 2.4 / 60:.0f} min"
        )
    return "; ".join(parts) + (" and their knob sweeps" if args.curves else "")


def run(args: argparse.Namespace) -> int:
    """``lrlib evaluate``: evaluate, write the frame, print the summary table."""
    import pandas as pd

    from lrlib import paths
    from lrlib.report.tables import interval_table

    if _backend().applies(args):
        return _backend().run(args)
    steps, table = _steps(args), _reducers(args)
    work = {label: _work(args, label) for label in _cached(args)}
    plain = {label: r for label, r in table.items() if label not in work}
    frames = [evaluate(plain, steps, progress=not args.no_progress)] if plain else []
    notes = []
    for label, chosen in work.items():
        if len(chosen) < len(steps):
            notes.append(
                f"{label}: {len(chosen)} of {len(steps)} steps evaluated, "
                f"{len(steps) - len(chosen)} skipped (no cached answer; LRLIB_OFFLINE=0 or "
                f"{label.split(':')[0]}:offline=False asks the model for them)"
            )
        if chosen:
            frames.append(evaluate({label: table[label]}, chosen, progress=not args.no_progress))
    if not frames:
        raise ValueError("nothing to evaluate: " + " ".join(notes))
    frame = pd.concat(frames, ignore_index=True)
    order = {label: i for i, label in enumerate(table)}
    frame = frame.sort_values("reducer", key=lambda c: c.map(order), kind="stable")
    suffix = f"-{args.split}" if args.split else ""
    out = Path(args.out) if args.out else paths.results_dir() / f"evaluation{suffix}.csv.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".parquet":
        frame.to_parquet(out, index=False)
    else:
        frame.to_csv(out, index=False)
    print(markdown_table(interval_table(frame)))
    print(f"\n{len(steps)} steps; per-step rows written to {out}")
    for note in notes:
        print(note)
    if args.curves:
        knobbed = [s for s in table if s in KNOBS]
        curve = curves(steps, knobbed, progress=not args.no_progress)
        name = out.name
        path = out.with_name(
            name.replace("evaluation", "curves", 1) if "evaluation" in name else f"curves-{name}"
        )
        curve.to_csv(path, index=False)
        print(f"curves for {', '.join(knobbed)} written to {path}")
    return 0
