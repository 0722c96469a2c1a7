"""Tune the program reducer's knobs on recorded steps, and cross-validate the tuning by groups.

:class:`TuningSet` computes the rules' inputs (:func:`~lrlab.reducers.program.line_features`),
the token cost of every line and of its ``[bid] role`` stub, and every line's ancestors,
once, in flat numpy arrays over all steps. Scoring a knob setting is then a few vectorised
operations: which lines are kept, which ancestors become stubs, the reduced size of every
step (an estimate that counts each output line's tokens with its newline; the evaluation
counts exactly) and whether every target line is kept.

:func:`tune` maximises the median token reduction subject to a minimum target coverage
(a shortfall costs ten times its size): a seeded random search over a grid of values per
knob, then coordinate descent (one knob at a time, until a full pass changes nothing) from
the defaults of :class:`~lrlab.reducers.program.Knobs` and from the best random draws.
``threshold`` stays fixed: the priors already shift every score.

>>> from lrlib.core.step import Step
>>> steps = [Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'", target_bids=("1",))]
>>> knobs, report = tune(steps, min_coverage=1.0, restarts=1, samples=5)
>>> report["coverage"], report["median_reduction"] > 0
(1.0, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from lrlab.reducers.program import Knobs, line_features
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING, count_lines, line_token_counts
from lrlib.data.evidence import alternatives, context_lines, decision_groups
from lrlib.eval.metrics import target_status, typed_evidence

_KINDS = ("url", "text", "form", "button", "link", "item", "other")
# Ranges are a prior for generality, not a fit: no interactive kind can be priced out of
# reach of one goal term plus the short-line bonus (ServiceNow's many options and menu
# items pushed ``item`` to -3 before, which dropped every tab and card on other sites), and
# unnamed icons keep a bonus (they have no text to match).
GRID: dict[str, tuple] = {
    "button": (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0),
    "link": (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0),
    "item": (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0),
    "goal": (1.0, 1.5, 2.0, 3.0),
    "history": (0.0, 0.5, 1.0, 2.0, 3.0),
    "near": (0.0, 0.5, 1.0, 2.0, 3.0),
    "near_lines": (0, 3, 5, 10, 20),
    "icon": (0.5, 1.0, 2.0),
    "other": (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0),
    "cheap": (1.0, 1.5, 2.0, 3.0),
    "chrome": (-3.0, -2.0, -1.0, -0.5, 0.0),
    "cheap_chars": (30, 40, 50, 60),
    "text_terms": (2, 3),  # the content rule stays on: coverage alone would switch it off
}


class TuningSet:
    """The program's inputs for many steps, flattened for fast re-scoring. ``definition``:
    the evidence that ``min_evidence`` holds, ``"evidence"`` (:func:`~lrlib.eval.metrics.
    typed_evidence`) or ``"decision"`` (:func:`lrlib.data.evidence.decision_groups`, the
    learned scorer's labels); ``mfs``: step_id -> minimal failure set lines, each then a
    group of its own (kept verbatim) beside them."""

    def __init__(
        self,
        steps: Sequence[Step],
        encoding: str = DEFAULT_ENCODING,
        definition: str = "evidence",
        mfs: dict[str, Sequence[int]] | None = None,
    ) -> None:
        cols: dict[str, list] = {
            k: []
            for k in (
                "kind",
                "hits",
                "acted",
                "near",
                "after",
                "unnamed",
                "length",
                "chrome",
                "n_terms",
                "cost",
                "stub",
                "step",
            )
        }
        owner, ancestor, before, targets, success = [], [], [], [], []
        comp_owner, comp_line, evidence = [], [], []
        offset = 0
        for k, step in enumerate(steps):
            tree, f = step.axtree, line_features(step)
            n = len(tree)
            cols["kind"] += [_KINDS.index(x) for x in f.kind]
            for name in ("hits", "acted", "near", "after", "unnamed", "length", "chrome"):
                cols[name] += getattr(f, name)
            cols["n_terms"] += [f.n_terms] * n
            cols["cost"] += line_token_counts(tree.texts, encoding)
            cols["stub"] += line_token_counts([tree.stub(i) for i in range(n)], encoding)
            cols["step"] += [k] * n
            for i in range(n):
                for a in tree.ancestors(i + 1):
                    owner.append(offset + i)
                    ancestor.append(offset + a - 1)
            before.append(count_lines(tree.texts, encoding))
            ok = target_status(step) == "ok"
            targets.append([offset + t - 1 for t in step.target_lines] if ok else None)
            for i, lines in enumerate(context_lines(tree)):
                comp_owner += [offset + i] * len(lines)
                comp_line += [offset + m - 1 for m in lines]
            groups = typed_evidence(step)
            if groups and definition == "decision":
                action = (step.meta or {}).get("action")
                groups = decision_groups(tree, action, step.goal)
                groups += [("target", [m]) for m in (mfs or {}).get(step.step_id, ())]
            evidence.append(
                [[offset + m - 1 for m in alternatives(tree, k, g)] for k, g in groups]
                if groups
                else None
            )
            success.append(bool(step.meta.get("episode_success")))
            offset += n
        self.arrays = {k: np.asarray(v) for k, v in cols.items()}
        self.owner, self.ancestor = np.asarray(owner, int), np.asarray(ancestor, int)
        self.before = np.asarray(before, float)
        self.targets = targets
        self.evidence = evidence  # per step: per group, the lines that make it readable
        self.comp_owner, self.comp_line = np.asarray(comp_owner, int), np.asarray(comp_line, int)
        self.success = np.asarray(success)
        self.n_steps = len(steps)

    def kept(self, knobs: Knobs) -> np.ndarray:
        """Boolean mask of the kept lines (the same rule as ``score_lines``)."""
        a = self.arrays
        kind = a["kind"]
        prior = np.select(
            [kind == 3, kind == 4, kind == 5, kind == 6],
            [knobs.button, knobs.link, knobs.item, knobs.other],
            0.0,
        )
        cap = np.clip(a["n_terms"], 1, 2)
        need = np.maximum(1, np.minimum(knobs.text_terms, a["n_terms"]))
        score = (
            prior
            + knobs.goal * np.minimum(a["hits"], cap) * 2 / cap
            + knobs.history * a["acted"]
            + knobs.near * (a["near"] | ((a["after"] > 0) & (a["after"] <= knobs.near_lines)))
            + knobs.icon * a["unnamed"]
            + knobs.cheap * (a["length"] <= knobs.cheap_chars)
            + knobs.chrome * a["chrome"]
        )
        interactive = kind >= 3
        return (
            (kind == 2)
            | ((kind == 1) & (a["hits"] >= need))
            | (interactive & (score >= knobs.threshold))
        )

    def per_step(self, knobs: Knobs) -> tuple[np.ndarray, np.ndarray]:
        """Every step's estimated token reduction, and whether its targets are all kept
        (NaN for a step without a target in its tree)."""
        red, hit, _ = self.per_step_evidence(knobs)
        return red, hit

    def per_step_evidence(self, knobs: Knobs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`per_step` and whether every evidence group is readable (NaN: no evidence).
        Kept lines bring their context, as the reducer's ``context=True`` does."""
        kept = self.kept(knobs)
        kept[self.comp_line[kept[self.comp_owner]]] = True  # one level, as with_context
        stub = np.zeros_like(kept)
        stub[self.ancestor[kept[self.owner]]] = True
        stub &= ~kept
        a = self.arrays
        line_cost = np.where(kept, a["cost"], 0) + np.where(stub, a["stub"], 0)
        after = np.bincount(a["step"], weights=line_cost, minlength=self.n_steps)
        red = 1.0 - np.divide(after, self.before, out=np.ones_like(after), where=self.before > 0)
        hit = np.array(
            [float(kept[t].all()) if t is not None else np.nan for t in self.targets], float
        )
        ev = np.array(
            [
                float(all(kept[g].any() for g in e)) if e is not None else np.nan
                for e in self.evidence
            ],
            float,
        )
        return red, hit, ev

    def measure(self, knobs: Knobs, idx: np.ndarray | None = None) -> dict[str, float]:
        """Median token reduction and target coverage (all steps, successful episodes), over
        the steps ``idx`` (default: all)."""
        red, hit, ev = self.per_step_evidence(knobs)
        success = self.success
        if idx is not None:
            red, hit, ev, success = red[idx], hit[idx], ev[idx], success[idx]
        has = ~np.isnan(hit)
        succ = has & success
        return {
            "median_reduction": float(np.median(red)) if len(red) else float("nan"),
            "coverage": float(hit[has].mean()) if has.any() else float("nan"),
            "coverage_success": float(hit[succ].mean()) if succ.any() else float("nan"),
            "evidence": float(np.nanmean(ev)) if (~np.isnan(ev)).any() else float("nan"),
        }


def objective(m: dict[str, float], min_coverage: float, min_evidence: float = 0.0) -> float:
    """Median reduction, minus ten times any target coverage shortfall below
    ``min_coverage`` and any evidence coverage shortfall below ``min_evidence``.

    >>> objective({"median_reduction": 0.8, "coverage": 0.95, "evidence": 0.8}, 0.97, 0.85)
    0.1
    """
    short = max(0.0, min_coverage - m["coverage"])
    short += max(0.0, min_evidence - m.get("evidence", 1.0)) if min_evidence else 0.0
    return round(m["median_reduction"] - 10.0 * short, 12)


def _descend(
    data: TuningSet,
    start: Knobs,
    grid: dict[str, tuple],
    min_coverage: float,
    rounds: int,
    idx: np.ndarray | None = None,
    min_evidence: float = 0.0,
) -> tuple[Knobs, dict[str, float], float, int]:
    """Coordinate descent from ``start`` until a pass over ``grid`` changes nothing."""
    best, best_m = start, data.measure(start, idx)
    best_v, evaluated = objective(best_m, min_coverage, min_evidence), 1
    for _ in range(rounds):
        changed = False
        for name, values in grid.items():
            for value in values:
                cand = replace(best, **{name: value})
                m = data.measure(cand, idx)
                evaluated += 1
                v = objective(m, min_coverage, min_evidence)
                if v > best_v + 1e-9:
                    best, best_m, best_v, changed = cand, m, v, True
        if not changed:
            break
    return best, best_m, best_v, evaluated


def tune(
    steps: Sequence[Step] | TuningSet,
    min_coverage: float = 0.97,
    grid: dict[str, tuple] | None = None,
    restarts: int = 20,
    samples: int = 400,
    rounds: int = 6,
    seed: int = 0,
    idx: np.ndarray | None = None,
    min_evidence: float = 0.0,
) -> tuple[Knobs, dict[str, Any]]:
    """Random search then coordinate descent; returns the best knobs and a report.

    ``samples`` random settings are drawn from ``grid`` (seeded); coordinate descent starts
    from the defaults and from the ``restarts`` best samples; the best end point wins.
    ``idx`` restricts tuning to those steps of a :class:`TuningSet` (a fold's train steps);
    ``min_evidence``: the evidence coverage (information reading) to keep as well.
    """
    data = steps if isinstance(steps, TuningSet) else TuningSet(steps)
    grid = grid or GRID
    rng = np.random.default_rng(seed)
    drawn = [
        replace(Knobs(), **{k: v[rng.integers(len(v))] for k, v in grid.items()})
        for _ in range(samples)
    ]
    ranked = sorted(
        drawn, key=lambda k: -objective(data.measure(k, idx), min_coverage, min_evidence)
    )
    evaluated = samples
    best: tuple | None = None
    for start in [Knobs(), *ranked[:restarts]]:
        knobs, m, v, n = _descend(data, start, grid, min_coverage, rounds, idx, min_evidence)
        evaluated += n
        if best is None or v > best[2] + 1e-9:
            best = (knobs, m, v)
    knobs, m, v = best  # type: ignore[misc]
    report = {
        **m,
        "objective": v,
        "min_coverage": min_coverage,
        "min_evidence": min_evidence,
        "n_steps": data.n_steps if idx is None else len(idx),
        "n_target_steps": sum(
            data.targets[i] is not None for i in (range(data.n_steps) if idx is None else idx)
        ),
        "settings_evaluated": evaluated,
        "samples": samples,
        "restarts": restarts,
        "seed": seed,
        "knobs": asdict(knobs),
    }
    return knobs, report


def cross_validate(
    steps: Sequence[Step] | TuningSet,
    folds: Sequence[Any],
    min_coverage: float = 0.97,
    **tune_kwargs: Any,
) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Tune on each fold's train steps, measure on its test steps (``folds``: objects with
    ``name``, ``train_idx``, ``test_idx``, as :func:`lrlab.tuning.crossval.folds` returns).

    Returns every step's out-of-fold reduction and coverage (NaN where a step is in no test
    fold or has no target) and one record per fold (its knobs and test measures).

    >>> from types import SimpleNamespace as F
    >>> s = [Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'",
    ...           target_bids=("1",))] * 2
    >>> f = [F(name="a", train_idx=np.array([0]), test_idx=np.array([1]))]
    >>> red, hit, rows = cross_validate(s, f, min_coverage=1.0, restarts=1, samples=5)
    >>> float(hit[1]), bool(np.isnan(hit[0]))
    (1.0, True)
    """
    data = steps if isinstance(steps, TuningSet) else TuningSet(steps)
    red = np.full(data.n_steps, np.nan)
    hit = np.full(data.n_steps, np.nan)
    rows = []
    for fold in folds:
        knobs, _ = tune(data, min_coverage, idx=np.asarray(fold.train_idx), **tune_kwargs)
        r, h = data.per_step(knobs)
        test = np.asarray(fold.test_idx)
        red[test], hit[test] = r[test], h[test]
        rows.append({"fold": fold.name, **data.measure(knobs, test), "knobs": asdict(knobs)})
    return red, hit, rows
