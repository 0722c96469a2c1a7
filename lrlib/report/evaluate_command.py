"""``lrlib evaluate``: evaluate reducers offline on the dataset, write the per-step frame
and print the summary table with its intervals (:func:`lrlib.eval.evaluation.evaluate`).

Offline means no model is asked behind the user's back: LineRetriever runs in the
shipped default configuration (``RetrieverConfig()``, as ``lrlib.get_reducer`` builds it)
and replays its answers; steps without a cached answer are skipped and counted. It asks a
model only when told to (``LRLIB_OFFLINE=0``, an endpoint in ``OPENAI_BASE_URL``, or
``lineretriever:offline=False``: :func:`lrlib.settings.offline_reason`), and the plan line
says so, with how many answers and roughly how long, before anything starts.

Large files go to an evaluate backend plugin (:func:`lrlib.plugins.evaluate_backend`; the
research wing's reads them by episode on every core, with ``--jobs`` and ``--backend``).
Without one, every selection is evaluated here, in memory, and there is no ``--jobs``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lrlib import plugins
from lrlib.eval.evaluation import (
    ReducerSpec,
    add_step_arguments,
    count_arg,
    curves,
    evaluate,
    markdown_table,
    specs_of,
)
from lrlib.reducers import knobs

OUT_SUFFIXES = (".csv", ".csv.gz", ".parquet")  # what --out may name


def _backend(args: argparse.Namespace | None = None) -> Any:
    """A plugin's evaluate backend (``EVALUATE_BACKEND``) when there is one and, given
    ``args``, it takes them (a large file, ``--jobs``/``--backend``); else None."""
    backend = plugins.evaluate_backend()
    return backend if backend and (args is None or backend.applies(args)) else None


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
    if backend := _backend():
        backend.add_arguments(parser)  # --jobs, --backend (large files: by episode)


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
    """Label -> reducer, each built once, as :func:`lrlib.get_reducer` builds it (so
    LineRetriever in the shipped default configuration, offline unless the environment or
    the spec says otherwise).

    >>> from lrlib.eval.evaluation import parse_reducers
    >>> table = build_reducers(parse_reducers("full;lineretriever"))
    >>> table["lineretriever"].params["answer"], table["lineretriever"].client.offline
    ('json', True)
    """
    from lrlib.reducers import get_reducer

    return {label: get_reducer(name, **params) for label, name, params in specs}


def _cached(args: argparse.Namespace) -> dict[str, list[Any]]:
    """For each model-backed reducer: the selected steps whose answers are all cached
    (computed once, without any network)."""
    if getattr(args, "cached", None) is None:
        from lrlib.report.replay import ready_steps

        args.cached = {
            label: ready_steps(reducer, _steps(args), offline_only=True)
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

    if args.out and not str(args.out).endswith(OUT_SUFFIXES):
        raise ValueError(f"--out {args.out}: write .csv, .csv.gz or .parquet")
    if backend := _backend(args):  # a large file (or --jobs/--backend): read by episode
        return backend.plan(args)
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
            f"uncached steps, {model_time(client, new)}; {cached} replay from the cache "
            f"(to skip the model: LRLIB_OFFLINE=1, or {label}:offline=True)"
        )
    for label, reducer in table.items():
        work = getattr(reducer, "live_work", None)  # what a reducer computes without a model
        if label not in _cached(args) and callable(work) and (note := work(steps)):
            others = ";".join(x for x in table if x != label)
            parts.append(f"{label!r} {note} (to skip it: --reducers '{others}')")
    return "; ".join(parts) + (" and their knob sweeps" if args.curves else "")


def run(args: argparse.Namespace) -> int:
    """``lrlib evaluate``: evaluate, write the frame, print the summary table."""
    import pandas as pd

    from lrlib import paths
    from lrlib.report.tables import interval_table

    if backend := _backend(args):
        return backend.run(args)
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
        knobbed = [s for s in table if s in knobs()]
        curve = curves(steps, knobbed, progress=not args.no_progress)
        name = out.name
        path = out.with_name(
            name.replace("evaluation", "curves", 1) if "evaluation" in name else f"curves-{name}"
        )
        curve.to_csv(path, index=False)
        print(f"curves for {', '.join(knobbed)} written to {path}")
    return 0
