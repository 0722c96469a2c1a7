"""How the tunable reducers generalise: grouped CV, the test split, WorkArena -> WebArena.

Usage: ``python benchmarks/bench_generalisation.py [--out results.csv] [--fast] [--skip NAME ...]
[--budgets 0.2 0.25 ...]`` (the last: the learned scorer's operating points, one row per budget)

For ``learned`` and ``program`` (and the untuned ``bm25``, ``bm25:unit=chunks`` and
``embedding`` baselines for reference), target coverage, evidence coverage and median token
reduction with 95% intervals from a bootstrap over episodes (:mod:`lrlib.eval.intervals`):

- ``cv-family``: leave one task family out over train+validation, nested: each family is
  measured with a model fitted and knobs chosen on the other families only (the learned
  scorer's knobs on inner grouped folds of them, :func:`lrlab.tuning.learned_cv.
  nested_cv`, its training rows including the MiniWoB train half as the shipped model's
  do; the program's by its tuner on them), so no knob saw the family it is measured on;
  untuned baselines: their figure on the same steps (the embedding baseline on validation
  only: its vectors ship for validation and test, :mod:`lrlab.report.packs`);
- ``miniwob-train cv`` (learned only): the same nested CV's figure on the MiniWoB train
  half's task types, each held out in turn;
- ``test``: the shipped model and knobs on the test split (whole held-out task families,
  never used for tuning);
- ``workarena->webarena``: fitted (and knobs chosen) on WorkArena train+validation steps
  only, measured on every WebArena step (the embedding baseline: validation and test ones);
- ``miniwob-check``: the shipped reducers on the MiniWoB steps of the held-out half of the
  task types (``data/live/task_split.json``; no choice ever read them);
- ``gap``: cv-family minus test (coverage, points), interval from independent bootstraps.

Targets of the evidence issue (evidence coverage, information reading,
:mod:`lrlib.data.evidence`, printed first): the recommended reducer keeps the evidence on
>= 90% and the target on >= 95% of steps at >= 70% median reduction on test and on
WorkArena -> WebArena, and the evidence on >= 85% at >= 60% on small out-of-domain pages
(here: the MiniWoB check half). Earlier targets (generalisation issue): >= 95% target
coverage at >= 70% on test and WA->WE, gap <= 3 points; >= 90% at >= 60% on MiniWoB.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from lrlab.reducers.learned import load_model
from lrlab.reducers.program import Program
from lrlab.tuning.crossval import Fold, folds
from lrlab.tuning.learned_cv import (
    KNOB_KEYS,
    MIN_REDUCTION,
    nested_cv,
    out_of_fold,
    prepare,
    step_results,
)
from lrlab.tuning.program_tuning import TuningSet, cross_validate, tune
from lrlib.data import dataset as data
from lrlib.eval.evaluation import evaluate
from lrlib.eval.intervals import interval
from lrlib.eval.metrics import covers, covers_evidence
from lrlib.paths import miniwob_path
from lrlib.reducers import get_reducer

sys.path.insert(0, str(Path(__file__).parent))
from train_learned import GRID, LABELS, MEASURE, failure_sets, miniwob_split  # noqa: E402

# (the same knob grid, labels and knob measure as the shipped model)
from tune_program import MIN_EVIDENCE  # noqa: E402  (the program's tuning constraint)

BASELINES = ("bm25", "bm25:unit=chunks", "embedding")
# baselines whose vectors ship only for validation+test (lrlab.report.packs): measured there only,
# so a fresh clone computes nothing (their cv-family row is validation alone)
PACKED = {"embedding": ("validation", "test")}
N_BOOT = 2000


def _reps(values: np.ndarray, episodes: np.ndarray, seed: int = 0) -> np.ndarray:
    """Bootstrap replicates of the mean of ``values`` resampling whole episodes."""
    keep = ~np.isnan(values)
    v, e = values[keep], episodes[keep]
    codes, uniq = pd.factorize(pd.Series(e))
    w = np.random.default_rng(seed).multinomial(
        len(uniq), np.full(len(uniq), 1 / len(uniq)), N_BOOT
    )
    sums = np.bincount(codes, weights=v, minlength=len(uniq))
    counts = np.bincount(codes, minlength=len(uniq))
    return (w @ sums) / (w @ counts)


def _row(setting: str, reducer: str, red, hit, ev, ep) -> dict:
    cov = interval(hit, ep, "mean")
    evi = interval(ev, ep, "mean")
    med = interval(red, ep, "median")
    return {
        "setting": setting,
        "reducer": reducer,
        "coverage": cov["estimate"],
        "coverage_lo": cov["lo"],
        "coverage_hi": cov["hi"],
        "n_target": cov["n_steps"],
        "n_episodes": cov["n_episodes"],
        "evidence": evi["estimate"],
        "evidence_lo": evi["lo"],
        "evidence_hi": evi["hi"],
        "n_evidence": evi["n_steps"],
        "median_reduction": med["estimate"],
        "reduction_lo": med["lo"],
        "reduction_hi": med["hi"],
        "n_steps": med["n_steps"],
    }


def _exact(reducer, steps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-step reduction, target and evidence coverage of ``reducer`` (exact evaluation)."""
    red, hit, ev = [], [], []
    for s in steps:
        r = reducer.reduce(s)
        red.append(r.reduction)
        c, e = covers(s, r.kept, r.stubs), covers_evidence(s, r.kept)
        hit.append(np.nan if c is None else float(c))
        ev.append(np.nan if e is None else float(e))
    return np.array(red), np.array(hit), np.array(ev)


def _stage(name: str, start: float) -> None:
    print(f"[{time.perf_counter() - start:6.0f} s] {name} done", file=sys.stderr, flush=True)


def _episodes(steps) -> np.ndarray:
    return np.array([str(s.meta.get("episode") or s.step_id) for s in steps], dtype=object)


def operating_points(settings: dict, budgets: list[float]) -> str:
    """A markdown table: per budget (the learned scorer's other knobs as in ``settings``),
    evidence / target coverage / median reduction with 95% intervals over episodes in each
    setting (``settings``: column -> (steps, prepared steps, scores, knobs)); n = steps
    with evidence / their episodes."""
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    head, rows = [], {b: [] for b in budgets}
    for name, (steps, cache, scores, knobs) in settings.items():
        eps = _episodes(steps)
        for b in budgets:
            red, hit, ev = step_results(steps, cache, scores, {**knobs, "budget": b})
            e, c = interval(ev, eps, "mean"), interval(hit, eps, "mean")
            m = interval(red, eps, "median")
            rows[b].append(f"{pct(e['estimate'])} [{pct(e['lo'])}, {pct(e['hi'])}] / "
                           f"{pct(c['estimate'])} / {pct(m['estimate'])}%")  # fmt: skip
        has = ~np.isnan(ev)
        head.append(f"{name} (n={int(has.sum())}/{len(set(eps[has]))})")
    lines = ["| budget | " + " | ".join(head) + " |", "|---" * (len(settings) + 1) + "|"]
    lines += [f"| {b:g} | " + " | ".join(cells) + " |" for b, cells in rows.items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the table as CSV here")
    parser.add_argument("--fast", action="store_true", help="fewer tuning draws for program CV")
    parser.add_argument(
        "--skip", nargs="*", default=[], help="baselines (or 'program') to leave out"
    )
    parser.add_argument(
        "--budgets",
        nargs="*",
        type=float,
        default=[],
        help="also the learned scorer's operating points: these budgets, other knobs as chosen",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    start = time.perf_counter()
    steps = data.load_steps()
    split = np.array([s.meta.get("split") for s in steps])
    bench = np.array([s.meta.get("benchmark") for s in steps])
    dev_idx = np.flatnonzero(split != "test")
    test_idx = np.flatnonzero(split == "test")
    dev = [steps[i] for i in dev_idx]
    wa = np.flatnonzero((bench == "workarena") & (split != "test"))
    we = np.flatnonzero(bench == "webarena")
    ep = _episodes(steps)
    results: dict[tuple[str, str], tuple[np.ndarray, ...]] = {}

    # learned: nested CV over its training rows (train+validation traces and the MiniWoB
    # train half, as the shipped model): knobs chosen inside every fold on inner folds
    small = [x for x in data.load_steps(path=miniwob_path())]
    pool_idx = list(dev_idx)
    pool = dev + [x for x in small if miniwob_split(x.family) == "tuning"]
    check = [x for x in small if miniwob_split(x.family) == "heldout"]
    shipped = get_reducer("learned")
    C = float(load_model()[1]["provenance"].get("C", 0.1))
    label = "decision" if LABELS == "decision" else False
    mfs = failure_sets(steps + pool[len(pool_idx) :]) if LABELS == "decision" else {}
    cache = prepare(steps, shipped.encoding, label=label, mfs=mfs)
    pool_cache = [cache[i] for i in pool_idx] + prepare(
        pool[len(pool_idx) :], shipped.encoding, label=label, mfs=mfs
    )
    scores, knobs = nested_cv(
        pool_cache, [x.family for x in pool], folds(pool, "family"), GRID, MIN_REDUCTION, C,
        measure=MEASURE,
    )  # fmt: skip
    pooled = step_results(pool, pool_cache, scores, knobs)
    n_dev = len(dev)
    results["cv-family", "learned"] = (*(v[:n_dev] for v in pooled), ep[dev_idx])
    results["miniwob-train cv", "learned"] = (*(v[n_dev:] for v in pooled), _episodes(pool[n_dev:]))
    shipped_knobs = {key: getattr(shipped, key) for key in KNOB_KEYS}
    test_steps = [steps[i] for i in test_idx]
    test_cache = [cache[i] for i in test_idx]
    test_scores = [shipped.model.predict(d.X) for d in test_cache]
    results["test", "learned"] = (
        *step_results(test_steps, test_cache, test_scores, shipped_knobs),
        ep[test_idx],
    )
    check_cache = prepare(check, shipped.encoding)
    results["miniwob-check", "learned"] = (
        *step_results(check, check_cache, [shipped.model.predict(d.X) for d in check_cache],
                      shipped_knobs),
        _episodes(check),
    )  # fmt: skip
    cross = Fold("workarena->webarena", wa, we)
    fam_all = [x.family for x in steps]
    wa_scores, wa_knobs = nested_cv(
        cache, fam_all, [cross], GRID, MIN_REDUCTION, C, measure=MEASURE
    )
    results["workarena->webarena", "learned"] = (
        *step_results(
            [steps[i] for i in we],
            [cache[i] for i in we],
            [wa_scores[i] for i in we],
            [wa_knobs[i] for i in we],
        ),
        ep[we],
    )
    print(f"learned: WorkArena-only knobs {wa_knobs[we[0]]}", file=sys.stderr)
    if args.budgets:
        settings = {  # (steps, cache, scores, knobs) of each column
            "CV, recorded pages": (dev, pool_cache[:n_dev],
                                   out_of_fold(pool_cache, folds(pool, "family"), C)[:n_dev],
                                   shipped_knobs),
            "test": (test_steps, test_cache, test_scores, shipped_knobs),
            "WA->WE": ([steps[i] for i in we], [cache[i] for i in we],
                       [wa_scores[i] for i in we], wa_knobs[we[0]]),
            "MiniWoB check": (check, check_cache,
                              [shipped.model.predict(d.X) for d in check_cache], shipped_knobs),
        }  # fmt: skip
        print(operating_points(settings, args.budgets))
    _stage("learned", start)
    if "program" not in args.skip:
        # program: knobs re-tuned inside every fold, then measured exactly
        draws = {"samples": 60, "restarts": 2} if args.fast else {"samples": 150, "restarts": 5}
        tset = TuningSet(steps)
        gfolds = [
            Fold(f.name, dev_idx[f.train_idx], dev_idx[f.test_idx]) for f in folds(dev, "family")
        ]
        _, _, per_fold = cross_validate(tset, gfolds, 0.97, min_evidence=MIN_EVIDENCE, **draws)
        parts = [_exact(Program(**r["knobs"]), [steps[i] for i in g.test_idx])
                 for g, r in zip(gfolds, per_fold, strict=True)]  # fmt: skip
        order = np.concatenate([g.test_idx for g in gfolds])
        results["cv-family", "program"] = (
            *(np.concatenate([p[k] for p in parts]) for k in range(3)),
            ep[order],
        )
        results["test", "program"] = (
            *_exact(get_reducer("program"), [steps[i] for i in test_idx]),
            ep[test_idx],
        )
        results["miniwob-check", "program"] = (
            *_exact(get_reducer("program"), check),
            _episodes(check),
        )
        k_wa, _ = tune(tset, 0.97, idx=wa, min_evidence=MIN_EVIDENCE, **draws)
        results["workarena->webarena", "program"] = (
            *_exact(Program(**asdict(k_wa)), [steps[i] for i in we]),
            ep[we],
        )

        _stage("program", start)
    # untuned baselines: the same steps of each setting
    baselines = [b for b in BASELINES if b not in args.skip]
    frames = []
    for name in baselines:
        only = PACKED.get(name)
        sub = [s for s in steps if only is None or s.meta.get("split") in only]
        frames.append(evaluate([name], sub, progress=False))
        _stage(name, start)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    for name in baselines:
        part = frame[frame.reducer == name].set_index("step_id")
        for setting, idx in (
            ("cv-family", dev_idx),
            ("test", test_idx),
            ("workarena->webarena", we),
        ):
            idx = np.array([i for i in idx if steps[i].step_id in part.index], int)
            ids = [steps[i].step_id for i in idx]
            sub = part.loc[ids]
            hit = sub["covered"].astype("float64").to_numpy()
            ev = sub["evidence_covered"].astype("float64").to_numpy()
            results[setting, name] = (sub["reduction"].to_numpy(float), hit, ev, ep[idx])
        if name not in PACKED:  # the check half has no packed vectors: computing them is slow
            sub = evaluate([name], check, progress=False)
            results["miniwob-check", name] = (
                sub["reduction"].to_numpy(float),
                sub["covered"].astype("float64").to_numpy(),
                sub["evidence_covered"].astype("float64").to_numpy(),
                _episodes(check),
            )

    order = ("cv-family", "test", "workarena->webarena", "miniwob-train cv", "miniwob-check")
    rows = [_row(s, r, *v) for (s, r), v in sorted(results.items(),
                                                    key=lambda kv: order.index(kv[0][0]))]  # fmt: skip
    for name in ("learned", "program", *baselines):
        if ("cv-family", name) not in results:
            continue
        _, hv, _, ev = results["cv-family", name]
        _, ht, _, et = results["test", name]
        d = _reps(hv, ev) - _reps(ht, et)
        rows.append(
            {
                "setting": "gap (cv - test)",
                "reducer": name,
                "coverage": float(np.nanmean(hv) - np.nanmean(ht)),
                "coverage_lo": float(np.quantile(d, 0.025)),
                "coverage_hi": float(np.quantile(d, 0.975)),
            }
        )
    table = pd.DataFrame(rows)
    pct = lambda x: "" if x != x else f"{100 * x:.1f}"  # noqa: E731

    def cell(r, key: str, lo: str, hi: str, n: str | None = None) -> str:
        v = getattr(r, key, np.nan)
        if pd.isna(v):
            return ""
        out = f"{pct(v)} [{pct(getattr(r, lo))}, {pct(getattr(r, hi))}]"
        return out + (f" n={int(getattr(r, n))}" if n and not pd.isna(getattr(r, n)) else "")

    print("| setting | reducer | evidence coverage [95% CI] n | target coverage [95% CI] n | "
          "episodes | median reduction [95% CI] n steps |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in table.itertuples():
        eps = "" if pd.isna(getattr(r, "n_episodes", np.nan)) else str(int(r.n_episodes))
        print(f"| {r.setting} | {r.reducer} | {cell(r, 'evidence', 'evidence_lo', 'evidence_hi', 'n_evidence')} "
              f"| {cell(r, 'coverage', 'coverage_lo', 'coverage_hi', 'n_target')} | {eps} "
              f"| {cell(r, 'median_reduction', 'reduction_lo', 'reduction_hi', 'n_steps')} |")  # fmt: skip
    print(f"\n({time.perf_counter() - start:.0f} s; shipped learned knobs {shipped_knobs})")
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
