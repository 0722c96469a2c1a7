"""Offline replay success per reducer and half of the task types, with 95% intervals.

Usage: ``python benchmarks/bench_replay.py [--reducers "full;program;learned"]
[--source miniwob live] [--live-dir DIR] [--seeds 0 1 2 3 4] [--csv FILE]
[--half tuning --pick 0.55]``

A browser-free proxy for live success (:mod:`lrlab.agent.replay`): on every trajectory
played on the full observation, the scripted policy is shown each reducer's output of the
full tree at every step; an episode replays when it takes the full tree's action at every
step. Two sources of full-tree trajectories:

- ``miniwob``: the MiniWoB check set (``data/miniwob_ood.jsonl.gz``: recorded steps, each
  action verified by the task's reward; usable where the policy reproduces them);
- ``live``: the ``full`` reducer's episodes of ``lrlib live`` / ``benchmarks/bench_live.py``
  (their AgentLab folders, default ``.lrlib/results/live/scripted``), when present.

Rows are split by the committed halves of the task types (``data/live/task_split.json``):
knobs may be chosen on ``tuning``; ``heldout`` is the report. Intervals: bootstrap over task
types, n = episodes / task types. Prints a markdown table; ``--csv`` writes the episodes.

Choosing an operating point (issue 33): ``--half tuning`` replays the tuning half only, and
``--pick R`` names, over both sources pooled, the reducer spec of highest replay success among
those at >= ``R`` median token reduction (ties: the higher reduction); the held-out half is
then played live (``benchmarks/bench_live.py --reducers SPEC``), never used to choose.

``--sufficient``: per source and half, the median token reduction of a 1-minimal set of
lines on which the policy still takes its full-tree action
(:func:`lrlab.agent.replay.sufficient_lines`): what an oracle line selector could reach at
no replay loss, 95% interval over task types.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lrlab.agent.live import TASKS
from lrlab.agent.policies import get_policy
from lrlab.agent.replay import replay_episodes, replay_steps, replay_table, sufficient_lines
from lrlab.agent.split import half_of
from lrlib.data import dataset as data
from lrlib.eval.evaluation import markdown_table
from lrlib.paths import miniwob_path, results_dir

REDUCERS = "full;bm25;program;learned"


def live_full_steps(folder: Path, policy: str, seeds: list[int]) -> list:
    """The steps of the ``full`` reducer's live episodes under ``folder`` (their full trees)."""
    from dataclasses import replace

    from lrlab.agent.live_report import live_steps

    found = live_steps(folder, policy, "full", TASKS, seeds)
    return [
        replace(ls.step, family=f"miniwob.{ls.task}", episode=f"live.{ls.task}_{ls.seed}")
        for ls in found
    ]


def sufficient_table(steps: list, policy: object, source: str) -> object:
    """Median token reduction of :func:`sufficient_lines` per half [95% over task types]."""
    import pandas as pd

    from lrlib.core.tokens import count_tokens
    from lrlib.eval.intervals import bootstrap

    rows = []
    for s in steps:
        keep = sufficient_lines(s, policy)
        lines = s.tree.split("\n")
        kept = "\n".join(lines[n - 1] for n in keep)
        task = s.family.removeprefix("miniwob.")
        rows.append({"source": source, "half": half_of(task), "task": task,
                     "token_reduction": 1 - count_tokens(kept) / max(1, count_tokens(s.tree))})  # fmt: skip
    frame = pd.DataFrame(rows)
    out = bootstrap(frame, "token_reduction", by=["source", "half"], stat="median", cluster="task")
    return out.rename(columns={"estimate": "oracle_median_token_reduction",
                               "n_episodes": "n_tasks"})  # fmt: skip


def pick(eps: object, min_reduction: float) -> str:
    """The spec of highest replay success (both sources pooled) among those whose median
    token reduction is >= ``min_reduction``, as one line with the pooled table's figures."""
    table = replay_table(eps, by=("reducer",))
    ok = table[table["median_token_reduction"] >= min_reduction]
    if not len(ok):
        best = table.sort_values("median_token_reduction").iloc[-1]
        return (f"no spec reaches {min_reduction:.0%} median token reduction "
                f"(the most: {best['reducer']}, {best['median_token_reduction']:.1%})")  # fmt: skip
    best = ok.sort_values(["replay", "median_token_reduction"]).iloc[-1]
    return (f"picked {best['reducer']}: replay {best['replay']:.1%} [{best['replay_lo']:.1%}, "
            f"{best['replay_hi']:.1%}] of {best['n_episodes']} episodes, {best['n_tasks']} task "
            f"types; median token reduction {best['median_token_reduction']:.1%}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reducers", default=REDUCERS, help="';'-separated reducer specs")
    parser.add_argument("--source", nargs="+", default=["miniwob", "live"],
                        choices=("miniwob", "live"))  # fmt: skip
    parser.add_argument("--live-dir", type=Path, default=None)
    parser.add_argument("--policy", default="scripted")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--csv", type=Path, default=None, help="write the episodes here")
    parser.add_argument("--half", choices=("tuning", "heldout"), default=None,
                        help="replay only this half of the task split")  # fmt: skip
    parser.add_argument("--pick", type=float, default=None,
                        help="name the best spec at >= this median token reduction (module doc)")  # fmt: skip
    parser.add_argument("--sufficient", action="store_true",
                        help="also the oracle's reduction: a 1-minimal sufficient set per step")  # fmt: skip
    parser.add_argument("--table", type=Path, default=None,
                        help="write the table per reducer, sources pooled, here")  # fmt: skip
    args = parser.parse_args()
    policy = get_policy(args.policy)
    reducers = [r for r in args.reducers.split(";") if r]
    frames = []
    import pandas as pd

    for source in args.source:
        if source == "miniwob":
            steps = data.load_steps(path=miniwob_path())
        else:
            folder = args.live_dir or results_dir() / "live" / args.policy
            steps = live_full_steps(folder, args.policy, args.seeds) if folder.is_dir() else []
        if args.half:
            steps = [s for s in steps if half_of(s.family.removeprefix("miniwob.")) == args.half]
        if not steps:
            print(f"{source}: no full-tree trajectories found, skipped")
            continue
        start = time.perf_counter()
        if args.sufficient:
            print(markdown_table(sufficient_table(steps, policy, source), floats="{:.3f}"))
        rows = replay_steps(steps, reducers, policy)
        eps = replay_episodes(rows)
        eps.insert(0, "source", source)
        eps.insert(1, "half", [half_of(t) for t in eps["task"]])
        frames.append(eps)
        print(f"{source}: {len(steps)} steps x {len(reducers)} reducers replayed in "
              f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    if not frames:
        return 1
    eps = pd.concat(frames, ignore_index=True)
    table = replay_table(eps, by=("source", "half", "reducer"))
    print(markdown_table(table, floats="{:.3f}"))
    if args.pick is not None:
        print(pick(eps, args.pick))
    if args.table:
        replay_table(eps, by=("reducer",)).to_csv(args.table, index=False)
    if args.csv:
        eps.to_csv(args.csv, index=False)
        print(f"episodes written to {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
