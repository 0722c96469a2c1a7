"""``lrlib live``: MiniWoB++ episodes offline in Debian's chromium with a reducer in the loop.

Plays every (reducer, task type, seed), resuming from the episodes already recorded in
``--out`` (AgentLab's layout, one folder per episode), then writes ``episodes.csv``,
``summary.csv`` and ``summary.md`` there: success per reducer with a 95% interval over task
types, beside the reducer's offline target/evidence coverage of the ``full`` run's steps,
and the median latencies per step (lrlib's reduction, the policy, the browser), with the
run's provenance. Needs the live extra (``pip install -e '.[live]'``) and Debian's chromium.

>>> from lrlib.cli import main
>>> main(["live", "--tasks", "click-nothing"])
2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lrlab.agent.live import (
    MAX_STEPS,
    REDUCERS,
    TASKS,
    done,
    plan_episodes,
    task_types,
    task_types_help,
)
from lrlib.eval.evaluation import add_user_files, resolve, specs_of
from lrlib.paths import refuse_shipped, results_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lrlab.docsite.command import add_arguments as add_docs

    parser.add_argument("--env", default="miniwob", choices=("miniwob", "docs"),
                        help="miniwob (MiniWoB++ tasks) or docs (a documentation site's "
                        "folder, --site; lrlab.docsite)")  # fmt: skip
    add_docs(parser)
    parser.add_argument("--reducers", default=";".join(REDUCERS),
                        help="reducer specs separated by ';' (name:key=value,...); 'full' gives "
                        "the reference steps for offline coverage")  # fmt: skip
    parser.add_argument(
        "--tasks", default=",".join(TASKS), help="comma-separated MiniWoB++ task types"
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per task type")
    parser.add_argument("--policy", default="scripted", help="scripted, or llm (OPENAI_BASE_URL/"
                        "LRLIB_MODEL, else the embedded SmolLM2-135M-Instruct)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=2, help="browsers side by side")
    parser.add_argument("--max-steps", type=int, default=MAX_STEPS, help="steps per episode")
    parser.add_argument(
        "--chromium",
        default=None,
        help="chromium executable (default $CHROMIUM, else /usr/bin/chromium-headless-shell if "
        "installed, else /usr/bin/chromium)",
    )
    parser.add_argument("--out", type=Path, default=None,
                        help="results folder (default <results dir>/live/<policy>)")  # fmt: skip
    parser.add_argument("--overwrite-shipped", action="store_true",
                        help="allow --out inside the shipped data/ (maintainers)")  # fmt: skip
    add_user_files(parser)


def _choices(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    from lrlab.agent.policies import list_policies

    if args.policy not in list_policies():
        raise KeyError(
            f"unknown policy {args.policy!r}; valid policies: {', '.join(list_policies())}"
        )
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    valid = task_types(args.policy)
    bad = [t for t in tasks if t not in valid]
    if bad or not tasks:
        raise ValueError(f"unknown task type(s) {bad} for policy {args.policy}; valid: "
                         f"{task_types_help(args.policy)}")  # fmt: skip
    if args.seeds < 1 or args.jobs < 1 or args.max_steps < 1:
        raise ValueError("--seeds, --jobs and --max-steps must be at least 1")
    return [spec.label for spec in specs_of(args)], tasks


def _out(args: argparse.Namespace) -> Path:
    out = args.out or results_dir() / "live" / args.policy
    refuse_shipped(out, getattr(args, "overwrite_shipped", False))
    out.mkdir(parents=True, exist_ok=True)  # a file in the way fails here, in one line
    return out


def plan(args: argparse.Namespace) -> str:
    if getattr(args, "env", "miniwob") == "docs":
        from lrlab.docsite.command import plan as docs_plan

        if args.policy == "llm":  # the docs llm policy asks the same client as MiniWoB's
            _live_policy_allowed(args.policy)
        return docs_plan(args)
    from lrlab.agent.miniwob import MissingExtra, chromium_build, missing_packages

    reducers, tasks = _choices(args)
    resolve(specs_of(args))  # a value a constructor refuses fails here, before any browser
    _live_policy_allowed(args.policy)
    missing = missing_packages()
    if missing:
        raise MissingExtra(f"lrlib live needs {', '.join(missing)}: pip install -e '.[live]'")
    specs = plan_episodes(reducers, tasks, range(args.seeds))
    todo = sum(done(_out(args), s, args.policy) is None for s in specs)
    from lrlab.agent.policies import get_policy
    from lrlab.agent.policy import LLMPolicy

    policy = get_policy(args.policy)
    calls = isinstance(policy, LLMPolicy)
    per = 90.0 if calls else 3.0  # seconds per episode measured here
    model = f"{policy.model}: CALLS A MODEL for every uncached step" if calls else "no model"
    return (f"{len(specs)} episodes ({len(reducers)} reducers x {len(tasks)} task types x "
            f"{args.seeds} seeds), {len(specs) - todo} already recorded; policy {args.policy} "
            f"({model}); {chromium_build(args.chromium)}; about {todo * per / max(1, args.jobs) / 60:.0f} min; "
            f"-> {_out(args)}")  # fmt: skip


def _live_policy_allowed(name: str) -> None:
    """A model policy plays new pages (no cache holds their answers): refuse, in one line,
    when no model may be asked (:func:`lrlib.settings.offline_reason`), before any browser."""
    from lrlab.agent.policies import get_policy
    from lrlib.llm.errors import CacheMissError

    client = getattr(get_policy(name), "client", None) if name != "scripted" else None
    if client is not None and client.offline:
        raise CacheMissError(
            f"policy {name} asks a model on every new page, and no model may be asked "
            f"({client.offline_reason}): set OPENAI_BASE_URL (an endpoint) or LRLIB_OFFLINE=0 "
            "(the embedded model)"
        )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "env", "miniwob") == "docs":
        from lrlab.docsite.command import run as docs_run

        return docs_run(args)
    from lrlab.agent.live import run_live
    from lrlab.agent.live_report import episodes_frame, summarise
    from lrlib.eval.evaluation import markdown_table

    reducers, tasks = _choices(args)
    out = _out(args)
    specs = plan_episodes(reducers, tasks, range(args.seeds))
    results = run_live(specs, out, args.policy, jobs=args.jobs, max_steps=args.max_steps,
                       chromium=args.chromium)  # fmt: skip
    table = summarise(results, out, args.policy, steps_csv=out / "steps.csv")
    episodes_frame(results).to_csv(out / "episodes.csv", index=False)
    table.to_csv(out / "summary.csv", index=False)
    prov = next((r["provenance"] for r in results if r.get("provenance")), {})
    (out / "summary.md").write_text(markdown_table(table) + "\n\nprovenance: "
                                    + json.dumps(prov, default=str) + "\n")  # fmt: skip
    print(markdown_table(table))
    full = table[table["reducer"] == "full"]
    if args.policy == "scripted" and len(full) and float(full["success"].iloc[0]) < 1.0:
        print("lrlib live: WARNING: the scripted policy failed with the full observation: the loop "
              "is broken here (see err_msg in episodes.csv)", file=sys.stderr)  # fmt: skip
    print(f"written: {out / 'summary.md'}, summary.csv, episodes.csv, steps.csv")
    return 0
