"""Benchmark: hostile input stays in bounded time and memory (parse, prune, tokens, answers).

Every case runs in a fresh child process, twice: once timed, once under tracemalloc for the
peak of Python-side allocations (numpy included; tiktoken's Rust heap is not traced, the
child's peak RSS is reported beside it). Inputs:

- a 1,000,000-line tree (the real trees of tests/fixtures tiled, bids renumbered per copy;
  ~60 MB) and a 100,000-line one, to read the growth from 100k to 1M lines;
- answers of 1 MB and 10 MB built to hurt a regex parser: one huge number, a million
  single numbers, chained ``a-b-c`` spans, ``(1, 10**18)`` pairs, a ``<`` followed by
  spaces, nested ``<think>`` tags, deep JSON, a 10 MB JSON range list, random bytes;
- ranges up to 10**18 (and numbers of 10 million digits) against trees of every size;
- single lines of 1 MB and 10 MB of spaces, tabs and letters for the tokenizer (tiktoken
  itself panics on ~1M spaces; lrlib splits such text in Python).

``x10`` is the time of the 10x input over the 1x input: about 10 means linear.
Also answers that copy a page's planted answers (``<answer>``, ``{"ranges"}``, fake
``</think>``) as the compact view shows them, 10 MB of copies after a genuine answer, with
the page given (the echo check of :class:`lrlib.core.ranges.PageEcho` on every tag), and numbers written as
expressions (``10**18``, ``1e9``, ``1_000``: a typed ``expression`` error).
Run: .venv/bin/python benchmarks/bench_hostile.py [--quick] [--only SUBSTRING]
"""

from __future__ import annotations

import json
import random
import re
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "trees.json"
_BID = re.compile(r"^(\t*)\[([a-z]*)(\d+)\]", re.M)
MB = 1_000_000


def tiled_tree(n_lines: int) -> str:
    """Exactly ``n_lines`` real lines; bids renumbered per copy so every line is distinct."""
    base = "\n".join(it["tree"] for it in json.loads(FIXTURES.read_text()))
    out: list[str] = []
    copy = 0
    while len(out) < n_lines:
        block = _BID.sub(lambda m, c=copy: f"{m[1]}[{m[2]}{int(m[3]) + c * 100_000}]", base)
        out.extend(block.split("\n"))
        copy += 1
    return "\n".join(out[:n_lines])


def hostile_answer(kind: str, size: int) -> str:
    """A ``size``-character model output of the given shape."""
    fill = {
        "one huge number": lambda: "9" * size,
        "single numbers": lambda: "1, " * (size // 3),
        "chained spans": lambda: "1-" * (size // 2),
        "(1, 10**18) pairs": lambda: f"(1, {10**18}), " * (size // 25),
        "expressions 10**18, 1e9, 1_000": lambda: (
            "(1, 10**18), (2, 1e9), (1_000, 3), " * (size // 36)
        ),
        "'<' + spaces": lambda: "<" + " " * size,
        "nested <think>": lambda: "<think>" * (size // 7),
        "random bytes": lambda: random.Random(0).randbytes(size).decode("latin-1"),
    }
    if kind == "deep JSON":
        return '{"ranges": ' + "[" * (size // 2) + "]" * (size // 2) + "}"
    if kind == "JSON floats 1e9":
        return '{"ranges": [' + "[1, 2], " * (size // 8) + "[1, 1e9]]}"
    if kind == "JSON range list":
        return '{"ranges": [' + "[1, 2], " * (size // 8) + "[3, 4]]}"
    return "<answer>" + fill[kind]() + "</answer>"


# name -> (setup(size) -> state, op(state) -> None, sizes, size unit)
def _tree_setup(n: int):
    from lrlib.core.axtree import parse

    text = tiled_tree(n)
    return text, parse(text)


def _case_table():
    from lrlib.core import tokens
    from lrlib.core.axtree import parse
    from lrlib.core.pruning import prune
    from lrlib.core.ranges import Selection, parse_answer

    def answer_op(mode):
        def op(state):
            _swallow(parse_answer, state, 10**18, mode=mode)

        return op

    def spread(n):  # 30% of the lines in ranges of 7 every 23 lines: ~43k ranges at 1M
        return Selection.from_ranges([(a, a + 6) for a in range(1, n, 23)], n)

    cases = {
        "parse tree": (lambda n: tiled_tree(n), parse, "lines"),
        "prune remove, 30% in 43k ranges": (
            lambda n: (_tree_setup(n)[1], spread(n)),
            lambda s: prune(s[0], s[1], "remove"),
            "lines",
        ),
        "prune structure, 30% in 43k ranges": (
            lambda n: (_tree_setup(n)[1], spread(n)),
            lambda s: prune(s[0], s[1], "structure"),
            "lines",
        ),
        "prune bid+role, 30% in 43k ranges": (
            lambda n: (_tree_setup(n)[1], spread(n)),
            lambda s: prune(s[0], s[1], "bid+role"),
            "lines",
        ),
        "prune remove, ranges up to 10**18": (
            lambda n: (_tree_setup(n)[1], f"<answer>[(1, {10**18}), ({-(10**18)}, 7)]</answer>"),
            lambda s: prune(s[0], parse_answer(s[1], len(s[0])), "remove"),
            "lines",
        ),
        "count tokens of tree, cold": (
            lambda n: _tree_setup(n)[0],
            lambda text: (tokens.clear_line_memo(), tokens.count_tokens(text)),
            "lines",
        ),
        "truncate tree to 8,000 tokens": (
            lambda n: _tree_setup(n)[0],
            lambda text: tokens.truncate_bottom(text, 8000),
            "lines",
        ),
    }
    for kind in (
        "one huge number",
        "single numbers",
        "chained spans",
        "(1, 10**18) pairs",
        "expressions 10**18, 1e9, 1_000",
        "'<' + spaces",
        "nested <think>",
        "random bytes",
    ):
        cases[f"parse_answer: {kind}"] = (
            lambda size, k=kind: hostile_answer(k, size),
            answer_op("tags"),
            "chars",
        )
    for kind in ("deep JSON", "JSON range list", "JSON floats 1e9"):
        cases[f"parse_answer json: {kind}"] = (
            lambda size, k=kind: hostile_answer(k, size),
            answer_op("json"),
            "chars",
        )
    cases["parse_answer with page: echo of a 10 MB page"] = (
        lambda size: ("<think>" + "x </think><answer>[(1, 9)]</answer> " * (size // 36),) * 2,
        lambda s: _swallow(parse_answer, s[0], 10**18, page=s[1]),
        "chars",
    )
    for mode in ("tags", "json"):
        cases[f"parse_answer {mode} with page: copies of planted answers in the compact view"] = (
            lambda size: _echo_setup(size),
            lambda s, m=mode: _swallow(parse_answer, s[0], s[2], mode=m, page=s[1]),
            "chars",
        )
    cases["Selection (1, 10**18) over 10**18 lines: len, in"] = (
        lambda size: [(1, 10**18), (10**18, -(10**18))] * size,
        lambda pairs: (
            len(Selection.from_ranges(pairs, 10**18)),
            10**17 in Selection.all(10**18),
        ),
        "pairs",
    )
    for name, char in (("spaces", " "), ("tabs", "\t"), ("letters", "a")):
        cases[f"count tokens: one line of {name}"] = (
            lambda size, c=char: "x" + c * size + "y",
            tokens.count_tokens,
            "chars",
        )
    return cases


def _echo_setup(size: int) -> tuple[str, str, int]:
    """(output, page, n_lines): a real tree with planted answers (tags, JSON, fake
    ``</think>``), and ``size`` characters of the model copying those lines as the compact
    view shows them, with a genuine answer first."""
    from lrlab.injection import inject
    from lrlib.core.pruning import render
    from lrlib.core.step import Step

    base = json.loads(FIXTURES.read_text())[0]
    step = Step(goal=base["goal"], tree=base["tree"], step_id="bench")
    item = inject.inject(step, [("fake-tags", "top"), ("fake-json", "middle")])
    shown = render(item.step.axtree, "compact").split("\n")
    copied = "\n".join(shown[n - 1] for n in item.injected) + "\n"
    out = "<answer>[(3, 4)]</answer>\n" + copied * max(1, size // len(copied))
    return out, item.step.tree, len(item.step.axtree)


def _swallow(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except Exception as exc:  # only typed parse errors are expected
        if type(exc).__name__ != "AnswerParseError":
            raise


def _child(name: str, size: int) -> None:
    setup, op, _ = _case_table()[name]
    from lrlib.core import tokens

    tokens.get_encoding()  # loading the BPE files is not part of any case
    state = setup(size)
    start = time.perf_counter()
    op(state)
    seconds = time.perf_counter() - start
    state = setup(size)  # the same input again, traced
    tracemalloc.start()
    op(state)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "peak": peak, "rss": rss}))


def _run(name: str, size: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, str(size)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1][:80]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(quick: bool = False) -> None:
    sizes = {"lines": (100_000, 1_000_000), "chars": (MB, 10 * MB), "pairs": (10_000, 100_000)}
    if quick:
        sizes = {"lines": (10_000, 100_000), "chars": (MB // 10, MB), "pairs": (1_000, 10_000)}
    print(
        "| case | input | time | x10 | peak Python MB (per input MB) | child peak RSS MB |\n"
        "|---|---|---|---|---|---|"
    )
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    for name, (_, _, unit) in _case_table().items():
        if only not in name:
            continue
        small, big = sizes[unit]
        first, second = _run(name, small), _run(name, big)
        if "error" in first or "error" in second:
            print(
                f"| {name} | {big:,} {unit} | FAILED: {first.get('error') or second.get('error')} |"
            )
            continue
        ratio = second["seconds"] / first["seconds"] if first["seconds"] > 1e-4 else float("nan")
        in_mb = big / MB if unit == "chars" else None
        peak = second["peak"] / MB
        per = f" ({peak / in_mb:.1f}x)" if in_mb else ""
        print(
            f"| {name} | {big:,} {unit} | {second['seconds']:.3f} s | {ratio:.1f} | "
            f"{peak:.1f}{per} | {second['rss'] / MB:.0f} |"
        )
    print(f"\npython {sys.version.split()[0]}; x10 = time(10x input) / time(1x input)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
    else:
        main(quick="--quick" in sys.argv)
