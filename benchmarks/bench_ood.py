"""Every offline reducer on the out-of-domain MiniWoB check set (``data/miniwob_ood.jsonl.gz``).

Usage: ``python benchmarks/bench_ood.py [--half all|train|check] [--embedding] [--skip NAME...]
[--by-task NAME...] [--out results.csv]`` (a few seconds; ``--embedding`` adds the e5 baseline, slow when its
vectors are not cached yet)

The set (built by ``benchmarks/build_miniwob_ood.py``, described in ``data/README.md``) is
small synthetic pages from MiniWoB++ in BrowserGym's AXTree format, each step's action
verified by the task's own reward. Its task types fall in two fixed halves
(:func:`lrlab.tuning.crossval.miniwob_half`, a hash of the name): the ``check`` half is a CHECK
set no choice may read; the learned scorer trains on the ``train`` half's task types (as
one more family each, beside the recorded ones), so its figure is the ``--half check`` one;
the other reducers were tuned on neither half. For every registered offline reducer (:func:`lrlib.eval.evaluation.all_reducers`): target
coverage, evidence coverage and median token reduction, each with a 95% interval from a
bootstrap over episodes (:func:`lrlib.eval.intervals.summary`) and its n (steps/episodes).

Target of the generalisation issue on such pages: >= 90% target coverage at >= 60% median
token reduction (column "meets").
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OOD = ROOT / "data" / "miniwob_ood.jsonl.gz"
TARGET_COVERAGE, TARGET_REDUCTION = 0.90, 0.60


def load(path: Path = OOD, half: str = "all"):
    """The check set's steps (:class:`lrlib.core.step.Step`), in file order; ``half``: ``"all"``,
    or only the task types of :func:`lrlab.tuning.crossval.miniwob_half`'s ``"train"``/``"check"``."""
    from lrlab.tuning.crossval import miniwob_half
    from lrlib.data import dataset as data

    steps = data.load_steps(path=path)
    return steps if half == "all" else [s for s in steps if miniwob_half(s.family) == half]


def results(steps, skip: tuple[str, ...] = ()):
    """The evaluation frame (one row per step and reducer) of every offline reducer."""
    import pandas as pd

    from lrlib.eval.evaluation import all_reducers, evaluate

    frames = []
    for name in (r for r in all_reducers() if r not in skip):
        try:
            frames.append(evaluate([name], steps, progress=False))
        except Exception as e:  # a reducer that cannot load (e.g. stale weights) is reported
            print(f"!!! {name}: {type(e).__name__}: {e}", file=sys.stderr)
    return pd.concat(frames, ignore_index=True)


def table(frame, by: str | list[str] = "reducer") -> str:
    """A markdown table: coverage, evidence coverage and median reduction with intervals."""
    from lrlib.eval.intervals import fmt, summary

    s = summary(frame, by=by)
    keys = [by] if isinstance(by, str) else list(by)
    head = [*keys, "target coverage [95% CI] n=steps/episodes", "evidence coverage [95% CI] n",
            "median token reduction [95% CI] n", "meets >=90% / >=60%"]  # fmt: skip
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in s.to_dict("records"):

        def cell(p: str, r=r) -> str:
            if p not in r or r[p] != r[p]:
                return "-"
            return fmt({"estimate": r[p], "lo": r[f"{p}_lo"], "hi": r[f"{p}_hi"],
                        "n_steps": r[f"{p}_n"], "n_episodes": r[f"{p}_episodes"]})  # fmt: skip

        meets = r.get("coverage", 0) >= TARGET_COVERAGE and r["reduction"] >= TARGET_REDUCTION
        row = [*(str(r[k]) for k in keys), cell("coverage"), cell("evidence"), cell("reduction"),
               "yes" if meets else "no"]  # fmt: skip
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def composition(steps) -> str:
    """One line: steps, episodes, task types, median tokens per page."""
    import numpy as np

    tokens = [s.meta.get("n_tokens") or 0 for s in steps]
    return (
        f"{len(steps)} steps, {len({s.episode for s in steps})} episodes, "
        f"{len({s.family for s in steps})} task types; tokens per page: median "
        f"{np.median(tokens):.0f}, range {min(tokens)}-{max(tokens)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, default=OOD, help="the check set (default: shipped)")
    parser.add_argument("--half", choices=("all", "train", "check"), default="all",
                        help="task types of one fixed half only (default: all)")  # fmt: skip
    parser.add_argument("--skip", nargs="*", default=[], help="reducers to leave out")
    parser.add_argument("--embedding", action="store_true",
                        help="also the embedding baseline (bundled e5; 5-12 minutes the first "
                             "time on 2 busy cores, then its vectors are cached)")  # fmt: skip
    parser.add_argument("--by-task", nargs="*", metavar="REDUCER",
                        help="also a per-task-type table for these reducers")  # fmt: skip
    parser.add_argument("--out", help="also write the per-step frame as CSV here")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    start = time.perf_counter()
    steps = load(args.path, args.half)
    skip = tuple(args.skip) + (() if args.embedding else ("embedding",))
    frame = results(steps, skip)
    print(f"MiniWoB OOD check set ({args.half} task types): {composition(steps)}\n")
    print(table(frame))
    if args.by_task:
        part = frame[frame.reducer.isin(args.by_task)]
        print("\nper task type:\n")
        print(table(part, by=["family", "reducer"]))
    print(f"\n({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    if args.out:
        frame.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
