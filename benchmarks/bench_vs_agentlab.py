"""Benchmark: one step's post-processing, lrlib against AgentLab's FocusAgent, side by side.

The path (what a LineRetriever agent does with one observation besides calling models):
number the tree, build the retriever prompt, parse an answer selecting ~30% of the lines in
20 ranges, prune it both ways, count the tokens of the original and of both results.

- lrlib: ``parse`` + ``get_prompt("paper").build`` + ``parse_answer`` + ``prune`` with
  ``remove`` and ``structure`` (or, in the "AgentLab's outputs" row, with
  ``remove-agentlab`` and ``bid-agentlab``, whose texts are AgentLab's own) +
  ``count_lines`` of the three (o200k_base, tiktoken's exact counts: the tree's lines are
  encoded in one tiktoken call and its tokens split back into lines, which the outputs
  then find in the memo; only their new lines, markers and stubs, are encoded).
- AgentLab (the peer's own code, ../shared/peer/agentlab-pr302, imported through
  tests/peer_import.py): ``add_line_numbers_to_tree`` + ``LlmRetrieverPrompt.prompt`` +
  tag parsing, ``FocusAgent.clean_list``, ``ast.literal_eval`` and range expansion (as in
  ``prune_obs``) + ``remove_lines`` and ``remove_lines_keep_structure(strategy="bid")`` +
  ``get_nb_tokens`` of the three (its module-level tiktoken encoder, o200k_base), unchanged.

*Cold*: lrlib's memo of per-line token counts is cleared before every lrlib repetition
(AgentLab keeps no memo); what any process has after its first step stays loaded on both
sides (imported modules, the encoders and their self-checks, lrlib's table of "n: "
number prefixes). Trees: the recorded step with the median number of lines, and real trees
tiled to 20,000 lines (bids renumbered). The two paths alternate within one process (the
order swapped every other repetition), so machine load affects both alike; medians of wall
time and of process CPU time (all threads) and their ratio are printed, with the load.

The last rows are the floor of any exact cold count with tiktoken on the median tree: one
``encode_ordinary`` of the tree plus one of the new lines of both outputs (no memo can
know them), alone and with lrlib's other work (parse, prompt, answer, both prunes).
Run: .venv/bin/python benchmarks/bench_vs_agentlab.py [--repeats N]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_core import answer_for, tiled_tree  # noqa: E402
from peer_import import PEER_DIR, available, peer  # noqa: E402

from lrlib.core import tokens  # noqa: E402
from lrlib.core.axtree import parse  # noqa: E402
from lrlib.core.prompts import get_prompt  # noqa: E402
from lrlib.core.pruning import prune  # noqa: E402
from lrlib.core.ranges import parse_answer  # noqa: E402
from lrlib.data.dataset import load_steps  # noqa: E402

HISTORY = ["click('12')", "fill('40', 'x')"]


PAPER = ("remove", "structure")
AGENTLAB_OUTPUTS = ("remove-agentlab", "bid-agentlab")


def lrlib_step(
    text: str, goal: str, answer: str, strategies: tuple[str, str] = PAPER
) -> tuple[int, int, int]:
    tree = parse(text)
    get_prompt("paper").build(goal, tree, HISTORY)
    selection = parse_answer(answer, len(tree))
    removed = prune(tree, selection, strategies[0])
    structured = prune(tree, selection, strategies[1])
    count = tokens.count_lines
    return count(tree.texts), count(removed.lines), count(structured.lines)


def agentlab_step(text: str, goal: str, answer: str) -> tuple[int, int, int]:
    p = peer()
    numbered = p.focus_utils.add_line_numbers_to_tree(text)
    flags = p.prompts.LlmRetrieverPromptFlags(use_history=True)
    messages = p.prompts.LlmRetrieverPrompt(goal, numbered, None, "\n".join(HISTORY), flags).prompt
    assert messages[1]["content"]
    tags = sys.modules["agentlab.llm.llm_utils"].parse_html_tags_raise(
        answer, keys=["think", "answer"], merge_multiple=True
    )
    line_ranges = ast.literal_eval(p.focus_agent.FocusAgent.clean_list(tags["answer"]))
    line_numbers = []
    for start, end in line_ranges:
        line_numbers.extend(range(start, end + 1))
    utils = p.retriever_utils
    removed = utils.remove_lines(tree=text, line_numbers=line_numbers)
    structured = utils.remove_lines_keep_structure(text, line_numbers, strategy="bid")
    count = p.focus_utils.get_nb_tokens
    return count(text), count(removed), count(structured)


def floor_step(text: str, goal: str, answer: str) -> tuple[float, float]:
    """Seconds of lrlib's work besides counting, and of what any exact cold count with
    tiktoken must do: encode the tree, and the lines of both outputs the tree lacks."""
    t0 = time.perf_counter()
    tree = parse(text)
    get_prompt("paper").build(goal, tree, HISTORY)
    selection = parse_answer(answer, len(tree))
    removed = prune(tree, selection, "remove")
    structured = prune(tree, selection, "structure")
    other = time.perf_counter() - t0
    known = set(tree.texts)
    new = "\n".join(ln for ln in dict.fromkeys(removed.lines + structured.lines) if ln not in known)
    enc = tokens.get_encoding()
    t0 = time.perf_counter()
    enc.encode_ordinary(text)
    enc.encode_ordinary(new)
    return other, time.perf_counter() - t0


def floor(text: str, goal: str, repeats: int) -> tuple[float, float, float]:
    """Median ms of: the tiktoken encodes alone, them with lrlib's other work, AgentLab."""
    answer = answer_for(len(text.split("\n")))
    encodes, whole, theirs = [], [], []
    for _ in range(repeats):
        other, encode = floor_step(text, goal, answer)
        encodes.append(encode)
        whole.append(other + encode)
        t0 = time.perf_counter()
        agentlab_step(text, goal, answer)
        theirs.append(time.perf_counter() - t0)
    return (
        statistics.median(encodes) * 1e3,
        statistics.median(whole) * 1e3,
        statistics.median(theirs) * 1e3,
    )


def side_by_side(
    text: str, goal: str, repeats: int, clock=time.perf_counter, strategies=PAPER
) -> tuple[float, float]:
    """Median ms of the cold lrlib path and of AgentLab's, alternating (order swapped
    every other repetition)."""
    answer = answer_for(len(text.split("\n")))
    ours, theirs = [], []
    for rep in range(repeats):
        for first in (0, 1) if rep % 2 else (1, 0):
            if first:
                tokens.clear_line_memo()
                t0 = clock()
                lrlib_step(text, goal, answer, strategies)
                ours.append(clock() - t0)
            else:
                t0 = clock()
                agentlab_step(text, goal, answer)
                theirs.append(clock() - t0)
    return statistics.median(ours) * 1000, statistics.median(theirs) * 1000


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--repeats", type=int, default=41)
    repeats = args.parse_args().repeats
    if not available():
        sys.exit(f"peer code not found at {PEER_DIR}")
    steps = sorted(load_steps(), key=lambda s: len(s.axtree))
    median = steps[len(steps) // 2]
    big, big_goal = tiled_tree(20_000)
    cases = [
        (f"median recorded tree ({len(median.axtree)} lines)", median.tree, median.goal, repeats, PAPER),
        (f"same, AgentLab's outputs ({', '.join(AGENTLAB_OUTPUTS)})", median.tree, median.goal,
         repeats, AGENTLAB_OUTPUTS),
        ("tiled real trees (20,000 lines)", big, big_goal, max(5, repeats // 8), PAPER),
    ]  # fmt: skip
    for _, text, goal, _, strategies in cases:  # warm up imports and encoders; same work:
        ours = lrlib_step(text, goal, answer_for(len(text.split("\n"))), strategies)
        theirs = agentlab_step(text, goal, answer_for(len(text.split("\n"))))
        # the same tree counted alike, and AgentLab's own outputs counted alike
        assert ours == theirs if strategies == AGENTLAB_OUTPUTS else ours[0] == theirs[0]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"token counter: {tokens.backend_name()}; load average {load} (2 cores)")
    print("| tree | clock | lrlib cold ms | AgentLab ms | AgentLab / lrlib |")
    print("|---|---|---:|---:|---:|")
    for name, text, goal, reps, strategies in cases:
        for clock, label in ((time.perf_counter, "wall"), (time.process_time, "CPU")):
            ours, theirs = side_by_side(text, goal, reps, clock, strategies)
            print(
                f"| {name}, n={reps} | {label} | {ours:.2f} | {theirs:.2f} | {theirs / ours:.1f}x |"
            )
    encodes, whole, theirs = floor(median.tree, median.goal, repeats)
    for label, ms in (("tiktoken encodes only", encodes), ("+ lrlib's other work", whole)):
        print(
            f"| floor, median tree: {label} | wall | {ms:.2f} | {theirs:.2f} | {theirs / ms:.1f}x |"
        )


if __name__ == "__main__":
    main()
