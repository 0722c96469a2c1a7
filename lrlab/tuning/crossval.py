"""Grouped cross-validation: folds that never split a group, for anything tuned on the data.

Steps of one task family share pages, goals and often whole trees, so a reducer tuned on
some steps of a family and scored on others measures fit, not generalisation. The folds
here hold out whole groups:

- ``"family"`` - leave one task family out (``Step.family``: the task name) over the
  given steps: one fold per family, trained on all the other families;
- ``"benchmark"`` - train on WorkArena, test on WebArena (one fold).

:func:`miniwob_half` splits the out-of-domain MiniWoB task types into two fixed halves (a
hash of the task name): ``"train"`` may be used for training and CV, ``"check"`` never for
any choice.

:func:`folds` builds them (schemes live in :data:`SCHEMES`; an unknown name raises
``ValueError`` listing the valid ones); :func:`group_folds` is the leave-one-group-out core
on plain labels and :func:`group_kfold` its k-fold variant (the inner loop of a nested
cross-validation); :func:`cross_validate` fits on each fold's train steps and scores on its
test steps, one result row per fold. Tune on the ``train`` split with these folds; the
``test`` split (:data:`lrlib.data.dataset.SPLITS`) is for the final report only.

>>> from lrlib.core.step import Step
>>> steps = [Step("g", "[1] button 'A'", family=f, benchmark="workarena") for f in "aab"]
>>> [(f.name, f.train_idx.tolist(), f.test_idx.tolist()) for f in folds(steps, "family")]
[('a', [2], [0, 1]), ('b', [0, 1], [2])]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from lrlib.core.step import Step


__all__ = [
    "Fold",
    "group_folds",
    "miniwob_half",
    "group_kfold",
    "SCHEMES",
    "folds",
    "cross_validate",
]


@dataclass(frozen=True)
class Fold:
    """One fold: its name (the held-out group) and row indices (into the given rows)."""

    name: str
    train_idx: np.ndarray
    test_idx: np.ndarray


def group_folds(groups: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Leave-one-group-out: ``(train_idx, test_idx)`` per distinct group, groups sorted.

    Every row is a test row exactly once; a fold's train rows never share its group.

    >>> [(tr.tolist(), te.tolist()) for tr, te in group_folds(["x", "y", "x"])]
    [([1], [0, 2]), ([0, 2], [1])]
    """
    labels = np.asarray([str(g) for g in groups], dtype=object)
    out = []
    for g in sorted(set(labels.tolist())):
        test = labels == g
        out.append((np.flatnonzero(~test), np.flatnonzero(test)))
    return out


def miniwob_half(task: str) -> str:
    """The fixed half of the MiniWoB check set a task type belongs to: ``"check"`` when the
    SHA-256 of its name (``Step.family``, e.g. ``"miniwob.click-tab"``) is odd, else
    ``"train"``. The rule reads nothing but the name (21 types / 240 steps fall in "train",
    19 / 185 in "check"; ``data/README.md``); whatever is tuned on "train" is reported on
    "check", which no choice may read.

    >>> miniwob_half("miniwob.click-button"), miniwob_half("miniwob.click-tab")
    ('train', 'check')
    """
    return "check" if int(hashlib.sha256(task.encode()).hexdigest(), 16) % 2 else "train"


def group_kfold(groups: Sequence[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` folds that never split a group: groups sorted by size (largest first, then by
    name) are dealt round-robin to the folds (fewer folds when there are fewer groups). The
    inner loop of a nested cross-validation uses it: leave-one-group-out inside every outer
    fold would cost groups^2 fits.

    >>> [(tr.tolist(), te.tolist()) for tr, te in group_kfold(["x", "y", "x", "z"], 2)]
    [([1], [0, 2, 3]), ([0, 2, 3], [1])]
    """
    labels = np.asarray([str(g) for g in groups], dtype=object)
    names, counts = np.unique(labels, return_counts=True)
    order = sorted(range(len(names)), key=lambda j: (-counts[j], names[j]))
    k = max(1, min(k, len(names)))
    bins = [{names[j] for j in order[b::k]} for b in range(k)]
    out = []
    for members in bins:
        test = np.array([g in members for g in labels], bool)
        out.append((np.flatnonzero(~test), np.flatnonzero(test)))
    return out


def _column(rows: Any, name: str) -> list[str]:
    """A grouping column of a DataFrame (``family`` falls back to ``task``) or of Steps."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        if name == "family" and "family" not in rows.columns:
            name = "task"
        return [str(v) for v in rows[name]]
    return [str(getattr(s, name, "") or s.meta.get(name, "") or "") for s in rows]


def _family_folds(rows: Any) -> list[Fold]:
    return [
        Fold(str(_column(rows, "family")[te[0]]), tr, te)
        for tr, te in group_folds(_column(rows, "family"))
    ]


def _benchmark_folds(rows: Any) -> list[Fold]:
    bench = np.asarray(_column(rows, "benchmark"), dtype=object)
    train, test = np.flatnonzero(bench == "workarena"), np.flatnonzero(bench == "webarena")
    if not len(train) or not len(test):
        raise ValueError("the benchmark scheme needs both workarena and webarena rows")
    return [Fold("workarena->webarena", train, test)]


#: scheme name -> function building the folds over the given rows
SCHEMES: dict[str, Callable[[Any], list[Fold]]] = {
    "family": _family_folds,
    "benchmark": _benchmark_folds,
}


def folds(steps_or_df: Sequence[Step] | pd.DataFrame, scheme: str = "family") -> list[Fold]:
    """The folds of ``scheme`` (see :data:`SCHEMES`) over Steps or dataset rows.

    >>> folds([], "random")
    Traceback (most recent call last):
    ...
    ValueError: unknown cross-validation scheme 'random'; valid: benchmark, family
    """
    if scheme not in SCHEMES:
        raise ValueError(
            f"unknown cross-validation scheme {scheme!r}; valid: {', '.join(sorted(SCHEMES))}"
        )
    return SCHEMES[scheme](steps_or_df)


def cross_validate(
    fit: Callable[[list[Step]], Any],
    score: Callable[[Any, list[Step]], float | dict[str, Any]],
    steps: Sequence[Step],
    scheme: str = "family",
) -> pd.DataFrame:
    """Fit on each fold's train steps, score the fitted thing on its test steps.

    Returns one row per fold: ``fold``, ``n_train``, ``n`` (test steps), ``n_episodes``
    (test episodes) and the score (column ``score`` for a number, or the dict's keys).

    >>> from lrlib.core.step import Step
    >>> steps = [Step("g", "t", family=f, episode=f + str(i)) for i, f in enumerate("aab")]
    >>> cv = cross_validate(lambda tr: len(tr), lambda m, te: m / len(te), steps)
    >>> cv[["fold", "n_train", "n", "score"]].values.tolist()
    [['a', 1, 2, 0.5], ['b', 2, 1, 2.0]]
    """
    import pandas as pd

    steps = list(steps)
    rows = []
    for fold in folds(steps, scheme):
        train = [steps[i] for i in fold.train_idx]
        test = [steps[i] for i in fold.test_idx]
        result = score(fit(train), test)
        row: dict[str, Any] = {
            "fold": fold.name,
            "n_train": len(train),
            "n": len(test),
            "n_episodes": len({s.episode or s.step_id for s in test}),
        }
        row.update(result if isinstance(result, dict) else {"score": result})
        rows.append(row)
    return pd.DataFrame(rows)
