"""The trade-off figures: cost break-even, coverage against reduction (with the knob
curves), and injection survival. Like :mod:`lrlib.report.plots` (whose helpers they use):
tidy frames in, ``figures/<name>.png`` and ``.pdf`` out, the PNG path returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib.eval import intervals
from lrlib.report import plots

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "breakeven_plot",
    "measured_shares",
    "COVERAGE_MEASURES",
    "coverage_vs_reduction",
    "curve_points",
    "injection_survival",
]


def breakeven_plot(
    costs: pd.DataFrame,
    agent: str,
    retriever: str,
    model: str | None = None,
    reported_reduction: float | None = None,
    name: str = "cost_breakeven",
) -> Path:
    """Appendix B per step. Left: each recorded step's break-even ``alpha*`` (the largest
    kept fraction at which the retriever still saves money) against its tree size, under the
    paper's rule and with the full accounting; measured ``alpha`` of the retriever where it
    exists. Right: share of steps that save money as a function of the kept fraction.
    ``costs`` comes from :func:`lrlib.eval.costs.step_costs`; ``agent``/``retriever`` name the
    priced models, ``model`` the model whose measured selections are shown (if any).
    """
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    tokens = costs["tokens_before"]
    left.scatter(
        tokens,
        costs["alpha_star"],
        s=8,
        alpha=0.5,
        color="#1f5a94",
        label="break-even alpha*, full accounting",
    )
    paper_star = float(costs["alpha_star_paper"].iloc[0])
    left.axhline(
        paper_star, color="#d1495b", lw=1.5, label=f"paper's rule (C_L-C_S)/C_L = {paper_star:.2f}"
    )
    if "alpha" in costs and costs["alpha"].notna().any():
        m = costs[costs["alpha"].notna()]
        left.scatter(
            m["tokens_before"],
            m["alpha"],
            s=14,
            marker="x",
            color="#edae49",
            label=f"measured alpha ({model or 'retriever'}, {len(m)} steps)",
        )
    if reported_reduction is not None:
        left.axhline(
            1 - reported_reduction,
            color="#66a182",
            ls="--",
            lw=1,
            label=f"alpha at the paper's reported {reported_reduction:.0%} reduction",
        )
    left.set_xscale("log")
    lowest = float(costs["alpha_star"].min()) if costs["alpha_star"].notna().any() else 0.0
    left.set_ylim(min(-0.05, lowest - 0.05), 1.05)
    left.set_xlabel("original tree size (tokens, o200k)")
    left.set_ylabel("kept fraction alpha = reduced / original")
    left.legend(fontsize=7, loc="lower right")
    left.grid(alpha=0.3)
    grid = np.linspace(0, 1, 101)
    star = costs["alpha_star"].to_numpy()
    right.plot(grid, [(g <= paper_star) * 1.0 for g in grid], color="#d1495b", label="paper's rule")
    right.plot(
        grid,
        [(g <= star).mean() for g in grid],
        color="#1f5a94",
        label="full accounting (prompt, output, cache)",
    )
    if reported_reduction is not None:
        right.axvline(
            1 - reported_reduction,
            color="#66a182",
            ls="--",
            lw=1,
            label=f"paper's reported {reported_reduction:.0%} reduction",
        )
    if "alpha" in costs and costs["alpha"].notna().any():
        saves, kept = measured_shares(costs)
        label = f"measured: {intervals.fmt(saves, digits=0)} of steps save (median alpha)"
        if kept is not None:  # saving money is not keeping what the agent needs
            label += f"\nbut the target is kept on {intervals.fmt(kept, digits=0)}"
        right.scatter(
            [costs["alpha"].median()], [saves["estimate"]], color="#edae49", zorder=3, label=label
        )
        if saves["lo"] == saves["lo"]:  # an interval could be drawn
            right.errorbar(
                [costs["alpha"].median()],
                [saves["estimate"]],
                yerr=[[saves["estimate"] - saves["lo"]], [saves["hi"] - saves["estimate"]]],
                color="#edae49",
                capsize=3,
            )
    right.set_xlabel("kept fraction alpha")
    right.set_ylabel("share of steps where the retriever saves money")
    right.legend(fontsize=7, loc="lower left")
    right.grid(alpha=0.3)
    fig.suptitle(
        f"Cost break-even per step: agent {agent}, retriever priced as {retriever}"
        + (f"; selections by {model}" if model else "")
        + f" ({len(costs)} steps)",
        fontsize=11,
    )
    fig.tight_layout()
    return plots.save(fig, name)


def measured_shares(costs: pd.DataFrame) -> tuple[dict, dict | None]:
    """For the steps with a measured ``alpha``: the share that saves money and, when
    ``costs`` has a ``covered`` column, the share whose target line was kept; each a 95%
    bootstrap interval over episodes (over steps without an ``episode`` column).

    >>> import pandas as pd
    >>> c = pd.DataFrame({"alpha": [0.2, 0.3, None], "pays_off": [True, False, True],
    ...                   "episode": ["a", "b", "c"]})
    >>> saves, kept = measured_shares(c)
    >>> saves["estimate"], saves["n_steps"], kept
    (0.5, 2, None)
    """
    m = costs[costs["alpha"].notna()]
    clusters = m["episode"] if "episode" in m else range(len(m))
    saves = intervals.interval(m["pays_off"].astype(float), clusters)
    kept = None
    if "covered" in m and m["covered"].notna().any():
        kept = intervals.interval(m["covered"].astype(float), clusters)
    return saves, kept


#: what a coverage-vs-reduction panel can show: column -> axis label
COVERAGE_MEASURES = {
    "evidence": "evidence coverage (% of steps)",
    "coverage": "target coverage (% of steps)",
}


def coverage_vs_reduction(
    points: pd.DataFrame,
    model: str | None = None,
    name: str = "coverage_vs_reduction",
    title: str = "Coverage against token reduction",
    measures: Sequence[str] = ("evidence", "coverage"),
) -> Path:
    """Coverage against median token reduction, one panel per measure (default: evidence
    coverage - everything the recorded action needs is readable - beside target coverage):
    a curve per reducer with a knob (rows sorted by reduction), a point for the others.
    ``points`` needs ``reducer``, ``reduction`` and each measure's column (0-1; rows without
    it are left out of that panel); an optional ``label`` column annotates a curve's ends
    (e.g. the knob value) and ``<measure>_n`` a single point (its steps in that panel). With ``<measure>_lo``/``_hi`` and ``reduction_lo``/``_hi`` (as
    :func:`curve_points` gives them) every point gets its 95% episode-bootstrap interval as
    error bars.
    """
    import matplotlib.pyplot as plt

    unknown = [m for m in measures if m not in COVERAGE_MEASURES]
    if unknown:
        raise ValueError(f"unknown measures {unknown}; valid: {', '.join(COVERAGE_MEASURES)}")
    plots.require_model(list(points["reducer"].unique()), model)
    fig, axes = plt.subplots(1, len(measures), figsize=(6.2 * len(measures) + 2.5, 5.2),
                             squeeze=False)  # fmt: skip
    for ax, measure in zip(axes[0], measures, strict=True):
        _panel(ax, points, model, measure)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(title + (f" - retriever model: {model}" if model else ""), fontsize=10)
    fig.tight_layout()
    return plots.save(fig, name)


def _panel(ax: Any, points: pd.DataFrame, model: str | None, measure: str) -> None:
    for i, (reducer, rows) in enumerate(points.groupby("reducer", sort=True)):
        color = plots.PALETTE[i % len(plots.PALETTE)]
        label = reducer + (f" ({model})" if plots.needs_model([reducer]) else "")
        if measure not in rows:
            continue
        rows = rows[rows[measure].notna()].sort_values("reduction")
        style = "-o" if len(rows) > 1 else "s"
        ax.plot(
            100 * rows["reduction"],
            100 * rows[measure],
            style,
            color=color,
            label=label,
            markersize=4 if len(rows) > 1 else 7,
        )
        if {f"{measure}_lo", f"{measure}_hi", "reduction_lo", "reduction_hi"} <= set(rows):
            ax.errorbar(
                100 * rows["reduction"], 100 * rows[measure],
                xerr=100 * _err(rows, "reduction"), yerr=100 * _err(rows, measure),
                fmt="none", ecolor=color, elinewidth=0.8, alpha=0.5, capsize=1.5,
            )  # fmt: skip
        ends = rows.iloc[[0, -1]] if "label" in rows and len(rows) > 1 else rows.iloc[:0]
        for _, r in ends.iterrows():
            _note(ax, str(r["label"]), 100 * r["reduction"], 100 * r[measure], color)
        if len(rows) == 1 and f"{measure}_n" in rows and rows[f"{measure}_n"].notna().all():
            r = rows.iloc[0]  # this panel's own n: steps with a target, or with evidence
            _note(ax, f"n={int(r[f'{measure}_n'])}", 100 * r["reduction"], 100 * r[measure], color)
    if points.empty:  # e.g. a split without steps: say so
        ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("median token reduction (%)")
    ax.set_ylabel(COVERAGE_MEASURES[measure])
    ax.set_xlim(-2, 102)
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)


def _note(ax: Any, text: str, x: float, y: float, color: str) -> None:
    """A small label beside the point (x, y), turned inwards near the top and right edges so
    it stays inside the panel."""
    ax.annotate(
        text,
        (x, y),
        fontsize=6,
        color=color,
        xytext=(-3 if x > 85 else 3, -8 if y > 92 else 3),
        textcoords="offset points",
        ha="right" if x > 85 else "left",
        annotation_clip=True,
    )


def _err(rows: pd.DataFrame, col: str):
    """Asymmetric error-bar lengths (2, n) from ``<col>_lo``/``<col>_hi`` (NaN -> 0)."""
    import numpy as np

    lo = (rows[col] - rows[f"{col}_lo"]).clip(lower=0).fillna(0).to_numpy()
    hi = (rows[f"{col}_hi"] - rows[col]).clip(lower=0).fillna(0).to_numpy()
    return np.vstack([lo, hi])


def curve_points(
    sweeps: pd.DataFrame, frame: pd.DataFrame | None = None, single: Sequence[str] = ()
) -> pd.DataFrame:
    """Rows for :func:`coverage_vs_reduction`: one per swept knob value (from
    :func:`lrlib.eval.evaluation.sweep`/``curves``), plus one summary point per reducer of
    ``single`` found in ``frame`` (labelled with its number of steps).

    >>> import pandas as pd
    >>> sw = pd.DataFrame({"reducer": ["bm25"], "knob": ["top_k"], "value": [5],
    ...                    "median_reduction": [0.7], "coverage": [0.6]})
    >>> curve_points(sw)[["reducer", "label"]].values.tolist()
    [['bm25', 'top_k=5']]
    """
    import pandas as pd

    from lrlib.eval.intervals import summary
    from lrlib.eval.metrics import summarize

    ci_cols = [c for c in plots.CI_COLUMNS if c in sweeps]
    ev_cols = [c for c in ("evidence_lo", "evidence_hi", "evidence_n") if c in sweeps]
    rows = [
        {
            "reducer": r["reducer"],
            "reduction": r["median_reduction"],
            "coverage": r["coverage"],
            "evidence": r.get("evidence_coverage", float("nan")),
            "label": f"{r['knob']}={r['value']:g}"
            if isinstance(r["value"], float)
            else f"{r['knob']}={r['value']}",
            **{c: r[c] for c in ci_cols + ev_cols},
        }
        for _, r in sweeps.iterrows()
        if not sweeps.empty
    ]
    if frame is not None and single:
        part = frame[frame["reducer"].isin(single)]
        if "episode" not in part:
            part = part.assign(episode=part["step_id"])
        s = summarize(part)
        ci = summary(part).set_index("reducer") if len(part) else None
        for r in s.itertuples():
            row = {
                "reducer": r.reducer,  # n is each panel's own (coverage_n, evidence_n)
                "reduction": r.median_reduction,
                "coverage": r.coverage,
                "evidence": getattr(r, "evidence_coverage", float("nan")),
                "label": "",
                "coverage_n": r.n_target,
                "evidence_n": getattr(r, "n_evidence", float("nan")),
            }
            if ci is not None:
                keep = (*plots.CI_COLUMNS, "evidence_lo", "evidence_hi", "evidence_n")
                row.update({c: ci.loc[r.reducer, c] for c in keep if c in ci})
            rows.append(row)
    return pd.DataFrame(
        rows,
        columns=list(
            dict.fromkeys(["reducer", "reduction", "coverage", "label", *(rows[0] if rows else ())])
        ),
    )


def injection_survival(
    summary: pd.DataFrame,
    by: pd.DataFrame,
    model: str | None = None,
    name: str = "injection_survival",
    title: str = "Injected lines that reach the acting model",
) -> Path:
    """The injection benchmark. Left: per reducer, the share of injected lines that survive
    (bar) beside the share of all lines it keeps (tick): a bar short of its tick means the
    reducer drops attack lines more than other lines (``lift`` < 1, printed). Right: survival
    by ``by``'s columns (attack position or attack kind), one row per reducer. Steps where a
    reducer fell back (``failures``, e.g. to the full tree) are counted beside it. ``summary``
    and ``by`` come from :func:`lrlab.injection.injection_eval.summarize` and ``breakdown``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    reducers = list(summary["reducer"])
    plots.require_model(reducers, model)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12.5, 0.42 * len(reducers) + 1.8), width_ratios=(1.1, 1)
    )
    y = np.arange(len(reducers))
    left.barh(y, 100 * summary["survival"], color=plots.PALETTE[1], height=0.6,
              label="injected lines that survive")  # fmt: skip
    left.scatter(100 * summary["kept_share"], y, marker="|", s=260, color="black", zorder=3,
                 label="all lines kept (share of the tree)")  # fmt: skip
    failures = summary["failures"] if "failures" in summary else [0] * len(reducers)
    for i, (lift, failed) in enumerate(zip(summary["lift"], failures, strict=True)):
        text = "" if lift != lift else f"lift {lift:.2f}"
        text += f"\n{failed} fallbacks" if failed else ""  # e.g. unreadable answers: full tree
        left.text(103, i, text, va="center", fontsize=7, color="#444444")
    left.set_yticks(y, reducers, fontsize=8)
    left.set_ylim(len(reducers) - 0.5, -0.5)  # first reducer on top, rows level with the grid
    left.set_xlim(0, 118)
    left.set_xlabel("% of lines")
    left.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)
    left.grid(axis="x", alpha=0.3)
    grid = by.reindex(reducers).to_numpy(dtype=float)
    right.imshow(100 * grid, cmap="Reds", vmin=0, vmax=100, aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        if v == v:
            right.text(j, i, f"{v:.0%}", ha="center", va="center", fontsize=7,
                       color="white" if v > 0.6 else "black")  # fmt: skip
    right.set_xticks(range(grid.shape[1]), [str(c) for c in by.columns], rotation=20, fontsize=8)
    right.set_yticks(y, [])
    right.set_title(f"survival by {by.columns.name or 'group'}", fontsize=9)
    fig.suptitle(title + (f" - retriever model: {model}" if model else ""), fontsize=11)
    fig.tight_layout()
    return plots.save(fig, name)
