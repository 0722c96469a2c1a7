"""Live MiniWoB++ episodes per reducer, and lrlib's overhead per step (issues 23, 33).

The whole live study is ONE command (needs the live extra and Debian's chromium; no model
unless ``--policy llm``)::

    nice -n 10 .venv/bin/python benchmarks/bench_live.py --study --jobs 2 \\
        --ship data/live/scripted --overwrite-shipped

``--study`` plays and writes, resuming from what ``--out`` already holds:

1. every reducer of ``--reducers`` on every task type of :data:`lrlab.agent.live.TASKS` and
   the first ``--seeds`` development seeds of the fixed split (``data/live/task_split.json``,
   :mod:`lrlab.agent.split`): ``summary.csv`` (success per reducer, overall and per half of
   the task split, each with a 95% interval over task types, beside the reducer's offline
   target/evidence/first-MFS/every-MFS coverage of the steps its own episodes played and their
   agreement), ``episodes.csv``, ``steps.csv``, ``latency.csv``, ``provenance.json``;
2. the generalisation check: the ``full`` observation on the split's held-out seeds
   (``heldout/``: ``heldout.csv`` per half, ``heldout_tasks.csv`` per task type);
3. the second policy (``--second greedy``) with every reducer on the same episodes
   (``greedy/``), and ``cross_greedy.csv``: the first policy's every-MFS coverage of its
   ``full`` steps (offline, per reducer) against the second policy's live success, with
   their agreement (:mod:`lrlab.agent.cross_policy`); ``cross_greedy_episodes.csv``;
4. ``lrlib mfs --sets 32`` over the MiniWoB check set's steps of the scripted policy's task
   types (``--mfs-out``, default ``<results dir>/mfs/mfs_scripted.jsonl``; the shipped
   ``data/mfs/mfs_scripted.jsonl`` with ``--overwrite-shipped``);
5. the recommendation (issue 33): the operating points of ``--points`` (reducer specs whose
   knobs were chosen on the tuning half only, ``benchmarks/bench_replay.py --half tuning
   --pick``) played on the held-out half of the task types and the same development seeds
   (``points/``: ``points_summary.csv``, ``points_episodes.csv``, ``points_steps.csv``), and
   ``recommendation.csv``: every reducer of part 1 and every point on the held-out half,
   success [95%] beside full's on the same episodes, median token reduction, whether it meets
   the target and which points dominate it (:mod:`lrlab.agent.recommend`).

Without ``--study`` only part 1 runs (the benchmark of issue 23). It prints every table,
lrlib's preprocessing overhead per step (target: median under 20 ms for every reducer),
the load average, the chromium build and the policy's model. Timings are only comparable
on an otherwise quiet machine: run it under ``flock /tmp/lrlib-timing.lock`` where several
people share the cores, and report the load average it prints. Paths written into the
files are relative to the repository.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from lrlab.agent.live import REDUCERS, TASKS, done, plan_episodes, run_live
from lrlab.agent.live_report import (
    episodes_frame,
    halves_reduction,
    step_latencies,
    success_table,
    summarise,
    token_reductions,
)
from lrlab.agent.split import half_of, task_split
from lrlib.eval.evaluation import markdown_table
from lrlib.eval.intervals import bootstrap
from lrlib.paths import refuse_shipped, results_dir

# the operating points of part 5: the best replay at >= 55% median token reduction on the
# tuning half (learned), program at the grid's threshold nearest that reduction, with the
# decision rules, and the knob set retuned on decision labels (issue 33; all read on the
# tuning half only)
POINTS = (
    "learned:budget=0.5,overhead=30,floor=0.05;program:threshold=0.0;"
    "program:threshold=0.0,decision=True;program:params=decision;"
    "program:params=decision,decision=True;learned:decision=True;"
    "learned:budget=0.5,overhead=30,floor=0.05,decision=True"
)
PLAY = True  # False (--tables-only): the tables from the episodes already recorded


def play(specs: list, out: Path, policy: str, jobs: int, max_steps: int) -> list:
    """:func:`run_live`, or with ``--tables-only`` the recorded summaries of ``specs``."""
    if PLAY:
        return run_live(specs, out, policy, jobs=jobs, max_steps=max_steps)
    return [r for r in (done(out, s, policy) for s in specs) if r is not None]


def latency_table(results: list) -> object:
    """Median reduction/flatten/policy/browser ms per step, 95% intervals over task types."""
    import pandas as pd

    lat = step_latencies(results)
    rows = []
    for col in ("reduction_s", "flatten_s", "policy_s", "browser_s"):
        b = bootstrap(
            lat.assign(v=1e3 * lat[col]), "v", by="reducer", stat="median", cluster="task"
        )
        b.insert(1, "what", col.removesuffix("_s") + " ms")
        rows.append(b)
    return pd.concat(rows).rename(columns={"n_episodes": "n_tasks"})


def heldout_check(out: Path, tasks: list[str], jobs: int, max_steps: int, policy: str) -> object:
    """The ``full`` observation on the split's held-out seeds: success per half [95%].

    Played three seeds at a time over every task type, the tables rewritten after each
    chunk (a run cut short still reports every task type on the seeds it finished)."""
    seeds = task_split()["heldout_seeds"]
    results: list = []
    table = None
    for k in range(0, len(seeds), 3):
        got = play(plan_episodes(["full"], tasks, seeds[k : k + 3]), out / "heldout", policy,
                   jobs, max_steps)  # fmt: skip
        if not got:
            break
        results += got
        table = heldout_tables(out, results)
    return table


def heldout_tables(out: Path, results: list) -> object:
    """Write ``heldout.csv`` (success overall and per half [95%]), ``heldout_tasks.csv``,
    ``heldout_failures.csv`` and ``heldout_episodes.csv`` from the episodes played."""
    import pandas as pd

    eps = episodes_frame(results)
    eps["half"] = eps["task"].map(half_of)
    eps.to_csv(out / "heldout_episodes.csv", index=False)
    seeds = sorted(set(eps["seed"]))
    label = f"full, held-out seeds {seeds[0]}-{seeds[-1]}"
    parts = []
    for half, part in [("all", eps), *eps.groupby("half")]:
        t = success_table(part.assign(reducer=label))
        t.insert(1, "half", half)
        parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    per_task = eps.groupby(["task", "half"], as_index=False).agg(
        success=("success", "mean"), n=("success", "size")
    )
    table.to_csv(out / "heldout.csv", index=False)
    per_task.to_csv(out / "heldout_tasks.csv", index=False)
    eps[~eps["success"]][["task", "seed", "err_msg"]].to_csv(
        out / "heldout_failures.csv", index=False
    )
    return table


def second_policy(
    out: Path, second: str, reducers: list[str], tasks: list[str], seeds: list[int], jobs: int,
    max_steps: int,
) -> object:  # fmt: skip
    """The second policy live with every reducer, and its agreement with the scripted
    policy's every-MFS coverage (:func:`lrlab.agent.cross_policy.cross_table`)."""
    from lrlab.agent.cross_policy import cross_table

    results = play(plan_episodes(reducers, tasks, seeds), out / second, second, jobs, max_steps)
    eps = episodes_frame(results)
    eps.to_csv(out / f"{second}_episodes.csv", index=False)
    success_table(eps).to_csv(out / f"{second}_summary.csv", index=False)
    per_episode, table = cross_table(out, out / second, second, reducers, tasks, seeds)
    per_episode.to_csv(out / f"cross_{second}_episodes.csv", index=False)
    table.to_csv(out / f"cross_{second}.csv", index=False)
    return table


def recompute_mfs(mfs_out: Path | None, overwrite: bool) -> int:
    """``lrlib mfs --sets 32`` for the scripted policy over the check set."""
    from lrlib.cli import main as cli

    args = ["mfs", "--sets", "32"]
    if mfs_out is not None:
        args += ["--out", str(mfs_out)]
    if overwrite:
        args.append("--overwrite-shipped")
    return int(cli(args))


def part_one(args: argparse.Namespace, out: Path, reducers: list[str], tasks: list[str],
             seeds: list[int], load: tuple[float, ...]) -> None:  # fmt: skip
    """Part 1: every reducer on every task type and development seed (module doc)."""
    results = play(plan_episodes(reducers, tasks, seeds), out, args.policy, args.jobs,
                   args.max_steps)  # fmt: skip
    table = summarise(results, out, args.policy, steps_csv=out / "steps.csv")
    print(markdown_table(table, floats="{:.3f}"))
    lat_table = latency_table(results)
    print()
    print(markdown_table(lat_table, floats="{:.2f}"))
    overhead = lat_table[lat_table["what"] == "reduction ms"]
    worst = overhead["estimate"].max()
    prov = next((r["provenance"] for r in results if r.get("provenance")), {})
    n_steps = sum(len(r.get("steps") or ()) for r in results)
    print(f"\nlrlib overhead per step, median, worst reducer: {worst:.2f} ms "
          f"({'under' if worst < 20 else 'OVER'} the 20 ms target); "
          f"{n_steps} steps, {len(results)} episodes")  # fmt: skip
    print(f"load average at start {load[0]:.1f}, at end {os.getloadavg()[0]:.1f} (2-core machine)")
    print("provenance: " + json.dumps({k: prov.get(k) for k in (
        "policy", "policy_model", "prompt_hash", "browser_build", "lrlib_version", "git_commit",
        "packages")}, default=str))  # fmt: skip
    table.to_csv(out / "summary.csv", index=False)
    lat_table.to_csv(out / "latency.csv", index=False)
    episodes_frame(results).to_csv(out / "episodes.csv", index=False)
    every = [r["provenance"] for r in results if r.get("provenance")]
    prov = {**prov, "seeds": seeds, "tasks": tasks, "load_at_start": round(load[0], 1),
            "load_at_end": round(os.getloadavg()[0], 1), "tables_only": not PLAY,
            # episodes resumed from earlier runs keep their own commit and build
            "git_commits": sorted({str(p.get("git_commit")) for p in every}),
            "browser_builds": sorted({str(p.get("browser_build")) for p in every}),
            "prompt_hashes": sorted({str(p.get("prompt_hash")) for p in every}),
            "command": "benchmarks/bench_live.py " + " ".join(
                a if not os.path.isabs(a) else os.path.relpath(a) for a in os.sys.argv[1:])}  # fmt: skip
    (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str) + "\n")


def recommend_part(args: argparse.Namespace, out: Path, points: list[str], tasks: list[str],
                   seeds: list[int]) -> object:  # fmt: skip
    """Part 5: the points on the held-out half, then ``recommendation.csv`` (module doc)."""
    import pandas as pd

    from lrlab.agent.recommend import recommendation, recommended

    held = [t for t in tasks if half_of(t) == "heldout"]
    folder = out / "points"
    results = play(plan_episodes(points, held, seeds), folder, args.policy, args.jobs,
                   args.max_steps) if points else []  # fmt: skip
    table = pd.DataFrame({"reducer": []})
    if results:
        table = summarise(results, folder, args.policy, steps_csv=out / "points_steps.csv")
        table.to_csv(out / "points_summary.csv", index=False)
    eps = pd.concat([pd.read_csv(out / "episodes.csv"), episodes_frame(results)])
    eps = eps[eps["task"].map(half_of) == "heldout"]
    eps.to_csv(out / "points_episodes.csv", index=False)
    reducers = list(dict.fromkeys(eps["reducer"]))
    steps = pd.concat([token_reductions(out, args.policy, reducers, held, seeds),
                       token_reductions(folder, args.policy, points, held, seeds)])  # fmt: skip
    red = halves_reduction(steps)
    reductions = dict(zip(red["reducer"], red["median_token_reduction_heldout"], strict=True))
    rec = recommendation(eps, reductions)
    rec.to_csv(out / "recommendation.csv", index=False)
    every = [r["provenance"] for r in results if r.get("provenance")]
    prov = {"points": points, "tasks": held, "seeds": seeds, "tables_only": not PLAY,
            "git_commits": sorted({str(p.get("git_commit")) for p in every}),
            "browser_builds": sorted({str(p.get("browser_build")) for p in every}),
            "prompt_hashes": sorted({str(p.get("prompt_hash")) for p in every}),
            "policy": args.policy, "load_at_end": round(os.getloadavg()[0], 1)}  # fmt: skip
    (out / "points_provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print(f"recommended on the held-out half: {recommended(rec) or 'none meets the target'}")
    return rec


def ship(out: Path, dest: Path) -> None:
    """Copy the study's tables and provenance files (not the recorded episodes) from ``out``
    to ``dest``."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(out.glob("*.csv")) + sorted(out.glob("*provenance.json")):
        shutil.copyfile(f, dest / f.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="the first N development seeds")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--policy", default="scripted")
    parser.add_argument("--reducers", default=";".join(REDUCERS))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--max-steps", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--study", action="store_true", help="parts 1-5 (module doc)")
    parser.add_argument("--parts", default="1,2,3,4,5",
                        help="with --study, the parts to run (e.g. 2: the held-out check only)")  # fmt: skip
    parser.add_argument("--second", default="greedy", help="the second policy of --study")
    parser.add_argument("--points", default=POINTS,
                        help="';'-separated operating points for part 5 (module doc)")  # fmt: skip
    parser.add_argument("--mfs-out", type=Path, default=None)
    parser.add_argument("--tables-only", action="store_true",
                        help="play nothing: the tables from the episodes already recorded")  # fmt: skip
    parser.add_argument("--ship", type=Path, default=None,
                        help="copy the tables (*.csv, provenance.json; not the episodes) here, "
                        "e.g. data/live/scripted with --overwrite-shipped")  # fmt: skip
    parser.add_argument("--overwrite-shipped", action="store_true",
                        help="allow --out / --mfs-out inside the shipped data/ (maintainers)")  # fmt: skip
    args = parser.parse_args()
    global PLAY
    PLAY = not args.tables_only
    out = args.out or results_dir() / "live" / args.policy
    refuse_shipped(out, args.overwrite_shipped)
    if args.ship is not None:
        refuse_shipped(args.ship, args.overwrite_shipped)
    reducers = [r for r in args.reducers.split(";") if r]
    tasks = [t for t in args.tasks.split(",") if t]
    seeds = task_split()["development_seeds"][: args.seeds]
    parts = {int(p) for p in args.parts.split(",")} if args.study else {1}
    load = os.getloadavg()
    if 1 in parts:
        part_one(args, out, reducers, tasks, seeds, load)
    if 2 in parts:
        print("\nheld-out seeds, full observation:")
        print(markdown_table(heldout_check(out, tasks, args.jobs, args.max_steps, args.policy),
                             floats="{:.3f}"))  # fmt: skip
    if 3 in parts:
        print(f"\n{args.second} live vs {args.policy}'s every-MFS coverage:")
        cross = second_policy(out, args.second, reducers, tasks, seeds, args.jobs, args.max_steps)
        print(markdown_table(cross, floats="{:.3f}"))
    if 4 in parts:
        recompute_mfs(args.mfs_out, args.overwrite_shipped)
    if 5 in parts:
        points = [r for r in args.points.split(";") if r]
        print(markdown_table(recommend_part(args, out, points, tasks, seeds), floats="{:.3f}"))
    if args.ship is not None:
        ship(out, args.ship)
    print(f"written: {out}" + (f", tables copied to {args.ship}" if args.ship else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
