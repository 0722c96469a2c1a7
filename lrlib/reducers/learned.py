"""A learned line scorer: logistic regression over transferable line features.

**The recommended offline reducer** (see ``benchmarks/bench_generalisation.py`` for its
cross-validated, test-split and WorkArena->WebArena figures with intervals). Every line of
the tree gets a probability of being what the next action needs, from the features of
:mod:`.features` (role group, depth, BM25 of the line and of its children's text against
goal and history, goal words and numbers, tree distance to the last acted element, ...),
trained on the target lines of recorded steps (evidence coverage, :mod:`lrlib.eval.metrics`, is
reported). Kept: lines with ``p >= threshold`` (``threshold * cheap`` for short lines,
which cost ~10 tokens), at most the best ``max_share`` of the page's lines (a scale-aware
cap; off in the shipped model, see :func:`keep_from_scores`), the ``min_keep`` best lines of every page, and the
``rescue`` unnamed containers whose children's text best matches the goal
(:func:`rescued_lines`: a prior for sites unlike the training data); their ancestors are
shown as ``[bid] role`` stubs (``strategy="structure"``). Training, nested grouped
cross-validation and the threshold curve live in :mod:`.learned_cv`.

The weights live in ``learned_model.json`` beside this module: feature names, scaler,
coefficients, the chosen knobs, and provenance (lrlib version, git commit, training split,
cross-validation scores, date). Loading is plain JSON and inference plain numpy: no
pickle, no scikit-learn at run time (training, :func:`.learned_cv.fit_model`, needs it).

No page-controlled signal lifts a line alone: focus is not read (neither a feature nor a
length), so it never changes what is kept, and lexical match saturates (see
:mod:`.features`); ``tests/test_learned.py`` plants focused attack dialogs in real trees
and checks it. What the scorer still cannot tell apart is an attack *button* from a plain
one: on pages where it keeps every button, a planted button is kept too (measured in
``benchmarks/bench_generalisation.py``'s report), so it is no security boundary alone.

>>> from lrlib.core.step import Step
>>> tree = "RootWebArea 'Shop'\\n\\t[3] link 'Home'\\n\\t[4] button 'Add to cart'"
>>> r = get_reducer("learned").reduce(Step(goal="Add a mug to the cart", tree=tree))
>>> "Add to cart" in r.text
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lrlib.core.step import Step
from lrlib.reducers.base import Output, Reducer
from lrlib.reducers.chunking import lines_output
from lrlib.reducers.features import FEATURES, line_features, rescued_lines, short_lines
from lrlib.reducers.registry import get_reducer, register_reducer  # noqa: F401 (doctest)

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


_FEATURE_CACHE: dict[tuple[str, str, tuple[str, ...]], np.ndarray] = {}
FEATURE_CACHE_SIZE = 512  # trees; a threshold sweep re-reduces the same steps per value


def cached_features(step: Step) -> np.ndarray:
    """:func:`.features.line_features` of ``step``, memoised on its goal, tree and history
    (read-only: the array is shared), so that sweeping a knob computes features once.

    >>> s = Step(goal="Open the cart", tree="[1] link 'Cart'")
    >>> cached_features(s) is cached_features(Step(goal=s.goal, tree=s.tree))
    True
    """
    key = (step.goal, step.tree, tuple(step.history))
    X = _FEATURE_CACHE.get(key)
    if X is None:
        if len(_FEATURE_CACHE) >= FEATURE_CACHE_SIZE:
            _FEATURE_CACHE.pop(next(iter(_FEATURE_CACHE)))  # oldest first
        X = _FEATURE_CACHE[key] = line_features(step)
        X.setflags(write=False)
    return X


SHARE_FLOOR = 5  # the share cap never goes below this many lines


def keep_from_scores(
    p: np.ndarray,
    threshold: float,
    min_keep: int = 0,
    short: np.ndarray | None = None,
    cheap: float = 1.0,
    max_share: float = 1.0,
) -> list[int]:
    """1-based lines with ``p >= threshold`` (``threshold * cheap`` for ``short`` lines, which
    cost few tokens), at most the best ``max_share`` of the page's lines (never fewer than
    :data:`SHARE_FLOOR`), plus the ``min_keep`` best.

    The share cap makes the rule scale-aware (relative features such as BM25 saturate on a
    page of tens of lines, where a fixed threshold can keep most of it; on long pages the
    threshold binds first). It is a CV-chosen knob: on the recorded pages it cost one target
    in 294 for no reduction, so the shipped model leaves it off (``max_share=1``).

    >>> keep_from_scores(np.array([0.1, 0.9, 0.3]), 0.5, 2)
    [2, 3]
    >>> keep_from_scores(np.array([0.1, 0.9, 0.3]), 0.5, short=np.array([1, 0, 1]), cheap=0.5)
    [2, 3]
    >>> keep_from_scores(np.linspace(1, 0.5, 20), 0.1, max_share=0.1)  # 5 lines, the floor
    [1, 2, 3, 4, 5]
    """
    bar = np.where(short > 0, threshold * cheap, threshold) if short is not None else threshold
    above = np.flatnonzero(p >= bar)
    cap = max(SHARE_FLOOR, math.ceil(max_share * len(p)))
    if len(above) > cap:
        above = above[np.argsort(-p[above], kind="stable")[:cap]]
    keep = set(above.tolist())
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
        max_share: float | None = None,
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
        share = max_share if max_share is not None else knobs.get("max_share", 1.0)
        self.max_share = float(share)
        self.strategy, self.markers = strategy, markers
        super().__init__(
            threshold=self.threshold,
            min_keep=self.min_keep,
            cheap=self.cheap,
            rescue=self.rescue,
            max_share=self.max_share,
            strategy=strategy,
            markers=markers,
            **kwargs,
        )

    def scores(self, step: Step) -> np.ndarray:
        """The probability of every line of ``step``."""
        return self.model.predict(cached_features(step))

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
            X = cached_features(step)
        p = self.model.predict(X) if p is None else p
        t = self.threshold if threshold is None else threshold
        lines = keep_from_scores(p, t, self.min_keep, short_lines(step), self.cheap, self.max_share)
        if self.rescue:
            lines = sorted(set(lines) | set(rescued_lines(X, self.rescue)))
        return lines

    def select(self, step: Step) -> Output:
        lines = self.keep(step)
        return lines_output(step.axtree, lines, self.strategy, self.markers)
