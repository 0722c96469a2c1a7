"""A learned line scorer: logistic regression over transferable line features.

**The recommended offline reducer** (see ``benchmarks/bench_generalisation.py`` for its
cross-validated, test-split and WorkArena->WebArena figures with intervals). Every line of
the tree gets a probability of being what the next action needs, from the features of
:mod:`.features` (role group, depth, position, BM25 of the line and of its children's text
against goal and history, distance to the last acted element, ...), trained on the target
lines of recorded steps (evidence coverage, :mod:`lrlib.metrics`, is reported). Kept: lines with
``p >= threshold`` (``threshold * cheap`` for short lines, which cost ~10 tokens), the
``min_keep`` best lines of every page, and the ``rescue`` unnamed containers whose
children's text best matches the goal (:func:`rescued_lines`: a prior for sites unlike
the training data); their ancestors are shown as ``[bid] role`` stubs
(``strategy="structure"``). :func:`curve` sweeps ``threshold`` for the coverage-versus-
reduction curve.

The weights live in ``learned_model.json`` beside this module: feature names, scaler,
coefficients, the chosen knobs, and provenance (lrlib version, git commit, training split,
cross-validation scores, date). Loading is plain JSON and inference plain numpy: no
pickle, no scikit-learn at run time (training, :func:`fit_model`, needs it).

No page-controlled signal lifts a line alone: focus is not read (neither a feature nor a
length), so it never changes what is kept, and lexical match saturates (see
:mod:`.features`); ``tests/test_learned.py`` plants focused attack dialogs in real trees
and checks it. What the scorer still cannot tell apart is an attack *button* from a plain
one: on pages where it keeps every button, a planted button is kept too (measured in
``benchmarks/bench_generalisation.py``'s report), so it is no security boundary alone.

>>> from lrlib.step import Step
>>> tree = "RootWebArea 'Shop'\\n\\t[3] link 'Home'\\n\\t[4] button 'Add to cart'"
>>> r = get_reducer("learned").reduce(Step(goal="Add a mug to the cart", tree=tree))
>>> "Add to cart" in r.text
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..step import Step
from .base import Output, Reducer, get_reducer, register_reducer
from .chunking import lines_output
from .features import FEATURES, line_features, rescued_lines, short_lines

MODEL_FILE = Path(__file__).with_name("learned_model.json")


class LineModel:
    """Standardised logistic regression, evaluated with numpy from plain numbers.

    >>> m = LineModel(["a"], mean=[0.0], scale=[1.0], coef=[2.0], intercept=0.0)
    >>> m.predict(np.array([[0.0], [1.0]])).round(3).tolist()
    [0.5, 0.881]
    """

    def __init__(
        self,
        features: Sequence[str],
        mean: Sequence[float],
        scale: Sequence[float],
        coef: Sequence[float],
        intercept: float,
    ) -> None:
        self.features = list(features)
        self.mean = np.asarray(mean, float)
        self.scale = np.asarray(scale, float)
        self.coef = np.asarray(coef, float)
        self.intercept = float(intercept)
        if not (len(self.features) == len(self.mean) == len(self.scale) == len(self.coef)):
            raise ValueError("model file: features, mean, scale and coef differ in length")

    def logit(self, X: np.ndarray) -> np.ndarray:
        """The linear score of every row of ``X`` (columns in :attr:`features` order)."""
        return ((X - self.mean) / self.scale) @ self.coef + self.intercept

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The probability of every row."""
        return 1.0 / (1.0 + np.exp(-np.clip(self.logit(X), -50, 50)))

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers, for JSON."""
        return {
            "features": self.features,
            "mean": self.mean.round(6).tolist(),
            "scale": self.scale.round(6).tolist(),
            "coef": self.coef.round(6).tolist(),
            "intercept": round(self.intercept, 6),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LineModel:
        """The model from :meth:`to_dict`'s output; its features must be :data:`FEATURES`."""
        if list(d["features"]) != list(FEATURES):
            raise ValueError(
                "model file was trained on other features; retrain with benchmarks/train_learned.py"
            )
        return cls(d["features"], d["mean"], d["scale"], d["coef"], d["intercept"])


def load_model(path: str | Path = MODEL_FILE) -> tuple[LineModel, dict[str, Any]]:
    """The model and the whole record (knobs, provenance, CV scores) from a JSON file."""
    record = json.loads(Path(path).read_text())
    return LineModel.from_dict(record["model"]), record


def keep_from_scores(
    p: np.ndarray,
    threshold: float,
    min_keep: int = 0,
    short: np.ndarray | None = None,
    cheap: float = 1.0,
) -> list[int]:
    """1-based lines with ``p >= threshold`` (``threshold * cheap`` for ``short`` lines, which
    cost few tokens), plus the ``min_keep`` best.

    >>> keep_from_scores(np.array([0.1, 0.9, 0.3]), 0.5, 2)
    [2, 3]
    >>> keep_from_scores(np.array([0.1, 0.9, 0.3]), 0.5, short=np.array([1, 0, 1]), cheap=0.5)
    [2, 3]
    """
    bar = np.where(short > 0, threshold * cheap, threshold) if short is not None else threshold
    keep = set(np.flatnonzero(p >= bar).tolist())
    if min_keep > 0:
        keep.update(np.argsort(-p, kind="stable")[:min_keep].tolist())
    return sorted(i + 1 for i in keep)


@register_reducer("learned")
class Learned(Reducer):
    """Keep the lines the learned scorer rates at least ``threshold`` (default: the knob
    chosen by grouped cross-validation, stored in the model file)."""

    name = "learned"

    def __init__(
        self,
        threshold: float | None = None,
        min_keep: int | None = None,
        cheap: float | None = None,
        rescue: int | None = None,
        strategy: str = "structure",
        markers: bool = False,
        model_file: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        self.model, record = load_model(model_file or MODEL_FILE)
        knobs = record.get("knobs", {})
        self.threshold = float(threshold if threshold is not None else knobs.get("threshold", 0.5))
        self.min_keep = int(min_keep if min_keep is not None else knobs.get("min_keep", 0))
        self.cheap = float(cheap if cheap is not None else knobs.get("cheap", 1.0))
        self.rescue = int(rescue if rescue is not None else knobs.get("rescue", 0))
        self.strategy, self.markers = strategy, markers
        super().__init__(
            threshold=self.threshold,
            min_keep=self.min_keep,
            cheap=self.cheap,
            rescue=self.rescue,
            strategy=strategy,
            markers=markers,
            **kwargs,
        )

    def scores(self, step: Step) -> np.ndarray:
        """The probability of every line of ``step``."""
        return self.model.predict(line_features(step))

    def keep(
        self,
        step: Step,
        p: np.ndarray | None = None,
        threshold: float | None = None,
        X: np.ndarray | None = None,
    ) -> list[int]:
        """The 1-based lines kept (``p``, ``X``: precomputed scores and features;
        ``threshold``: override the knob)."""
        if X is None and (p is None or self.rescue):
            X = line_features(step)
        p = self.model.predict(X) if p is None else p
        t = self.threshold if threshold is None else threshold
        lines = keep_from_scores(p, t, self.min_keep, short_lines(step), self.cheap)
        if self.rescue:
            lines = sorted(set(lines) | set(rescued_lines(X, self.rescue)))
        return lines

    def select(self, step: Step) -> Output:
        lines = self.keep(step)
        return lines_output(step.axtree, lines, self.strategy, self.markers)


def labels(step: Step, evidence: bool = False) -> np.ndarray:
    """1 on the step's target lines and, with ``evidence``, on every line of its evidence
    groups (:func:`lrlib.metrics.evidence_status`: the chosen option, a field's label, the
    lines an answer quotes...). The shipped model is trained on targets only: with evidence
    labels, cross-validated median reduction at 98% target coverage fell from 71% to 48%
    (the positives become diffuse), and evidence coverage is reported, not trained on.

    >>> s = Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'\\n\\t[3] option 'M'",
    ...          target_bids=("1",), meta={"action": "select_option('1', 'M')"})
    >>> labels(s, evidence=True).tolist(), labels(s).tolist()
    ([1, 0, 1], [1, 0, 0])
    """
    from ..metrics import evidence_status

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
    """Fit the scorer (scikit-learn's balanced logistic regression on standardised columns).

    >>> X = np.array([[0.0], [1.0], [0.1], [0.9]]); y = np.array([0, 1, 0, 1])
    >>> m = fit_model(X, y, features=["x"])
    >>> bool(m.predict(np.array([[1.0]]))[0] > 0.5)
    True
    """
    from sklearn.linear_model import LogisticRegression

    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=2000)
    clf.fit((X - mean) / scale, y)
    return LineModel(features, mean, scale, clf.coef_[0], float(clf.intercept_[0]))


def out_of_fold(
    X: Sequence[np.ndarray], Y: Sequence[np.ndarray], folds: Sequence[Any], C: float = 1.0
) -> list[np.ndarray | None]:
    """Each step's line scores from the model fitted on the folds that do not hold it out
    (``X``, ``Y``: per-step features and labels; ``folds``: :func:`lrlib.crossval.folds`).
    Steps in no test fold get None."""
    out: list[np.ndarray | None] = [None] * len(X)
    for fold in folds:
        train = np.asarray(fold.train_idx)
        model = fit_model(
            np.vstack([X[i] for i in train]), np.concatenate([Y[i] for i in train]), C
        )
        for i in fold.test_idx:
            out[i] = model.predict(X[i])
    return out


def step_results(
    steps: Sequence[Step],
    scores: Sequence[np.ndarray | None],
    threshold: float,
    min_keep: int = 0,
    cheap: float = 1.0,
    encoding: str | None = None,
    rescue: int = 0,
    features: Sequence[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact per-step token reduction and target coverage (NaN: no target, or no scores)
    of keeping lines by ``scores`` with these knobs (structure-preserving rendering);
    ``rescue`` needs the steps' ``features``. Returns (reduction, target coverage, evidence
    coverage) arrays."""
    from ..metrics import covers, covers_evidence
    from ..tokens import DEFAULT_ENCODING, count_lines, count_tokens

    enc = encoding or DEFAULT_ENCODING
    red = np.full(len(steps), np.nan)
    hit = np.full(len(steps), np.nan)
    ev = np.full(len(steps), np.nan)
    for k, (s, p) in enumerate(zip(steps, scores, strict=True)):
        if p is None:
            continue
        lines = keep_from_scores(p, threshold, min_keep, short_lines(s), cheap)
        if rescue and features is not None:
            lines = sorted(set(lines) | set(rescued_lines(features[k], rescue)))
        out = lines_output(s.axtree, lines, "structure")
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
    the shipped model (its ``min_keep`` and ``cheap`` knobs). Features are computed once.

    >>> from lrlib.step import Step
    >>> s = [Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'",
    ...           target_bids=("1",))]
    >>> c = curve(s, thresholds=(0.0, 10.0))  # 10: above any probability, even cheap lines
    >>> c.coverage.tolist(), bool(c.median_reduction.iloc[1] > c.median_reduction.iloc[0])
    ([1.0, 0.0], True)
    """
    import pandas as pd

    base = get_reducer("learned", model_file=model_file)
    X = [line_features(s) for s in steps]
    scores = [base.model.predict(x) for x in X]
    rows = []
    for t in thresholds:
        red, hit, ev = step_results(
            steps, scores, t, base.min_keep, base.cheap, base.encoding, base.rescue, X
        )
        rows.append(
            {
                "threshold": t,
                "median_reduction": float(np.nanmedian(red)) if len(red) else float("nan"),
                "coverage": float(np.nanmean(hit)) if (~np.isnan(hit)).any() else float("nan"),
                "evidence_coverage": (
                    float(np.nanmean(ev)) if (~np.isnan(ev)).any() else float("nan")
                ),
                "n_steps": len(steps),
                "n_target": int((~np.isnan(hit)).sum()),
            }
        )
    return pd.DataFrame(rows)
