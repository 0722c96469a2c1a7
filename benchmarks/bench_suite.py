"""Wall and CPU time of `make test` after installation (issue 32: the suite in <= 4 min on
an idle 2-core machine), phase by phase, with the slowest tests.

Runs what `make test` runs, in this checkout: ``ruff check``, ``ruff format --check``,
then the whole suite on N xdist workers (``--dist loadgroup``). Each phase gets its wall
time and two CPU times: its processes' (user + system of the children it waited for) and
the machine's (every core's busy time from ``/proc/stat``, which also counts processes the
children did not wait for: chromium's, kernels', servers'; run it on an idle machine). The
machine's CPU over wall times cores says how much of the wall was waiting (sleeps, page
loads) rather than computing; the machine's CPU over cores is the wall no scheduling can
beat. The share of the cores busy in the second before the run is recorded (with the load
average, which on a virtual machine can read 1-4 while every core idles): a figure taken on
a busy machine says so.

    python benchmarks/bench_suite.py                   # the Makefile's workers (auto)
    python benchmarks/bench_suite.py --workers 2 3     # two suites, before/after
    python benchmarks/bench_suite.py --out suite.json  # also the JSON (default: none)

It runs the whole test suite (about 5-7 minutes per worker count on 2 cores) and asks no
model; it writes only into a temporary folder and the ``--out`` file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SLOWEST = 20


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_cpu() -> float:
    """Busy seconds of every core since boot (``/proc/stat``: all but idle and iowait);
    0.0 where there is no ``/proc/stat``."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def busy_share(seconds: float = 1.0) -> float:
    """The share of the cores busy over the next ``seconds`` (``/proc/stat``; 0.0 where
    there is none): whether the machine is idle, which the load average does not tell on a
    virtual machine whose kernel threads keep it at 1-4.

    >>> 0.0 <= busy_share(0.2) <= 1.0
    True
    """
    before = machine_cpu()
    time.sleep(seconds)
    return min(1.0, (machine_cpu() - before) / (seconds * (os.cpu_count() or 1)))


def phase(name: str, cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``cmd`` in the repository; its wall seconds, its processes' and the machine's
    CPU seconds, and its exit status.

    >>> phase("echo", [sys.executable, "-c", "pass"])["status"]
    0
    """
    cpu, busy, start = _cpu(), machine_cpu(), time.perf_counter()
    status = subprocess.call(cmd, cwd=REPO, env=env)
    wall = time.perf_counter() - start
    return {"phase": name, "wall_s": round(wall, 1), "cpu_s": round(_cpu() - cpu, 1),
            "machine_cpu_s": round(machine_cpu() - busy, 1), "status": status}  # fmt: skip


def junit_tests(path: Path) -> tuple[dict[str, int], list[tuple[float, str]]]:
    """Counts (passed, failed, skipped) and (seconds, test id) of every test in a JUnit
    report written by ``pytest --junitxml`` (a test's time is setup + call + teardown)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    times = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        kind = (
            "failed"
            if kinds & {"failure", "error"}
            else "skipped"
            if "skipped" in kinds
            else "passed"
        )
        counts[kind] += 1
        times.append((float(case.get("time", 0.0)), f"{case.get('classname')}::{case.get('name')}"))
    return counts, sorted(times, reverse=True)


def suite(workers: str, tmp: Path) -> dict:
    """`make test`'s phases on ``workers`` xdist workers; the phases and the slowest tests."""
    pytest = [str(BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    ruff = str(BIN / "ruff")
    xml = tmp / f"suite-{workers}.xml"
    phases = [
        phase("ruff check", [ruff, "check", "."]),
        phase("ruff format --check", [ruff, "format", "--check", "."]),
        phase(f"pytest -n {workers}",
              [*pytest, "-n", workers, "--dist", "loadgroup", f"--junitxml={xml}"]),
    ]  # fmt: skip
    counts, times = junit_tests(xml) if xml.is_file() else ({}, [])
    return {
        "workers": workers,
        "phases": phases,
        "wall_s": round(sum(p["wall_s"] for p in phases), 1),
        "cpu_s": round(sum(p["cpu_s"] for p in phases), 1),
        "machine_cpu_s": round(sum(p["machine_cpu_s"] for p in phases), 1),
        "tests": counts,
        "slowest": [{"s": round(s, 1), "test": t} for s, t in times[:SLOWEST]],
        "ok": all(p["status"] == 0 for p in phases),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", nargs="+", default=["auto"],
                        help="xdist workers per run (auto: as `make test`, a worker per core and one more)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    from lrlib.runinfo import provenance

    prov = provenance(python=platform.python_version(), cpus=os.cpu_count(),
                      load_before=[round(x, 2) for x in os.getloadavg()],
                      busy_before=round(busy_share(), 2))  # fmt: skip
    load, busy = prov["load_before"][0], prov["busy_before"]
    print(f"bench_suite: {len(args.workers)} suite run(s) ({', '.join(args.workers)} workers), "
          f"about {6 * len(args.workers)} min on 2 cores; cores {busy:.0%} busy before"
          + ("" if busy < 0.1 else " - the machine is busy: these times are not idle times"),
          file=sys.stderr, flush=True)  # fmt: skip
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in args.workers:
            runs.append(suite(workers, Path(tmp)))
            runs[-1]["load_after"] = round(os.getloadavg()[0], 2)
    print("\n| workers | " + " | ".join(p["phase"].split(" -n")[0] for p in runs[0]["phases"])
          + " | total wall (s) | CPU (s) | machine CPU (s) | busy | tests passed / skipped / failed |")  # fmt: skip
    print("|---|" + "---:|" * (len(runs[0]["phases"]) + 5))
    cores = os.cpu_count() or 1
    for run in runs:
        cells = [f"{p['wall_s']:.1f}" for p in run["phases"]]
        t = run["tests"]
        print(f"| {run['workers']} | {' | '.join(cells)} | **{run['wall_s']:.1f}** | "
              f"{run['cpu_s']:.1f} | {run['machine_cpu_s']:.1f} | "
              f"{run['machine_cpu_s'] / (run['wall_s'] * cores):.0%} | "
              f"{t.get('passed', 0)} / {t.get('skipped', 0)} / "
              f"{t.get('failed', 0)} |")  # fmt: skip
    for run in runs:
        print(f"\nslowest {SLOWEST} tests, {run['workers']} workers (setup + call + teardown, s):")
        for row in run["slowest"]:
            print(f"  {row['s']:6.1f}  {row['test']}")
    print(f"\ncommit {prov['git_commit']}, {prov['cpus']} CPUs, cores {busy:.0%} busy before "
          f"(load average {load:.2f}); "
          f"busy = machine CPU / (wall x {cores} cores); machine CPU / {cores} is the floor "
          "of the wall on this machine")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"provenance": prov, "runs": runs}, indent=1) + "\n")
        print(f"written: {args.out}")
    sys.exit(0 if all(r["ok"] for r in runs) else 1)


if __name__ == "__main__":
    main()
