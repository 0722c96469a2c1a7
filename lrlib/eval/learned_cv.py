"""Training and honest evaluation of the learned line scorer (:mod:`.learned`).

- :func:`labels` and :func:`fit_model`: the training rows and the fit (scikit-learn);
- :func:`prepare`: a per-tree cache (features, labels, per-line and stub token counts,
  parents), built once, so that a knob grid is scored in milliseconds per step;
- :func:`fast_results`: reduction and target coverage from that cache (tokens summed per
  line: within 0.1 point of the exact rendering, used to *choose* knobs only);
- :func:`out_of_fold` and :func:`nested_cv`: grouped cross-validation. In the nested one
  every outer fold (a held-out task family) gets knobs chosen on inner folds of the other
  families only (:func:`lrlib.data.crossval.group_kfold`), so the outer figure is honest: no
  knob ever saw the family it is measured on;
- :func:`step_results` (exact, for reporting) and :func:`curve` (the threshold sweep).

>>> s = Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'", target_bids=("1",))
>>> d = prepare([s])[0]
>>> d.X.shape[0], d.y.tolist(), fast_results([d], [np.array([0.9, 0.1])], {"threshold": 0.5})
(2, [1, 0], (array([0.5]), array([1.])))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from lrlib.core.step import Step
from lrlib.reducers.chunking import lines_output
from lrlib.reducers.features import FEATURES, line_features, rescued_lines, short_lines
from lrlib.reducers.learned import LineModel, keep_from_scores
from lrlib.reducers.registry import get_reducer

KNOB_KEYS = ("threshold", "min_keep", "cheap", "max_share", "rescue")


def labels(step: Step, evidence: bool = False) -> np.ndarray:
    """1 on the step's target lines and, with ``evidence``, on every line of its evidence
    groups (:func:`lrlib.eval.metrics.evidence_status`: the chosen option, a field's label, the
    lines an answer quotes...). The shipped model is trained on targets only: with evidence
    labels, cross-validated median reduction at 98% target coverage fell from 71% to 48%
    (the positives become diffuse), and evidence coverage is reported, not trained on.

    >>> s = Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'\\n\\t[3] option 'M'",
    ...          target_bids=("1",), meta={"action": "select_option('1', 'M')"})
    >>> labels(s, evidence=True).tolist(), labels(s).tolist()
    ([1, 0, 1], [1, 0, 0])
    """
    from lrlib.eval.metrics import evidence_status

    y = np.zeros(len(step.axtree), int)
    for n in step.target_lines:
        y[n - 1] = 1
    if evidence:
        status, groups = evidence_status(step)
        for group in groups if status == "ok" else ():
            for n in group:
                if 1 <= n <= len(y):
                    y[n - 1] = 1
    return y


def fit_model(
    X: np.ndarray, y: np.ndarray, C: float = 1.0, features: Sequence[str] = FEATURES
) -> LineModel:
    """Fit the scorer: scikit-learn's balanced logistic regression (L2, inverse strength
    ``C``; Newton-Cholesky, converged in ~10 iterations) on standardised columns.

    >>> X = np.array([[0.0], [1.0], [0.1], [0.9]]); y = np.array([0, 1, 0, 1])
    >>> m = fit_model(X, y, features=["x"])
    >>> bool(m.predict(np.array([[1.0]]))[0] > 0.5)
    True
    """
    from sklearn.linear_model import LogisticRegression

    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    clf = LogisticRegression(C=C, class_weight="balanced", solver="newton-cholesky", max_iter=200)
    clf.fit((X - mean) / scale, y)
    return LineModel(features, mean, scale, clf.coef_[0], float(clf.intercept_[0]))


@dataclass
class StepData:
    """What scoring a step needs, computed once: features ``X``, labels ``y``, per-line
    tokens and ``[bid] role`` stub tokens, parents, short lines, 0-based target lines
    (None: no target in the tree)."""

    X: np.ndarray
    y: np.ndarray
    tokens: np.ndarray
    stub_tokens: np.ndarray
    parents: np.ndarray
    short: np.ndarray
    targets: list[int] | None


def prepare(steps: Sequence[Step], encoding: str | None = None) -> list[StepData]:
    """The :class:`StepData` of every step (the expensive part: ~30 ms a step)."""
    from lrlib.core.pruning import _stub
    from lrlib.core.tokens import DEFAULT_ENCODING, line_token_counts
    from lrlib.eval.metrics import target_status

    enc = encoding or DEFAULT_ENCODING
    out = []
    for s in steps:
        t = s.axtree
        stubs = [_stub(t, i) for i in range(len(t))]
        ok = target_status(s) == "ok"
        out.append(
            StepData(
                X=line_features(s),
                y=labels(s),
                tokens=np.asarray(line_token_counts(t.texts, enc), float),
                stub_tokens=np.asarray(line_token_counts(stubs, enc), float),
                parents=np.asarray(t.parents, int),
                short=short_lines(s),
                targets=[n - 1 for n in s.target_lines] if ok else None,
            )
        )
    return out


def kept_lines(d: StepData, p: np.ndarray, knobs: dict[str, Any]) -> list[int]:
    """The 1-based lines the reducer keeps with these knobs (as :class:`.learned.Learned`)."""
    k = {key: knobs[key] for key in KNOB_KEYS if key in knobs}
    rescue = int(k.pop("rescue", 0))
    lines = keep_from_scores(p, short=d.short, **k)
    if rescue:
        lines = sorted(set(lines) | set(rescued_lines(d.X, rescue)))
    return lines


def fast_results(
    data: Sequence[StepData], scores: Sequence[np.ndarray], knobs: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Per-step (reduction, target coverage; NaN without a target) from the cache: kept
    lines' tokens plus the stubs of their ancestors, over the tree's tokens."""
    red = np.zeros(len(data))
    hit = np.full(len(data), np.nan)
    for k, (d, p) in enumerate(zip(data, scores, strict=True)):
        keep = np.zeros(len(p), bool)
        keep[np.asarray(kept_lines(d, p, knobs), int) - 1] = True
        marked, cost = keep.copy(), float(d.tokens[keep].sum())
        for a in np.flatnonzero(keep):
            q = d.parents[a]
            while q >= 0 and not marked[q]:
                marked[q] = True
                cost += d.stub_tokens[q]
                q = d.parents[q]
        total = float(d.tokens.sum())
        red[k] = 1.0 - cost / total if total else 0.0
        if d.targets is not None:
            hit[k] = float(all(keep[j] for j in d.targets))
    return red, hit


def _fit(data: Sequence[StepData], idx: Sequence[int], C: float) -> LineModel:
    return fit_model(
        np.vstack([data[i].X for i in idx]), np.concatenate([data[i].y for i in idx]), C
    )


def out_of_fold(data: Sequence[StepData], folds: Sequence[Any], C: float = 1.0) -> list:
    """Each step's line scores from the model fitted on its fold's train rows (``folds``:
    :func:`lrlib.data.crossval.folds` or anything with ``train_idx``/``test_idx``); None for
    steps in no test fold."""
    out: list[np.ndarray | None] = [None] * len(data)
    for fold in folds:
        model = _fit(data, fold.train_idx, C)
        for i in fold.test_idx:
            out[i] = model.predict(data[i].X)
    return out


def choose_knobs(
    data: Sequence[StepData],
    scores: Sequence[np.ndarray],
    grid: dict[str, Sequence[Any]],
    min_reduction: float,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The knobs of ``grid`` (every combination) with the best target coverage among those
    whose median reduction is at least ``min_reduction`` (none: the largest reduction);
    ties: the lowest threshold, then the larger reduction. Returns (knobs, scored grid)."""
    rows = []
    for values in product(*grid.values()):
        knobs = dict(zip(grid, values, strict=True))
        red, hit = fast_results(data, scores, knobs)
        cov = float(np.nanmean(hit)) if (~np.isnan(hit)).any() else 0.0
        rows.append(
            {
                **knobs,
                "coverage": round(cov, 4),
                "median_reduction": round(float(np.median(red)), 4),
            }
        )
    ok = [r for r in rows if r["median_reduction"] >= min_reduction] or [
        max(rows, key=lambda r: r["median_reduction"])
    ]
    best = max(ok, key=lambda r: (r["coverage"], -r["threshold"], r["median_reduction"]))
    return {k: best[k] for k in grid}, rows


def nested_cv(
    data: Sequence[StepData],
    groups: Sequence[str],
    outer: Sequence[Any],
    grid: dict[str, Sequence[Any]],
    min_reduction: float,
    C: float = 1.0,
    inner: int = 4,
) -> tuple[list, list[dict[str, Any] | None]]:
    """Honest grouped CV: for every ``outer`` fold, knobs chosen by :func:`choose_knobs` on
    scores from ``inner`` grouped folds of its train rows (``groups``: one label per row),
    and the fold's test rows scored by a model fitted on all its train rows. Returns the
    per-step scores and knobs (None outside every test fold)."""
    from lrlib.data.crossval import group_kfold

    scores: list[np.ndarray | None] = [None] * len(data)
    knobs: list[dict[str, Any] | None] = [None] * len(data)
    for fold in outer:
        train = np.asarray(fold.train_idx)
        inner_scores: list[np.ndarray | None] = [None] * len(train)
        for tr, te in group_kfold([groups[i] for i in train], inner):
            model = _fit(data, train[tr], C)
            for j in te:
                inner_scores[j] = model.predict(data[train[j]].X)
        chosen, _ = choose_knobs([data[i] for i in train], inner_scores, grid, min_reduction)
        model = _fit(data, train, C)
        for i in fold.test_idx:
            scores[i], knobs[i] = model.predict(data[i].X), chosen
    return scores, knobs


def step_results(
    steps: Sequence[Step],
    data: Sequence[StepData],
    scores: Sequence[np.ndarray | None],
    knobs: dict[str, Any] | Sequence[dict[str, Any] | None],
    encoding: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact per-step token reduction, target and evidence coverage (NaN: no target, or no
    scores) of keeping lines by ``scores`` with ``knobs`` (one dict, or one per step),
    rendered with ``strategy="structure"``."""
    from lrlib.core.tokens import DEFAULT_ENCODING, count_lines, count_tokens
    from lrlib.eval.metrics import covers, covers_evidence

    enc = encoding or DEFAULT_ENCODING
    per_step = [knobs] * len(steps) if isinstance(knobs, dict) else list(knobs)
    red, hit, ev = (np.full(len(steps), np.nan) for _ in range(3))
    for k, (s, d, p, kn) in enumerate(zip(steps, data, scores, per_step, strict=True)):
        if p is None or kn is None:
            continue
        out = lines_output(s.axtree, kept_lines(d, p, kn), "structure")
        before = count_lines(s.axtree.texts, enc)
        red[k] = 1.0 - count_tokens(out.text, enc) / before if before else 0.0
        c = covers(s, out.kept, out.stubs)
        hit[k] = np.nan if c is None else float(c)
        e = covers_evidence(s, out.kept)
        ev[k] = np.nan if e is None else float(e)
    return red, hit, ev


def curve(
    steps: Sequence[Step],
    thresholds: Sequence[float] = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9),
    model_file: str | Path | None = None,
) -> Any:
    """Coverage against median token reduction as ``threshold`` varies (one row each), for
    the shipped model and its other knobs. Features are computed once.

    >>> s = [Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'",
    ...           target_bids=("1",))]
    >>> c = curve(s, thresholds=(0.0, 10.0))  # 10: above any probability, even cheap lines
    >>> c.coverage.tolist(), bool(c.median_reduction.iloc[1] > c.median_reduction.iloc[0])
    ([1.0, 0.0], True)
    """
    import pandas as pd

    base = get_reducer("learned", model_file=model_file)
    knobs = {key: getattr(base, key) for key in KNOB_KEYS}
    data = prepare(steps, base.encoding)
    scores = [base.model.predict(d.X) for d in data]
    rows = []
    for t in thresholds:
        red, hit, ev = step_results(steps, data, scores, {**knobs, "threshold": t}, base.encoding)
        has = ~np.isnan(hit)
        rows.append(
            {
                "threshold": t,
                "median_reduction": float(np.nanmedian(red)) if len(red) else float("nan"),
                "coverage": float(np.nanmean(hit)) if has.any() else float("nan"),
                "evidence_coverage": (
                    float(np.nanmean(ev)) if (~np.isnan(ev)).any() else float("nan")
                ),
                "n_steps": len(steps),
                "n_target": int(has.sum()),
            }
        )
    return pd.DataFrame(rows)
