"""``lrlib live --env docs --site <folder>``: live episodes on a documentation site.

Plays the first ``--tasks-per-family`` tasks of each family (:mod:`lrlab.docsite.tasks`)
with every reducer, resuming from the episodes recorded in ``--out`` (AgentLab's layout),
then writes ``episodes.csv``, ``steps.csv``, ``summary.csv`` and ``summary.md`` there
(:func:`lrlab.docsite.study.summarise`). ``--list-tasks`` prints how many tasks each family
has and plays nothing.

>>> from lrlib.cli import main
>>> main(["live", "--env", "docs"])
2
>>> main(["live", "--env", "docs", "--site", "/nonexistent/site"])
2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lrlab.docsite.tasks import FAMILIES
from lrlib.paths import refuse_shipped, results_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``--env docs`` adds to ``lrlib live``."""
    parser.add_argument("--site", default=None,
                        help="--env docs: the documentation site's root folder, e.g. "
                        "/usr/share/doc/python3.11-doc/html (apt-get install python3.11-doc)")  # fmt: skip
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="--env docs: comma-separated task families")  # fmt: skip
    parser.add_argument("--tasks-per-family", type=int, default=12,
                        help="--env docs: the first N tasks of each family")  # fmt: skip
    parser.add_argument("--list-tasks", action="store_true",
                        help="--env docs: print how many tasks each family has, play nothing")  # fmt: skip


def _site(args: argparse.Namespace):  # noqa: ANN202
    from lrlab.docsite.site import Site

    if not args.site:
        raise ValueError("--env docs needs --site FOLDER (a documentation site's root, e.g. "
                         "/usr/share/doc/python3.11-doc/html after apt-get install python3.11-doc)")  # fmt: skip
    return Site(args.site)


def _families(args: argparse.Namespace) -> list[str]:
    fams = [f.strip() for f in args.families.split(",") if f.strip()]
    bad = [f for f in fams if f not in FAMILIES]
    if bad or not fams:
        raise ValueError(f"unknown task family {bad}; valid: {', '.join(FAMILIES)}")
    if args.tasks_per_family < 1 or args.jobs < 1 or args.max_steps < 1:
        raise ValueError("--tasks-per-family, --jobs and --max-steps must be at least 1")
    return fams


def _out(args: argparse.Namespace, site_name: str) -> Path:
    out = args.out or results_dir() / "live" / "docs" / site_name / args.policy
    refuse_shipped(out, getattr(args, "overwrite_shipped", False))
    out.mkdir(parents=True, exist_ok=True)  # a file in the way fails here, in one line
    return out


def _specs(args: argparse.Namespace):  # noqa: ANN202
    from lrlab.docsite.run import get_docs_policy, plan_docs
    from lrlab.docsite.tasks import load_tasks
    from lrlib.eval.evaluation import resolve, specs_of

    fams = _families(args)
    get_docs_policy(args.policy)
    site = _site(args)
    reducers = [spec.label for spec in specs_of(args)]
    resolve(specs_of(args))
    tasks = load_tasks(site)
    counts = {f: len(tasks[f]) for f in fams}
    return site, tasks, plan_docs(site.name, reducers, counts, args.tasks_per_family)


def estimate_minutes(specs, jobs: int) -> tuple[float, str]:  # noqa: ANN001
    """Minutes ``specs`` take, from measured times: each episode the median duration of the
    shipped study's episodes (``data/live/docs/episodes.csv``) of its site and family (else
    its family, else all), over ``jobs`` browsers; then the summary's offline coverage at
    the shipped study's measured seconds per episode (``meta.json``), over ``jobs`` workers.
    Returns ``(minutes, what costs)``.

    >>> from lrlab.agent.live import EpisodeSpec
    >>> m, why = estimate_minutes([EpisodeSpec("full", "python3.11-doc.navigate", 0)], 1)
    >>> 0 < m < 5, why.startswith("play")
    (True, True)
    """
    import csv
    import statistics

    from lrlib.paths import shipped_data_dir

    folder = shipped_data_dir() / "live" / "docs"
    durations: dict[tuple[str, str], list[float]] = {}
    if (folder / "episodes.csv").is_file():
        with open(folder / "episodes.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row.get("episode_s"):
                    s = float(row["episode_s"])
                    for key in ((row["site"], row["family"]), ("", row["family"]), ("", "")):
                        durations.setdefault(key, []).append(s)
    med = {k: statistics.median(v) for k, v in durations.items()}
    play = 0.0
    for spec in specs:
        site, family = spec.task.rsplit(".", 1)
        play += med.get((site, family)) or med.get(("", family)) or med.get(("", ""), 10.0)
    meta = folder / "meta.json"
    timing = json.loads(meta.read_text()).get("timing", {}) if meta.is_file() else {}
    per_summary = float(timing.get("summary_s_per_episode") or 2.0)
    play_min = play / max(1, jobs) / 60
    summary_min = len(specs) * per_summary / max(1, jobs) / 60
    why = (f"play {play_min:.0f} min: the shipped episodes' measured "
           f"{med.get(('', ''), 10.0):.1f} s median each, mostly BrowserGym reading the page's "
           f"tree; summary {summary_min:.0f} min: offline minimal failure sets")  # fmt: skip
    return play_min + summary_min, why


def plan(args: argparse.Namespace) -> str:
    """The plan line (or, with ``--list-tasks``, what the site offers)."""
    from lrlab.agent.live import done
    from lrlab.agent.miniwob import MissingExtra, chromium_build
    from lrlab.docsite.env import missing_packages

    site, tasks, specs = _specs(args)
    if args.list_tasks:
        return f"site {site.name} ({site.package or 'no Debian package'}, {len(site.paths)} pages, hash {site.hash})"
    missing = missing_packages()
    if missing:
        raise MissingExtra(f"lrlib live needs {', '.join(missing)}: pip install -e '.[live]'")
    out = _out(args, site.name)
    todo = [s for s in specs if done(out, s, args.policy, "docs") is None]
    model = "no model" if args.policy == "scripted" else "CALLS A MODEL for every uncached step"
    minutes, why = estimate_minutes(todo, args.jobs)
    return (f"{len(specs)} episodes on {site.name} (hash {site.hash}), {len(specs) - len(todo)} "
            f"already recorded; policy {args.policy} ({model}); {chromium_build(args.chromium)}; "
            f"about {minutes:.0f} min ({why}); -> {out}")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Play, then summarise (module doc)."""
    from lrlab.docsite.run import run_docs
    from lrlab.docsite.study import summarise
    from lrlib.eval.evaluation import markdown_table

    site, tasks, specs = _specs(args)
    if args.list_tasks:
        fams = _families(args)
        for f in fams:
            print(f"{f}\t{len(tasks[f])}")
        print(f"total\t{sum(len(tasks[f]) for f in fams)}")
        return 0
    out = _out(args, site.name)
    results = run_docs(str(site.root), specs, out, args.policy, jobs=args.jobs,
                       max_steps=args.max_steps, chromium=args.chromium)  # fmt: skip
    table, episodes, steps = summarise(results, out, args.policy, jobs=args.jobs)
    episodes.to_csv(out / "episodes.csv", index=False)
    steps.to_csv(out / "steps.csv", index=False)
    table.to_csv(out / "summary.csv", index=False)
    prov = next((r["provenance"] for r in results if r.get("provenance")), {})
    (out / "summary.md").write_text(markdown_table(table) + "\n\nprovenance: "
                                    + json.dumps(prov, default=str) + "\n")  # fmt: skip
    print(markdown_table(table))
    print(f"written: {out / 'summary.md'}, summary.csv, episodes.csv, steps.csv")
    return 0
