"""Scale benchmark: a replicated dataset of N steps imported (Parquet), read back episode by
episode, evaluated with ``lrlib evaluate`` (program, learned, bm25) on every core with its
summary and intervals, and summarised again at N steps from the written rows; wall time,
CPU/wall, the peak RSS of each stage's whole process tree (the joblib workers included),
and the load.

**The whole 100k target, one command** (import + evaluate every step on every core +
summary; writes only under /tmp; on a shared machine, serialise timing runs)::

    flock /tmp/lrlib-timing.lock .venv/bin/python benchmarks/bench_scale.py --steps 100000 --slice 0

**The million-step memory check** (import, read, evaluate a 3,000-step slice whose time is
extrapolated, and the summary of a million steps folded from that slice's rows)::

    nice .venv/bin/python benchmarks/bench_scale.py --steps 1000000 --slice 3000

It prints a markdown table for a note (stage, steps, wall, CPU/wall, peak RSS, load before
and after), then every figure as JSON.

Stages (``--stages``, comma-separated; all by default), each in its own process:

- ``import``: the shipped steps replicated to ``--steps`` (episode names suffixed ``~k``,
  so every copy is its own episode), written with :func:`lrlib.data.dataset.write_row_batches`
  (Parquet, an episode batch at a time), as ``lrlib import-traces -o x.parquet`` writes.
- ``read``: the whole file read back episode by episode as Step objects
  (:func:`lrlab.scale.episodes.iter_episodes`): the memory of the streaming read.
- ``evaluate``: ``lrlib evaluate --data <file> --split all --reducers 'program;learned;bm25'
  --out rows.parquet`` in this stage's process (the plan line, the sharded evaluation on
  every core or ``--jobs`` with its progress bar on stderr, the summary table with its
  intervals), on the first
  ``--slice`` steps (``--slice 0``: all); the time for all ``--steps`` is extrapolated
  linearly from the slice when it is smaller (the steps are copies: each costs the same
  on average).
- ``summary``: the rows the evaluation wrote, folded into
  :class:`lrlab.scale.episode_stats.EpisodeStats` until they stand for ``--steps`` steps per
  reducer (copies with renamed episodes), then the same summary table
  (:func:`lrlib.report.tables.interval_table`, 2000 bootstrap replicates per interval):
  the memory of the summary at ``--steps``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPECS = ["program", "learned", "bm25"]
#: what the summary folds (the columns EpisodeStats reads)
_STATS_COLUMNS = ["reducer", "episode", "target_status", "evidence_status", "episode_success",
                  "covered", "covered_visible", "evidence_covered", "evidence_covered_lines",
                  "horizon_covered_1", "horizon_covered_2", "horizon_covered_3", "reduction",
                  "reduction_chars", "reduction_lines", "latency_s"]  # fmt: skip


def stage_import(args: argparse.Namespace) -> dict:
    from lrlib.data import dataset

    rows = dataset.read_rows()
    episodes: dict[str, list[dict]] = {}
    for r in rows:
        episodes.setdefault(r["episode"], []).append(r)

    def batches():
        n, k = 0, 0
        while n < args.steps:
            for name, ep in episodes.items():
                take = ep[: args.steps - n]
                yield [
                    {**r, "episode": f"{name}~{k}", "step_id": f"{r['step_id']}~{k}"} for r in take
                ]
                n += len(take)
                if n >= args.steps:
                    return
            k += 1

    dataset.write_row_batches(batches(), args.data, provenance={"benchmark": "bench_scale"})
    from lrlab.scale.episodes import count_rows

    return {"steps": count_rows(args.data)[0], "bytes": Path(args.data).stat().st_size}


def stage_read(args: argparse.Namespace) -> dict:
    from lrlab.scale.episodes import iter_episodes

    n = eps = 0
    for ep in iter_episodes(args.data):
        n += len(ep)
        eps += 1
    return {"steps": n, "episodes": eps}


def stage_evaluate(args: argparse.Namespace) -> dict:
    from lrlib.cli import main

    n = args.slice or args.steps
    argv = ["evaluate", "--data", str(args.data), "--split", "all", "--reducers",
            ";".join(SPECS), "--out", str(Path(args.workdir) / "rows.parquet"),
            "--limit", str(n)]  # fmt: skip
    if args.jobs:
        argv += ["--jobs", str(args.jobs)]
    os.environ.setdefault("TQDM_MININTERVAL", "30")  # the bar on stderr, a line every 30 s
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    if code:
        raise SystemExit(f"lrlib evaluate failed ({code})")
    table = out.getvalue()
    print(table, file=sys.stderr)
    return {"steps": n, "table": table}


def stage_summary(args: argparse.Namespace) -> dict:
    import pandas as pd

    from lrlab.scale.episode_stats import EpisodeStats
    from lrlib.report.tables import interval_table

    rows = pd.read_parquet(Path(args.workdir) / "rows.parquet", columns=_STATS_COLUMNS)
    per_reducer = len(rows) // len(SPECS)
    copies = max(1, round(args.steps / per_reducer))
    stats = EpisodeStats()
    t = time.perf_counter()
    episode = rows["episode"].astype(str)
    for k in range(copies):
        rows["episode"] = episode + f"#{k}" if copies > 1 else episode
        stats.add(rows)
    fold_s = time.perf_counter() - t
    t = time.perf_counter()
    table = interval_table(stats)
    return {"steps": per_reducer * copies, "rows_folded": len(stats),
            "fold_s": round(fold_s, 1), "table_s": round(time.perf_counter() - t, 1),
            "table": table.to_dict("records")}  # fmt: skip


STAGES = {"import": stage_import, "read": stage_read, "evaluate": stage_evaluate,
          "summary": stage_summary}  # fmt: skip


def _measure(cmd: list[str]) -> dict:
    """Run ``cmd``; wall time, CPU seconds and peak RSS of its process tree."""
    import resource

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    root = psutil.Process(proc.pid)
    peak, cpu = 0, {}
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        rss = 0
        for p in procs:
            try:
                rss += p.memory_info().rss
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        peak = max(peak, rss)
        time.sleep(0.2)
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"stage failed: {' '.join(cmd)}")
    result = json.loads(out.strip().splitlines()[-1])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the stage and its reaped workers
    reaped = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu_s = max(reaped, sum(cpu.values()))
    return {**result, "wall_s": round(wall, 1), "cpu_s": round(cpu_s, 1),
            "cpu_per_wall": round(cpu_s / wall, 2), "peak_rss_mb": round(peak / 2**20)}  # fmt: skip


def note_table(results: dict) -> str:
    """The markdown table for a note: one line per stage that ran, then the totals.

    >>> r = {"import": {"steps": 10, "wall_s": 2.0, "cpu_per_wall": 0.9, "peak_rss_mb": 200,
    ...      "load_before": 0.5, "load_after": 0.7}}
    >>> note_table(r).splitlines()[2]
    '| import | 10 | 2.0 s | 0.90 | 200 MB | 0.50 / 0.70 |'
    """
    lines = ["| stage | steps | wall | CPU/wall | peak RSS (tree) | load 1 min before / after |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name in STAGES:
        if name in results:
            r = results[name]
            lines.append(
                f"| {name} | {r['steps']} | {r['wall_s']:.1f} s | {r['cpu_per_wall']:.2f} | "
                f"{r['peak_rss_mb']} MB | {r['load_before']:.2f} / {r['load_after']:.2f} |"
            )
    ran = [results[n] for n in STAGES if n in results]
    if ran:
        wall = sum(r["wall_s"] for r in ran)
        peak = max(r["peak_rss_mb"] for r in ran)
        lines.append(f"| **all stages** | | **{wall / 60:.1f} min** | | **{peak} MB** | |")
    if "evaluate_extrapolated_s" in results:
        lines.append(
            f"\nevaluate extrapolated to {results['steps']} steps from "
            f"{results['evaluate']['steps']}: {results['evaluate_extrapolated_s'] / 60:.1f} min"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--slice", type=int, default=3000, help="steps evaluated (0: all)")
    parser.add_argument(
        "--jobs", type=int, default=None, help="evaluation processes (default: every core)"
    )
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--stage", default=None, help=argparse.SUPPRESS)  # internal
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:  # a child: run one stage, print its result as JSON
        print(json.dumps(STAGES[args.stage](args), default=str))
        return 0
    unknown = set(args.stages.split(",")) - set(STAGES)
    if unknown:
        parser.error(f"unknown stage(s) {sorted(unknown)}; valid: {', '.join(STAGES)}")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_scale_"))
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / f"steps-{args.steps}.parquet"
    print(f"bench_scale: {args.steps} steps in {workdir}; load: {os.getloadavg()}", file=sys.stderr)
    results = {"steps": args.steps, "slice": args.slice, "jobs": args.jobs,
               "cores": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}  # fmt: skip
    for name in args.stages.split(","):
        cmd = [sys.executable, __file__, "--stage", name, "--steps", str(args.steps),
               "--slice", str(args.slice), "--workdir", str(workdir), "--data", str(data)]  # fmt: skip
        if args.jobs:
            cmd += ["--jobs", str(args.jobs)]
        load_before = os.getloadavg()[0]
        r = _measure(cmd)
        r["load_before"], r["load_after"] = load_before, os.getloadavg()[0]
        results[name] = r
        shown = {k: v for k, v in r.items() if k != "table"}
        print(f"{name}: {json.dumps(shown)}", file=sys.stderr)
    if "evaluate" in results:
        ev = results["evaluate"]
        if ev["steps"] < args.steps:
            results["evaluate_extrapolated_s"] = round(ev["wall_s"] / ev["steps"] * args.steps)
    print(note_table(results))
    print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
