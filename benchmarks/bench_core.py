"""Benchmark: the whole post-processing path of one step, for trees of 200 to 60,000 lines.

Path: parse + number the tree, build the retriever prompt, parse an answer that selects
about 30% of the lines in 20 ranges, prune with `remove` and with `structure`, count the
tokens of the original and of both results (o200k_base).

Large trees are real trees tiled, with bids renumbered per copy so every line is distinct.
"cold" clears lrlib's memo of line token counts before every repetition (the tree is
encoded by tiktoken in one call and its tokens split back into lines; "cold CPU" is the
same in process CPU time, which machine load inflates less); "warm" keeps it (what a run
over an episode or a dataset sees, since steps share most lines: only new lines are
encoded). Prints a markdown table; run:
.venv/bin/python benchmarks/bench_core.py
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

from lrlib.core import tokens
from lrlib.core.axtree import parse
from lrlib.core.prompts import get_prompt
from lrlib.core.pruning import prune
from lrlib.core.ranges import parse_answer

SIZES = (200, 1_000, 5_000, 20_000, 60_000)
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "trees.json"
_BID = re.compile(r"^(\t*)\[([a-z]*)(\d+)\]", re.M)


def tiled_tree(n_lines: int) -> tuple[str, str]:
    """A tree of exactly n_lines real lines (bids renumbered per copy) and a goal."""
    items = json.loads(FIXTURES.read_text())
    base = "\n".join(it["tree"] for it in items).split("\n")
    out: list[str] = []
    copy = 0
    while len(out) < n_lines:
        block = "\n".join(base)
        if copy:
            block = _BID.sub(lambda m, c=copy: f"{m[1]}[{m[2]}{int(m[3]) + c * 100_000}]", block)
        out.extend(block.split("\n"))
        copy += 1
    return "\n".join(out[:n_lines]), items[0]["goal"]


def answer_for(n_lines: int, share: float = 0.3, k: int = 20) -> str:
    """A model-style answer selecting ~share of the lines in k ranges."""
    width = max(1, int(n_lines * share / k))
    step = n_lines // k
    ranges = [(i * step + 1, min(n_lines, i * step + width)) for i in range(k)]
    body = ", ".join(f"({a}, {b})" for a, b in ranges)
    return f"<think>The agent needs the form.</think>\n<answer>[{body}]</answer>"


def one_step(text: str, goal: str, answer: str) -> tuple[int, int, int]:
    tree = parse(text)
    get_prompt("paper").build(goal, tree, ["click('12')", "fill('40', 'x')"])
    selection = parse_answer(answer, len(tree))
    removed = prune(tree, selection, "remove")
    structured = prune(tree, selection, "structure")
    before = tokens.count_lines(tree.texts)
    return (before, tokens.count_lines(removed.lines), tokens.count_lines(structured.lines))


def median_ms(fn, repeats: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times) * 1000


def main() -> None:
    tokens.count_tokens("warm up the encoder")
    rows = []
    for n in SIZES:
        text, goal = tiled_tree(n)
        answer = answer_for(n)
        repeats = 41 if n <= 5_000 else 9

        def cold(text=text, goal=goal, answer=answer):
            tokens.clear_line_memo()
            one_step(text, goal, answer)

        cold_ms = median_ms(cold, repeats)
        cold_cpu = median_ms(cold, repeats, time.process_time)
        one_step(text, goal, answer)
        warm_ms = median_ms(lambda t=text, g=goal, a=answer: one_step(t, g, a), repeats)
        before, after_r, after_s = one_step(text, goal, answer)
        rows.append((n, before, after_r, after_s, cold_ms, warm_ms, cold_cpu))
    per_line = {n: (c / n, w / n) for n, _, _, _, c, w, _ in rows}
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"token counter: {tokens.backend_name()}; load average {load}")
    print(
        "| lines | tokens | remove tokens | structure tokens | cold ms | cold CPU ms | warm ms | warm µs/line |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, before, ar, as_, c, w, cpu in rows:
        print(
            f"| {n:,} | {before:,} | {ar:,} | {as_:,} | {c:.2f} | {cpu:.2f} | {w:.2f} | {w / n * 1000:.2f} |"
        )
    growth_cold = per_line[60_000][0] / per_line[1_000][0]
    growth_warm = per_line[60_000][1] / per_line[1_000][1]
    print(
        f"\ntime per line, 60,000 vs 1,000 lines: cold x{growth_cold:.2f}, warm x{growth_warm:.2f}"
    )


if __name__ == "__main__":
    main()
