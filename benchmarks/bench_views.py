"""Retriever prompt size under each view, on the recorded steps (paper prompt, o200k tokens).

The issue's target: the ``compact`` view needs at least 40% fewer retriever prompt tokens
than the paper's numbered ``full`` view (median per WorkArena step). ``full - url`` (only
the ``url='...'`` attributes dropped) is shown for reference. Prints a markdown table.

    .venv/bin/python benchmarks/bench_views.py
"""

from __future__ import annotations

import re
import statistics
import time

from lrlib.core.prompts import get_prompt
from lrlib.core.pruning import get_view, register_view
from lrlib.core.tokens import count_tokens
from lrlib.data.dataset import load_steps

URL = re.compile(r", url=(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
register_view("full-url", lambda tree: [URL.sub("", t) for t in tree.texts], overwrite=True)
VIEWS = ("full", "full-url", "compact")


def prompt_tokens(step, view: str) -> int:
    msgs = get_prompt("paper").build(step.goal, step.axtree, step.history, view=view)
    return sum(count_tokens(m["content"]) for m in msgs)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    print(
        "| benchmark | steps | view | median prompt tokens | median saving vs full "
        "| p10 saving | p90 saving | ms/step (view) |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for bench in ("workarena", "webarena"):
        steps = load_steps(benchmark=bench)
        trees = [s.axtree for s in steps]  # parse outside the timings
        full = [prompt_tokens(s, "full") for s in steps]
        for view in VIEWS:
            start = time.perf_counter()
            for tree in trees:
                get_view(view)(tree)
            ms = 1000 * (time.perf_counter() - start) / len(steps)
            tokens = full if view == "full" else [prompt_tokens(s, view) for s in steps]
            saving = [100 * (1 - t / f) for t, f in zip(tokens, full, strict=True)]
            print(
                f"| {bench} | {len(steps)} | {view} | {statistics.median(tokens):,.0f} "
                f"| {statistics.median(saving):.1f}% | {pct(saving, 0.1):.1f}% "
                f"| {pct(saving, 0.9):.1f}% | {ms:.2f} |"
            )


if __name__ == "__main__":
    main()
