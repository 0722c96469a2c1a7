"""Payload visibility of reducer specs (operating points) on the injection sets (issue 33).

Usage: ``python benchmarks/bench_injection_points.py [--reducers "learned;program"] [--csv FILE]``

The issue's injection target: a recommended operating point may not show payloads more often
than the shipped reducers do today (learned: 0% on the benchmark shapes and the realistic
attacks, 22.8% [20.5, 25.0] on the held-out shapes when issue 33 was measured, 0% since the
guard reads structure, issue 35; ``figures/injection_guard.md``; the cue-free shapes:
``benchmarks/bench_cuefree.py``). For each
``;``-separated reducer spec (any knobs, e.g. ``learned:budget=0.5,overhead=30,floor=0.05``),
on the wide set of pinned steps, one attack per step (:mod:`lrlab.injection.injection_sets`:
benchmark shapes, realistic attacks, the held-out shapes written after the guard's rules):
the share of attacked steps whose reduced text shows a payload span, with its 95% interval
bootstrapped over episodes and n (:func:`lrlab.injection.injection_eval.visibility`), as
notebook 06 computes it. No model is called; the steps are the shipped recorded traces.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lrlab.injection import injection_eval, injection_sets
from lrlib.data import dataset as data
from lrlib.eval.evaluation import markdown_table

REDUCERS = "learned;program;learned:budget=0.5,overhead=30,floor=0.05;program:threshold=0.0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reducers", default=REDUCERS, help="';'-separated reducer specs")
    parser.add_argument("--csv", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    import pandas as pd

    specs = {r: r for r in args.reducers.split(";") if r}
    steps = data.load_steps()  # every split: the pinned ids say which steps
    sets = {
        "benchmark shapes": injection_sets.pinned_set("wide", steps=steps, per_step=1),
        "realistic": injection_sets.realistic_set("wide", steps=steps),
        "held-out shapes": injection_sets.heldout_set("wide", steps=steps),
    }
    start = time.perf_counter()
    parts = []
    for name, attacked in sets.items():
        rows = injection_eval.score_cached(specs, attacked, clean=False)[0]
        parts.append(injection_eval.visibility(rows).assign(attacks=name))
    table = pd.concat(parts, ignore_index=True)
    print(markdown_table(table, floats="{:.3f}"))
    print(f"{len(specs)} reducers x {sum(map(len, sets.values()))} attacked steps "
          f"in {time.perf_counter() - start:.0f} s")  # fmt: skip
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
