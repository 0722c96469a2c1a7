"""The learned scorer against the program reducer, per step and cold (issue 24: learned at
most 1.5x program).

Cold: every measurement reduces a fresh :class:`~lrlib.core.step.Step` (tree not parsed)
after clearing lrlib's memo of line token counts, the learned scorer's feature cache and
the memo of past actions' bids,
both reducers alike, alternating which goes first. "step" is the wall time of
``reducer.reduce(step)`` plus the parse it triggers (what an evaluation pays per step: parse,
select, count tokens before and after); "select" is the reducer's own latency
(:attr:`Reduction.latency_s`, tree already parsed). Rows: every validation and test step
(median over steps), the recorded step of median size (median of ``--repeats`` runs), and
real trees tiled to 20,000 lines (``bench_core.tiled_tree``). Run under
``flock /tmp/lrlib-timing.lock``; prints the load average beside the table:
.venv/bin/python benchmarks/bench_learned_speed.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench_core import tiled_tree

from lrlab.reducers import memo
from lrlab.reducers.features import action_bids
from lrlib.core import tokens
from lrlib.core.step import Step
from lrlib.data import dataset as data
from lrlib.reducers import get_reducer


def cold_run(reducer, step: Step) -> tuple[float, float]:
    """(step ms, select ms) of one cold reduction of a fresh copy of ``step``."""
    tokens.clear_line_memo()
    memo.clear()  # features, page costs, guard verdicts: every per-step memo
    action_bids.cache_clear()
    fresh = Step(goal=step.goal, tree=step.tree, history=step.history, meta=step.meta)
    t0 = time.perf_counter()
    r = reducer.reduce(fresh)
    return (time.perf_counter() - t0) * 1000, r.latency_s * 1000


def medians(reducers: dict, steps: list[Step], repeats: int = 1) -> dict[str, tuple]:
    """Per reducer, the median over ``steps`` of each step's best of ``repeats`` cold runs
    (step ms, select ms), alternating which reducer runs first: the best of a few runs
    keeps the other users of a shared machine out of the figure, the median over steps
    is the typical step."""
    out: dict[str, list] = {name: [] for name in reducers}
    names = list(reducers)
    for k, step in enumerate(steps):
        runs: dict[str, list] = {name: [] for name in names}
        for rep in range(repeats):
            for name in names if (k + rep) % 2 else names[::-1]:
                runs[name].append(cold_run(reducers[name], step))
        for name in names:
            out[name].append((min(a for a, _ in runs[name]), min(b for _, b in runs[name])))
    return {
        name: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v))
        for name, v in out.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="cold runs per step (best)")
    parser.add_argument("--big-repeats", type=int, default=3)
    args = parser.parse_args()
    reducers = {"program": get_reducer("program"), "learned": get_reducer("learned")}
    held_out = data.load_steps(split="validation") + data.load_steps(split="test")
    everything = sorted(data.load_steps(), key=lambda s: len(s.axtree))
    median = everything[len(everything) // 2]
    text, goal = tiled_tree(20_000)
    big = Step(goal=goal, tree=text)
    for r in reducers.values():  # warm up imports and encoders
        r.reduce(Step(goal=median.goal, tree=median.tree, history=median.history))
    rows = [
        (
            f"{len(held_out)} validation+test steps (median over steps)",
            medians(reducers, held_out, args.repeats),
        ),
        (
            f"median recorded step ({len(median.axtree)} lines)",
            medians(reducers, [median], 5 * args.repeats),
        ),
        (
            "tiled real trees (20,000 lines)",
            medians(reducers, [big], args.big_repeats),
        ),
    ]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"cold (fresh Step, memos and feature cache cleared), best of {args.repeats} runs per "
          f"step; load average {load}")  # fmt: skip
    print("| steps | program step ms | learned step ms | ratio | program select ms "
          "| learned select ms | ratio |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, m in rows:
        (ps, pl), (ls, ll) = m["program"], m["learned"]
        print(
            f"| {name} | {ps:.2f} | {ls:.2f} | {ls / ps:.2f}x | {pl:.2f} | {ll:.2f} "
            f"| {ll / pl:.2f}x |"
        )


if __name__ == "__main__":
    main()
