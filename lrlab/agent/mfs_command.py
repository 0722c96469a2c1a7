"""``lrlib mfs``: minimal failure sets of recorded steps for a policy (resumable, cached).

Builds the sets (:mod:`lrlab.agent.mfs`) for the steps of a dataset (default: the MiniWoB
check set, ``data/miniwob_ood.jsonl.gz``; the scripted policy knows its task types) and
appends one JSON line per step to ``<results dir>/mfs/mfs_<policy>.jsonl``, which
``lrlib evaluate`` then reads (column ``mfs_<policy>``). The plan line estimates the policy
calls before any is made.

>>> from lrlib.cli import main
>>> main(["mfs", "--policy", "gpt"])
2
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Any

from lrlib.paths import miniwob_path, portable, refuse_shipped, results_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", default="scripted", help="scripted, or llm (OPENAI_BASE_URL/"
                        "LRLIB_MODEL, else the embedded SmolLM2-135M-Instruct)")  # fmt: skip
    parser.add_argument("--env", default="miniwob", choices=("miniwob", "docs"),
                        help="the policy's environment: docs = lrlab.docsite's policies, "
                        "every task of --data by default")  # fmt: skip
    parser.add_argument("--data", type=Path, default=None,
                        help="dataset file (default: the MiniWoB check set)")  # fmt: skip
    parser.add_argument("--tasks", default=None,
                        help="comma-separated task types (default: the scripted policy's)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="at most N steps")
    parser.add_argument("--sets", type=int, default=1,
                        help="disjoint minimal failure sets per step: 1 = the seeds' study's "
                             "one set; more: every set the policy cannot lose, up to N")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None,
                        help="MFS file (default <results dir>/mfs/mfs_<policy>.jsonl)")  # fmt: skip
    parser.add_argument("--overwrite-shipped", action="store_true",
                        help="allow --out inside the shipped data/ (maintainers)")  # fmt: skip


def _policy(args: argparse.Namespace) -> Any:
    from lrlab.agent.policies import get_policy

    if getattr(args, "env", "miniwob") == "docs":
        from lrlab.docsite.run import get_docs_policy

        return get_docs_policy(args.policy)

    return get_policy(args.policy)


def label(policy: Any) -> str:
    """The file label of a policy: its name, plus the model for a model policy."""
    if policy.name == "scripted":
        return "scripted" if policy.model == "scripted" else policy.model
    return re.sub(r"[^\w.-]+", "-", f"{policy.name}-{policy.model}")


def _steps(args: argparse.Namespace) -> list[Any]:
    from lrlab.agent.live import TASKS
    from lrlib.data.dataset import load_steps

    if args.limit is not None and args.limit < 1:
        raise ValueError("--limit must be at least 1")
    if getattr(args, "sets", 1) < 1:
        raise ValueError("--sets must be at least 1 (1: the seeds' study's one set)")
    steps = load_steps(path=args.data or miniwob_path())
    known = sorted({str(s.family).removeprefix("miniwob.") for s in steps})
    # default: every task type of a docs site; the scripted policy's types the data holds
    every = known if getattr(args, "env", "miniwob") == "docs" else [t for t in TASKS if t in known]
    tasks = [t.strip() for t in (args.tasks or ",".join(every)).split(",") if t.strip()]
    bad = [t for t in tasks if t not in known]
    if bad:
        raise ValueError(f"no steps of task type(s) {bad} in the data; valid: {', '.join(known)}")
    steps = [s for s in steps if str(s.family).removeprefix("miniwob.") in tasks
             and (s.target_bids or every is known)]  # docs: reports act on no element  # fmt: skip
    return steps[: args.limit] if args.limit else steps


def _out(args: argparse.Namespace, policy: Any) -> Path:
    out = args.out or results_dir() / "mfs" / f"mfs_{label(policy)}.jsonl"
    refuse_shipped(out, getattr(args, "overwrite_shipped", False))
    return out


def plan(args: argparse.Namespace) -> str:
    from lrlab.agent.mfs import estimate_calls, read_results

    policy = _policy(args)
    steps = _steps(args)
    done = read_results(_out(args, policy))
    todo = [s for s in steps if s.step_id not in done]
    typical, worst = estimate_calls(todo)
    per = 0.001 if policy.name == "scripted" else 60.0
    client = getattr(policy, "client", None)
    if client is None:
        what = "no model"
    elif client.offline:  # a step whose answers are not all cached fails, saying how to go live
        what = f"replays cached answers of {policy.model}; no model may be asked ({client.offline_reason})"
    else:
        what = f"CALLS {policy.model} (cached)"
    return (f"{len(steps)} steps, {len(steps) - len(todo)} already done; policy {policy.name} "
            f"({what}); about {typical} policy calls (at most {worst}), ~{typical * per / 60:.0f} min; "
            f"-> {_out(args, policy)}")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lrlab.agent.live import package_versions
    from lrlab.agent.mfs import build_all
    from lrlib.runinfo import provenance

    policy = _policy(args)
    steps = _steps(args)
    out = _out(args, policy)
    prov = provenance(**policy.provenance(), data=portable(args.data or miniwob_path()),
                      packages=package_versions(["lrlib", "openai", "xllamacpp"]))  # fmt: skip
    results = build_all(steps, policy, out, prov, max_sets=args.sets)
    usable = [r for r in results if r["usable"]]
    sized = [r for r in usable if r["mfs"]]
    size = {r["step_id"]: sum(map(len, r.get("sets") or [r["mfs"]])) for r in sized}
    ratio = [r["calls"] / (size[r["step_id"]] * math.log2(max(2, r["n_lines"]))) for r in sized]
    several = sum(len(r.get("sets") or ()) > 1 for r in sized)
    print(f"{len(results)} steps: the policy reproduces the recorded action on {len(usable)}; "
          f"MFS found on {len(sized)} (median size {_median([len(r['mfs']) for r in sized])}, "
          f"{several} with more than one disjoint set; median calls "
          f"{_median([r['calls'] for r in sized])}, calls / (lines of all sets x log2 n) at most "
          f"{max(ratio, default=float('nan')):.2f})")  # fmt: skip
    print(f"written: {out}")
    return 0


def _median(values: list[float]) -> float:
    v = sorted(values)
    return v[len(v) // 2] if v else float("nan")
