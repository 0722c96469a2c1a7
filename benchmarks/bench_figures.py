"""Wall time of executing the notebooks, as `make figures` does (target: the whole
`make figures`, installation included, under 15 minutes on 2 cores).

Runs every notebook headlessly in full mode and in quick mode (``LRLIB_QUICK=1``, what
``tests/test_notebooks.py`` runs), writing figures into a temporary folder and leaving the
committed notebooks untouched. Prints a markdown table.

    python benchmarks/bench_figures.py                # full and quick, 2 notebooks at a time
    python benchmarks/bench_figures.py --quick        # quick only
    python benchmarks/bench_figures.py --jobs 1 2     # one at a time, then two (before/after)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from lrlib.report import plots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the quick mode")
    parser.add_argument(
        "--jobs", type=int, nargs="+", default=[2], help="notebooks at a time (each is a run)"
    )
    args = parser.parse_args()
    runs = [
        (quick, jobs) for quick in ([True] if args.quick else [False, True]) for jobs in args.jobs
    ]
    timings: dict[tuple[bool, int], list[plots.Executed]] = {}
    totals: dict[tuple[bool, int], float] = {}
    loads: dict[tuple[bool, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LRLIB_FIGURES_DIR"] = tmp
        for quick, jobs in runs:
            start = time.perf_counter()
            timings[quick, jobs] = plots.run_all(quick=quick, write=False, jobs=jobs)
            totals[quick, jobs] = time.perf_counter() - start
            loads[quick, jobs] = os.getloadavg()[0]
    names = [r.name for r in timings[runs[0]]]
    head = " | ".join(f"{'quick' if q else 'full'}, {j} at a time (s)" for q, j in runs)
    print(f"\n| notebook | {head} |\n|---|" + "---:|" * len(runs))
    for i, name in enumerate(names):
        cells = []
        for run in runs:
            r = timings[run][i]
            cells.append(f"{r.seconds:.1f}" + ("" if r.error is None else " (failed)"))
        print(f"| {name} | {' | '.join(cells)} |")
    print("| **total wall time** (kernel starts included) | "
          + " | ".join(f"**{totals[r]:.1f}**" for r in runs) + " |")  # fmt: skip
    print(
        "| load average (1 min) after the run | "
        + " | ".join(f"{loads[r]:.1f}" for r in runs)
        + " |"
    )
    print(f"\n{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
