"""Old and widened evidence side by side, per reducer, on the held-out sets (issue 33).

Usage: ``python benchmarks/bench_decision.py [--reducers learned program bm25] [--out FILE]``

For every reducer, on the recorded traces' ``test`` split, on every WebArena step (the
shipped models; the fitted-on-WorkArena-only transfer figure of the learned scorer is its
training record's, ``benchmarks/train_learned.py``) and on the MiniWoB steps of each half of
the task types (``data/live/task_split.json``): target coverage, evidence coverage (the
first definition, ``evidence_covered``), *decision* evidence coverage (the widened one,
``decision_covered``: :func:`lrlib.data.evidence.decision_groups`) and median token
reduction, each with its 95% interval (bootstrap over episodes) and n = steps / episodes.
Targets: decision evidence >= 90% and target >= 95% at >= 70% median reduction on the
traces; target >= 90% at >= 60% on the MiniWoB steps.

``--live-dir DIR`` (the output folder of ``benchmarks/bench_live.py``) adds the validation
against live success: on every step each reducer's live episodes played (the full tree
recorded there, the lines kept live; the reference action is the scripted policy's on the
full tree), whether the kept lines cover the target, the evidence and the decision
evidence; an episode is covered when all its steps are, and ``agree`` is the share of
episodes whose live success equals it (95% interval over task types).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from lrlib.data import dataset as data
from lrlib.eval.evaluation import evaluate, markdown_table
from lrlib.eval.intervals import interval
from lrlib.paths import miniwob_path

sys.path.insert(0, str(Path(__file__).parent))
from train_learned import miniwob_split  # noqa: E402

COLUMNS = (("covered", "target", "mean"), ("evidence_covered", "evidence", "mean"),
           ("decision_covered", "decision", "mean"), ("reduction", "reduction", "median"))  # fmt: skip


def settings() -> dict[str, list]:
    """Setting name -> its steps."""
    steps = data.load_steps()
    small = data.load_steps(path=miniwob_path())
    return {
        "test": [s for s in steps if s.meta.get("split") == "test"],
        "webarena (all)": [s for s in steps if s.benchmark == "webarena"],
        "miniwob tuning": [s for s in small if miniwob_split(s.family) == "tuning"],
        "miniwob heldout": [s for s in small if miniwob_split(s.family) == "heldout"],
    }


def cells(frame: pd.DataFrame, episodes: dict[str, str]) -> dict[str, str]:
    """Each measure of :data:`COLUMNS` as ``estimate [lo, hi] n=steps/episodes`` (percent)."""
    eps = frame["step_id"].map(episodes).to_numpy(object)
    out = {}
    for col, name, stat in COLUMNS:
        v = frame[col].astype("float64").to_numpy()
        ci = interval(v, eps, stat)
        pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
        n = f" n={ci['n_steps']}/{ci['n_episodes']}" if name != "reduction" else ""
        out[name] = f"{pct(ci['estimate'])} [{pct(ci['lo'])}, {pct(ci['hi'])}]{n}"
    return out


def live_agreement(folder: Path, policy: str = "scripted") -> pd.DataFrame:
    """Per reducer: live success and, per coverage (target, evidence, decision), the share
    of episodes covered and the share whose success equals their coverage (module doc)."""
    import json

    from lrlab.agent.live import TASKS
    from lrlab.agent.live_report import live_steps, reference_step
    from lrlab.agent.scripted import ScriptedPolicy
    from lrlib.data.evidence import decision_covered
    from lrlib.eval.intervals import bootstrap
    from lrlib.eval.metrics import covers, covers_evidence

    scripted = ScriptedPolicy()
    episodes, rows = [], []
    for summary in sorted(folder.glob(f"lrlib-{policy}-*/summary_info.json")):
        info = json.loads(summary.read_text())
        episodes.append({k: info[k] for k in ("reducer", "task", "seed", "success")})
    eps = pd.DataFrame(episodes)
    for reducer in sorted(set(eps["reducer"])):
        for ls in live_steps(folder, policy, reducer, TASKS, sorted(set(eps["seed"]))):
            s = ls.step
            ref = reference_step(s, scripted.act(s.goal, s.history, s.tree).action)
            rows.append({"reducer": reducer, "task": ls.task, "seed": ls.seed,
                         "target": covers(ref, ls.kept), "evidence": covers_evidence(ref, ls.kept),
                         "decision": decision_covered(ref, ls.kept)})  # fmt: skip
    cov = pd.DataFrame(rows)
    measures = ["target", "evidence", "decision"]
    cov[measures] = cov[measures].astype(object).where(cov[measures].notna(), True).astype(float)
    per = cov.groupby(["reducer", "task", "seed"], as_index=False)[measures].min()
    m = eps.merge(per, on=["reducer", "task", "seed"], how="inner")
    m["success"] = m["success"].astype(float)
    out = []
    for reducer, part in m.groupby("reducer"):
        row = {"reducer": reducer, "n_episodes": len(part), "n_tasks": part["task"].nunique()}
        for col in ["success", *measures]:
            cells = [col]
            if col != "success":
                part = part.assign(**{f"agree_{col}": (part[col] == part["success"]).astype(float)})
                cells.append(f"agree_{col}")
            for c in cells:
                b = bootstrap(part.assign(r=reducer), c, by="r", cluster="task").iloc[0]
                row[c] = f"{100 * b.estimate:.0f}% [{100 * b.lo:.0f}, {100 * b.hi:.0f}]"
        out.append(row)
    return pd.DataFrame(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reducers", nargs="+", default=["learned", "program", "bm25"])
    parser.add_argument("--out", type=Path, default=None, help="also write the table as CSV")
    parser.add_argument("--live-dir", type=Path, default=None, help="bench_live.py's output")
    parser.add_argument("--live-only", action="store_true", help="only the live validation")
    args = parser.parse_args()
    if args.live_dir is not None:
        print(markdown_table(live_agreement(args.live_dir)))
        if args.live_only:
            return 0
    start = time.perf_counter()
    rows = []
    for name, steps in settings().items():
        episodes = {s.step_id: str(s.episode or s.meta.get("episode") or s.step_id) for s in steps}
        frame = evaluate(args.reducers, steps, progress=False)
        for reducer in args.reducers:
            part = frame[frame.reducer == reducer]
            rows.append({"setting": name, "reducer": reducer, **cells(part, episodes)})
        print(f"[{time.perf_counter() - start:.0f} s] {name}", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    print(markdown_table(table))
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
