"""Scale benchmark: a replicated dataset of N steps imported (written as Parquet), read back
episode by episode, evaluated (program, learned, bm25) on every core, summarised with
intervals; wall time, CPU/wall and the peak RSS of the whole process tree of each stage.

Usage (nice it on a shared machine; writes only under /tmp unless --workdir says otherwise)::

    nice .venv/bin/python benchmarks/bench_scale.py [--steps 100000] [--slice 3000] [--jobs 2]
    nice .venv/bin/python benchmarks/bench_scale.py --steps 1000000 --stages import,read,summary

Stages (``--stages``, comma-separated; all by default):

- ``import``: the shipped 446 steps replicated to ``--steps`` (episode names suffixed ``~k``,
  so every copy is its own episode) and written with :func:`lrlib.data.store.write_row_batches`
  (Parquet, one episode at a time), as an importer writes them.
- ``read``: the whole file read back episode by episode as Step objects
  (:func:`lrlib.data.store.iter_episodes`): the memory of the streaming read.
- ``evaluate``: :func:`lrlib.eval.sharded.evaluate_file` on the first ``--slice`` steps of
  the file (``--slice 0``: all of them); the time for all ``--steps`` is extrapolated
  linearly from the slice (every step costs the same on average: the steps are copies).
- ``summary``: the summary columns the evaluation kept for the slice, replicated to
  ``--steps`` steps per reducer, through ``interval_table`` (2000 bootstrap replicates per
  interval): the part of ``lrlib evaluate`` whose memory grows with the number of steps.

Each stage runs in its own process; a sampler adds up the RSS of that process and all its
children (the joblib workers) every 0.2 s, and their CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPECS = ["program", "learned", "bm25"]


def stage_import(args: argparse.Namespace) -> dict:
    from lrlib.data import dataset, store

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

    store.write_row_batches(batches(), args.data, provenance={"benchmark": "bench_scale"})
    return {"steps": store.count_rows(args.data)[0], "bytes": Path(args.data).stat().st_size}


def stage_read(args: argparse.Namespace) -> dict:
    from lrlib.data import store

    n = eps = 0
    for ep in store.iter_episodes(args.data):
        n += len(ep)
        eps += 1
    return {"steps": n, "episodes": eps}


def stage_evaluate(args: argparse.Namespace) -> dict:
    import pandas as pd

    from lrlib.eval import sharded

    limit = args.slice or None
    kept = sharded.evaluate_file(
        SPECS, args.data, Path(args.workdir) / "rows.parquet", limit=limit, jobs=args.jobs,
        progress=False,
    )  # fmt: skip
    kept.to_pickle(Path(args.workdir) / "kept.pkl")
    n = len(kept) // len(SPECS)
    return {"steps": int(n), "rows": len(kept), "kept_bytes": int(kept.memory_usage(deep=True).sum()),
            "written_rows": len(pd.read_parquet(Path(args.workdir) / "rows.parquet", columns=["reducer"]))}  # fmt: skip


def stage_summary(args: argparse.Namespace) -> dict:
    import pandas as pd

    from lrlib.eval.sharded import _concat, summary_columns
    from lrlib.report.tables import interval_table

    kept = summary_columns(pd.read_pickle(Path(args.workdir) / "kept.pkl"))
    per_reducer = len(kept) // len(SPECS)
    copies = max(1, round(args.steps / per_reducer))
    parts = []
    for k in range(copies):
        part = kept.copy()
        part["episode"] = part["episode"].cat.rename_categories(lambda e, k=k: f"{e}#{k}")
        parts.append(part)
    big = _concat(parts)
    del parts
    import gc

    import psutil

    gc.collect()
    rss_before = psutil.Process().memory_info().rss
    t = time.perf_counter()
    table = interval_table(big)
    return {"rows": len(big), "steps_per_reducer": len(big) // len(SPECS),
            "frame_bytes": int(big.memory_usage(deep=True).sum()),
            "interval_table_s": round(time.perf_counter() - t, 1),
            "rss_before_table_mb": rss_before >> 20,
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
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_scale_"))
    data = workdir / f"steps-{args.steps}.parquet"
    print(f"bench_scale: {args.steps} steps in {workdir}; load: {os.getloadavg()}", file=sys.stderr)
    results = {"steps": args.steps, "slice": args.slice, "jobs": args.jobs,
               "cores": os.cpu_count(), "load_before": os.getloadavg()}  # fmt: skip
    for name in args.stages.split(","):
        cmd = [sys.executable, __file__, "--stage", name, "--steps", str(args.steps),
               "--slice", str(args.slice), "--workdir", str(workdir), "--data", str(data)]  # fmt: skip
        if args.jobs:
            cmd += ["--jobs", str(args.jobs)]
        r = _measure(cmd)
        r["load_after"] = os.getloadavg()
        results[name] = r
        print(
            f"{name}: {json.dumps({k: v for k, v in r.items() if k != 'table'})}", file=sys.stderr
        )
    if "evaluate" in results:
        ev = results["evaluate"]
        per_step = ev["wall_s"] / max(1, ev["steps"])
        results["evaluate_extrapolated_s"] = round(per_step * args.steps)
    print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
