"""The documentation-site study (issue 34): live episodes of every study reducer on >= 2
Debian documentation sites, the scripted policy acting on what each reducer kept.

    apt-get install -y python3.11-doc nodejs-doc postgresql-doc-15
    python benchmarks/bench_docs.py --tasks-per-family 24 --reducers "full;anchor;truncate-agentlab"
    python benchmarks/bench_docs.py --minutes 60            # rounds until the time is up
    python benchmarks/bench_docs.py --site /usr/share/doc/postgresql-doc-15/html  # any site

Rounds of k = 1, 2, 3... tasks per family on each site in turn (resumable: recorded episodes
are skipped), every reducer on the same tasks, until ``--minutes`` have passed or
``--tasks-per-family`` is reached; then the table (success with 95% intervals over tasks and
over families, median token reduction, tree size, offline coverage of the same steps, lrlib's
latency per step) over all sites. Episodes go to ``<results dir>/live/docs/study`` (AgentLab
layout); ``--ship`` copies the tables (not the episodes) to ``data/live/docs/`` for the
notebook 08_big_pages: it OVERWRITES the shipped tables there. Beside the pooled table:
``summary_by_site.csv`` (the same per site: the development sites and any site named
besides), ``relative.csv`` (each reducer's success relative to full's on the same tasks,
paired bootstrap over tasks) and, in ``meta.json``, the measured time per episode with the
projected time of 300 episodes of one reducer. With ``OPENAI_BASE_URL`` set, ``lineretriever`` joins the reducers
(it CALLS THAT MODEL for every step).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

# the development sites, then the check site nobody developed on (named by its folder only)
SITES = ("/usr/share/doc/python3.11-doc/html", "/usr/share/doc/nodejs/api",
         "/usr/share/doc/postgresql-doc-15/html")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    from lrlab.agent.live import done
    from lrlab.docsite.run import plan_docs, run_docs
    from lrlab.docsite.site import Site, SiteError
    from lrlab.docsite.study import STUDY_REDUCERS, relative_success, site_summary, summarise
    from lrlab.docsite.tasks import FAMILIES, load_tasks
    from lrlib.eval.evaluation import markdown_table
    from lrlib.paths import REPO_DIR, results_dir

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--site", action="append", help="site root folder (repeat; default: "
                   "the Python 3.11 and Node.js docs, and PostgreSQL 15's to check)")  # fmt: skip
    p.add_argument("--reducers", default=None, help="';'-separated reducer specs")
    p.add_argument("--minutes", type=float, default=60.0, help="start no round after this")
    p.add_argument("--tasks-per-family", type=int, default=30, help="at most this many")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--round-size", type=int, default=1,
                   help="tasks per family added per round (fewer browser start-ups; a run "
                   "stopped by --minutes is fair to every reducer only at round ends)")  # fmt: skip
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--ship", action="store_true", help="copy the tables to data/live/docs/")
    p.add_argument("--no-play", action="store_true",
                   help="summarise the episodes already recorded (e.g. after stopping a run)")  # fmt: skip
    p.add_argument("--play-only", action="store_true",
                   help="play, then stop (summarise later with --no-play)")  # fmt: skip
    args = p.parse_args(argv)
    reducers = list(STUDY_REDUCERS)
    if args.reducers:
        reducers = [r for r in args.reducers.split(";") if r]
    elif os.environ.get("OPENAI_BASE_URL"):
        reducers.append("lineretriever")
    try:
        sites = [Site(s) for s in (args.site or SITES)]
    except SiteError as e:
        print(f"bench_docs: {e}", file=sys.stderr)
        return 2
    out = args.out or results_dir() / "live" / "docs" / "study"
    start = time.perf_counter()
    results: dict[tuple, dict] = {}
    counts = {s.name: {f: len(t) for f, t in load_tasks(s).items()} for s in sites}
    print(f"bench_docs: {[s.describe() for s in sites]}; tasks {counts}; reducers {reducers}",
          flush=True)  # fmt: skip
    k = 0
    while (not args.no_play and k < args.tasks_per_family
           and (time.perf_counter() - start) / 60 < args.minutes):  # fmt: skip
        k = min(args.tasks_per_family, k + max(1, args.round_size))
        for site in sites:
            specs = plan_docs(site.name, reducers, counts[site.name], k)
            t = time.perf_counter()
            for spec, r in zip(
                specs, run_docs(str(site.root), specs, out, jobs=args.jobs), strict=True
            ):
                results[(spec.reducer, spec.task, spec.seed)] = r
            print(f"round {k} {site.name}: {len(specs)} episodes in {time.perf_counter() - t:.0f} s; "
                  f"{(time.perf_counter() - start) / 60:.1f} min so far", flush=True)  # fmt: skip
    if args.play_only:
        print(f"played: {(time.perf_counter() - start) / 60:.1f} min", flush=True)
        return 0
    for site in sites:  # every episode recorded (a run stopped mid-round included)
        for spec in plan_docs(site.name, reducers, counts[site.name], args.tasks_per_family):
            key = (spec.reducer, spec.task, spec.seed)
            if key not in results and (prev := done(out, spec, "scripted", "docs")) is not None:
                results[key] = prev
    # paired with full: a reducer's episodes on the tasks full played too (every reducer's,
    # when full is not among them); a reducer cut short has fewer, its n says so
    have: dict[tuple, set] = {}
    for reducer, task, seed in results:
        have.setdefault((task, seed), set()).add(reducer)
    need = {"full"} if "full" in reducers else set(reducers)
    rows = [r for (reducer, task, seed), r in results.items() if have[(task, seed)] >= need]
    if not rows:
        print("bench_docs: no task was played by every reducer yet", file=sys.stderr)
        return 1
    t_summary = time.perf_counter()
    table, episodes, steps = summarise(rows, out, "scripted", jobs=args.jobs)
    summary_s = time.perf_counter() - t_summary
    by_site = site_summary(episodes, steps)
    relative = relative_success(episodes)
    for name, frame in (("summary", table), ("episodes", episodes), ("steps", steps),
                        ("summary_by_site", by_site), ("relative", relative)):  # fmt: skip
        frame.to_csv(out / f"{name}.csv", index=False)
    # time per episode as measured (one browser per job), and 300 episodes of one reducer
    per_episode = float(episodes["episode_s"].median())
    mean_episode = float(episodes["episode_s"].mean())
    timing = {"median_episode_s": per_episode, "mean_episode_s": mean_episode,
              "episodes_per_reducer": episodes.groupby("reducer").size().to_dict(),
              "projected_min_300_episodes": {
                  f"jobs={j}": 300 * mean_episode / j / 60 for j in (1, 2)},
              "summary_s": summary_s, "summary_s_per_episode": summary_s / len(rows),
              "summary_jobs": args.jobs,
              "note": "episode_s is each episode's wall time in its worker, jobs browsers side "
                      "by side; projected = mean x 300 / jobs; summary = offline coverage and "
                      "tables of every episode here, in jobs workers"}  # fmt: skip
    prov = next((r["provenance"] for r in rows if r.get("provenance")), {})
    # lrlib's share per step on the biggest tree played, every reducer (offline, same machine)
    big = steps[steps["reducer"] == "full"].sort_values("n_lines").tail(1)
    overhead: dict = {}
    if len(big):
        from lrlab.agent.live import episode_dir
        from lrlab.docsite.study import overhead_ms
        from lrlib.data.safepickle import load_path

        b = big.iloc[0]
        folder = episode_dir(
            out, "full", "scripted", f"{b['site']}.{b['family']}", int(b["seed"]), "docs"
        )
        info = load_path(folder / f"step_{int(b['step'])}.pkl.gz")
        ms = overhead_ms(info.obs["axtree_txt"], info.obs.get("goal", ""), reducers)
        overhead = {"n_lines": int(b["n_lines"]), "ms": ms, "load_average": os.getloadavg()}
    meta = {"sites": [s.describe() for s in sites], "families": list(FAMILIES),
            "reducers": reducers, "rounds": k, "episodes": len(rows), "minutes": (time.perf_counter() - start) / 60,
            "jobs": args.jobs, "load_average": os.getloadavg(), "timing": timing,
            "browser_build": prov.get("browser_build"), "overhead_biggest_tree": overhead,
            "provenance": prov}  # fmt: skip
    (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
    print(markdown_table(table))
    print(f"written: {out}")
    if args.ship:
        ship = REPO_DIR / "data" / "live" / "docs"
        ship.mkdir(parents=True, exist_ok=True)
        for name in ("summary.csv", "episodes.csv", "steps.csv", "coverage.csv", "meta.json",
                     "summary_by_site.csv", "relative.csv"):  # fmt: skip
            if (out / name).is_file():
                shutil.copy(out / name, ship / name)
        print(f"shipped: {ship}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
