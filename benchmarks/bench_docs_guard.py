"""What the injection guard costs in success on clean documentation pages (issue 34, item 5).

    python benchmarks/bench_docs_guard.py                       # program and learned
    python benchmarks/bench_docs_guard.py --reducers learned --ship

For every recorded study episode of a guarded reducer (``program``, ``learned``; played by
``benchmarks/bench_docs.py``), the guard-off episode is derived when the guard-off reducer
shows the scripted policy, at every step, the very text the guarded one showed (same goal,
same past actions; :mod:`lrlab.agent.derive`): the policy is deterministic and the pages
static, so that episode would end the same way. The episodes where some step differs are
PLAYED with the guard off (a browser, ``--jobs`` of them). The table (``guard.csv`` beside
the episodes; ``--ship`` OVERWRITES ``data/live/docs/guard.csv``): success with the guard on
and off on the same tasks, the paired difference with a 95% interval bootstrapped over
tasks, and how many steps and episodes the guard changed at all.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

SITES = {"python3.11-doc": "/usr/share/doc/python3.11-doc/html", "nodejs-doc": "/usr/share/doc/nodejs/api",
         "postgresql-doc-15": "/usr/share/doc/postgresql-doc-15/html"}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from lrlab.agent.derive import split
    from lrlab.docsite.run import run_docs
    from lrlib.eval.evaluation import markdown_table
    from lrlib.eval.intervals import bootstrap, paired
    from lrlib.paths import REPO_DIR, results_dir

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reducers", default="program;learned", help="';'-separated guarded reducers")
    p.add_argument("--out", type=Path, default=None, help="the study's episodes")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--site", action="append", default=[], metavar="NAME=FOLDER",
                   help="where a site other than the study's three is served from")  # fmt: skip
    p.add_argument("--ship", action="store_true", help="copy guard.csv to data/live/docs/")
    args = p.parse_args(argv)
    out = args.out or results_dir() / "live" / "docs" / "study"
    sites = dict(SITES, **dict(s.split("=", 1) for s in args.site))
    rows, counts = [], {}
    for reducer in [r for r in args.reducers.split(";") if r]:
        if ":" in reducer:
            print(f"bench_docs_guard: give the reducer without knobs ({reducer!r}); the guard-off "
                  f"one is <reducer>:guard=False", file=sys.stderr)  # fmt: skip
            return 2
        recorded = [json.loads(f.read_text())
                    for f in sorted(out.glob(f"lrlib-scripted-{reducer}_on_docs.*/summary_info.json"))]  # fmt: skip
        if not recorded:
            print(f"bench_docs_guard: no recorded {reducer} episodes in {out}; play them with "
                  f"benchmarks/bench_docs.py --reducers {reducer}", file=sys.stderr)  # fmt: skip
            return 2
        off = f"{reducer}:guard=False"
        t = time.perf_counter()
        derived, todo, c = split(out, recorded, off, "scripted", "docs")
        c["derive_s"] = time.perf_counter() - t
        print(f"{reducer}: {len(recorded)} episodes, {c['steps']} steps compared in "
              f"{c['derive_s']:.0f} s; the guard changed {c['steps_differ']} steps of "
              f"{c['episodes_differ']} episodes: playing those with {off}", flush=True)  # fmt: skip
        played = []
        for site in sorted({s.task.rsplit(".", 1)[0] for s in todo}):
            if site not in sites:
                print(f"bench_docs_guard: no folder for site {site!r}; valid: {', '.join(sites)} "
                      f"(or --site {site}=FOLDER)", file=sys.stderr)  # fmt: skip
                return 2
            specs = [s for s in todo if s.task.rsplit(".", 1)[0] == site]
            played += run_docs(sites[site], specs, out, jobs=args.jobs)
        counts[reducer] = {**c, "played": len(played)}
        for r in recorded:
            rows.append({**r, "guard": True})
        for r in [*derived, *played]:
            rows.append({**r, "reducer": reducer, "guard": False})
    eps = pd.DataFrame([{"reducer": r["reducer"], "guard": r["guard"], "task": r["task"],
                         "seed": int(r["seed"]), "success": bool(r["success"])}
                        for r in rows])  # fmt: skip
    eps["key"] = eps["task"] + "." + eps["seed"].astype(str)
    eps["cluster"] = eps["key"]  # a task is its own cluster: intervals over tasks
    eps["side"] = eps["reducer"] + eps["guard"].map({True: ":guard=on", False: ":guard=off"})
    table = bootstrap(eps, "success", by="side", cluster="cluster")
    diffs = []
    for reducer in counts:
        d = paired(eps, "success", f"{reducer}:guard=off", f"{reducer}:guard=on", column="side",
                   key="key", cluster="cluster")  # fmt: skip
        c = counts[reducer]
        diffs.append({"reducer": reducer, "off_minus_on": d["estimate"], "diff_lo": d["lo"],
                      "diff_hi": d["hi"], "n_tasks": d["n_episodes"], "steps": c["steps"],
                      "steps_changed": c["steps_differ"], "episodes_changed": c["episodes_differ"],
                      "played_off": c["played"], "derive_s": round(c["derive_s"], 1)})  # fmt: skip
    guard = table.merge(
        pd.DataFrame(diffs).assign(side=lambda f: f["reducer"] + ":guard=off"),
        on="side",
        how="left",
    )
    guard.to_csv(out / "guard.csv", index=False)
    print(markdown_table(guard))
    if args.ship:
        ship = REPO_DIR / "data" / "live" / "docs"
        ship.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / "guard.csv", ship / "guard.csv")
        print(f"shipped (overwrote): {ship / 'guard.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
