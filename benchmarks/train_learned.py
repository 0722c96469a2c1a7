"""Train the learned line scorer with grouped cross-validation; write its weights file.

Usage: ``python benchmarks/train_learned.py [--C 0.1] [--inner 4] [--dry-run]``

Reads the ``train`` and ``validation`` splits of the recorded traces and the MiniWoB steps
of the *tuning* half of the task types (``data/live/task_split.json``,
:func:`lrlab.agent.split.half_of`); never the ``test`` split or a held-out task type. The
labels are read from whatever ``data/mfs/`` (and your ``.lrlib/results/mfs/``) hold, so
re-running after new ``lrlib mfs`` runs retrains on them. Steps:

1. features (:mod:`lrlab.reducers.features`), labels and token counts for every step, once
   (:func:`lrlab.tuning.learned_fit.prepare`); the positives are the target lines (the
   default) or, with ``--labels decision``, the target lines, every *decision* evidence line
   (:func:`lrlib.data.evidence.decision_groups`: evidence, the choices the goal names, the
   fields it refers to, the selected option) and every line of every minimal failure set
   of every policy (``lrlib mfs --sets``, :func:`lrlib.data.evidence.mfs_sets`);
2. the honest figure, nested grouped cross-validation (``learned_cv.nested_cv``): each
   task family (a recorded task, or a MiniWoB task type) is scored by a model fitted on the
   other families, with knobs (``budget``, ``overhead``, ``floor``: :data:`GRID`) chosen on
   inner grouped folds of those other families only: the best mean evidence coverage
   (``--measure``: or decision evidence, or target coverage) whose
   median token reduction holds every benchmark's floor (:data:`lrlab.tuning.learned_cv.
   MIN_REDUCTION`, the issue's targets) with the low end of its 95% interval, near-ties
   going to the setting with the most headroom above those floors;
3. the shipped knobs, chosen by the same rule on leave-one-family-out scores of all the
   training families (the figure at them is optimistic: reported, not claimed);
4. the train-WorkArena / test-WebArena fold, nested the same way (model and knobs from
   WorkArena families only);
5. the final model is fitted on all training steps and written, with its knobs,
   cross-validation scores and provenance, to ``lrlab/reducers/learned_model.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import warnings
from datetime import UTC, datetime

import numpy as np

from lrlab.agent.split import half_of
from lrlab.reducers.features import DEMOTE_ONLY, FEATURES
from lrlab.reducers.learned import MODEL_FILE
from lrlab.tuning.crossval import Fold, folds
from lrlab.tuning.learned_cv import (
    MIN_REDUCTION,
    TIE,
    choose_knobs,
    fit_model,
    nested_cv,
    out_of_fold,
    prepare,
    step_results,
)
from lrlib import runinfo
from lrlib.data import dataset as data
from lrlib.data.evidence import mfs_sets
from lrlib.eval.intervals import interval
from lrlib.paths import miniwob_path

# the positives of the shipped model (--labels) and what its knob choice maximises
# (--measure). Issue 33 tried "decision" for both (targets, decision evidence and every
# minimal failure set as positives; knobs for decision evidence coverage): in nested CV it
# lost target coverage on every benchmark (recorded pages 98.6% -> 91.8%, the MiniWoB tuning
# half 65%, WorkArena -> WebArena 100% -> 73%), so the shipped model keeps these defaults
LABELS = "targets"
MEASURE = "evidence"
GRID: dict[str, tuple] = {  # the knobs chosen inside CV (every combination)
    # share of the page's tokens; none above 0.25: from 0.26 on, the guard's held-out attack
    # shapes show their payload on more steps (27 of 114, not 26: figures/injection_guard),
    # and a reducer may keep more only if payload visibility does not rise
    "budget": (0.2, 0.22, 0.23, 0.24, 0.25),
    "overhead": (0, 10, 15, 20, 25, 30),  # tokens beyond that share (small pages)
    "floor": (0.0, 0.0025, 0.01, 0.02, 0.05),  # never keep a line less likely than this
}


def training_steps() -> list:
    """The training rows: recorded train+validation steps, then the MiniWoB steps of the
    tuning half of the task types (:func:`lrlab.agent.split.half_of`)."""
    traces = [s for s in data.load_steps() if s.meta.get("split") in ("train", "validation")]
    small = data.load_steps(path=miniwob_path())
    return traces + [s for s in small if miniwob_split(s.family) == "tuning"]


def miniwob_split(family: str) -> str:
    """The committed half (``tuning``/``heldout``) of a MiniWoB step's task type.

    >>> miniwob_split("miniwob.click-test"), miniwob_split("miniwob.click-button")
    ('tuning', 'heldout')
    """
    return half_of(family.removeprefix("miniwob."))


def failure_sets(steps: list) -> dict[str, list[int]]:
    """step_id -> the union of every policy's minimal failure sets of the step (the files
    ``lrlib mfs`` wrote: :func:`lrlib.data.evidence.mfs_sets`)."""
    out: dict[str, set[int]] = {}
    for sets in mfs_sets(s.step_id for s in steps).values():
        for step_id, lines in sets.items():
            out.setdefault(step_id, set()).update(lines)
    return {k: sorted(v) for k, v in out.items()}


def summary(red: np.ndarray, hit: np.ndarray, ev: np.ndarray, episodes=None) -> dict:
    """Coverage, evidence coverage and median reduction of per-step results, with n, and
    with ``episodes`` their 95% intervals from a bootstrap over episodes."""
    has = ~np.isnan(hit)
    out = {
        "coverage": round(float(hit[has].mean()), 4) if has.any() else float("nan"),
        "evidence_coverage": round(float(np.nanmean(ev)), 4),
        "median_reduction": round(float(np.nanmedian(red)), 4),
        "n_target": int(has.sum()),
        "n_evidence": int((~np.isnan(ev)).sum()),
        "n_steps": int((~np.isnan(red)).sum()),
    }
    if episodes is not None:
        for key, values, stat in (("coverage", hit, "mean"), ("evidence_coverage", ev, "mean"),
                                  ("median_reduction", red, "median")):  # fmt: skip
            ci = interval(values, episodes, stat)
            out[f"{key}_lo"], out[f"{key}_hi"] = round(ci["lo"], 4), round(ci["hi"], 4)
        eps = np.asarray(episodes)
        out["n_episodes"] = len(set(eps))
        out["n_episodes_target"] = len(set(eps[has]))
        out["n_episodes_evidence"] = len(set(eps[~np.isnan(ev)]))
    return out


def by_benchmark(steps, results) -> dict[str, dict]:
    """:func:`summary` with intervals per benchmark kind: the recorded traces and MiniWoB."""
    kind = np.array(["miniwob" if s.benchmark == "miniwob" else "traces" for s in steps])
    eps = np.array([str(s.meta.get("episode") or s.step_id) for s in steps], dtype=object)
    return {
        k: summary(*(np.asarray(v)[kind == k] for v in results), episodes=eps[kind == k])
        for k in sorted(set(kind))
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--C", type=float, default=0.1, help="inverse L2 strength")
    parser.add_argument("--inner", type=int, default=4, help="inner grouped folds (nested CV)")
    parser.add_argument("--dry-run", action="store_true", help="print, do not write the file")
    parser.add_argument(
        "--labels",
        choices=("targets", "answer", "evidence", "decision"),
        default=LABELS,
        help="positives: target lines (the default); plus the page text reporting steps "
        "report (answer); plus every evidence line (evidence); plus every decision evidence "
        "line and every minimal failure set (decision)",
    )
    parser.add_argument(
        "--measure",
        choices=("evidence", "decision", "coverage"),
        default=MEASURE,
        help="what the knob choice maximises (default: evidence coverage)",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)

    digests = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in (data.default_path(), miniwob_path())
    }
    steps = training_steps()
    start = time.perf_counter()
    label = {"targets": False, "answer": "answer", "evidence": True, "decision": "decision"}[
        args.labels
    ]
    mfs = failure_sets(steps) if args.labels == "decision" else {}
    print(f"{len(steps)} training steps, {len(mfs)} with minimal failure sets; features ...")
    cache = prepare(steps, label=label, mfs=mfs)
    fam = folds(steps, "family")
    families = [s.family for s in steps]
    # 1. honest figure: knobs chosen inside every outer fold, on inner folds of the others
    scores, fold_knobs = nested_cv(
        cache, families, fam, GRID, MIN_REDUCTION, args.C, args.inner, args.measure
    )
    nested = step_results(steps, cache, scores, fold_knobs)
    nested_decision = step_results(steps, cache, scores, fold_knobs, definition="decision")
    print(f"nested (honest) CV: {by_benchmark(steps, nested)}")
    print(f"nested CV, decision evidence: {by_benchmark(steps, nested_decision)}")
    per_family = []
    for f in fam:
        part = [np.asarray(v)[f.test_idx] for v in nested]
        per_family.append({"family": f.name, "knobs": fold_knobs[f.test_idx[0]], **summary(*part)})
    # 2. the shipped knobs: chosen the same way on all training families
    oof = out_of_fold(cache, fam, args.C)
    knobs, table = choose_knobs(cache, oof, GRID, MIN_REDUCTION, args.measure)
    chosen = next(r for r in table if all(r[k] == v for k, v in knobs.items()))
    # 3. WorkArena -> WebArena: model and knobs from WorkArena families only
    bench = np.array([s.benchmark for s in steps])
    wa, we = np.flatnonzero(bench == "workarena"), np.flatnonzero(bench == "webarena")
    wa_scores, wa_knobs = nested_cv(
        cache, families, [Fold("workarena->webarena", wa, we)], GRID, MIN_REDUCTION, args.C,
        args.inner, args.measure,
    )  # fmt: skip
    eps = np.array([str(s.meta.get("episode") or s.step_id) for s in steps], dtype=object)
    wa_res = step_results(steps, cache, wa_scores, wa_knobs)
    wa_we = summary(*(np.asarray(v)[we] for v in wa_res), episodes=eps[we])
    wa_dec = step_results(steps, cache, wa_scores, wa_knobs, definition="decision")
    wa_we_decision = summary(*(np.asarray(v)[we] for v in wa_dec), episodes=eps[we])
    model = fit_model(np.vstack([d.X for d in cache]), np.concatenate([d.y for d in cache]), args.C)
    seconds = time.perf_counter() - start
    n_traces = sum(s.benchmark != "miniwob" for s in steps)
    record = {
        "model": model.to_dict(),
        "knobs": knobs,
        "provenance": runinfo.provenance(
            split="train+validation traces and the MiniWoB steps of the tuning half of the "
            "task types (data/live/task_split.json; test and held-out task types never read)",
            datasets=digests,
            n_steps=len(steps),
            n_steps_traces=n_traces,
            n_steps_miniwob=len(steps) - n_traces,
            n_lines=int(sum(len(d.X) for d in cache)),
            n_positive=int(sum(int(d.y.sum()) for d in cache)),
            n_steps_mfs=len(mfs),
            label={
                "targets": "target lines of the recorded next action",
                "answer": "target lines of the recorded next action, and on reporting steps "
                "the page text the answer reports (evidence groups of kind 'answer')",
                "evidence": "target lines and every evidence line of the recorded action",
                "decision": "target lines, every decision evidence line of the recorded "
                "action (lrlib.data.evidence.decision_groups) and every line of every "
                "minimal failure set of every policy (data/mfs, lrlib mfs --sets)",
            }[args.labels],
            measure=args.measure,
            estimator=f"sklearn LogisticRegression(C={args.C}, class_weight='balanced', "
            "solver='newton-cholesky'), standardised features; "
            f"{', '.join(DEMOTE_ONLY)} held to weights <= 0",
            C=args.C,
            script="benchmarks/train_learned.py",
            date=datetime.now(UTC).date().isoformat(),
            seconds=round(seconds, 1),
        ),
        "cv": {
            "scheme": "leave one task family out (lrlab.tuning.crossval, 'family'); MiniWoB "
            "task types are families",
            "min_reduction": MIN_REDUCTION,
            "rule": f"max mean {args.measure} coverage (lrlib.data.evidence) "
            "over benchmark kinds s.t. the low end of every "
            "kind's median reduction (95% interval, bootstrap over episodes) >= its floor; "
            f"coverages within {TIE} of the best tie, broken by the larger headroom above "
            "the floors, then target coverage (learned_cv.choose_knobs; reductions from "
            "per-line token sums)",
            "nested": {
                "scheme": f"outer: leave one family out; inner: {args.inner} grouped folds "
                "of the other families choose the knobs (honest: no knob saw the "
                "held-out family)",
                **summary(*nested),
                "by_benchmark": by_benchmark(steps, nested),
                "decision_by_benchmark": by_benchmark(steps, nested_decision),
            },
            "chosen": chosen,
            "grid": table,
            "per_family": per_family,
            "workarena_to_webarena": {"knobs": wa_knobs[we[0]], **wa_we},
            "workarena_to_webarena_decision": {"knobs": wa_knobs[we[0]], **wa_we_decision},
        },
    }
    print(f"chosen knobs {knobs}: CV at them (optimistic, chosen there) {chosen}")
    print(f"WorkArena -> WebArena (knobs {wa_knobs[we[0]]}): {wa_we}")
    print(f"weights: {dict(zip(FEATURES, np.round(model.coef, 2).tolist(), strict=True))}")
    text = json.dumps(record, indent=1) + "\n"
    if args.dry_run:
        print(text[:2000])
    else:
        MODEL_FILE.write_text(text)
        print(f"model written to {MODEL_FILE} ({len(FEATURES)} features, {seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
