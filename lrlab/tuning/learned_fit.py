"""The learned scorer's training rows and fit (:mod:`lrlab.reducers.learned`).

- :func:`labels`: the target (and, optionally, evidence) lines of a step;
- :func:`fit_model`: scikit-learn's balanced logistic regression, with the state features
  held to non-positive weights (:data:`~lrlab.reducers.features.DEMOTE_ONLY`);
- :func:`prepare`: a per-tree cache (features, labels, line and stub tokens, parents, the
  lines kept whole, target and evidence lines), built once for every CV loop of
  :mod:`lrlab.tuning.learned_cv`.

>>> s = Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'", target_bids=("1",))
>>> d = prepare([s])[0]
>>> d.X.shape[0], d.y.tolist(), d.targets
(2, [1, 0], [0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lrlab.reducers.budget import companion_lines, page_costs, whole_lines
from lrlab.reducers.features import DEMOTE_ONLY, FEATURES, line_features
from lrlab.reducers.learned import LineModel
from lrlab.reducers.suspect import suspect_lines
from lrlib.core.step import Step


def labels(step: Step, evidence: bool | str = False, mfs: Sequence[int] = ()) -> np.ndarray:
    """1 on the step's target lines and, with ``evidence``, on the lines of its evidence
    groups (:func:`lrlib.eval.metrics.typed_evidence`): every group with ``True``, the
    groups of one kind with that kind's name (``"answer"``: the page text a reporting
    step reports, the only evidence of a step without a target), every *decision*
    evidence group with ``"decision"`` (:func:`lrlib.data.evidence.decision_groups`: also
    the choices the goal names, the fields it refers to, the selected option); and on the
    1-based lines ``mfs`` (the union of a step's minimal failure sets, every policy's).

    >>> s = Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'\\n\\t[3] option 'M'",
    ...          target_bids=("1",), meta={"action": "select_option('1', 'M')"})
    >>> labels(s, evidence=True).tolist(), labels(s).tolist(), labels(s, "answer").tolist()
    ([1, 0, 1], [1, 0, 0], [1, 0, 0])
    >>> labels(s, mfs=[2]).tolist()
    [1, 1, 0]
    """
    from lrlib.data.evidence import decision_groups
    from lrlib.eval.metrics import target_status, typed_evidence

    y = np.zeros(len(step.axtree), int)
    n_lines = len(y)
    for n in step.target_lines:
        y[n - 1] = 1
    if evidence == "decision":
        if target_status(step) != "missing":
            action = (step.meta or {}).get("action")
            for _, group in decision_groups(step.axtree, action, step.goal):
                y[[i - 1 for i in group if 1 <= i <= n_lines]] = 1
    elif evidence:
        for kind, group in typed_evidence(step):
            if evidence is True or kind == evidence:
                y[[i - 1 for i in group if 1 <= i <= n_lines]] = 1
    y[[i - 1 for i in mfs if 1 <= i <= n_lines]] = 1
    return y


def readable_by(step: Step, definition: str = "evidence") -> list[list[int]] | None:
    """For each evidence group of ``step``, the 0-based lines any one of which makes it
    readable (:func:`lrlib.data.evidence.alternatives`: the information reading of evidence
    coverage); None: no evidence, or a missing target. ``definition``: ``"evidence"`` (the
    groups of :func:`lrlib.eval.metrics.typed_evidence`) or ``"decision"`` (the widened
    :func:`lrlib.data.evidence.decision_groups`).

    >>> s = Step(goal="g", tree="[1] StaticText 'Size'\\n[2] combobox 'Size'\\n\\t[3] option 'M'",
    ...          target_bids=("2",), meta={"action": "select_option('2', 'M')"})
    >>> readable_by(s)
    [[1], [2], [0, 1]]
    """
    from lrlib.data.evidence import alternatives, decision_groups
    from lrlib.eval.metrics import typed_evidence

    groups = typed_evidence(step)
    if groups and definition == "decision":
        groups = decision_groups(step.axtree, (step.meta or {}).get("action"), step.goal)
    if not groups:
        return None
    return [[i - 1 for i in alternatives(step.axtree, kind, g)] for kind, g in groups]


def fit_model(
    X: np.ndarray, y: np.ndarray, C: float = 0.1, features: Sequence[str] = FEATURES
) -> LineModel:
    """Fit the scorer: scikit-learn's balanced logistic regression (L2, inverse strength
    ``C``; Newton-Cholesky) on standardised columns. A state feature
    (:data:`~lrlab.reducers.features.DEMOTE_ONLY`) that would get a positive weight is left
    out (weight 0) and the rest refitted, so page state can only lower a score.

    >>> X = np.array([[0.0], [1.0], [0.1], [0.9]]); y = np.array([0, 1, 0, 1])
    >>> m = fit_model(X, y, features=["x"])
    >>> bool(m.predict(np.array([[1.0]]))[0] > 0.5)
    True
    """
    from sklearn.linear_model import LogisticRegression

    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    Z = (X - mean) / scale
    demote = [k for k, f in enumerate(features) if f in DEMOTE_ONLY]
    used = np.ones(X.shape[1], bool)
    while True:
        clf = LogisticRegression(
            C=C, class_weight="balanced", solver="newton-cholesky", max_iter=200
        ).fit(Z[:, used], y)
        coef = np.zeros(X.shape[1])
        coef[used] = clf.coef_[0]
        wrong = [k for k in demote if coef[k] > 0]
        if not wrong:
            return LineModel(features, mean, scale, coef, float(clf.intercept_[0]))
        used[wrong] = False


@dataclass
class StepData:
    """What scoring a step needs, computed once: features ``X``, labels ``y``, per-line
    tokens and ``[bid] role`` stub tokens, parents, the lines kept whole around a kept child
    (:func:`~lrlab.reducers.budget.whole_lines`), 0-based target lines (None: no target
    in the tree), 0-based evidence groups (None: none), the step's benchmark and episode,
    and the 0-based lines the guard never keeps (:func:`lrlab.reducers.suspect.suspect_lines`).
    ``evidence``: per group, the lines that make it readable (:func:`readable_by`);
    ``companions``: what a kept line brings (:func:`~lrlab.reducers.budget.companion_lines`);
    ``decision``: per *decision* evidence group, the lines that make it readable
    (:func:`readable_by` with ``"decision"``)."""

    X: np.ndarray
    y: np.ndarray
    tokens: np.ndarray
    stub_tokens: np.ndarray
    parents: np.ndarray
    whole: np.ndarray
    targets: list[int] | None
    evidence: list[list[int]] | None
    benchmark: str
    episode: str
    banned: list[int] = field(default_factory=list)
    companions: list[list[int]] | None = None
    decision: list[list[int]] | None = None


def prepare(
    steps: Sequence[Step],
    encoding: str | None = None,
    label: bool | str = False,
    mfs: dict[str, Sequence[int]] | None = None,
) -> list[StepData]:
    """The :class:`StepData` of every step (the expensive part: ~20 ms a step); ``label``:
    the ``evidence`` argument of :func:`labels` (False: target lines only); ``mfs``:
    step_id -> the lines of its minimal failure sets, positives too."""
    from lrlib.core.tokens import DEFAULT_ENCODING
    from lrlib.eval.metrics import target_status

    enc = encoding or DEFAULT_ENCODING
    out = []
    for s in steps:
        tokens, stubs = page_costs(s, enc)
        ok = target_status(s) == "ok"
        out.append(
            StepData(
                X=line_features(s),
                y=labels(s, label, (mfs or {}).get(s.step_id, ())),
                tokens=tokens,
                stub_tokens=stubs,
                parents=np.asarray(s.axtree.parents, int),
                whole=whole_lines(s),
                targets=[n - 1 for n in s.target_lines] if ok else None,
                evidence=readable_by(s),
                benchmark=str(s.benchmark or s.meta.get("benchmark") or ""),
                episode=str(s.meta.get("episode") or s.step_id),
                banned=[n - 1 for n in suspect_lines(s)],
                companions=companion_lines(s),
                decision=readable_by(s, "decision"),
            )
        )
    return out
