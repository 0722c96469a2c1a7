"""Tune the program reducer's knobs on the train split and store them with their provenance.

Usage: ``python benchmarks/tune_program.py [--min-coverage 0.97] [--seed 0] [--dry-run]``

Only ``train`` steps are read. The result goes to ``lrlib/reducers/program_params.json``
(committed): the knobs, the search settings, the dataset's fingerprint, lrlib version and
git commit, and the train-split measures (the tuner's estimate and the exact evaluation).
The script prints a markdown table; it never looks at the validation split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import asdict

from lrlib import data, runinfo
from lrlib.evaluation import evaluate, markdown_table
from lrlib.metrics import summarize
from lrlib.reducers.program import PARAMS_FILE, Program
from lrlib.reducers.program_tuning import GRID, TuningSet, tune


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--min-coverage",
        type=float,
        default=0.97,
        help="target coverage the tuner must keep on train (default 0.97)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true", help="print, do not write the file")
    args = parser.parse_args()

    path = data.default_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    steps = data.load_steps(split="train")
    start = time.perf_counter()
    knobs, report = tune(TuningSet(steps), min_coverage=args.min_coverage, seed=args.seed)
    seconds = time.perf_counter() - start
    exact = summarize(
        evaluate({"program (tuned)": Program(**asdict(knobs))}, steps, progress=False)
    )
    cols = [
        "reducer",
        "n_steps",
        "median_reduction",
        "coverage",
        "coverage_success",
        "median_latency_ms",
    ]
    print(markdown_table(exact[cols]))
    record = {
        "knobs": asdict(knobs),
        "provenance": runinfo.provenance(
            split="train",
            dataset=path.name,
            dataset_sha256_16=digest,
            n_steps=len(steps),
            script="benchmarks/tune_program.py",
            tuning_seconds=round(seconds, 1),
        ),
        "search": {
            "method": "random search + coordinate descent",
            "min_coverage": args.min_coverage,
            "seed": args.seed,
            "samples": report["samples"],
            "restarts": report["restarts"],
            "settings_evaluated": report["settings_evaluated"],
            "grid": {k: list(v) for k, v in GRID.items()},
        },
        "train": {
            "estimate": {
                k: report[k] for k in ("median_reduction", "coverage", "coverage_success")
            },
            "exact": {
                k: float(exact.iloc[0][k])
                for k in ("median_reduction", "coverage", "coverage_success")
            },
            "n_target_steps": report["n_target_steps"],
        },
    }
    text = json.dumps(record, indent=2) + "\n"
    if args.dry_run:
        print(text)
    else:
        PARAMS_FILE.write_text(text)
        print(f"\nknobs written to {PARAMS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
