"""Offline replay of documentation-site steps: which reducers (and knob values) leave the
scripted policy its full-observation action, at what token reduction; a knob chosen by
cross-validation grouped by site and task family (issue 34).

    python benchmarks/tune_docs_reducer.py --episodes .lrlib/results/live/docs/study \\
        --sites python3.11-doc,nodejs-doc --knob anchor:top_k=5,10,20,40

Reads the ``full`` reducer's recorded episodes (AgentLab layout, ``lrlib live --env docs``
or ``benchmarks/bench_docs.py``) of the development ``--sites``; at each step where the
policy acted, reduces the recorded FULL tree with every candidate, shows the policy what it
kept, and scores 1 when it takes the action it takes on the full tree. For the knob, each
(site, family) group is held out in turn: the value with the best mean score (ties: the
larger median reduction) on the other groups is scored on the held-out one. Nothing is
played in a browser; nothing calls a model. Prints one table; ``--csv`` writes the rows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def full_steps(folders: list[Path], sites: set[str]) -> list[tuple[str, str, object]]:
    """``(site, family, Step)`` of every decided step of the full reducer's episodes."""
    from lrlib.core.step import Step
    from lrlib.data.importer import episode_rows, read_episode
    from lrlib.data.safepickle import load_path

    found, seen = [], set()
    for out in folders:
        for folder in sorted(out.glob("lrlib-scripted-full_on_docs.*")):
            if not (folder / "summary_info.json").is_file():
                continue
            task = folder.name.split("_on_docs.", 1)[1].rsplit("_", 1)[0]
            site, family = task.rsplit(".", 1)
            if site not in sites or (task, folder.name) in seen:
                continue
            seen.add((task, folder.name))
            for row in episode_rows(read_episode(folder, out), set(), []):
                info = load_path(folder / f"step_{row['step']}.pkl.gz")
                extra = (getattr(info, "agent_info", None) or {}).get("extra_info") or {}
                if "lrlib" in extra:
                    found.append((site, family, Step.from_row(row)))
    return found


def score(steps: list, specs: list[str]) -> list[dict]:
    """One row per step and spec: same action as on the full tree, token reduction."""
    from lrlab.agent.mfs import same_action
    from lrlab.agent.preprocess import line_numbers
    from lrlab.docsite.policy import DocsScriptedPolicy
    from lrlib.eval.evaluation import parse_spec
    from lrlib.reducers.base import get_reducer

    policy = DocsScriptedPolicy()
    reducers = {}
    for spec in specs:
        name, params = parse_spec(spec)
        reducers[spec] = get_reducer(name, **params)
    rows = []
    for site, family, step in steps:
        ref = policy.act(step.goal, step.history, step.tree)
        if ref.stop:
            continue
        for spec, red in reducers.items():
            r = red.reduce(step)
            nums = line_numbers(r.text, r.kept, r.stubs, len(step.axtree))
            got = policy.act(step.goal, step.history, r.text, nums)
            rows.append({"spec": spec, "site": site, "family": family,
                         "same": float(not got.stop and same_action(got.action, ref.action)),
                         "reduction": 1 - r.tokens_after / max(1, r.tokens_before),
                         "n_lines": len(step.axtree), "ms": 1e3 * r.latency_s})  # fmt: skip
    return rows


def grouped_cv(frame, specs: list[str]) -> tuple[float, list[tuple[str, str]]]:
    """Mean held-out score of the value chosen on the other (site, family) groups."""
    groups = sorted(set(zip(frame["site"], frame["family"], strict=True)))
    held, chosen = [], []
    for g in groups:
        mask = (frame["site"] == g[0]) & (frame["family"] == g[1])
        train = frame[~mask & frame["spec"].isin(specs)]
        agg = train.groupby("spec").agg(same=("same", "mean"), red=("reduction", "median"))
        best = agg.sort_values(["same", "red"], ascending=False).index[0]
        test = frame[mask & (frame["spec"] == best)]
        held += test["same"].tolist()
        chosen.append((f"{g[0]}.{g[1]}", best))
    return statistics.fmean(held) if held else float("nan"), chosen


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=Path, action="append", required=True,
                   help="a folder of recorded episodes (repeat)")  # fmt: skip
    p.add_argument("--sites", default="python3.11-doc,nodejs-doc",
                   help="development sites (comma-separated)")  # fmt: skip
    p.add_argument("--reducers", default="full;truncate-agentlab;bm25;program;learned",
                   help="';'-separated specs scored as they are")  # fmt: skip
    p.add_argument("--knob", default="anchor:top_k=5,10,20,40",
                   help="NAME:OPTION=V1,V2,... the knob chosen by grouped CV")  # fmt: skip
    p.add_argument("--csv", type=Path, default=None)
    args = p.parse_args(argv)
    name, _, rest = args.knob.partition(":")
    option, _, values = rest.partition("=")
    if not (name and option and values):
        print("tune_docs_reducer: --knob must read NAME:OPTION=V1,V2", file=sys.stderr)
        return 2
    knob_specs = [f"{name}:{option}={v}" for v in values.split(",")]
    steps = full_steps(args.episodes, set(args.sites.split(",")))
    if not steps:
        print("tune_docs_reducer: no recorded full episodes of those sites", file=sys.stderr)
        return 1
    frame = pd.DataFrame(score(steps, [s for s in args.reducers.split(";") if s] + knob_specs))
    table = frame.groupby("spec", sort=False).agg(
        steps=("same", "size"), same_action=("same", "mean"),
        median_reduction=("reduction", "median"), median_ms=("ms", "median"))  # fmt: skip
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    cv, chosen = grouped_cv(frame, knob_specs)
    print(f"grouped CV over (site, family), {len(chosen)} groups: held-out same-action {cv:.3f}")
    for g, best in chosen:
        print(f"  held out {g}: chose {best}")
    if args.csv:
        frame.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
