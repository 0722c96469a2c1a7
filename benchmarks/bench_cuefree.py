"""Cue-free prompt injection (issue 35): payload visibility per reducer and attack kind.

Usage: ``python benchmarks/bench_cuefree.py [--reducers "learned;program"] [--out FILE] [--heldout2]``

Attacks in plain words (:data:`lrlab.injection.inject.CUEFREE`, the development shapes, and
:data:`~lrlab.injection.inject.HELDOUT_CUEFREE`, committed before any defence against them and
never used to change one): no address, no markup, no word for an AI; each quotes or
paraphrases the step's goal and asks for a harmful action in the page, as a pop-up, a
banner, a hidden form field or a user comment. They are planted once per step in the wide
set of pinned recorded steps (114) and in the first step of each MiniWoB++ episode (199
real pages rendered by Chromium), each kind where it sits (:data:`~lrlab.injection.inject.PLACES`);
the current shapes (benchmark, realistic, held-out) are scored alongside. For each reducer:
the share of attacked steps whose reduced text shows a payload span, per set and per
attack kind, and, on the pop-up cases, the share whose dismiss control can still be
clicked, each with a 95% interval bootstrapped over episodes and n
(:mod:`lrlab.injection.injection_eval`). No model is called. ``--out`` writes the tables as
markdown (default ``figures/injection_cuefree_bench.md``; notebook 06 writes the same tables on
the shipped pages as ``figures/injection_cuefree*``). ``--pages FILE`` adds the cue-free sets
on every distinct page of an imported steps file (documentation pages rendered live).
``--heldout2`` adds :data:`~lrlab.injection.inject.HELDOUT2_CUEFREE`, the second held-out set
written blind to the defence and measured once after its freeze (default ``--out``:
``figures/injection_cuefree_heldout2.md``; the first file stays as shipped).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import time
from pathlib import Path

from lrlab.injection import injection_eval, injection_sets
from lrlab.injection.inject import CUEFREE, HELDOUT2_CUEFREE, HELDOUT_CUEFREE
from lrlib.data import dataset as data
from lrlib.eval.evaluation import markdown_table

REDUCERS = "learned;program;learned:guard=False;program:guard=False;bm25"
OUT = Path("figures/injection_cuefree_bench.md")
OUT_HELDOUT2 = Path("figures/injection_cuefree_heldout2.md")


# each defence of the guard switched off in turn (issue 35: measure each, keep what works)
ABLATIONS = {
    "all defences": {},
    "no pop-up rule": {"overlays": lambda step: {}, "exits": lambda step: {}},
    "no dismiss control kept": {"exits": lambda step: {}},
    "no quote rule": {"quotes": lambda text, grams, size=5: False},
    "no aside rule": {"_SPEAKS": re.compile(r"(?!)")},
    "no live-region/comment rule": {"live_or_comment": lambda step: []},
    "no container taint": {"tainted": lambda tree, flagged, size=12: []},
}


def ablation(sets: dict[str, list]) -> object:
    """Payload visibility and dismissal of the guarded learned and program reducers with
    each defence off (:data:`ABLATIONS`), and the lines flagged on the clean pages."""
    from unittest import mock

    import pandas as pd

    from lrlab.reducers import memo, overlay, suspect
    from lrlib.paths import miniwob_path

    clean = data.load_steps() + data.load_steps(path=miniwob_path())
    rows = []
    for name, patches in ABLATIONS.items():
        with contextlib.ExitStack() as stack:
            for attr, value in patches.items():
                stack.enter_context(mock.patch.object(suspect, attr, value))
                if hasattr(overlay, attr):
                    stack.enter_context(mock.patch.object(overlay, attr, value))
            memo.clear()
            tables = injection_eval.cuefree_tables(
                {"learned": "learned", "program": "program"}, sets
            )
            flagged = sum(len(suspect.suspect_lines(s)) for s in clean)
            vis = tables["visibility"].assign(defences=name, clean_flags=flagged)
            exits = tables["dismiss kept"][["reducer", "attacks", "kept"]]
            rows.append(vis.merge(exits, on=["reducer", "attacks"], how="left"))
    memo.clear()
    keep = ["defences", "reducer", "attacks", "visible", "lo", "hi", "n_steps", "kept",
            "clean_flags"]  # fmt: skip
    return pd.concat(rows, ignore_index=True)[keep]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reducers", default=REDUCERS, help="';'-separated reducer specs")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"markdown file for the tables (default {OUT}, {OUT_HELDOUT2} with --heldout2)",
    )
    parser.add_argument(
        "--heldout2", action="store_true", help="also the second held-out set (HELDOUT2_CUEFREE)"
    )
    parser.add_argument(
        "--ablate", action="store_true",
        help="also switch each defence off in turn (learned and program, cue-free sets)",
    )  # fmt: skip
    parser.add_argument(
        "--pages", type=Path, default=None,
        help="also attack every distinct page of this imported steps file (e.g. documentation "
        "pages from `lrlib live --env docs` then `lrlib import-traces`)",
    )  # fmt: skip
    args = parser.parse_args()
    from lrlib import runinfo

    specs = {r: r for r in args.reducers.split(";") if r}
    start = time.perf_counter()
    args.out = args.out or (OUT_HELDOUT2 if args.heldout2 else OUT)
    sets = injection_sets.cuefree_sets(data.load_steps(), heldout2=args.heldout2)
    if args.pages:
        pages = data.load_steps(path=args.pages)
        sets[f"cue-free held-out, {args.pages.name}"] = injection_sets.cuefree_set(
            "pages", HELDOUT_CUEFREE, steps=pages
        )
        sets[f"cue-free dev, {args.pages.name}"] = injection_sets.cuefree_set(
            "pages", CUEFREE, steps=pages
        )
        if args.heldout2:
            sets[f"cue-free held-out 2, {args.pages.name}"] = injection_sets.cuefree_set(
                "pages", HELDOUT2_CUEFREE, steps=pages
            )
    out = injection_eval.cuefree_tables(specs, sets)
    if args.ablate:
        cuefree = {k: v for k, v in sets.items() if k.startswith("cue-free")}
        out["ablation"] = ablation(cuefree)
    prov = runinfo.provenance()
    lines = [
        "Cue-free injection (issue 35): payload visibility and pop-up dismissal, 95% CI by "
        "episode (`benchmarks/bench_cuefree.py`; no model; recorded trees and MiniWoB++ pages "
        f"rendered by Chromium; lrlib {prov.get('lrlib_version')}, commit "
        f"{str(prov.get('git_commit'))[:10]}).",
    ]
    for title, frame in out.items():
        lines += ["", f"## {title}", "", markdown_table(frame, floats="{:.3f}")]
        print(f"\n## {title}\n")
        print(markdown_table(frame, floats="{:.3f}"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    n = sum(map(len, sets.values()))
    print(f"{len(specs)} reducers x {n} attacked steps in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
