"""Live MiniWoB++ episodes per reducer, and lrlib's overhead per step (issue 23).

Usage (needs the live extra and Debian's chromium; no model unless ``--policy llm``)::

    .venv/bin/python benchmarks/bench_live.py [--seeds 5] [--jobs 2] [--policy scripted]

Plays every reducer of ``--reducers`` on every task type of :data:`lrlab.agent.live.TASKS`
and seeds ``0..N-1`` (resuming from ``<results dir>/live/<policy>``), then prints:

- success per reducer with a 95% interval bootstrapped over task types, beside the
  reducer's offline coverage of the steps its own episodes played (the lines it kept there,
  against the policy's action on the full tree): episode target, evidence, first-MFS and
  every-MFS coverage, and how often success equals each (``agree_*``), all with 95%
  intervals over task types (:mod:`lrlab.agent.live_report`);
- lrlib's preprocessing overhead per step (flattened tree -> reduced text with its line
  numbers, tokens counted: :class:`lrlab.agent.preprocess.ObsPreprocessor`), the policy's
  and the browser's time: medians with 95% intervals over task types, and n;
- the machine's load average, the chromium build and the policy's model.

The target: median lrlib overhead per step under 20 ms for every reducer. Timings are only
comparable on an otherwise quiet machine: run it as
``flock /tmp/lrlib-timing.lock nice -n 10 .venv/bin/python benchmarks/bench_live.py ...``
where several people share the cores, and report the load average it prints.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from lrlab.agent.live import REDUCERS, TASKS, plan_episodes, run_live
from lrlab.agent.live_report import episodes_frame, step_latencies, summarise
from lrlib.eval.evaluation import markdown_table
from lrlib.eval.intervals import bootstrap
from lrlib.paths import results_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--policy", default="scripted")
    parser.add_argument("--reducers", default=";".join(REDUCERS))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or results_dir() / "live" / args.policy
    reducers = [r for r in args.reducers.split(";") if r]
    tasks = [t for t in args.tasks.split(",") if t]
    load = os.getloadavg()
    results = run_live(plan_episodes(reducers, tasks, range(args.seeds)), out, args.policy,
                       jobs=args.jobs, max_steps=args.max_steps)  # fmt: skip
    table = summarise(results, out, args.policy, steps_csv=out / "steps.csv")
    print(markdown_table(table, floats="{:.3f}"))
    lat = step_latencies(results)
    lat["episode"] = lat["task"] + "_" + lat["seed"].astype(str)
    rows = []
    for col in ("reduction_s", "flatten_s", "policy_s", "browser_s"):
        b = bootstrap(
            lat.assign(v=1e3 * lat[col]), "v", by="reducer", stat="median", cluster="task"
        )
        b.insert(1, "what", col.removesuffix("_s") + " ms")
        rows.append(b)
    import pandas as pd

    lat_table = pd.concat(rows).rename(columns={"n_episodes": "n_tasks"})
    print()
    print(markdown_table(lat_table, floats="{:.2f}"))
    overhead = lat_table[lat_table["what"] == "reduction ms"]
    worst = overhead["estimate"].max()
    prov = next((r["provenance"] for r in results if r.get("provenance")), {})
    print(f"\nlrlib overhead per step, median, worst reducer: {worst:.2f} ms "
          f"({'under' if worst < 20 else 'OVER'} the 20 ms target); "
          f"{len(lat)} steps, {len(episodes_frame(results))} episodes")  # fmt: skip
    print(f"load average at start {load[0]:.1f}, at end {os.getloadavg()[0]:.1f} (2-core machine)")
    print("provenance: " + json.dumps({k: prov.get(k) for k in (
        "policy", "policy_model", "prompt_hash", "browser_build", "lrlib_version", "git_commit",
        "packages")}, default=str))  # fmt: skip
    table.to_csv(out / "summary.csv", index=False)
    lat_table.to_csv(out / "latency.csv", index=False)
    episodes_frame(results).to_csv(out / "episodes.csv", index=False)
    (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str) + "\n")
    print(f"written: {out}/summary.csv, latency.csv, episodes.csv, steps.csv, provenance.json "
          "(copy them to data/live/<policy>/ to ship them with notebook 07)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
