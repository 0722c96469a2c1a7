"""Train the learned line scorer with grouped cross-validation; write its weights file.

Usage: ``python benchmarks/train_learned.py [--min-reduction 0.75] [--C 1.0] [--dry-run]``

Reads the ``train`` and ``validation`` splits only (never ``test``). Steps:

1. features (:mod:`lrlib.reducers.features`) and labels (target lines) for every step;
2. leave-one-task-family-out cross-validation (:func:`lrlib.crossval.folds`): each
   family's steps are scored by a model fitted on the other families;
3. the knobs (``threshold``, ``cheap``; ``rescue`` is a fixed prior) are chosen on those out-of-fold scores: the largest
   median token reduction whose cross-validated target coverage is at least
   ``--min-coverage``;
4. the train-WorkArena / test-WebArena fold is reported at the chosen knobs;
5. the final model is fitted on all train+validation steps and written, with its knobs,
   cross-validation scores and provenance, to ``lrlib/reducers/learned_model.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import warnings
from datetime import UTC, datetime

import numpy as np

from lrlib import data, runinfo
from lrlib.crossval import folds
from lrlib.reducers.features import FEATURES, line_features
from lrlib.reducers.learned import MODEL_FILE, fit_model, labels, out_of_fold, step_results

THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
CHEAP = (1.0, 0.5, 0.25)
RESCUE = 1  # a fixed prior for unseen sites (see learned.rescued_lines), not tuned


def _summary(red: np.ndarray, hit: np.ndarray, ev: np.ndarray) -> dict[str, float]:
    has = ~np.isnan(hit)
    return {
        "coverage": round(float(hit[has].mean()), 4) if has.any() else float("nan"),
        "evidence_coverage": round(float(np.nanmean(ev)), 4),
        "median_reduction": round(float(np.nanmedian(red)), 4),
        "n_target": int(has.sum()),
        "n_steps": int((~np.isnan(red)).sum()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-reduction", type=float, default=0.75)
    parser.add_argument("--C", type=float, default=1.0, help="inverse L2 strength")
    parser.add_argument("--dry-run", action="store_true", help="print, do not write the file")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)

    path = data.default_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    steps = [s for s in data.load_steps() if s.meta.get("split") in ("train", "validation")]
    start = time.perf_counter()
    X = [line_features(s) for s in steps]
    Y = [labels(s) for s in steps]
    fam = folds(steps, "family")
    oof = out_of_fold(X, Y, fam, args.C)
    grid = []
    for t in THRESHOLDS:
        for c in CHEAP:
            res = step_results(steps, oof, t, 0, c, rescue=RESCUE, features=X)
            grid.append({"threshold": t, "cheap": c, **_summary(*res)})
    ok = [g for g in grid if g["median_reduction"] >= args.min_reduction] or [
        max(grid, key=lambda g: g["median_reduction"])
    ]
    best = max(ok, key=lambda g: (g["coverage"], -g["threshold"], g["median_reduction"]))
    knobs = {
        "threshold": best["threshold"],
        "cheap": best["cheap"],
        "min_keep": 0,
        "rescue": RESCUE,
    }
    per_family = []
    for f in fam:
        sub = [steps[i] for i in f.test_idx]
        fx = [X[i] for i in f.test_idx]
        res = step_results(sub, [oof[i] for i in f.test_idx], **knobs, features=fx)
        per_family.append({"family": f.name, **_summary(*res)})
    bench = folds(steps, "benchmark")[0]
    wa_we = out_of_fold(X, Y, [bench], args.C)
    wa_we_res = step_results(steps, wa_we, **knobs, features=X)
    model = fit_model(np.vstack(X), np.concatenate(Y), args.C)
    seconds = time.perf_counter() - start
    record = {
        "model": model.to_dict(),
        "knobs": knobs,
        "provenance": runinfo.provenance(
            split="train+validation (test never read)",
            dataset=path.name,
            dataset_sha256_16=digest,
            n_steps=len(steps),
            n_lines=int(sum(len(x) for x in X)),
            n_positive=int(sum(int(y.sum()) for y in Y)),
            label="target lines of the recorded next action (evidence: reported only)",
            estimator=f"sklearn LogisticRegression(C={args.C}, class_weight='balanced'), "
            "standardised features",
            script="benchmarks/train_learned.py",
            date=datetime.now(UTC).date().isoformat(),
            seconds=round(seconds, 1),
        ),
        "cv": {
            "scheme": "leave one task family out (lrlib.crossval, 'family')",
            "min_reduction": args.min_reduction,
            "rule": "max coverage s.t. median reduction >= min_reduction; ties: lowest "
            "threshold, then larger reduction",
            "chosen": best,
            "grid": grid,
            "per_family": per_family,
            "workarena_to_webarena": _summary(*wa_we_res),
        },
    }
    print(f"chosen knobs {knobs}: CV {best}")
    print(f"WorkArena -> WebArena at these knobs: {record['cv']['workarena_to_webarena']}")
    text = json.dumps(record, indent=1) + "\n"
    if args.dry_run:
        print(text[:2000])
    else:
        MODEL_FILE.write_text(text)
        print(f"model written to {MODEL_FILE} ({len(FEATURES)} features)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
