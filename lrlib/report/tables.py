"""Results tables: written beside the figures as ``<name>.md`` (a caption above a markdown
table) and ``<name>.csv`` (full precision), for the README and for diffs.

:func:`table1` is the paper's Table 1 in offline metrics, with the paper's reported numbers
(:func:`reported_numbers`) beside the measured ones and labelled as reported; like a
figure, a table with LineRetriever rows names the retriever model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib import paths
from lrlib.eval.intervals import fmt
from lrlib.report.plots import needs_model, require_model

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MEASURES",
    "TABLE1_COLUMNS",
    "save_table",
    "interval_table",
    "reported_numbers",
    "table1",
    "interval_report",
    "gap_report",
]

#: what the results tables bootstrap: intervals.MEASURES plus the planning horizons and the
#: line-identity reading of evidence (columns a frame lacks are skipped)
MEASURES = (
    ("evidence_covered", "mean", "evidence"),
    ("reduction", "median", "reduction"),
    ("covered", "mean", "coverage"),
    ("horizon_covered_2", "mean", "horizon2"),
    ("horizon_covered_3", "mean", "horizon3"),
    ("evidence_covered_lines", "mean", "evidence_lines"),
)
_TITLES = {
    "evidence": "evidence coverage",
    "reduction": "median reduction",
    "coverage": "target coverage",
    "horizon2": "horizon-2 coverage",
    "horizon3": "horizon-3 coverage",
    "evidence_lines": "evidence (line identity)",
}
# the measures table1 shows with their intervals (prefix -> stem of its _lo/_hi columns):
# evidence coverage (information reading, lrlib.data.evidence) leads, target and horizon beside
_TABLE1_CI = {"evidence": "evidence_coverage", "reduction": "median_reduction",
              "coverage": "coverage", "horizon3": "horizon_coverage_3"}  # fmt: skip
TABLE1_COLUMNS = ["reducer", "n_steps", "median_reduction", "coverage", "coverage_success",
                  "n_target", "median_latency_ms"]  # fmt: skip


def save_table(
    table: pd.DataFrame, name: str, caption: str, floatfmt: str = ".3f",
    formats: dict[str, str] | None = None, md_columns: Sequence[str] | None = None,
) -> Path:  # fmt: skip
    """Write a results table as ``<figures>/<name>.md`` (``caption`` above a markdown table)
    and ``.csv`` (full precision, every column); return the markdown path. Floats are
    rendered with ``formats[column]`` or ``floatfmt``; ``md_columns`` picks the columns of
    the markdown table (default: all).

    >>> import pandas as pd, tempfile
    >>> from lrlib import settings
    >>> with settings.override(figures_dir=tempfile.mkdtemp()):
    ...     p = save_table(pd.DataFrame({"a": [0.5], "ms": [1234.5]}), "t", "A caption.",
    ...                    formats={"ms": ".0f"})
    >>> p.read_text().splitlines()[2:]
    ['| a | ms |', '|---|---|', '| 0.500 | 1234 |']
    """
    out = paths.figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{name}.csv", index=False)
    formats = formats or {}

    def cell(column: str, v: Any) -> str:
        if isinstance(v, float):
            return "" if v != v else format(v, formats.get(column, floatfmt))
        return str(v).replace("|", "\\|")

    if md_columns is not None:
        table = table[list(md_columns)]
    columns = [str(c) for c in table.columns]
    lines = [
        caption,
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    lines += [
        "| " + " | ".join(cell(c, v) for c, v in zip(columns, row, strict=True)) + " |"
        for row in table.itertuples(index=False)
    ]
    path = out / f"{name}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _cell(r: Any, prefix: str) -> str:
    """``est [lo, hi] n=steps/episodes`` of measure ``prefix`` in a row of
    :func:`lrlib.eval.intervals.summary`."""
    return fmt(
        {"estimate": r[prefix], "lo": r[f"{prefix}_lo"], "hi": r[f"{prefix}_hi"],
         "n_steps": int(r[f"{prefix}_n"]), "n_episodes": int(r[f"{prefix}_episodes"])}
    )  # fmt: skip


def interval_table(frame: pd.DataFrame, by: str | Sequence[str] = "reducer") -> pd.DataFrame:
    """The summary of an evaluation frame as text cells with 95% intervals and n (steps /
    episodes): evidence coverage first (the information reading), median token reduction,
    target coverage, planning-horizon coverage (k = 2, 3), evidence coverage by line
    identity, plus steps and median latency. What ``lrlib evaluate`` prints.

    >>> from lrlib.eval.evaluation import evaluate
    >>> from lrlib.core.step import Step
    >>> steps = [Step(goal="Buy", tree="[4] button 'Buy'", target_bids=("4",), step_id="s")]
    >>> interval_table(evaluate(["full"], steps, progress=False)).iloc[0]["target coverage"]
    '100.0% [no interval: 1 episode] n=1/1'
    """
    import pandas as pd

    from lrlib.eval import intervals, metrics

    keys = [by] if isinstance(by, str) else list(by)
    ci = intervals.summary(frame, by=keys, measures=MEASURES)
    point = metrics.summarize(frame, by=keys if len(keys) > 1 else keys[0])
    both = ci.merge(point, on=keys, how="left", suffixes=("", "_point"))
    rows = []
    for _, c in both.iterrows():
        row = {k: c[k] for k in keys}
        row["steps"] = int(c["n_steps"])
        for prefix, title in _TITLES.items():
            if prefix in c:
                row[title] = _cell(c, prefix)
        row["median latency ms"] = round(float(c["median_latency_ms"]), 2)
        rows.append(row)
    return pd.DataFrame(rows)


def reported_numbers() -> pd.DataFrame:
    """The paper's reported numbers (``data/paper_reported.csv``, ``#`` lines are comments;
    the repository's copy when ``LRLIB_DATA_DIR`` points elsewhere).

    >>> set(reported_numbers()["reducer"]) >= {"lineretriever"}
    True
    """
    import pandas as pd

    path = paths.data_dir() / "paper_reported.csv"
    path = path if path.is_file() else paths.REPO_DIR / "data" / "paper_reported.csv"
    return pd.read_csv(path, comment="#", skipinitialspace=True)


def table1(
    frame: pd.DataFrame,
    reported: pd.DataFrame | None = None,
    model: str | None = None,
    name: str = "table1",
    note: str = "",
) -> pd.DataFrame:
    """A table in the shape of the paper's Table 1 on offline metrics, one row per reducer:
    steps, median token reduction, target coverage (all steps / steps of successful
    episodes), evidence coverage, median latency, mean cost per step (``cost_usd`` column,
    if present), and the paper's reported reduction beside it (labelled ``reported``).
    Reduction, target and evidence coverage carry 95% intervals from the episode bootstrap
    (:func:`lrlib.eval.intervals.summary`; columns ``<x>_lo``/``<x>_hi``) and their n (steps /
    episodes), shown in the markdown as ``est [lo, hi] n=steps/episodes``. Written as
    ``<figures>/<name>.md`` and ``.csv``; the caption names the retriever model.

    >>> import pandas as pd, tempfile
    >>> from lrlib import settings
    >>> f = pd.DataFrame({"reducer": ["full"], "reduction": [0.0], "reduction_chars": [0.0],
    ...     "reduction_lines": [0.0], "target_status": ["ok"], "covered": [True],
    ...     "covered_visible": [True], "episode_success": [True], "latency_s": [0.001]})
    >>> with settings.override(figures_dir=tempfile.mkdtemp()):
    ...     table1(f)["coverage"].tolist()
    [1.0]
    """
    import pandas as pd

    from lrlib.eval.intervals import summary
    from lrlib.eval.metrics import summarize

    reducers = list(dict.fromkeys(frame["reducer"]))
    require_model(reducers, model)
    if "episode" not in frame:  # no episodes known: every step is its own cluster
        frame = frame.assign(episode=frame.get("step_id", pd.Series(range(len(frame)))))
    extra_cols = ["evidence_coverage", "n_evidence", "evidence_coverage_lines",
                  "horizon_coverage_3", "n_horizon_3"]  # fmt: skip
    # no rows (e.g. no cached answers): an empty table with the right columns; NaN where
    # the frame lacks a measure
    table = summarize(frame).reindex(columns=[*TABLE1_COLUMNS, *extra_cols])
    ci = summary(frame, measures=MEASURES) if len(frame) else pd.DataFrame(columns=["reducer"])
    ci = ci.set_index("reducer").reindex(table["reducer"])
    shown = []
    for prefix, col in _TABLE1_CI.items():
        if f"{prefix}_lo" not in ci:
            continue
        for side in ("lo", "hi"):
            table[f"{col}_{side}"] = ci[f"{prefix}_{side}"].to_numpy()
        title = f"{_TITLES[prefix]} [95% CI] n"
        table[title] = [
            "" if r[prefix] != r[prefix] else _cell(r, prefix) for _, r in ci.iterrows()
        ]
        shown.append(title)
    if "cold_latency_s" in frame and len(frame):  # as if nothing were cached
        cold = frame.groupby("reducer", sort=False)["cold_latency_s"].median() * 1000
        table["median_latency_ms"] = table["reducer"].map(cold)
    if "cost_usd" in frame:
        cost = frame.groupby("reducer", sort=False)["cost_usd"].mean()
        table["cost_per_step_usd"] = table["reducer"].map(cost)
    table.insert(1, "retriever_model", [model if needs_model([r]) else "" for r in reducers])
    if reported is not None:
        rep = reported[reported["metric"] == "reduction"]
        text = rep.groupby("reducer").apply(
            lambda g: "; ".join(
                f"{v:.0%} ({b})" for v, b in zip(g["value"], g["benchmark"], strict=True)
            ),
            include_groups=False,
        )
        table["reported_reduction (paper)"] = [
            text.get(r.split("+")[0].split(":")[0], "") for r in table["reducer"]
        ]
    caption = (
        "Offline Table 1: evidence coverage (share of steps where everything the recorded "
        "action needs - its element, the option, the field's label, the question of a choice, "
        "the reported page text - is readable in the reduced tree: lrlib.data.evidence), "
        "median token reduction, target coverage (share of steps whose target lines "
        "survive), horizon-3 coverage (the targets of this and the next two recorded steps "
        "already on the page: lrlib.data.evidence), each with a 95% interval from a "
        "bootstrap over episodes and n = steps/episodes; target coverage on steps of "
        "successful episodes; median latency "
        "per step (cold: embeddings computed, model calls at their recorded latency)"
        + (", mean cost per step in USD" if "cost_usd" in frame else "")
        + (f". LineRetriever rows: retriever model {model}" if model else "")
        + (
            ". Columns marked 'reported' are the paper's numbers, not measured here"
            if reported is not None
            else ""
        )
        + (f". {note}" if note else "")
        + "."
    )
    extra = [c for c in ("cost_per_step_usd", "reported_reduction (paper)") if c in table]
    md = ["reducer", "retriever_model", "n_steps", *shown, "coverage_success",
          "median_latency_ms", *extra]  # fmt: skip
    save_table(
        table, name, caption, formats={"median_latency_ms": ".1f", "cost_per_step_usd": ".5f",
        "coverage_success": ".3f"}, md_columns=md,
    )  # fmt: skip
    return table


def interval_report(
    frame: pd.DataFrame, by: Sequence[str], name: str, what: str, model: str | None = None
) -> pd.DataFrame:
    """:func:`interval_table` of ``frame`` grouped ``by``, written as ``<name>.md``/``.csv``;
    the caption starts with ``what`` (the rows), says what the cells hold, and names the
    retriever model when LineRetriever rows are in.

    >>> import pandas as pd, tempfile
    >>> from lrlib import settings
    >>> f = pd.DataFrame({"reducer": ["a"] * 2, "split": ["test"] * 2, "episode": [1, 2],
    ...     "reduction": [0.5, 0.7], "covered": [True, False], "target_status": ["ok"] * 2,
    ...     "reduction_chars": [0.5] * 2, "reduction_lines": [0.5] * 2, "latency_s": [0.0] * 2,
    ...     "covered_visible": [True, False]})
    >>> with settings.override(figures_dir=tempfile.mkdtemp()):
    ...     interval_report(f, ["reducer", "split"], "t", "Some rows").iloc[0]["target coverage"]
    '50.0% [0.0, 100.0] n=2/2'
    """
    require_model(list(dict.fromkeys(frame["reducer"])), model)
    table = interval_table(frame, by=list(by))
    text = (
        f"{what}: evidence coverage (everything the recorded action needs is readable: "
        "lrlib.data.evidence), median token reduction, target coverage, horizon-2/3 coverage "
        "(targets of the next recorded steps already on the page: lrlib.data.evidence) and "
        "evidence coverage by line identity, each with a 95% interval from a bootstrap over "
        "episodes and n = steps/episodes."
        + (f" LineRetriever rows: retriever model {model}, cached steps only." if model else "")
    )
    save_table(table, name, text)
    return table


def gap_report(
    frame: pd.DataFrame, name: str, a: str = "validation", b: str = "test"
) -> pd.DataFrame:
    """The generalisation gap (``a`` minus ``b``) per reducer for target coverage, evidence
    coverage and median reduction, each ``gap [lo, hi]`` in points with both sides' n;
    written as ``<name>.md``/``.csv``. Sides are bootstrapped independently (different
    episodes), so an interval that contains 0 means no gap is shown at this n.

    >>> import pandas as pd, tempfile
    >>> from lrlib import settings
    >>> f = pd.DataFrame({"reducer": ["a"] * 4, "split": ["validation"] * 2 + ["test"] * 2,
    ...     "episode": [1, 2, 3, 4], "covered": [1.0, 1.0, 1.0, 0.0]})
    >>> with settings.override(figures_dir=tempfile.mkdtemp()):
    ...     gap_report(f, "g").iloc[0]["target coverage: gap [95% CI] (n validation / test)"]
    '+50.0 [+0.0, +100.0] (2/2 vs 2/2)'
    """
    import pandas as pd

    from lrlib.eval.intervals import gap

    parts = []
    for value, stat, title in (("evidence_covered", "mean", "evidence coverage"),
                               ("covered", "mean", "target coverage"),
                               ("reduction", "median", "median reduction")):  # fmt: skip
        if value not in frame:
            continue
        g = gap(frame, value, a=a, b=b, stat=stat)
        parts.append(
            pd.DataFrame(
                {
                    "reducer": g["reducer"],
                    f"{title}: {a}": (100 * g[a]).round(1),
                    f"{title}: {b}": (100 * g[b]).round(1),
                    f"{title}: gap [95% CI] (n {a} / {b})": [
                        f"{100 * r.gap:+.1f} [{100 * r.lo:+.1f}, {100 * r.hi:+.1f}] "
                        f"({r.n_a}/{r.episodes_a} vs {r.n_b}/{r.episodes_b})"
                        for r in g.itertuples()
                    ],
                }
            ).set_index("reducer")
        )
    table = pd.concat(parts, axis=1).reset_index()
    caption = (
        f"Generalisation gap per reducer: {a} minus {b} in percentage points, with 95% "
        "intervals from bootstrapping the episodes of each split independently; n = "
        f"steps/episodes on {a} vs {b}. Test holds whole task families never used for tuning."
    )
    save_table(table, name, caption, floatfmt=".1f")
    return table
