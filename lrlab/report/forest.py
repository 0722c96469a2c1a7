"""Forest plots: every reducer's estimates with their 95% intervals, side by side per split.

:func:`interval_forest` draws one panel per measure (evidence coverage first, then target
coverage and median token reduction by default) with a row per reducer and one marker per value of
``hue`` (validation / test, or split x benchmark), each with its episode-bootstrap
interval and n; an optional last panel shows the generalisation gap (validation minus
test) with its interval. The input is :func:`lrlib.eval.intervals.summary` and
:func:`lrlib.eval.intervals.gap` output; like every figure it writes PNG and PDF into
``figures/`` and names the retriever model when LineRetriever rows are shown.

>>> import pandas as pd
>>> hue_order(pd.Series(["test", "validation", "test"]))
['validation', 'test']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lrlib.report import plots
from lrlib.report.plots import PALETTE, needs_model, require_model

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MEASURES",
    "hue_order",
    "interval_forest",
]

MEASURES = (
    ("evidence", "evidence coverage (%)"),
    ("coverage", "target coverage (%)"),
    ("reduction", "median token reduction (%)"),
)
_ORDER = ("train", "validation", "test")


def hue_order(values: pd.Series) -> list[str]:
    """Distinct values, splits in train/validation/test order first, the rest sorted."""
    seen = {str(v) for v in values}
    first = [s for s in _ORDER if s in seen]
    return first + sorted(seen - set(first))


def interval_forest(
    summary: pd.DataFrame,
    hue: str = "split",
    measures: Sequence[tuple[str, str]] = MEASURES,
    gaps: pd.DataFrame | None = None,
    model: str | None = None,
    name: str = "generalisation",
    title: str = "Every reducer on validation and test (95% CI, bootstrap over episodes)",
) -> Path:
    """One panel per measure of ``summary`` (rows of :func:`lrlib.eval.intervals.summary` by
    ``reducer`` and ``hue``): a point and its interval per reducer and hue value, labelled
    with its n (steps/episodes). ``gaps`` (rows of :func:`lrlib.eval.intervals.gap`, one
    ``value`` per measure) adds a panel of validation-minus-test differences.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    reducers = list(dict.fromkeys(summary["reducer"]))
    require_model(reducers, model)
    hues = hue_order(summary[hue])
    panels = [m for m in measures if m[0] in summary] + ([("gap", "")] if gaps is not None else [])
    height = max(3.0, 0.42 * len(reducers) * max(1, len(hues)) ** 0.5 + 1.4)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), height), squeeze=False)
    step = 0.7 / max(1, len(hues))
    y = np.arange(len(reducers), dtype=float)
    for ax, (prefix, label) in zip(axes[0], panels, strict=True):
        if prefix == "gap":
            _gap_panel(ax, gaps, reducers, y)
            continue
        for j, h in enumerate(hues):
            rows = summary[summary[hue].astype(str) == h].set_index("reducer")
            offset = (j - (len(hues) - 1) / 2) * step
            for i, r in enumerate(reducers):
                if r not in rows.index or rows.loc[r, prefix] != rows.loc[r, prefix]:
                    continue
                row = rows.loc[r]
                est, lo, hi = (
                    100 * float(row[k]) for k in (prefix, f"{prefix}_lo", f"{prefix}_hi")
                )
                xerr = [[max(est - lo, 0.0)], [max(hi - est, 0.0)]] if lo == lo else None
                ax.errorbar(est, y[i] + offset, xerr=xerr, fmt="o", ms=4, capsize=2,
                            color=PALETTE[j % len(PALETTE)], label=h if i == 0 else None)  # fmt: skip
                ax.annotate(f"n={int(row[f'{prefix}_n'])}/{int(row[f'{prefix}_episodes'])}",
                            (est, y[i] + offset), xytext=(4, 2), textcoords="offset points",
                            fontsize=5.5, color="#555555")  # fmt: skip
        ax.set_xlabel(label)
        ax.set_xlim(-3, 108)
        ax.grid(axis="x", alpha=0.3)
    for k, ax in enumerate(axes[0]):
        ax.set_yticks(y, [_name(r, model) for r in reducers] if k == 0 else [""] * len(y))
        ax.set_ylim(len(reducers) - 0.5, -0.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        fontsize=7,
        title=hue,
        title_fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=max(1, len(hues)),
    )  # below: hides no point
    fig.suptitle(title + (f" - retriever model: {model}" if needs_model(reducers) else ""),
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    return plots.save(fig, name)  # looked up at call time (tests spy on it)


def _name(reducer: str, model: str | None) -> str:
    return reducer + (f"\n({model})" if needs_model([reducer]) and model else "")


def _gap_panel(ax, gaps: pd.DataFrame, reducers: list[str], y) -> None:
    """Validation minus test per reducer, one marker per measure, with intervals."""
    values = list(dict.fromkeys(gaps["value"]))
    step = 0.6 / max(1, len(values))
    for j, value in enumerate(values):
        rows = gaps[gaps["value"] == value].set_index("reducer")
        offset = (j - (len(values) - 1) / 2) * step
        for i, r in enumerate(reducers):
            if r not in rows.index or rows.loc[r, "gap"] != rows.loc[r, "gap"]:
                continue
            g, lo, hi = (100 * float(rows.loc[r, k]) for k in ("gap", "lo", "hi"))
            xerr = [[max(g - lo, 0.0)], [max(hi - g, 0.0)]] if lo == lo else None
            ax.errorbar(g, y[i] + offset, xerr=xerr, fmt="D", ms=3.5, capsize=2,
                        color=PALETTE[(j + 3) % len(PALETTE)], label=value if i == 0 else None)  # fmt: skip
    ax.axvline(0, color="#333333", lw=0.8)
    ax.set_xlabel("gap: validation - test (points)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
