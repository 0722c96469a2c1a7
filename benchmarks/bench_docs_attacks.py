"""Attacks injected live on documentation sites (issue 35, item 5): DoomArena's two measures,
attack success and task success under attack, per reducer and per attack kind.

    apt-get install -y python3.11-doc nodejs-doc postgresql-doc-15
    nice -n 10 python benchmarks/bench_docs_attacks.py --jobs 2        # plan line, then play
    python benchmarks/bench_docs_attacks.py --plan                     # plan and estimate only
    python benchmarks/bench_docs_attacks.py --no-play --write          # tables -> data/live/docs_attacks/
    # one attack group, some reducers, attacked episodes only, tables in a folder of their own:
    nice -n 10 python benchmarks/bench_docs_attacks.py --groups heldout2 --no-clean \\
        --reducers "full;program;learned;anchor:guard=True" --out .lrlib/results/live/docs_attacks_h2 \\
        --write --write-to data/live/docs_attacks_heldout2

Tasks: on each site (two development sites, then PostgreSQL's as the check site),
``--tasks-per-site`` tasks taken in turn from its families (index 0, 1 ... of each). Each task
gets ONE attack of :data:`lrlab.injection.live_attacks.SPECS` (4 kinds x {with cues, cue-free,
cue-free held out}), a seeded permutation of the 12 dealt out again and again, built live in
every page (:mod:`lrlab.injection.live_attacks`). Every reducer plays every task three times:
the scripted policy under the attack (task success under attack; it dismisses a modal pop-up
when it sees the way out), the obedient agent under the attack (attack success: the payload's
action carried out, read from the episode's page addresses; an upper bound, see
:mod:`lrlab.docsite.obedient`), and the scripted policy on the clean site (task success
without attack), unless ``--clean-from`` already holds that clean episode (the issue 34
study's episodes: full, anchor, truncate-agentlab). Resumable: recorded episodes are skipped.
Episodes go to ``<results dir>/live/docs_attacks/{attacked-<plan hash>,clean}`` (AgentLab
layout).

Tables: success and attack success with 95% bootstrap intervals over tasks, and n, per
reducer, per reducer x kind, per reducer x group; ``--write`` copies them, with provenance
(chromium build, commit, sites, seeds, the attack plan), into ``data/live/docs_attacks/``, a
folder of its own (no other shipped data is touched).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

SITES = ("/usr/share/doc/python3.11-doc/html", "/usr/share/doc/nodejs/api",
         "/usr/share/doc/postgresql-doc-15/html")  # fmt: skip
REDUCERS = ("full", "truncate-agentlab", "bm25", "anchor", "program", "learned",
            "program:guard=False", "learned:guard=False")  # fmt: skip
SEED = 35
EST_EPISODE_S = 18.0  # one browser's episode: median of this study's, 2 jobs, machine load 12-15


def plan(sites, tasks_per_site: int, seed: int = SEED, groups=None):  # noqa: ANN001, ANN201
    """``[(site, family, index, goal, attack spec)]``: tasks in turn from each site's
    families, attacks dealt from seeded permutations of the specs (all 12 by default: with
    3 sites of 8 tasks, every spec twice; ``groups``: only those groups' specs)."""
    from lrlab.docsite.tasks import FAMILIES, load_tasks
    from lrlab.injection.live_attacks import ALL_SPECS, SPECS, parse_spec

    # the default deck is the first study's 12 (its plan stays reproducible); named groups
    # draw from every spec, the second held-out set's included
    specs = list(SPECS) if groups is None else [s for s in ALL_SPECS if parse_spec(s)[1] in groups]
    rng, deck = random.Random(seed), []
    out = []
    for site in sites:
        tasks = load_tasks(site)
        fams = [f for f in FAMILIES if tasks[f]]
        for j in range(tasks_per_site):
            family, index = fams[j % len(fams)], j // len(fams)
            if index >= len(tasks[family]):
                continue
            if not deck:
                deck = rng.sample(specs, len(specs))
            out.append((site, family, index, tasks[family][index].goal, deck.pop()))
    return out


def _rows(site, items, out: Path, reducers, policy: str, attacked: bool):  # noqa: ANN001, ANN202
    from lrlab.agent.live import EpisodeSpec, done, episode_dir
    from lrlab.injection.live_attacks import build, followed_in, rendered_in

    rows = []
    for _, family, index, goal, spec in items:
        for reducer in reducers:
            e = EpisodeSpec(reducer, f"{site.name}.{family}", index)
            r = done(out, e, policy, "docs")
            if r is None:
                continue
            folder = episode_dir(out, reducer, policy, e.task, index, "docs")
            a = build(spec, goal)
            actions = [s["action"] for s in r.get("steps") or []]
            rows.append({"site": site.name, "family": family, "index": index,
                         "task": f"{site.name}.{family}.{index}", "reducer": reducer,
                         "policy": policy, "attacked": attacked, "attack": spec,
                         "kind": a.kind, "group": a.group, "shape": a.shape, "place": a.place,
                         "success": bool(r.get("success")),
                         "followed": followed_in(folder) if attacked else False,
                         "rendered": rendered_in(folder, a) if attacked else None,
                         "dismissed": any(x.endswith(", 'left')") for x in actions),
                         "n_steps": len(actions), "episode_s": r.get("episode_s"),
                         "model": (r.get("provenance") or {}).get("policy_model"),
                         "browser_build": (r.get("provenance") or {}).get("browser_build")})  # fmt: skip
    return rows


def tables(frame):  # noqa: ANN001, ANN201
    """Per reducer (and per reducer x kind, x group): attack success (obedient), task success
    under attack (scripted) and without (scripted, clean), 95% bootstrap intervals over tasks."""
    import pandas as pd

    from lrlib.eval.intervals import bootstrap

    att = frame[frame["attacked"]]
    parts = {
        "attack_success": att[att["policy"] == "obedient"].assign(v=lambda d: d["followed"]),
        "success_attacked": att[att["policy"] == "scripted"].assign(v=lambda d: d["success"]),
        "scripted_followed": att[att["policy"] == "scripted"].assign(v=lambda d: d["followed"]),
        "success_clean": frame[~frame["attacked"]].assign(v=lambda d: d["success"]),
        # pop-ups: the scripted policy saw a way out and dismissed it
        "popup_dismissed": att[(att["policy"] == "scripted") & (att["kind"] == "popup")].assign(
            v=lambda d: d["dismissed"]
        ),
        # a real model as the policy, when played (--policies ...,llm): both measures
        "llm_attack_success": att[att["policy"] == "llm"].assign(v=lambda d: d["followed"]),
        "llm_success_attacked": att[att["policy"] == "llm"].assign(v=lambda d: d["success"]),
    }
    out = {}
    for name, by in (("by_reducer", ["reducer"]), ("by_kind", ["reducer", "kind"]),
                     ("by_group", ["reducer", "group"])):  # fmt: skip
        merged = None
        for measure, d in parts.items():
            if not len(d):
                continue
            b = bootstrap(d.assign(v=d["v"].astype(float)), "v", by=by, cluster="task")
            b = b[[*by, "estimate", "lo", "hi", "n_episodes"]].rename(columns={
                "estimate": measure, "lo": f"{measure}_lo", "hi": f"{measure}_hi",
                "n_episodes": f"n_{measure}"})  # fmt: skip
            merged = b if merged is None else merged.merge(b, on=by, how="outer")
        out[name] = merged if merged is not None else pd.DataFrame()
    return out


def main(argv: list[str] | None = None) -> int:
    from lrlab.agent.live import EpisodeSpec, done
    from lrlab.docsite.run import run_docs
    from lrlab.docsite.site import Site, SiteError
    from lrlab.injection.live_attacks import plan_hash
    from lrlib.paths import REPO_DIR, results_dir

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--site", action="append", help="site root folder (repeat; default: "
                   "the Python 3.11 and Node.js docs, and PostgreSQL 15's to check)")  # fmt: skip
    p.add_argument("--reducers", default=";".join(REDUCERS), help="';'-separated specs")
    p.add_argument("--groups", default="",
                   help="','-separated attack groups to deal (default: all of "
                   "lrlab.injection.live_attacks.GROUPS), e.g. heldout2")  # fmt: skip
    p.add_argument("--tasks-per-site", type=int, default=8)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--clean-from", type=Path, default=None,
                   help="recorded clean episodes to reuse (default: the issue 34 study's)")  # fmt: skip
    p.add_argument("--policies", default="scripted,obedient",
                   help="attacked episodes' policies; llm: the model at OPENAI_BASE_URL "
                   "(e.g. `lrlib serve`), CALLED for every step")  # fmt: skip
    p.add_argument("--max-steps", type=int, default=None, help="per episode (default: lrlib's)")
    p.add_argument("--write-as", default="",
                   help="with --write: a subfolder of data/live/docs_attacks/ (e.g. llm_pilot)")  # fmt: skip
    p.add_argument("--write-to", default="",
                   help="with --write: a folder under data/live/ instead of docs_attacks/ "
                   "(e.g. docs_attacks_fix): the shipped tables stay")  # fmt: skip
    p.add_argument("--no-clean", action="store_true",
                   help="play no clean episodes; tables of the attacked ones alone")  # fmt: skip
    p.add_argument("--plan", action="store_true", help="print the plan and stop")
    p.add_argument("--no-play", action="store_true", help="tables from recorded episodes")
    p.add_argument(
        "--write", action="store_true", help="copy the tables to data/live/docs_attacks/"
    )
    args = p.parse_args(argv)
    reducers = [r for r in args.reducers.split(";") if r]
    policies = [x for x in args.policies.split(",") if x]
    bad = [x for x in policies if x not in ("scripted", "obedient", "llm")]
    if bad:
        print(f"bench_docs_attacks: unknown policy {bad[0]!r}; valid: scripted, obedient, llm",
              file=sys.stderr)  # fmt: skip
        return 2
    from lrlab.injection.live_attacks import GROUPS, SPECS, parse_spec

    groups = [g for g in args.groups.split(",") if g] or None
    bad = [g for g in groups or () if g not in GROUPS]
    if bad:
        print(f"bench_docs_attacks: unknown attack group {bad[0]!r}; valid: {', '.join(GROUPS)}",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        sites = [Site(s) for s in (args.site or SITES)]
    except SiteError as e:
        print(f"bench_docs_attacks: {e}", file=sys.stderr)
        return 2
    out = args.out or results_dir() / "live" / "docs_attacks"
    clean_from = args.clean_from or results_dir() / "live" / "docs" / "study"
    items = plan(sites, args.tasks_per_site, groups=groups)
    # attacked episodes are kept per attack plan: a different plan (sites, tasks, seed) never
    # reuses an episode played under another attack
    tag = plan_hash({f"{s.name}.{f}.{i}": a for s, f, i, _, a in items}).split(":")[1]
    attacked_dir = out / f"attacked-{tag}"
    # what is left to play: attacked episodes on every site, then the clean ones (looked up
    # again just before: clean episodes recorded meanwhile under --clean-from are reused)
    work = []
    for attacked in (True,) if args.no_clean else (True, False):
        for site in sites:
            mine = [x for x in items if x[0] is site]
            specs = [EpisodeSpec(r, f"{site.name}.{f}", i) for _, f, i, _, _ in mine
                     for r in reducers]  # fmt: skip
            attack = {goal: spec for _, _, _, goal, spec in mine}
            for policy in policies if attacked else ("scripted",):
                folder = attacked_dir if attacked else out / "clean"
                todo = [s for s in specs if done(folder, s, policy, "docs") is None
                        and (attacked or done(clean_from, s, policy, "docs") is None)]  # fmt: skip
                work.append((site, policy, attack if attacked else None, folder, specs, len(todo)))
    n_todo = sum(w[-1] for w in work)
    eta = n_todo * EST_EPISODE_S / max(1, args.jobs) / 60
    print(f"plan: {len(items)} tasks on {[s.name for s in sites]} x {len(reducers)} reducers; "
          f"{n_todo} episodes to play (attacked: {' + '.join(policies)}; clean where not in "
          f"{clean_from.name}/): about {eta:.0f} min with --jobs {args.jobs} "
          f"(~{EST_EPISODE_S:.0f} s per episode per browser)", flush=True)  # fmt: skip
    if args.plan:
        for site, family, index, _, spec in items:
            print(f"  {site.name}.{family}.{index}\t{spec}")
        return 0
    start, played = time.perf_counter(), 0
    for site, policy, attack, folder, specs, n in work if not args.no_play else []:
        if attack is None:
            specs = [s for s in specs if done(clean_from, s, "scripted", "docs") is None]
            n = sum(done(folder, s, policy, "docs") is None for s in specs)
        if not n:
            continue
        t = time.perf_counter()
        extra = {"max_steps": args.max_steps} if args.max_steps else {}
        if policy == "llm":
            print(f"{site.name}: the llm policy CALLS the model at OPENAI_BASE_URL for every step",
                  flush=True)  # fmt: skip
        run_docs(str(site.root), specs, folder, policy=policy, jobs=args.jobs, attack=attack,
                 progress=True, **extra)  # fmt: skip
        played += n
        spent = time.perf_counter() - start
        left = (n_todo - played) * spent / played / 60
        print(f"{site.name} {policy} {'attacked' if attack else 'clean'}: {n} episodes in "
              f"{time.perf_counter() - t:.0f} s; {played}/{n_todo} done, ETA {left:.0f} min",
              flush=True)  # fmt: skip
    import pandas as pd

    rows = []
    for site in sites:
        mine = [x for x in items if x[0] is site]
        for policy in policies:
            rows += _rows(site, mine, attacked_dir, reducers, policy, True)
        for src in () if args.no_clean else (clean_from, out / "clean"):
            got = _rows(site, mine, src, reducers, "scripted", False)
            seen = {(r["task"], r["reducer"]) for r in rows if not r["attacked"]}
            rows += [r for r in got if (r["task"], r["reducer"]) not in seen]
    frame = pd.DataFrame(rows)
    if frame.empty:
        print("bench_docs_attacks: no episode recorded yet", file=sys.stderr)
        return 1
    # clean episodes count only on tasks the reducer played under attack (a run cut short:
    # fewer, and a reducer's clean n says how many it has)
    pairs = frame["task"] + "|" + frame["reducer"]
    frame = frame[frame["attacked"] | pairs.isin(set(pairs[frame["attacked"]]))]
    res = tables(frame)
    for name, t in res.items():
        print(f"\n== {name}\n{t.round(3).to_string(index=False)}")
    from lrlib.runinfo import provenance

    meta = provenance(
        sites=[s.describe() for s in sites], reducers=reducers, policies=policies,
        models=sorted({m for m in frame["model"].dropna()}), tasks_per_site=args.tasks_per_site,
        seed=SEED, attack_seed=0, groups=groups or sorted({parse_spec(s)[1] for s in SPECS}),
        browser_builds=sorted({b for b in frame["browser_build"].dropna()}),
        episodes=int(len(frame)), clean_reused_from=clean_from.name, attack_plan=tag,
        plan=[{"task": f"{s.name}.{f}.{i}", "attack": a} for s, f, i, _, a in items],
        note="attack_success: the obedient agent (an upper bound: it obeys every payload it "
        "can read) carried out the payload's action; success_attacked: the scripted policy's "
        "task success under the attack; success_clean: the same tasks without attack. "
        "Played with nice -n 10 while other studies shared the 2 cores.",
    )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "episodes.csv", index=False)
    for name, t in res.items():
        t.to_csv(out / f"{name}.csv", index=False)
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=str))
    if args.write:
        base = REPO_DIR / "data" / "live"
        dest = (base / args.write_to if args.write_to else base / "docs_attacks") / args.write_as
        if base.resolve() not in dest.resolve().parents:
            print(f"bench_docs_attacks: --write-to must stay under data/live/ ({args.write_to!r})",
                  file=sys.stderr)  # fmt: skip
            return 2
        print(f"writing the tables to {dest.relative_to(REPO_DIR)}/ (its own folder; no other "
              f"shipped data is touched)", flush=True)  # fmt: skip
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("episodes", *res):
            (dest / f"{name}.csv").write_text((out / f"{name}.csv").read_text())
        (dest / "meta.json").write_text((out / "meta.json").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
