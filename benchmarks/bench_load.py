"""Benchmark: loading the shipped dataset (target: the whole file well under 2 s).

Measures, on data/observations.jsonl.gz: a cold start in a fresh interpreter
(``import lrlib`` + pandas import + ``load_observations()``, what a notebook's first cell
pays), then in-process timings (median of 5) of ``read_rows``, ``load_observations`` (all
rows and one split) and ``load_steps``. Also prints the file size and peak RSS growth.
Prints a markdown table; run: .venv/bin/python benchmarks/bench_load.py
"""

from __future__ import annotations

import gzip
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from lrlib.data import dataset as data

REPEATS = 5
COLD = (
    "import time; t = time.perf_counter(); import lrlib; df = lrlib.load_observations(); "
    "print(time.perf_counter() - t, len(df))"
)


def timed(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median wall time of ``fn`` in seconds (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cold_start() -> tuple[float, int]:
    """Median over 3 fresh interpreters of import + load (seconds), and the row count."""
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(out.stderr)
        seconds, n = out.stdout.split()
        runs.append((float(seconds), int(n)))
    return statistics.median(r[0] for r in runs), runs[0][1]


def main() -> None:
    path = data.default_path()
    size = path.stat().st_size
    raw_size = len(gzip.decompress(path.read_bytes()))
    cold, n_rows = cold_start()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = [
        ("cold: import lrlib + load_observations()", cold),
        ("read_rows() (gunzip + json)", timed(data.read_rows)),
        ("load_observations()", timed(data.load_observations)),
        ("load_observations(split='train')", timed(lambda: data.load_observations("train"))),
        ("load_steps()", timed(data.load_steps)),
    ]
    rss_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    print(
        f"dataset: {path.name}, {n_rows} rows, {size / 1e6:.2f} MB gzip ({raw_size / 1e6:.1f} MB JSON)"
    )
    print()
    print("| operation | seconds |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} |")
    print()
    print(
        f"peak RSS growth while loading in-process: {rss_mb:.0f} MB; target: < 2 s for a full load"
    )


if __name__ == "__main__":
    main()
