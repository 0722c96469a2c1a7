"""What the injection guard costs on clean pages (issue 35): flags, elements kept, coverage.

Usage: ``python benchmarks/bench_guard_cost.py [--out FILE] [--limit N]``

On the 446 recorded steps and the 425 MiniWoB++ pages (no attack planted), for the program
and learned reducers with the guard on and off: the lines the guard flags, per reason
(:func:`lrlab.reducers.suspect.counts`), the interactive elements kept verbatim per step,
target and evidence coverage with 95% intervals bootstrapped over episodes
(:func:`lrlib.eval.evaluation.summarize`) and the median token reduction. No model is
called. ``--out`` writes the tables as markdown (default ``figures/guard_cost.md``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lrlab.reducers.suspect import counts, suspect_lines
from lrlib.data import dataset as data
from lrlib.eval.evaluation import evaluate, markdown_table, resolve
from lrlib.eval.intervals import bootstrap
from lrlib.paths import miniwob_path

REDUCERS = ("program", "learned", "program:guard=False", "learned:guard=False")
OUT = Path("figures/guard_cost.md")
INTERACTIVE = frozenset({
    "button", "link", "textbox", "combobox", "searchbox", "checkbox", "radio", "option",
    "menuitem", "tab", "switch", "spinbutton", "slider", "listbox", "menuitemcheckbox",
    "menuitemradio", "treeitem", "gridcell",
})  # fmt: skip


def interactive_kept(name: str, steps: list) -> float:
    """Mean number of interactive elements (a bid and an interactive role) kept verbatim."""
    reducer, total = resolve([name])[name], 0
    for step in steps:
        tree = step.axtree
        kept = reducer.reduce(step).kept
        total += sum(1 for n in kept if tree.bids[n - 1] and tree.roles[n - 1] in INTERACTIVE)
    return total / max(1, len(steps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="markdown file for the tables")
    parser.add_argument("--limit", type=int, default=None, help="at most this many steps each")
    args = parser.parse_args()
    import pandas as pd

    start = time.perf_counter()
    corpora = {
        "recorded (446 steps)": data.load_steps()[: args.limit],
        "MiniWoB (425 pages)": data.load_steps(path=miniwob_path())[: args.limit],
    }
    flags, quality = [], []
    for name, steps in corpora.items():
        n_lines = sum(len(s.axtree) for s in steps)
        c = counts(steps)
        flagged = sum(len(suspect_lines(s)) for s in steps)
        flags.append({"pages": name, "lines": n_lines, "flagged": flagged,
                      "share": f"{flagged / n_lines:.3%}", **{k: v for k, v in c.items() if v}})  # fmt: skip
        frame = evaluate({r: r for r in REDUCERS}, steps, progress=False)
        target = bootstrap(frame, "covered").set_index("reducer")
        evidence = bootstrap(frame, "evidence_covered").set_index("reducer")
        for r in REDUCERS:
            quality.append({
                "pages": name, "reducer": r,
                "median_reduction": float(frame.loc[frame["reducer"] == r, "reduction"].median()),
                "coverage": target.at[r, "estimate"], "lo": target.at[r, "lo"],
                "hi": target.at[r, "hi"], "n": int(target.at[r, "n_steps"]),
                "evidence": evidence.at[r, "estimate"], "ev_lo": evidence.at[r, "lo"],
                "ev_hi": evidence.at[r, "hi"], "ev_n": int(evidence.at[r, "n_steps"]),
                "interactive_kept": interactive_kept(r, steps),
            })  # fmt: skip
    lines = [
        "What the injection guard costs on clean pages (`benchmarks/bench_guard_cost.py`; no "
        "model; coverage with 95% CI by episode).",
        "",
        "## lines flagged",
        "",
        markdown_table(pd.DataFrame(flags).fillna(0), floats="{:.0f}"),
        "",
        "## reducers with the guard on and off",
        "",
        markdown_table(pd.DataFrame(quality), floats="{:.3f}"),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
