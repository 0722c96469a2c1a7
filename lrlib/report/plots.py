"""The figures: one function per figure, each writing ``figures/<name>.png`` and ``.pdf``.

Every function takes tidy frames (one row per step and reducer, as :func:`lrlib.evaluate`
returns them, or the cost frame of :mod:`lrlib.eval.costs`), draws with matplotlib, writes into
:func:`lrlib.paths.figures_dir` and returns the PNG path. A figure that shows LineRetriever
results must be told which retriever model produced them (``model=``): it goes in the title.

>>> import pandas as pd
>>> binned = bin_tokens(pd.Series([500, 1500, 40_000]))
>>> [str(b) for b in binned]
['<1k', '1k-2k', '16k+']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lrlib import paths
from lrlib.eval.evaluation import LLM_REDUCERS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

_CI = (
    "coverage_lo",
    "coverage_hi",
    "reduction_lo",
    "reduction_hi",
    "coverage_n",
)  # reducers whose figures must name the retriever model
TOKEN_EDGES = (0, 1_000, 2_000, 2_500, 3_000, 4_000, 6_000, 8_000, 16_000)
PALETTE = (
    "#1f5a94",
    "#d1495b",
    "#edae49",
    "#00798c",
    "#66a182",
    "#8d6a9f",
    "#2e4057",
    "#b5651d",
    "#7f7f7f",
    "#bcbd22",
)


def _label(n: float) -> str:
    return f"{n / 1000:g}k" if n >= 1000 else str(int(n))


def bin_tokens(tokens: pd.Series, edges: Sequence[int] = TOKEN_EDGES) -> pd.Series:
    """Ordered bins of original tree sizes (``<1k``, ``1k-2k`` ... ``32k+``).

    >>> import pandas as pd
    >>> list(bin_tokens(pd.Series([10, 2500]), edges=(0, 1000, 2500)).cat.categories)
    ['<1k', '1k-2.5k', '2.5k+']
    """
    import numpy as np
    import pandas as pd

    bounds = [*edges, np.inf]
    labels = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if np.isinf(hi):
            labels.append(f"{_label(lo)}+")
        elif lo == 0:
            labels.append(f"<{_label(hi)}")
        else:
            labels.append(f"{_label(lo)}-{_label(hi)}")
    return pd.cut(tokens, bounds, labels=labels, right=False)


def needs_model(reducers: Sequence[str]) -> bool:
    """True when one of ``reducers`` is LLM-based (its figure must name the model).

    >>> needs_model(["bm25", "lineretriever+structure"]), needs_model(["oracle"])
    (True, False)
    """
    return any(r.split("+")[0].split(":")[0] in LLM_REDUCERS for r in reducers)


def require_model(reducers: Sequence[str], model: str | None) -> None:
    """Refuse to draw (or tabulate) LineRetriever results without the model's name.

    >>> require_model(["lineretriever"], None)
    Traceback (most recent call last):
    ...
    ValueError: this figure shows LineRetriever results: pass model= (the retriever model that produced them) so the figure names it
    """
    if needs_model(reducers) and not model:
        raise ValueError(
            "this figure shows LineRetriever results: pass model= (the retriever "
            "model that produced them) so the figure names it"
        )


def save(fig: Figure, name: str) -> Path:
    """Write ``fig`` as ``<figures>/<name>.png`` (150 dpi) and ``.pdf``; return the PNG path.

    The figure stays open under an inline (notebook) backend so the cell shows it, and is
    closed otherwise.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    out = paths.figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    png = out / f"{name}.png"
    fig.savefig(png, dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(
        out / f"{name}.pdf",
        bbox_inches="tight",
        metadata={"Creator": None, "Producer": None, "CreationDate": None},
    )
    if "inline" not in matplotlib.get_backend():
        plt.close(fig)
    return png


def _caption(fig: Figure, text: str) -> None:
    fig.text(0.01, -0.02, text, ha="left", va="top", fontsize=8, color="#444444", wrap=True)


def _clusters(sub: pd.DataFrame) -> pd.Series:
    import pandas as pd

    if "episode" in sub:
        return sub["episode"]
    return sub["step_id"] if "step_id" in sub else pd.Series(range(len(sub)), index=sub.index)


def _median_ci(sub: pd.DataFrame) -> dict:
    from lrlib.eval.intervals import interval

    return interval(sub["reduction"].astype(float), _clusters(sub), "median")


def _coverage_note(sub: pd.DataFrame) -> str:
    """``"\ncoverage 97% [93, 100] n=91/19"`` for a panel title ('' without coverage)."""
    from lrlib.eval.intervals import interval

    if "covered" not in sub or sub.empty:
        return ""
    r = interval(pd_float(sub["covered"]), _clusters(sub))
    if not r["n_steps"]:
        return ""
    lo_hi = f" [{100 * r['lo']:.0f}, {100 * r['hi']:.0f}]" if r["lo"] == r["lo"] else ""
    return f"\ntarget coverage {100 * r['estimate']:.0f}%{lo_hi} n={r['n_steps']}/{r['n_episodes']}"


def pd_float(column: pd.Series) -> pd.Series:
    """A boolean/None column as floats (None -> NaN), for the bootstrap.

    >>> import pandas as pd
    >>> pd_float(pd.Series([True, None, False])).tolist()
    [1.0, nan, 0.0]
    """
    import pandas as pd

    return pd.to_numeric(column.astype("float64"), errors="coerce")


def reduction_boxplot(
    results: pd.DataFrame,
    reducers: Sequence[str] | None = None,
    model: str | None = None,
    name: str = "fig3_reduction_boxplot",
    edges: Sequence[int] = TOKEN_EDGES,
    title: str | None = None,
) -> Path:
    """The paper's Figure 3: token reduction (%) against the original tree's token count,
    binned; one panel per reducer. ``results`` needs ``reducer``, ``tokens_before`` and
    ``reduction`` (0-1). Each box shows its number of steps; the dashed line is the median
    over all the panel's steps, the band its 95% interval from a bootstrap over episodes
    (``episode`` column; each step its own episode without one); a panel title gives the
    target coverage with its interval and n when ``covered`` is present.
    """
    import matplotlib.pyplot as plt

    reducers = list(reducers or sorted(results["reducer"].unique())) or ["(no results)"]
    require_model(reducers, model)
    data = results[results["reducer"].isin(reducers)].copy()
    data["bin"] = bin_tokens(data["tokens_before"], edges)
    bins = [b for b in data["bin"].cat.categories if (data["bin"] == b).any()]
    ncols = min(3, len(reducers))
    nrows = -(-len(reducers) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.6 * ncols, 3.4 * nrows), squeeze=False, sharey=True
    )
    for ax, reducer in zip(axes.flat, reducers, strict=False):
        sub = data[data["reducer"] == reducer]
        fell = int(sub["failure"].fillna("").astype(str).ne("").sum()) if "failure" in sub else 0
        extra = f", {fell} fell back to the full tree" if fell else ""
        ax.set_title(f"{reducer} ({len(sub)} steps{extra}){_coverage_note(sub)}", pad=14,
                     fontsize=9)  # fmt: skip
        if sub.empty:  # e.g. no cached LineRetriever answer for these steps: say so
            ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
            continue
        groups = [100 * sub.loc[sub["bin"] == b, "reduction"].dropna().to_numpy() for b in bins]
        ax.boxplot(
            groups,
            positions=range(len(bins)),
            widths=0.6,
            showfliers=True,
            patch_artist=True,
            boxprops={"facecolor": "#c6dbef"},
            medianprops={"color": "#1f5a94", "linewidth": 2},
            flierprops={"markersize": 3, "alpha": 0.5},
        )
        for i, g in enumerate(groups):
            ax.text(
                i,
                1.02,
                f"n={len(g)}",
                ha="center",
                va="bottom",
                fontsize=7,
                transform=ax.get_xaxis_transform(),
            )
        ci = _median_ci(sub)
        med = 100 * ci["estimate"]
        band = f" [{100 * ci['lo']:.0f}, {100 * ci['hi']:.0f}]" if ci["lo"] == ci["lo"] else ""
        ax.axhline(med, ls="--", lw=1, color="#d1495b", label=f"median {med:.0f}%{band} (95% CI)")
        if band:
            ax.axhspan(100 * ci["lo"], 100 * ci["hi"], color="#d1495b", alpha=0.12, lw=0)
        ax.set_xticks(range(len(bins)), bins, rotation=30)
        ax.set_ylim(-5, 105)
        ax.legend(loc="lower right", fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(reducers) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("token reduction (%)")
    for ax in axes[-1, :]:
        ax.set_xlabel("original tree size (tokens, o200k)")
    head = title or "Token reduction by original tree size"
    fig.suptitle(
        head + (f" - retriever model: {model}" if needs_model(reducers) else ""), fontsize=11
    )
    fig.tight_layout()
    return save(fig, name)


def metric_bars(
    summary: pd.DataFrame,
    metrics: Sequence[str],
    by: str,
    hue: str | None = None,
    model: str | None = None,
    name: str = "prompt_ablations",
    title: str = "Prompt ablations",
    labels: dict[str, str] | None = None,
) -> Path:
    """Grouped bars of several metrics (one panel each) for the rows of ``summary``: one
    group per value of ``by``, one bar per value of ``hue``. Used for the prompt ablations
    (variants x history x think x answer mode).
    """
    import matplotlib.pyplot as plt
    import numpy as np

    labels = labels or {}
    groups = list(dict.fromkeys(summary[by]))
    hues = (list(dict.fromkeys(summary[hue])) if hue else []) or [None]
    # when every group holds a single hue value, draw one centred bar per group in its colour
    dodge = hue is not None and summary.groupby(by)[hue].nunique().max() > 1
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    width_per = min(9.0, max(4.8, 0.35 * len(groups) * (len(hues) if dodge else 1) + 1.5))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width_per * ncols, 3.2 * nrows), squeeze=False)
    width = 0.8 / len(hues) if dodge else 0.6
    for ax, metric in zip(axes.flat, metrics, strict=False):
        for j, h in enumerate(hues):
            rows = summary if h is None else summary[summary[hue] == h]
            present = [g for g in groups if (rows[by] == g).any()]
            vals = [rows.loc[rows[by] == g, metric].mean() for g in present]
            x = np.array([groups.index(g) for g in present], dtype=float)
            if dodge:
                x = x + (j - (len(hues) - 1) / 2) * width
            label = str(h) if h is not None else None
            ax.bar(x, vals, width, label=label, color=PALETTE[j % len(PALETTE)])
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
        ax.set_title(labels.get(metric, metric), fontsize=10)
        if not groups:
            ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(metrics) :]:
        ax.set_visible(False)
    if hue and groups:
        fig.legend(*axes.flat[0].get_legend_handles_labels(), fontsize=8, title=hue,
                   title_fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 0.95))  # fmt: skip
    fig.suptitle(title + (f" - retriever model: {model}" if model else ""), fontsize=11)
    fig.tight_layout()
    return save(fig, name)


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
        share = float(costs.loc[costs["alpha"].notna(), "pays_off"].mean())
        right.scatter(
            [costs["alpha"].median()],
            [share],
            color="#edae49",
            zorder=3,
            label=f"measured: {share:.0%} of steps save (median alpha)",
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
    return save(fig, name)


def coverage_vs_reduction(
    points: pd.DataFrame,
    model: str | None = None,
    name: str = "coverage_vs_reduction",
    title: str = "Target coverage against token reduction",
) -> Path:
    """Coverage (share of steps whose target survives) against median token reduction: a
    curve per reducer with a knob (rows sorted by reduction), a point for the others.
    ``points`` needs ``reducer``, ``reduction`` and ``coverage`` (both 0-1); an optional
    ``label`` column annotates points (e.g. the knob value). With ``coverage_lo``/``_hi``
    and ``reduction_lo``/``_hi`` (as :func:`curve_points` gives them) every point gets its
    95% episode-bootstrap interval as error bars.
    """
    import matplotlib.pyplot as plt

    require_model(list(points["reducer"].unique()), model)
    fig, ax = plt.subplots(figsize=(10.5, 5.2))
    for i, (reducer, rows) in enumerate(points.groupby("reducer", sort=True)):
        rows = rows.sort_values("reduction")
        color = PALETTE[i % len(PALETTE)]
        label = reducer + (f" ({model})" if needs_model([reducer]) else "")
        style = "-o" if len(rows) > 1 else "s"
        ax.plot(
            100 * rows["reduction"],
            100 * rows["coverage"],
            style,
            color=color,
            label=label,
            markersize=4 if len(rows) > 1 else 7,
        )
        if {"coverage_lo", "coverage_hi", "reduction_lo", "reduction_hi"} <= set(rows):
            ax.errorbar(
                100 * rows["reduction"], 100 * rows["coverage"],
                xerr=100 * _err(rows, "reduction"), yerr=100 * _err(rows, "coverage"),
                fmt="none", ecolor=color, elinewidth=0.8, alpha=0.5, capsize=1.5,
            )  # fmt: skip
        if "label" in rows and len(rows) > 1:
            for _, r in rows.iloc[[0, -1]].iterrows():
                ax.annotate(
                    str(r["label"]),
                    (100 * r["reduction"], 100 * r["coverage"]),
                    fontsize=6,
                    color=color,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
    if points.empty:  # e.g. a split without steps: say so
        ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("median token reduction (%)")
    ax.set_ylabel("target coverage (% of steps)")
    ax.set_xlim(-2, 102)
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ax.set_title(title + (f" - retriever model: {model}" if model else ""), fontsize=10)
    fig.tight_layout()
    return save(fig, name)


def _err(rows: pd.DataFrame, col: str):
    """Asymmetric error-bar lengths (2, n) from ``<col>_lo``/``<col>_hi`` (NaN -> 0)."""
    import numpy as np

    lo = (rows[col] - rows[f"{col}_lo"]).clip(lower=0).fillna(0).to_numpy()
    hi = (rows[f"{col}_hi"] - rows[col]).clip(lower=0).fillna(0).to_numpy()
    return np.vstack([lo, hi])


def tree_sizes(observations: pd.DataFrame, name: str = "dataset_tree_sizes") -> Path:
    """Distribution of tree sizes (tokens) per benchmark in the recorded observations."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    top = float(observations["n_tokens"].max())
    low = max(float(observations["n_tokens"].min()), 10.0)
    bins = np.logspace(np.log10(low) - 0.05, np.log10(max(top, low * 2)) + 0.05, 40)
    for i, (bench, rows) in enumerate(observations.groupby("benchmark", sort=True)):
        ax.hist(
            rows["n_tokens"],
            bins=bins,
            alpha=0.6,
            color=PALETTE[i % len(PALETTE)],
            label=f"{bench}: {len(rows)} steps, median {rows['n_tokens'].median():,.0f}",
        )
    ax.set_xscale("log")
    ax.set_xlabel("AxTree size (tokens, o200k)")
    ax.set_ylabel("steps")
    ax.legend(fontsize=8)
    ax.set_title("Recorded observations: tree size per step", fontsize=10)
    fig.tight_layout()
    return save(fig, name)


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

    ci_cols = [c for c in _CI if c in sweeps]
    rows = [
        {
            "reducer": r["reducer"],
            "reduction": r["median_reduction"],
            "coverage": r["coverage"],
            "label": f"{r['knob']}={r['value']:g}"
            if isinstance(r["value"], float)
            else f"{r['knob']}={r['value']}",
            **{c: r[c] for c in ci_cols},
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
                "reducer": f"{r.reducer} (n={r.n_target})",
                "reduction": r.median_reduction,
                "coverage": r.coverage,
                "label": "",
            }
            if ci is not None:
                row.update({c: ci.loc[r.reducer, c] for c in _CI if c in ci})
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
    and ``by`` come from :func:`lrlib.report.injection_eval.summarize` and ``breakdown``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    reducers = list(summary["reducer"])
    require_model(reducers, model)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12.5, 0.42 * len(reducers) + 1.8), width_ratios=(1.1, 1)
    )
    y = np.arange(len(reducers))
    left.barh(y, 100 * summary["survival"], color=PALETTE[1], height=0.6,
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
    return save(fig, name)
