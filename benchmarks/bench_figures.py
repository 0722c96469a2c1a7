"""Wall time of executing the notebooks, as `make figures` does (target: the whole
`make figures`, installation included, under 15 minutes on 2 cores).

Runs every notebook headlessly in full mode and in quick mode (``LRLIB_QUICK=1``, what
``tests/test_notebooks.py`` runs), writing figures into a temporary folder and leaving the
committed notebooks untouched. Prints a markdown table.

    python benchmarks/bench_figures.py            # full and quick
    python benchmarks/bench_figures.py --quick    # quick only
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
    args = parser.parse_args()
    modes = [True] if args.quick else [False, True]
    timings: dict[bool, list[plots.Executed]] = {}
    totals: dict[bool, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LRLIB_FIGURES_DIR"] = tmp
        for quick in modes:
            start = time.perf_counter()
            timings[quick] = plots.run_all(quick=quick, write=False)
            totals[quick] = time.perf_counter() - start
    names = [r.name for r in timings[modes[0]]]
    head = " | ".join("quick (s)" if q else "full (s)" for q in modes)
    print(f"\n| notebook | {head} |\n|---|" + "---:|" * len(modes))
    for i, name in enumerate(names):
        cells = []
        for q in modes:
            r = timings[q][i]
            cells.append(f"{r.seconds:.1f}" + ("" if r.error is None else " (failed)"))
        print(f"| {name} | {' | '.join(cells)} |")
    print("| **total** (kernel starts included) | "
          + " | ".join(f"**{totals[q]:.1f}**" for q in modes) + " |")  # fmt: skip
    print(f"\n{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
