"""Training and honest evaluation of the learned line scorer (:mod:`lrlab.reducers.learned`).

- :func:`labels`, :func:`fit_model`, :func:`prepare`: the training rows, the fit and the
  per-tree cache (:mod:`lrlab.tuning.learned_fit`, re-exported here);
- :func:`summarise` and :func:`fast_results`: a step's lines ranked by some scores and
  priced once, after which any knob setting (``budget``, ``overhead``, ``floor``) is scored
  in microseconds per step (tokens summed per line: within a fraction of a point of the
  exact rendering, used to *choose* knobs only);
- :func:`choose_knobs`: the best coverage under a median-reduction floor *per benchmark*
  (:data:`MIN_REDUCTION`: pages of a few dozen tokens cannot give what long pages give);
- :func:`out_of_fold` and :func:`nested_cv`: grouped cross-validation. In the nested one
  every outer fold (a held-out task family) gets knobs chosen on inner folds of the other
  families only (:func:`lrlab.tuning.crossval.group_kfold`), so the outer figure is honest: no
  knob ever saw the family it is measured on;
- :func:`step_results` (exact, for reporting) and :func:`curve` (the budget sweep).

>>> s = Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'", target_bids=("1",))
>>> d = prepare([s])[0]
>>> d.X.shape[0], d.y.tolist()
(2, [1, 0])
>>> red, hit, ev = fast_results([d], [np.array([0.9, 0.1])], {"budget": 0.5})
>>> hit.tolist(), bool(red[0] > 0.4)
([1.0], True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lrlab.reducers.budget import Ranking, kept_lines, n_kept, rank_lines
from lrlab.reducers.features import carriers
from lrlab.reducers.learned import KNOBS, LineModel
from lrlab.tuning.learned_fit import StepData, fit_model, labels, prepare  # noqa: F401 (API)
from lrlib.core.step import Step
from lrlib.reducers.base import get_reducer, lines_output

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "KNOB_KEYS",
    "RESCUE",
    "MIN_REDUCTION",
    "N_BOOT",
    "TIE",
    "MEASURES",
    "MEASURE",
    "Summary",
    "ranking",
    "summarise",
    "fast_results",
    "choose_knobs",
    "out_of_fold",
    "nested_cv",
    "step_results",
    "curve",
    "learned_cv_report",
]

KNOB_KEYS = KNOBS  # budget, overhead, floor, rescue
RESCUE = 1  # carriers taken first: a fixed prior (learned.Learned), not chosen by CV
# median token reduction each benchmark must keep for a knob setting to be eligible: the
# issue's floors (70% on recorded WorkArena/WebArena pages, 60% on small MiniWoB pages),
# held by the *lower end* of the median's 95% interval over episodes (:data:`N_BOOT`
# replicates), not by the median itself: a setting whose median sits on the floor here falls
# below it on about half of the unseen page sets. Long pages' medians barely move (a budget
# fixes the kept share), MiniWoB's move by several points (one task type's pages all reduce
# alike), so the margin each gets is its own.
MIN_REDUCTION: dict[str, float] = {"miniwob": 0.60, "*": 0.70}
N_BOOT = 500  # bootstrap replicates per knob setting (a choice, not a report: 2,000 there)
TIE = 0.005  # coverages closer than this (one or two steps here) are a tie: noise at this n
# what the knob choice maximises: evidence coverage (information reading, lrlib.data.evidence),
# target coverage, or decision evidence coverage (lrlib.data.evidence.decision_groups)
MEASURES = ("evidence", "coverage", "decision")
MEASURE = "evidence"


@dataclass
class Summary:
    """A step ranked by some scores (:class:`~lrlab.reducers.learned.Ranking`), and how
    many of the best lines it takes to hold every target (``need_target``) and one line of
    every evidence group (``need_evidence``); ``inf`` when the step has none."""

    ranking: Ranking
    need_target: float
    need_evidence: float


def ranking(d: StepData, p: np.ndarray, rescue: int = RESCUE) -> Ranking:
    """``d``'s lines ranked by ``p`` as :class:`lrlab.reducers.learned.Learned` ranks them."""
    first = [i for i in carriers(d.X, p, rescue) if i not in d.banned]
    return rank_lines(p, d.tokens, d.stub_tokens, d.parents, d.whole, first, d.banned, d.companions)


def summarise(
    d: StepData, p: np.ndarray, rescue: int = RESCUE, definition: str = "evidence"
) -> Summary:
    """Rank ``d``'s lines by ``p`` once (:func:`ranking`); ``need_evidence`` for the
    evidence groups of ``definition`` (``"evidence"``, or ``"decision"``: the widened ones)."""
    r = ranking(d, p, rescue)
    pos = r.kept_at
    need_t = float(pos[d.targets].max() + 1) if d.targets else np.inf
    need_e = np.inf
    groups = d.decision if definition == "decision" else d.evidence
    if groups:
        need_e = float(max(pos[g].min() + 1 if g else len(p) + 1 for g in groups))
    return Summary(r, need_t, need_e)


def _at(s: Summary, knobs: Mapping[str, Any]) -> tuple[float, float, float]:
    """(reduction, target hit, evidence hit) of one summarised step at ``knobs``."""
    r = s.ranking
    if not len(r.cost):
        return 0.0, np.nan, np.nan
    k = n_kept(r, knobs["budget"], knobs.get("overhead", 0.0), knobs.get("floor", 0.0))
    red = 1.0 - r.cost[k - 1] / r.total if r.total else 0.0
    hit = np.nan if np.isinf(s.need_target) else float(s.need_target <= k)
    ev = np.nan if np.isinf(s.need_evidence) else float(s.need_evidence <= k)
    return red, hit, ev


def fast_results(
    data: Sequence[StepData],
    scores: Sequence[np.ndarray] | None = None,
    knobs: Mapping[str, Any] | None = None,
    summaries: Sequence[Summary] | None = None,
    definition: str = "evidence",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-step (reduction, target coverage, evidence coverage of ``definition``; NaN:
    none) at ``knobs``, from ``scores`` or from ``summaries`` already computed for them."""
    if summaries is None:
        rescue = int(knobs.get("rescue", RESCUE))
        summaries = [summarise(d, p, rescue, definition) for d, p in zip(data, scores, strict=True)]
    rows = [_at(s, knobs) for s in summaries]
    return tuple(np.array(col, float) for col in zip(*rows, strict=True)) if rows else (
        np.zeros(0), np.zeros(0), np.zeros(0)
    )  # fmt: skip


def _floor(benchmark: str, floors: Mapping[str, float]) -> float:
    return floors.get(benchmark, floors.get("*", 0.0))


def choose_knobs(
    data: Sequence[StepData],
    scores: Sequence[np.ndarray],
    grid: Mapping[str, Sequence[Any]],
    floors: Mapping[str, float] = MIN_REDUCTION,
    measure: str = MEASURE,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The knobs of ``grid`` (every combination) with the best ``measure`` (``"evidence"``:
    evidence coverage, information reading, the default; ``"coverage"``: target coverage) -
    the mean over the benchmarks present, so small sets weigh as much as large ones - among those
    whose median reduction on every benchmark's steps reaches its floor with the low end of
    its 95% interval (bootstrap over episodes; ``floors``: benchmark -> share, ``"*"`` for the
    rest; none eligible: the setting that misses its floors by least). Coverages within
    :data:`TIE` of the best are a tie, broken by ``headroom``: how far the lowest of those
    interval ends clears its floor. Returns (knobs, scored grid).

    >>> s = [Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'",
    ...           target_bids=("1",), benchmark="webarena")]
    >>> knobs, rows = choose_knobs(prepare(s), [np.array([0.9, 0.1])], {"budget": (0.4, 0.9)})
    >>> knobs, [r["coverage"] for r in rows]  # both keep the cart; 0.4 clears more
    ({'budget': 0.4, 'rescue': 1}, [1.0, 1.0])
    """
    from lrlib.eval.intervals import interval

    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; valid: {', '.join(MEASURES)}")

    definition = "decision" if measure == "decision" else "evidence"
    summaries = [summarise(d, p, RESCUE, definition) for d, p in zip(data, scores, strict=True)]
    kinds = np.array(["miniwob" if d.benchmark == "miniwob" else "*" for d in data])
    episodes = np.array([d.episode for d in data], dtype=object)
    rows = []
    for values in product(*grid.values()):
        knobs = dict(zip(grid, values, strict=True))
        red, hit, ev = fast_results(data, knobs=knobs, summaries=summaries)
        row: dict[str, Any] = {**knobs, "rescue": RESCUE}
        margins, covs, evs, reds = [], [], [], []
        for kind in sorted(set(kinds)):
            mask = kinds == kind
            med = interval(red[mask], episodes[mask], "median", n_boot=N_BOOT)
            lo = med["estimate"] if med["lo"] != med["lo"] else med["lo"]  # one episode: no CI
            cov = float(np.nanmean(hit[mask])) if (~np.isnan(hit[mask])).any() else np.nan
            evi = float(np.nanmean(ev[mask])) if (~np.isnan(ev[mask])).any() else np.nan
            row[f"coverage[{kind}]"] = round(cov, 4)
            row[f"evidence[{kind}]"] = round(evi, 4)
            row[f"median_reduction[{kind}]"] = round(float(med["estimate"]), 4)
            row[f"median_reduction_lo[{kind}]"] = round(float(lo), 4)
            margins.append(lo - _floor(kind, floors))
            covs.append(cov)
            evs.append(evi)
            reds.append(med["estimate"])
        row["coverage"] = round(float(np.nanmean(covs)), 4)
        row["evidence"] = round(float(np.nanmean(evs)), 4)
        row["median_reduction"] = round(float(np.mean(reds)), 4)
        row["headroom"] = round(min(margins), 4)
        rows.append(row)
    eligible = [r for r in rows if r["headroom"] >= 0] or [max(rows, key=lambda r: r["headroom"])]
    key = "coverage" if measure == "coverage" else "evidence"  # the "evidence" column holds
    other = "evidence" if key == "coverage" else "coverage"  # the decision one for "decision"
    top = max(r[key] for r in eligible)
    tied = [r for r in eligible if r[key] >= top - TIE - 1e-9]
    best = max(tied, key=lambda r: (r["headroom"], r[key], r[other]))
    return {**{k: best[k] for k in grid}, "rescue": RESCUE}, rows


def _fit(data: Sequence[StepData], idx: Sequence[int], C: float) -> LineModel:
    return fit_model(
        np.vstack([data[i].X for i in idx]), np.concatenate([data[i].y for i in idx]), C
    )


def out_of_fold(data: Sequence[StepData], folds: Sequence[Any], C: float = 0.1) -> list:
    """Each step's line scores from the model fitted on its fold's train rows (``folds``:
    :func:`lrlab.tuning.crossval.folds` or anything with ``train_idx``/``test_idx``); None for
    steps in no test fold."""
    out: list[np.ndarray | None] = [None] * len(data)
    for fold in folds:
        model = _fit(data, fold.train_idx, C)
        for i in fold.test_idx:
            out[i] = model.predict(data[i].X)
    return out


def nested_cv(
    data: Sequence[StepData],
    groups: Sequence[str],
    outer: Sequence[Any],
    grid: Mapping[str, Sequence[Any]],
    floors: Mapping[str, float] = MIN_REDUCTION,
    C: float = 0.1,
    inner: int = 4,
    measure: str = MEASURE,
) -> tuple[list, list[dict[str, Any] | None]]:
    """Honest grouped CV: for every ``outer`` fold, knobs chosen by :func:`choose_knobs` on
    scores from ``inner`` grouped folds of its train rows (``groups``: one label per row),
    and the fold's test rows scored by a model fitted on all its train rows. Returns the
    per-step scores and knobs (None outside every test fold)."""
    from lrlab.tuning.crossval import group_kfold

    scores: list[np.ndarray | None] = [None] * len(data)
    knobs: list[dict[str, Any] | None] = [None] * len(data)
    for fold in outer:
        train = np.asarray(fold.train_idx)
        inner_scores: list[np.ndarray | None] = [None] * len(train)
        for tr, te in group_kfold([groups[i] for i in train], inner):
            model = _fit(data, train[tr], C)
            for j in te:
                inner_scores[j] = model.predict(data[train[j]].X)
        chosen, _ = choose_knobs([data[i] for i in train], inner_scores, grid, floors, measure)
        model = _fit(data, train, C)
        for i in fold.test_idx:
            scores[i], knobs[i] = model.predict(data[i].X), chosen
    return scores, knobs


def step_results(
    steps: Sequence[Step],
    data: Sequence[StepData],
    scores: Sequence[np.ndarray | None],
    knobs: Mapping[str, Any] | Sequence[Mapping[str, Any] | None],
    encoding: str | None = None,
    definition: str = "evidence",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact per-step token reduction, target and evidence coverage (NaN: no target, or no
    scores) of keeping lines by ``scores`` with ``knobs`` (one dict, or one per step),
    rendered with ``strategy="structure"``; ``definition="decision"``: the widened evidence
    (:func:`lrlib.data.evidence.decision_covered`)."""
    from lrlib.core.tokens import DEFAULT_ENCODING, count_lines, count_tokens
    from lrlib.data.evidence import decision_covered
    from lrlib.eval.metrics import covers, covers_evidence

    enc = encoding or DEFAULT_ENCODING
    per_step = [knobs] * len(steps) if isinstance(knobs, Mapping) else list(knobs)
    red, hit, ev = (np.full(len(steps), np.nan) for _ in range(3))
    for k, (s, d, p, kn) in enumerate(zip(steps, data, scores, per_step, strict=True)):
        if p is None or kn is None:
            continue
        r = ranking(d, p, int(kn.get("rescue", RESCUE)))
        n = n_kept(r, kn["budget"], kn.get("overhead", 0.0), kn.get("floor", 0.0))
        out = lines_output(s.axtree, kept_lines(r, n), "structure")
        before = count_lines(s.axtree.texts, enc)
        red[k] = 1.0 - count_tokens(out.text, enc) / before if before else 0.0
        c = covers(s, out.kept, out.stubs)
        hit[k] = np.nan if c is None else float(c)
        if definition == "decision":
            e = decision_covered(s, out.kept) if d.evidence is not None else None
        else:
            e = covers_evidence(s, out.kept)
        ev[k] = np.nan if e is None else float(e)
    return red, hit, ev


def curve(
    steps: Sequence[Step],
    budgets: Sequence[float] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7),
    model_file: str | Path | None = None,
) -> Any:
    """Coverage against median token reduction as ``budget`` varies (one row each), for the
    shipped model and its other knobs. Features are computed once.

    >>> s = [Step(goal="Open the cart", tree="[1] link 'Cart'\\n[2] link 'Home'",
    ...           target_bids=("1",))]
    >>> c = curve(s, budgets=(0.0, 1.0))
    >>> c.coverage.tolist(), bool(c.median_reduction.iloc[0] >= c.median_reduction.iloc[1])
    ([1.0, 1.0], True)
    """
    import pandas as pd

    base = get_reducer("learned", model_file=model_file)
    knobs = {key: getattr(base, key) for key in KNOB_KEYS}
    data = prepare(steps, base.encoding)
    scores = [base.model.predict(d.X) for d in data]
    rows = []
    for b in budgets:
        red, hit, ev = step_results(steps, data, scores, {**knobs, "budget": b}, base.encoding)
        has = ~np.isnan(hit)
        rows.append(
            {
                "budget": b,
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


def learned_cv_report(
    name: str = "learned_cv", model_file: str | Path | None = None
) -> pd.DataFrame:
    """The learned scorer's held-out figures as its training script measured them and stored
    them beside its weights (``learned_model.json``): nested leave-one-family-out CV per
    benchmark and the WorkArena -> WebArena transfer, each cell with its 95% interval
    (bootstrap over episodes) and n; written as ``<name>.md``/``.csv``.

    >>> import tempfile
    >>> from lrlib import settings
    >>> with settings.override(figures_dir=tempfile.mkdtemp()):
    ...     t = learned_cv_report()
    >>> list(t.columns)[:2], len(t) >= 3
    (['held out', 'knobs'], True)
    """
    import pandas as pd

    from lrlab.reducers.learned import MODEL_FILE, load_model
    from lrlib.eval.intervals import fmt
    from lrlib.report.tables import save_table

    _, record = load_model(model_file or MODEL_FILE)
    cv, prov = record["cv"], record["provenance"]

    def cell(r: dict[str, Any], key: str, n: str, episodes: str) -> str:
        ci = {"estimate": r[key], "lo": r[f"{key}_lo"], "hi": r[f"{key}_hi"],
              "n_steps": r[n], "n_episodes": r[episodes]}  # fmt: skip
        return fmt(ci)

    rows = [(f"nested family CV: {k}", "chosen in each fold", r)
            for k, r in cv["nested"]["by_benchmark"].items()]  # fmt: skip
    wa = cv["workarena_to_webarena"]
    rows.append(("WorkArena -> WebArena (train+validation WebArena steps)", str(wa["knobs"]), wa))
    table = pd.DataFrame(
        [
            {
                "held out": what,
                "knobs": knobs,
                "target coverage": cell(r, "coverage", "n_target", "n_episodes_target"),
                "evidence coverage": cell(
                    r, "evidence_coverage", "n_evidence", "n_episodes_evidence"
                ),
                "median token reduction": cell(r, "median_reduction", "n_steps", "n_episodes"),
            }
            for what, knobs, r in rows
        ]
    )
    save_table(
        table,
        name,
        f"The learned scorer's held-out figures from its training record ({prov['script']}, "
        f"{prov['date']}, commit {str(prov['git_commit'])[:12]}; shipped knobs "
        f"{record['knobs']}): every family measured with a model fitted, and knobs chosen, "
        "without it. Cells: estimate [95% interval, bootstrap over episodes] n=steps/episodes.",
    )
    return table
