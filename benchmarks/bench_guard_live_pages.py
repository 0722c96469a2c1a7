"""What the injection guard costs on clean documentation pages rendered live (issue 35).

    python benchmarks/bench_guard_live_pages.py                          # the issue 34 study
    python benchmarks/bench_guard_live_pages.py --reducers "anchor:guard=True" --out FILE

Two measures on the recorded clean episodes of the issue 34 study (``bench_docs.py``; Debian's
Python 3.11, Node.js and PostgreSQL 15 documentation, Chromium): **lines flagged** by
:func:`lrlab.reducers.suspect.suspect_lines` on every distinct page the ``full`` reducer's
episodes saw (page address and tree), with each reason's count; and, per reducer spec, how
many acted steps of the recorded episodes of the same reducer *name* would show the scripted
policy a different text under the spec (:func:`lrlab.agent.derive.same_episode`): 0 steps
changed means the policy, deterministic on static pages, would play every episode the same,
so task success on clean pages is unchanged. For ``program`` and ``learned`` this compares the
current guard with the one the episodes were played under; for ``anchor:guard=True`` the
guard with none. No browser, no model.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

REDUCERS = "program;learned;anchor:guard=True"


def page_flags(study: Path) -> dict[str, int | str]:
    """Lines, flagged lines and reasons over the distinct pages of ``full``'s episodes."""
    from lrlab.agent.derive import recorded_steps
    from lrlab.reducers.suspect import suspect_lines
    from lrlib.core.step import Step

    seen, lines, flagged, reasons = set(), 0, 0, Counter()
    for folder in sorted(study.glob("lrlib-scripted-full_on_docs.*")):
        for s in recorded_steps(folder):
            key = (s["goal"], s["tree"])
            if key in seen:
                continue
            seen.add(key)
            flags = suspect_lines(Step(goal=s["goal"], tree=s["tree"]))
            lines += len(s["tree"].split("\n"))
            flagged += len(flags)
            reasons.update(r for rs in flags.values() for r in rs)
    share = f"{flagged / max(1, lines):.3%}"
    return {"pages": len(seen), "lines": lines, "flagged": flagged, "share": share, **reasons}


def main(argv: list[str] | None = None) -> int:
    import json

    import pandas as pd

    from lrlab.agent.derive import split
    from lrlib.eval.evaluation import markdown_table, parse_spec
    from lrlib.paths import results_dir

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", type=Path, default=None, help="the recorded clean episodes")
    p.add_argument("--reducers", default=REDUCERS, help="';'-separated specs")
    p.add_argument("--out", type=Path, default=None, help="markdown file for the tables")
    args = p.parse_args(argv)
    study = args.study or results_dir() / "live" / "docs" / "study"
    if not any(study.glob("lrlib-scripted-full_on_docs.*")):
        print(f"bench_guard_live_pages: no recorded episodes in {study}; play them with "
              "benchmarks/bench_docs.py", file=sys.stderr)  # fmt: skip
        return 2
    start = time.perf_counter()
    flags = page_flags(study)
    print(f"pages: {flags}", flush=True)
    rows = []
    for spec in [r for r in args.reducers.split(";") if r]:
        name, _ = parse_spec(spec)
        recorded = [json.loads(f.read_text())
                    for f in sorted(study.glob(f"lrlib-scripted-{name}_on_docs.*/summary_info.json"))]  # fmt: skip
        _, todo, c = split(study, recorded, spec, "scripted", "docs")
        rows.append({"reducer": spec, "compared_with": f"{name} as recorded",
                     "episodes": c["episodes"], "steps": c["steps"],
                     "steps_changed": c["steps_differ"],
                     "episodes_changed": c["episodes_differ"]})  # fmt: skip
        print(rows[-1], flush=True)
    text = (
        "What the guard costs on clean documentation pages rendered live "
        "(`benchmarks/bench_guard_live_pages.py`; the issue 34 study's clean episodes).\n\n"
        f"## lines flagged ({flags['pages']} distinct pages of `full`'s episodes)\n\n"
        + markdown_table(pd.DataFrame([flags]))
        + "\n\n## acted steps whose reduced text changes\n\n"
        + markdown_table(pd.DataFrame(rows))
        + f"\n\n{time.perf_counter() - start:.0f} s\n"
    )
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
