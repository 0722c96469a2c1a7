"""ddmin's policy calls against |MFS| log2 n (issue 23): synthetic sets and real steps.

Usage: ``.venv/bin/python benchmarks/bench_ddmin.py`` (offline, seconds, no model).

1. Synthetic: a policy that fails exactly when a hidden set K of lines is removed, for tree
   sizes n up to 1000 and |K| = 1..6 (60 random K each); distinct calls (the policy calls a
   memoised/cached construction makes) divided by |K| log2 n.
2. Real: the scripted policy on every step of the MiniWoB check set whose task type it
   knows (``lrlib mfs``'s construction, both phases): usable steps, |MFS|, calls, and calls
   divided by |MFS| log2 n; then every disjoint set (``lrlib mfs --sets``), calls divided by
   the lines of all sets x log2 n.
"""

from __future__ import annotations

import math
import random
import statistics

from lrlab.agent.live import TASKS
from lrlab.agent.mfs import build_mfs, ddmin
from lrlab.agent.scripted import ScriptedPolicy
from lrlib.data.dataset import load_steps
from lrlib.paths import miniwob_path


def synthetic(seed: int = 0) -> None:
    rng = random.Random(seed)
    print("| n | |K| | median calls | max calls / (|K| log2 n) |\n|---:|---:|---:|---:|")
    worst = 0.0
    for n in (16, 100, 1000):
        for k in (1, 2, 4, 6):
            calls, ratios = [], []
            for _ in range(60):
                hidden = set(rng.sample(range(1, n + 1), k))
                seen: set[frozenset[int]] = set()

                def fails(s: list[int], hidden: set[int] = hidden, seen: set = seen) -> bool:
                    seen.add(frozenset(s))
                    return hidden <= set(s)

                assert set(ddmin(list(range(1, n + 1)), fails)) == hidden
                calls.append(len(seen))
                ratios.append(len(seen) / (k * math.log2(n)))
            worst = max(worst, max(ratios))
            print(f"| {n} | {k} | {statistics.median(calls):.0f} | {max(ratios):.2f} |")
    print(f"\nsynthetic: at most {worst:.2f} |K| log2 n distinct calls")


def real() -> None:
    steps = [s for s in load_steps(path=miniwob_path())
             if s.family.removeprefix("miniwob.") in TASKS and s.target_bids]  # fmt: skip
    policy = ScriptedPolicy()
    rs = [build_mfs(s, policy) for s in steps]
    usable = [r for r in rs if r.usable and r.mfs]
    ratios = [r.calls / (len(r.mfs) * math.log2(max(2, r.n_lines))) for r in usable]
    sizes = [len(r.mfs) for r in usable]
    print(f"real (scripted policy, MiniWoB check set): {len(steps)} steps, {len(usable)} usable "
          f"with an MFS; |MFS| median {statistics.median(sizes)}, max {max(sizes)}; calls median "
          f"{statistics.median(r.calls for r in usable)}, max {max(r.calls for r in usable)}; "
          f"calls / (|MFS| log2 n) max {max(ratios):.2f}; MFS = the target line(s) on "
          f"{sum(r.mfs == s.target_lines for r, s in zip(rs, steps, strict=True))} steps")  # fmt: skip
    # every disjoint set (lrlib mfs --sets 32), with the stub check of each set's lines
    rs = [build_mfs(s, policy, max_sets=32, stubs=True) for s in steps]
    usable = [r for r in rs if r.usable and r.sets]
    total = [sum(map(len, r.sets)) for r in usable]
    ratios = [
        r.calls / (k * math.log2(max(2, r.n_lines))) for r, k in zip(usable, total, strict=True)
    ]
    print(f"every set: {sum(len(r.sets) > 1 for r in usable)} of {len(usable)} steps have more "
          f"than one; lines of all sets median {statistics.median(total)}, max {max(total)}; "
          f"calls median {statistics.median(r.calls for r in usable)}, max "
          f"{max(r.calls for r in usable)}; calls / (lines of all sets x log2 n) max {max(ratios):.2f}")  # fmt: skip


if __name__ == "__main__":
    synthetic()
    real()
