"""``lrlib evaluate``: evaluate reducers offline on the dataset, write the per-step frame
and print the summary table with its intervals (:func:`lrlib.eval.evaluation.evaluate`).
"""

from __future__ import annotations

import argparse

from lrlib.eval.evaluation import KNOBS, add_step_arguments, curves, evaluate, markdown_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``lrlib evaluate``."""
    add_step_arguments(parser, "full;truncate:budget=500")
    parser.set_defaults(split="validation")  # its vectors ship in the pack: nothing to embed
    parser.add_argument("--limit", type=int, default=None, help="at most this many steps")
    parser.add_argument(
        "--out",
        default=None,
        help="where to write the per-step frame (.csv/.csv.gz; default: "
        ".lrlib/results/evaluation[-<split>].csv.gz, see lrlib.paths.results_dir)",
    )
    parser.add_argument(
        "--curves",
        action="store_true",
        help="also sweep each reducer's knob and write the curves next to it",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def plan(args: argparse.Namespace) -> str:
    """``lrlib evaluate``'s first line: what it computes; the slow part named up front."""
    from lrlib.data import dataset as data

    n = len(data.load_steps(split=args.split, benchmark=args.benchmark, limit=args.limit))
    specs = [s.strip() for s in args.reducers.split(";") if s.strip()]
    where = f"the {args.split} split" if args.split else "every split"
    line = f"{len(specs)} reducers x {n} steps of {where}"
    if args.split != "validation" and any(s.startswith("embedding") for s in specs):
        line += f"; 'embedding' computes e5 vectors live (not in the pack): ~{n * 2.4 / 60:.0f} min"
    return line + (" and their knob sweeps" if args.curves else "")


def run(args: argparse.Namespace) -> int:
    """``lrlib evaluate``: evaluate, write the frame, print the summary table."""
    from pathlib import Path

    from lrlib import paths
    from lrlib.data import dataset as data

    steps = data.load_steps(split=args.split, benchmark=args.benchmark, limit=args.limit)
    specs = [s.strip() for s in args.reducers.split(";") if s.strip()]
    frame = evaluate(specs, steps, progress=not args.no_progress)
    suffix = f"-{args.split}" if args.split else ""
    out = Path(args.out) if args.out else paths.results_dir() / f"evaluation{suffix}.csv.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    from lrlib.report.tables import interval_table

    print(markdown_table(interval_table(frame)))
    print(f"\n{len(steps)} steps; per-step rows written to {out}")
    if args.curves:
        knobbed = [s for s in specs if s in KNOBS]
        table = curves(steps, knobbed, progress=not args.no_progress)
        name = out.name
        path = out.with_name(
            name.replace("evaluation", "curves", 1) if "evaluation" in name else f"curves-{name}"
        )
        table.to_csv(path, index=False)
        print(f"curves for {', '.join(knobbed)} written to {path}")
    return 0
