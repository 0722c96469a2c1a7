"""Latency per step of every non-LLM reducer on the recorded dataset.

Usage: ``python benchmarks/bench_reducers.py [--split validation] [--embedding-sample 30]``

Each reducer runs once over every step (after one warm-up step) and the script prints a
markdown table of the median and p95 latency in milliseconds, with the median token
reduction for context. Latency is what :meth:`Reducer.reduce` times: the reducer's own work,
with the tree already parsed. The embedding reducer runs without its disk cache (every
chunk embedded, as on a first visit) on a seeded sample of steps, because a step costs
seconds; ``--embedding-sample 0`` skips it.
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

from lrlab.reducers import memo
from lrlib.data import dataset as data
from lrlib.eval.evaluation import markdown_table, parse_spec
from lrlib.reducers import get_reducer

REDUCERS = ("full", "truncate", "truncate-agentlab", "random", "oracle", "bm25",
            "bm25:unit=chunks", "program", "learned")  # fmt: skip


def bench(spec: str, steps: list, **extra) -> dict:
    name, params = parse_spec(spec)
    reducer = get_reducer(name, **params, **extra)
    reducer.reduce(steps[0])  # warm-up: imports, lazy models
    memo.clear()  # this reducer's own work, not what the warm-up or another reducer left
    lat, red = [], []
    for step in steps:
        r = reducer.reduce(step)
        lat.append(r.latency_s * 1000)
        red.append(r.reduction)
    return {
        "reducer": spec,
        "steps": len(steps),
        "median_ms": float(np.median(lat)),
        "p95_ms": float(np.percentile(lat, 95)),
        "max_ms": float(np.max(lat)),
        "median_reduction": float(np.median(red)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default=None, help="train or validation (default: all)")
    parser.add_argument("--embedding-sample", type=int, default=30)
    args = parser.parse_args()
    steps = data.load_steps(split=args.split)
    for s in steps:
        _ = s.axtree  # parse up front: parsing is not part of a reducer's latency
    rows = [bench(spec, steps) for spec in REDUCERS]
    if args.embedding_sample:
        sample = random.Random(0).sample(steps, min(args.embedding_sample, len(steps)))
        rows.append(bench("embedding", sample, cache=False))
        rows[-1]["reducer"] = "embedding (e5, uncached)"
    import pandas as pd

    print(
        f"{len(steps)} steps ({args.split or 'all splits'}); {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end; {time.strftime('%Y-%m-%d')}\n"
    )
    print(markdown_table(pd.DataFrame(rows), floats="{:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
