"""Offline measures of a reduction: how much it removes, and whether it keeps the target.

**Reduction** (the paper's measure) is ``1 - |reduced| / |original|``, in tokens (the
headline), characters and lines. The reduced text is whatever the reducer outputs,
markers and stubs included.

**Target coverage** asks whether the element the agent acted on next survived. A step's
*targets* are the bids its recorded next action names (``click('a51')`` -> ``a51``). Steps
are put in three groups (:func:`target_status`):

- ``ok``: every target bid is a line of the tree: the step counts;
- ``none``: the action names no element (``scroll``, ``send_msg_to_user``, the last step);
- ``missing``: the action names a bid the tree does not contain (the agent guessed, or
  acted on an element outside the recorded tree).

Only ``ok`` steps enter the coverage rate; the others are excluded and counted. A step is
*covered* when every target line is kept **verbatim**. A stub (``[bid] role``, as the
structure-preserving filter renders ancestors, or a line a chunk shows only in part) keeps
the bid visible but drops the name and state the agent needs to choose that element, so it
does not count as covering; ``covered_visible`` is the looser reading where a visible bid
suffices, reported alongside.

**Evidence coverage** asks whether the reduction also kept what the action needs besides
its element: the option a ``select_option`` picks, the label line of a filled field, the
question a clicked radio button answers, the page text a ``send_msg_to_user`` answer
reports, the text that names an unnamed clickable
(:mod:`lrlib.data.evidence` defines the lines, as groups of alternatives, from the recorded
action in ``step.meta["action"]``). A step's evidence status is ``missing`` when its
target is, ``ok`` when it has at least one evidence group (targets count as groups, so
steps with a target are included, and answer-only steps join them), ``none`` otherwise.
An ``ok`` step is *evidence-covered* when every group's information is readable on the
kept lines (:func:`lrlib.data.evidence.readable`: one of its lines kept, or a kept line with
the same name, e.g. a kept ``combobox 'Quantity'`` for its dropped ``StaticText 'Quantity'``
label; a target always needs its own line): column ``evidence_covered``, the headline.
The first, stricter definition (every group keeps one of *its own* lines verbatim) stays
as ``evidence_covered_lines``. On steps with a target, either is at most target coverage.

**Planning-horizon coverage** (``horizon_covered_<k>``, k = 1..3,
:mod:`lrlib.data.evidence`): whether the elements the recorded agent acts on in this and
the next k - 1 recorded steps, *those already on the current page*, are all kept verbatim;
k = 1 is target coverage (what it can and cannot say: :mod:`lrlib.data.evidence`).

>>> from lrlib.core.step import Step
>>> s = Step(goal="g", tree="RootWebArea 'r'\\n\\t[7] button 'Go'", target_bids=("7",))
>>> target_status(s), covers(s, kept=[1]), covers(s, kept=[1, 2])
('ok', False, True)
>>> reduction(200, 50)
0.75
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lrlib.core.axtree import split_lines
from lrlib.core.step import Step
from lrlib.data.evidence import covered as evidence_covered
from lrlib.data.evidence import decision_covered, typed_groups

STATUSES = ("ok", "none", "missing")
HORIZONS = (1, 2, 3)  # planning horizons k measured by an evaluation


def reduction(before: float, after: float) -> float:
    """``1 - after / before`` (0 when ``before`` is 0).

    >>> reduction(10, 10), reduction(0, 0)
    (0.0, 0.0)
    """
    return 1.0 - after / before if before else 0.0


def target_status(step: Step) -> str:
    """``ok`` (all target bids in the tree), ``none`` (no target) or ``missing``.

    >>> target_status(Step(goal="g", tree="[1] link 'a'", target_bids=("9",)))
    'missing'
    """
    if not step.target_bids:
        return "none"
    tree = step.axtree
    return "ok" if all(tree.line_of(b) is not None for b in step.target_bids) else "missing"


def covers(
    step: Step, kept: Iterable[int], stubs: Iterable[int] = (), count_stubs: bool = False
) -> bool | None:
    """True when every target line is kept (or stubbed, with ``count_stubs``); None when the
    step has no target in its tree (status ``none`` or ``missing``).

    >>> s = Step(goal="g", tree="[1] form\\n\\t[2] button 'A'", target_bids=("1",))
    >>> covers(s, kept=[2], stubs=[1]), covers(s, kept=[2], stubs=[1], count_stubs=True)
    (False, True)
    """
    if target_status(step) != "ok":
        return None
    shown = set(kept) | (set(stubs) if count_stubs else set())
    return all(n in shown for n in step.target_lines)


def evidence_status(step: Step) -> tuple[str, list[list[int]]]:
    """``(status, groups)``: ``ok``/``none``/``missing`` (module doc) and the evidence groups.

    >>> s = Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'\\n\\t[3] option 'M'",
    ...          target_bids=("1",), meta={"action": "select_option('1', 'M')"})
    >>> evidence_status(s)
    ('ok', [[1], [3]])
    """
    if target_status(step) == "missing":
        return "missing", []
    groups = [g for _, g in typed_evidence(step)]
    return ("ok" if groups else "none"), groups


def typed_evidence(step: Step) -> list[tuple[str, list[int]]]:
    """The evidence groups of an ``ok`` step with their kind (``[]`` otherwise).

    >>> s = Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'\\n\\t[3] option 'M'",
    ...          target_bids=("1",), meta={"action": "select_option('1', 'M')"})
    >>> typed_evidence(s)
    [('target', [1]), ('option', [3])]
    """
    if target_status(step) == "missing":
        return []
    groups = typed_groups(step.axtree, (step.meta or {}).get("action"), step.goal)
    if not groups and step.target_lines:  # no recorded action text: the targets alone
        groups = [("target", [n]) for n in step.target_lines]
    return groups


READINGS = ("information", "lines")


def covers_evidence(step: Step, kept: Iterable[int], reading: str = "information") -> bool | None:
    """True when every evidence group is covered (``reading="information"``: its
    information readable on a kept line, :func:`lrlib.data.evidence.readable`;
    ``"lines"``: one of its own lines kept verbatim); None without evidence.

    >>> s = Step(goal="g", tree="[1] combobox 'Size'\\n\\t[2] option 'S'\\n\\t[3] option 'M'"
    ...          "\\nStaticText 'M'", target_bids=("1",), meta={"action": "select_option('1', 'M')"})
    >>> covers_evidence(s, [1, 2]), covers_evidence(s, [1, 3]), covers_evidence(s, [1, 4])
    (False, True, True)
    >>> covers_evidence(s, [1, 4], reading="lines")
    False
    """
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; valid: {', '.join(READINGS)}")
    groups = typed_evidence(step)
    if not groups:
        return None
    shown = set(kept)
    if reading == "lines":
        return all(any(n in shown for n in g) for _, g in groups)
    return evidence_covered(step.axtree, groups, shown)


def step_metrics(
    step: Step,
    text: str,
    kept: Iterable[int],
    stubs: Iterable[int] = (),
    tokens_before: int | None = None,
    tokens_after: int | None = None,
    horizon: Sequence[Sequence[int]] | None = None,
) -> dict[str, Any]:
    """The per-step measures of one reduction (one row of an evaluation, minus metadata).
    ``horizon``: the lines of :func:`lrlib.data.evidence.horizon_lines` for k = 1, 2...
    (``horizon_covered_<k>``: all kept verbatim; None where a horizon is empty).

    >>> m = step_metrics(Step(goal="g", tree="a\\nbb\\nccc"), "a\\nbb", [1, 2], tokens_before=6,
    ...                  tokens_after=3)
    >>> m["reduction"], m["reduction_chars"], round(m["reduction_lines"], 3), m["covered"]
    (0.5, 0.5, 0.333, None)
    """
    tree = step.axtree
    kept, stubs = list(kept), list(stubs)
    chars_before, chars_after = len(tree.text), len(text)
    lines_before, lines_after = len(tree), len(split_lines(text))
    status = target_status(step)
    row: dict[str, Any] = {
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "reduction": (
            reduction(tokens_before, tokens_after)
            if tokens_before is not None and tokens_after is not None
            else None
        ),
        "chars_before": chars_before,
        "chars_after": chars_after,
        "reduction_chars": reduction(chars_before, chars_after),
        "lines_before": lines_before,
        "lines_after": lines_after,
        "reduction_lines": reduction(lines_before, lines_after),
        "n_kept": len(kept),
        "n_stubs": len(stubs),
        "target_status": status,
        "n_targets": len(step.target_bids),
        "covered": covers(step, kept, stubs),
        "covered_visible": covers(step, kept, stubs, count_stubs=True),
    }
    ev_status, groups = evidence_status(step)
    shown = set(kept)
    row["evidence_status"] = ev_status
    row["n_evidence"] = len(groups)
    ok = ev_status == "ok"
    row["evidence_covered"] = covers_evidence(step, shown) if ok else None
    row["evidence_covered_lines"] = all(any(n in shown for n in g) for g in groups) if ok else None
    row["decision_covered"] = decision_covered(step, shown) if ok else None  # widened evidence
    for k, lines in enumerate(horizon or (), 1):
        row[f"horizon_covered_{k}"] = all(n in shown for n in lines) if lines else None
    return row


def coverage(
    frame, column: str = "covered", successful_only: bool = False, status: str = "target_status"
) -> dict[str, Any]:
    """Target coverage over the rows of ``frame`` (an evaluation frame, one reducer);
    evidence coverage with ``column="evidence_covered", status="evidence_status"``.

    Returns ``{"coverage", "n", "n_none", "n_missing"}``: the share of ``ok`` steps covered,
    how many ``ok`` steps it is over, and how many were excluded and why.
    ``successful_only`` keeps the steps of episodes that succeeded (``episode_success``).

    >>> import pandas as pd
    >>> f = pd.DataFrame({"target_status": ["ok", "ok", "none", "missing"],
    ...                   "covered": [True, False, None, None]})
    >>> coverage(f)
    {'coverage': 0.5, 'n': 2, 'n_none': 1, 'n_missing': 1}
    """
    status, values = frame[status], frame[column]  # two columns, not the whole frame
    if successful_only:
        kept = frame["episode_success"].fillna(False).astype(bool)
        status, values = status[kept], values[kept]
    ok = status == "ok"
    n = int(ok.sum())
    share = float(values[ok].astype(bool).mean()) if n else float("nan")
    return {
        "coverage": share,
        "n": n,
        "n_none": int((status == "none").sum()),
        "n_missing": int((status == "missing").sum()),
    }


def _evidence_summary(group) -> dict[str, Any]:
    if "evidence_status" not in group:
        return {"evidence_coverage": float("nan"), "n_evidence": 0}
    ev = coverage(group, "evidence_covered", status="evidence_status")
    out = {"evidence_coverage": ev["coverage"], "n_evidence": ev["n"]}
    if "evidence_covered_lines" in group:
        lines = coverage(group, "evidence_covered_lines", status="evidence_status")
        out["evidence_coverage_lines"] = lines["coverage"]
    for k in HORIZONS:
        col = f"horizon_covered_{k}"
        if col in group:
            known = group[col].dropna()
            out[f"horizon_coverage_{k}"] = (
                float(known.astype(bool).mean()) if len(known) else float("nan")
            )
            out[f"n_horizon_{k}"] = len(known)
    return out


def summarize(frame, by: str | list[str] = "reducer"):
    """One row per reducer: reduction (median, mean; tokens, chars, lines), coverage (all
    steps, successful episodes, visible-bid reading), evidence coverage (and its n),
    latency (median, p95, ms). Point estimates; intervals: :func:`lrlib.eval.intervals.summary`.
    ``frame`` may be an :class:`lrlab.scale.episode_stats.EpisodeStats` (by reducer).

    >>> import pandas as pd
    >>> f = pd.DataFrame({"reducer": ["a", "a"], "reduction": [0.2, 0.6],
    ...     "reduction_chars": [0.1, 0.5], "reduction_lines": [0.3, 0.7],
    ...     "target_status": ["ok", "ok"], "covered": [True, False],
    ...     "covered_visible": [True, True], "episode_success": [True, False],
    ...     "latency_s": [0.001, 0.003]})
    >>> s = summarize(f).iloc[0]
    >>> float(s["median_reduction"]), float(s["coverage"]), float(s["coverage_success"])
    (0.4, 0.5, 1.0)
    """
    import pandas as pd

    if getattr(frame, "folded_by_episode", False):  # a large evaluation (EpisodeStats)
        return frame.summarize(by)
    rows = []
    for key, group in frame.groupby(by, sort=False):
        cov = coverage(group)
        succ = (
            coverage(group, successful_only=True)
            if "episode_success" in group
            else {"coverage": float("nan"), "n": 0}
        )
        lat = group["latency_s"].astype(float) * 1000
        keys = {by: key} if isinstance(by, str) else dict(zip(by, key, strict=True))
        rows.append(
            {
                **keys,
                "n_steps": len(group),
                "median_reduction": float(group["reduction"].median()),
                "mean_reduction": float(group["reduction"].mean()),
                "median_reduction_chars": float(group["reduction_chars"].median()),
                "median_reduction_lines": float(group["reduction_lines"].median()),
                "coverage": cov["coverage"],
                "n_target": cov["n"],
                "coverage_success": succ["coverage"],
                "n_target_success": succ["n"],
                "coverage_visible": coverage(group, "covered_visible")["coverage"],
                **_evidence_summary(group),
                "n_none": cov["n_none"],
                "n_missing": cov["n_missing"],
                "median_latency_ms": float(lat.median()),
                "p95_latency_ms": float(lat.quantile(0.95)),
            }
        )
    return pd.DataFrame(rows)
