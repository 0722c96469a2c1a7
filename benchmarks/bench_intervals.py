"""Time the episode-bootstrap intervals of the whole evaluation table.

Usage: ``python benchmarks/bench_intervals.py [--splits validation,test] [--repeat 3]``

Builds the evaluation frame of every registered non-LLM reducer
(:func:`lrlib.eval.evaluation.all_reducers`) on the given splits (the embedding baseline from
its cached vectors only), then times, with 2,000 replicates each, everything notebook 05
bootstraps:

- :func:`lrlib.eval.intervals.summary` by reducer x split and by reducer x split x benchmark
  (median reduction, target coverage, evidence coverage);
- :func:`lrlib.eval.intervals.gap` (validation minus test) for those three measures;
- :func:`lrlib.eval.intervals.paired_table` of every reducer against ``program`` (coverage and
  evidence coverage, paired on the same steps).

Prints the number of rows and intervals and the best of ``--repeat`` wall times (the
target is < 10 s). Building the frame (running the reducers) is not timed.
"""

from __future__ import annotations

import argparse
import time

from lrlib.data import dataset as data
from lrlib.eval import intervals
from lrlib.eval.evaluation import all_reducers
from lrlib.report import replay


def bootstrap_everything(frame) -> int:
    """Every interval of notebook 05's tables; returns how many intervals it computed."""
    n = 0
    for by in (["reducer", "split"], ["reducer", "split", "benchmark"]):
        n += 3 * len(intervals.summary(frame, by=by))
    for value, stat in (("covered", "mean"), ("evidence_covered", "mean"), ("reduction", "median")):
        n += len(intervals.gap(frame, value, stat=stat))
    for value in ("covered", "evidence_covered"):
        for _split, rows in frame.groupby("split"):
            n += len(intervals.paired_table(rows, value, "program"))
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="validation,test")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    steps = [s for split in args.splits.split(",") for s in data.load_steps(split=split)]
    t0 = time.perf_counter()
    frame, notes = replay.evaluate_cached(all_reducers(), steps)
    build = time.perf_counter() - t0
    print("\n".join(notes) or "every reducer on every step")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        n = bootstrap_everything(frame)
        times.append(time.perf_counter() - t0)
    reducers = frame["reducer"].nunique()
    print(
        f"{len(frame)} rows ({reducers} reducers x {len(steps)} steps, built in {build:.1f} s): "
        f"{n} intervals x {intervals.N_BOOT} replicates in {min(times):.2f} s "
        f"(best of {args.repeat}; all: {', '.join(f'{t:.2f}' for t in times)})"
    )


if __name__ == "__main__":
    main()
