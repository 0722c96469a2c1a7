"""A learned line scorer: logistic regression over transferable line features, and a token budget.

**The recommended offline reducer** (see ``benchmarks/bench_generalisation.py`` and
``benchmarks/bench_ood.py`` for its nested cross-validated, test-split, WorkArena->WebArena
and small-page figures with intervals). Every line of the tree gets a probability of being
what the next action acts on, from the features of :mod:`.features` (role group, BM25 of the
line and of its children's text against goal and history, a name the goal quotes or repeats,
tree distance to the last acted element, order of interactive lines, what a policy checks
before acting, ...), trained on the target lines of recorded steps
(``benchmarks/train_learned.py``; ``--labels decision`` adds the decision evidence lines,
:func:`lrlib.data.evidence.decision_groups`, and the minimal failure sets: measured, not
shipped; evidence coverage, :mod:`lrlib.eval.metrics`, is reported).

**Which lines are kept: a budget, not a threshold.** Lines are taken best first, each with
the ``[bid] role`` stubs of its ancestors (``strategy="structure"``), while the running cost
stays within ``budget * page tokens + overhead`` (:func:`rank_lines`, :func:`n_kept`);
lines below the probability ``floor`` are never taken (the first line always is). A
probability threshold keeps whatever the model is sure of, so its reduction follows the
pages (most of a small page, little of a page like the training ones); a budget makes the
kept fraction a choice - the paper's ``alpha`` of the cost break-even - and spends it where
the ranking is best on *every* page. ``overhead`` is the fixed allowance a page of a few
dozen tokens needs for its root stub and two or three controls. Training, nested grouped
cross-validation, the knob choice and the budget curve live in :mod:`lrlab.tuning.learned_cv`.

The weights live in ``learned_model.json`` beside this module: feature names, scaler,
coefficients, the chosen knobs, and provenance (lrlib version, git commit, training rows,
cross-validation scores, date). Loading is plain JSON and inference plain numpy: no
pickle, no scikit-learn at run time (training, :func:`lrlab.tuning.learned_fit.fit_model`, needs it).

No page-controlled signal lifts a line alone: focus is not read (neither a feature nor a
length), widget state may raise a score only on a choice or a field (the decision features
of :mod:`.features`), and lexical match saturates (see
:mod:`.features`); ``tests/test_learned.py`` plants focused attack dialogs in real trees
and checks it. What the scores cannot tell apart is an attack *button* from a plain one;
the ``guard`` (on by default) drops lines whose *text* gives an attack away (control
markup, words addressed to an AI, a web address of another site, :mod:`lrlab.reducers.suspect`),
which no score can lift back. An attack in plain words passes: no security boundary alone.

>>> from lrlib.core.step import Step
>>> tree = "RootWebArea 'Shop'\\n\\t[3] link 'Home'\\n\\t[4] button 'Add to cart'"
>>> r = get_reducer("learned").reduce(Step(goal="Add a mug to the cart", tree=tree))
>>> "Add to cart" in r.text
True
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lrlab.reducers.budget import (
    Ranking,
    companion_lines,
    guarded_lines,
    kept_lines,
    n_kept,
    page_costs,
    rank_lines,
    whole_lines,
)
from lrlab.reducers.decision import named_lines
from lrlab.reducers.features import FEATURES, carriers, line_features
from lrlab.reducers.memo import per_step
from lrlab.reducers.overlay import guarded_output
from lrlab.reducers.suspect import suspect_lines, suspect_test
from lrlib.core.step import Step
from lrlib.reducers.base import Knob, Output, Reducer, get_reducer, lines_output, register_reducer  # noqa: F401 (doctest)

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
        """The model from :meth:`to_dict`'s output; its features must be :data:`FEATURES`,
        or the first of them (a model trained before columns were appended scores as it
        did: the new columns get weight 0).

        >>> m = LineModel.from_dict({"features": FEATURES[:2], "mean": [0, 0], "scale": [1, 1],
        ...                          "coef": [1.0, 2.0], "intercept": 0.0})
        >>> len(m.coef) == len(FEATURES), m.coef[:3].tolist()
        (True, [1.0, 2.0, 0.0])
        """
        names, k = list(d["features"]), len(d["features"])
        pad = len(FEATURES) - k
        same = names == list(FEATURES[:k]) and len(d["mean"]) == len(d["coef"]) == k
        if not same or pad < 0:
            raise ValueError(
                "model file was trained on other features; retrain with benchmarks/train_learned.py"
            )
        mean, scale = [*d["mean"], *[0.0] * pad], [*d["scale"], *[1.0] * pad]
        return cls(FEATURES, mean, scale, [*d["coef"], *[0.0] * pad], d["intercept"])


def load_model(path: str | Path = MODEL_FILE) -> tuple[LineModel, dict[str, Any]]:
    """The model and the whole record (knobs, provenance, CV scores) from a JSON file."""
    record = json.loads(Path(path).read_text())
    return LineModel.from_dict(record["model"]), record


FEATURE_CACHE_SIZE = 512  # trees; a budget sweep re-reduces the same steps per value


@functools.partial(per_step, size=FEATURE_CACHE_SIZE)
def cached_features(step: Step) -> np.ndarray:
    """:func:`.features.line_features` of ``step``, memoised per step
    (:func:`lrlab.reducers.memo.per_step`; read-only: the array is shared), so that sweeping
    a knob computes features once.

    >>> s = Step(goal="Open the cart", tree="[1] link 'Cart'")
    >>> cached_features(s) is cached_features(Step(goal=s.goal, tree=s.tree))
    True
    """
    return line_features(step)


KNOBS = ("budget", "overhead", "floor", "rescue")


@register_reducer
class Learned(Reducer):
    """Keep the best lines of the learned scorer within a token budget (default knobs: the
    ones grouped cross-validation chose, stored in the model file).

    ``budget``: the share of the page's tokens to keep (0-1); ``overhead``: tokens allowed
    beyond that share; ``floor``: lines less likely than this are never kept; ``rescue``:
    how many unnamed elements named by a child's text that the goal mentions to take first
    (:func:`~lrlab.reducers.features.carriers`); ``guard``: never keep a line that speaks to
    the agent (:func:`lrlab.reducers.suspect.suspect_lines`: control markup, words addressed to
    an AI, a foreign web address); an ancestor among them shows as a ``[bid] role`` stub;
    ``context``: a kept line brings the lines that say what it is for, within the budget
    (a choice's question, an unnamed field's label, an unnamed element's text, the table
    rows showing an identifier the goal names: :func:`~lrlab.reducers.budget.companion_lines`);
    ``decision`` (default off): also keep, beyond the budget, the choices and fields the goal
    names with their labels and chosen options (:func:`lrlab.reducers.decision.named_lines`)."""

    name = "learned"
    listed = 9
    sweep = Knob("budget", (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7))

    def __init__(
        self,
        budget: float | None = None,
        overhead: float | None = None,
        floor: float | None = None,
        rescue: int | None = None,
        guard: bool = True,
        context: bool = True,
        strategy: str = "structure",
        markers: bool = False,
        model_file: str | Path | None = None,
        decision: bool = False,
        **kwargs: Any,
    ) -> None:
        path = Path(model_file or MODEL_FILE)
        self.model, record = load_model(path)
        self.model_id = f"{path.name}@{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}"
        knobs = record.get("knobs", {})
        self.budget = float(budget if budget is not None else knobs.get("budget", 0.25))
        self.overhead = float(overhead if overhead is not None else knobs.get("overhead", 0.0))
        self.floor = float(floor if floor is not None else knobs.get("floor", 0.0))
        self.rescue = int(rescue if rescue is not None else knobs.get("rescue", 1))
        if not 0.0 <= self.budget <= 1.0:
            raise ValueError(f"budget is a share of the page's tokens: 0-1, not {self.budget}")
        self.strategy, self.markers, self.guard = strategy, markers, bool(guard)
        self.context, self.decision = bool(context), bool(decision)
        if self.decision:  # named only when on: the shipped configuration keeps its parameters
            kwargs["decision"] = True
        super().__init__(
            budget=self.budget,
            overhead=self.overhead,
            floor=self.floor,
            rescue=self.rescue,
            guard=self.guard,
            context=self.context,
            strategy=strategy,
            markers=markers,
            **kwargs,
        )

    def provenance(self) -> dict[str, Any]:
        """What results record as this reducer's model: the weights file and its digest
        (:func:`lrlib.eval.evaluation.reducer_provenance`).

        >>> get_reducer("learned").provenance()["model"].startswith("learned_model.json@")
        True
        """
        return {"model": self.model_id, "prompt": None, "prompt_hash": None}

    def scores(self, step: Step) -> np.ndarray:
        """The probability of every line of ``step``."""
        return self.model.predict(cached_features(step))

    def ranking(
        self, step: Step, p: np.ndarray | None = None, banned: Sequence[int] | None = None
    ) -> Ranking:
        """``step``'s lines best first, with the cost of every prefix (``p``: precomputed
        scores; ``banned``: the 0-based lines the guard drops, None for every line it flags
        on the page, :func:`lrlab.reducers.suspect.suspect_lines`)."""
        return self._ranker(step, p)(self._banned(step) if banned is None else banned)

    def keep(
        self, step: Step, p: np.ndarray | None = None, budget: float | None = None
    ) -> list[int]:
        """The 1-based lines kept (``p``: precomputed scores; ``budget``: override the knob).
        The guard reads a line's text only when the line could be shown
        (:func:`~lrlab.reducers.budget.guarded_lines`): the same lines as banning every
        suspect line of the page first, at a fraction of the reading."""
        rank = self._ranker(step, p)
        knobs = (self.budget if budget is None else budget, self.overhead, self.floor)
        if not self.guard:
            r = rank([])
            return kept_lines(r, n_kept(r, *knobs))
        return guarded_lines(rank, knobs, suspect_test(step))

    def _banned(self, step: Step) -> list[int]:
        return [n - 1 for n in suspect_lines(step)] if self.guard else []

    def _ranker(self, step: Step, p: np.ndarray | None) -> Callable[[Sequence[int]], Ranking]:
        """:func:`~lrlab.reducers.budget.rank_lines` of ``step`` for a set of banned lines
        (what does not depend on them computed once)."""
        X = cached_features(step)
        p = self.model.predict(X) if p is None else p
        tokens, stubs = page_costs(step, self.encoding)
        carried = carriers(X, p, self.rescue)
        parents, whole = step.axtree.parents, whole_lines(step)
        companions = companion_lines(step) if self.context else None

        def rank(banned: Sequence[int]) -> Ranking:
            first = [i for i in carried if i not in banned]
            return rank_lines(p, tokens, stubs, parents, whole, first, banned, companions)

        return rank

    def select(self, step: Step) -> Output:
        lines = self.keep(step)
        if self.decision:  # what a policy checks first, whatever the budget kept; guarded
            banned = set(suspect_lines(step)) if self.guard else set()
            lines = sorted({*lines, *(n for n in named_lines(step) if n not in banned)})
        return guarded_output(step, lines, self.strategy, self.markers, self.guard)
