"""``lrlib inject``: build the prompt-injection set and score reducers on it
(:mod:`lrlab.injection.injection_eval`), writing the rows and the summary table.
"""

from __future__ import annotations

import argparse
from typing import Any

from lrlab.injection.injection_eval import breakdown, cached_items, score_all, summarize
from lrlab.injection.injection_sets import build_set
from lrlib.eval.evaluation import resolve, specs_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``lrlib inject``."""
    from lrlib.eval.evaluation import add_step_arguments

    add_step_arguments(parser, "full;lineretriever:prompt=defender")
    parser.add_argument(
        "--steps",
        type=int,
        default=40,
        help="attack this many steps, a seeded sample (default: 40)",
    )
    parser.add_argument(
        "--per-step",
        type=int,
        default=2,
        help="attacks per step, at distinct positions (default: 2)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling and placement seed")
    parser.add_argument(
        "--pinned",
        choices=("core", "wide"),
        default=None,
        help="attack the pinned steps instead of a sample of --split (core: the 15 steps "
        "whose answers ship; wide: 114)",
    )
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="one realistic attack per step (modal first, focused payload button, alert "
        "banner) instead of two benchmark attacks",
    )
    parser.add_argument(
        "--no-clean",
        action="store_true",
        help="skip the runs on the clean steps (no coverage change)",
    )
    parser.add_argument(
        "--cached",
        action="store_true",
        help="score only what is cached (LLM answers, embedding vectors); skip and count "
        "the other steps instead of running a model",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="per-step rows (.csv/.csv.gz; default: <data>/results/injection.csv.gz)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _items(args: argparse.Namespace) -> list:
    """The attacked steps (built once; ``plan`` and ``run`` share them)."""
    if getattr(args, "items", None) is None:
        from lrlab.injection.inject import REALISTIC
        from lrlab.injection.injection_sets import pinned_set
        from lrlib.data import dataset as data

        shape = (
            {"attacks": REALISTIC, "per_step": 1, "positions": ("top",)} if args.realistic else {}
        )
        if args.pinned:
            args.items = pinned_set(args.pinned, **{"per_step": args.per_step, **shape})
        else:
            steps = data.load_steps(split=args.split, benchmark=args.benchmark)
            args.items = build_set(
                steps, n=args.steps, **{"per_step": args.per_step, **shape}, seed=args.seed
            )
    return args.items


def _table(args: argparse.Namespace) -> dict[str, Any]:
    """Label -> reducer, built once (``plan`` and ``run`` share them)."""
    if getattr(args, "table", None) is None:
        args.table = resolve(specs_of(args))
    return args.table


def plan(args: argparse.Namespace) -> str:
    """The first line, before any work: the attacked set, and whether a model is asked (a
    LineRetriever reducer without ``--cached`` asks its model for every uncached answer)."""
    from lrlib.report.run import model_time

    items = _items(args)
    table = _table(args)
    runs = len(items) * (1 if args.no_clean else 2)
    parts = [f"{len(table)} reducers x {len(items)} attacked steps"]
    for label, reducer in table.items():
        client = getattr(reducer, "client", None)
        if client is None:
            continue
        if args.cached or client.offline:
            parts.append(f"{label} replays cached answers only (the rest skipped and counted)")
            continue
        parts.append(
            f"{label} asks the model {client.model} ({client.endpoint.kind}) live for every "
            f"uncached one of {runs} answers, up to {model_time(client, runs)}; --cached "
            "replays only"
        )
    return "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    """``lrlib inject``: build the attacked set, score every reducer, print the tables."""
    from pathlib import Path

    import pandas as pd

    from lrlib import paths
    from lrlib.eval.evaluation import markdown_table

    items = _items(args)

    def ready(reducer: Any, todo: Any, clean: bool) -> list:
        """Every item, or (``--cached``, or a reducer whose client is offline) the cached ones."""
        offline = getattr(getattr(reducer, "client", None), "offline", False)
        return cached_items(reducer, todo, clean) if args.cached or offline else list(todo)

    rows, notes = score_all(
        _table(args), items, not args.no_clean, args.seed, not args.no_progress, ready
    )
    out = Path(args.out) if args.out else paths.data_dir() / "results" / "injection.csv.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out, index=False)
    if notes:
        print("\n".join(notes))
    if rows:
        print(markdown_table(summarize(rows)))
        for by in ("attack", "position"):
            print(f"\nSurvival share by {by}:\n")
            print(markdown_table(breakdown(rows, by).reset_index()))
    n_lines = sum(len(it.injected) for it in items)
    print(
        f"\n{len(items)} attacked steps ({n_lines} injected lines, seed {args.seed}); "
        f"rows written to {out}"
    )
    return 0
