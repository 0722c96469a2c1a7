"""The figures: one function per figure, each writing ``figures/<name>.png`` and ``.pdf``,
and ``lrlib figures``, which executes every notebook (the code that calls them) headlessly,
in order, and rewrites ``figures/``.

Every function takes tidy frames (one row per step and reducer, as :func:`lrlib.evaluate`
returns them, or the cost frame of :mod:`lrlib.eval.costs`), draws with matplotlib, writes into
:func:`lrlib.paths.figures_dir` and returns the PNG path. A figure that shows LineRetriever
results must be told which retriever model produced them (``model=``): it goes in the title.

>>> import pandas as pd
>>> binned = bin_tokens(pd.Series([500, 1500, 40_000]))
>>> [str(b) for b in binned]
['<1k', '1k-2k', '16k+']

The jupytext percent files ``notebooks/NN_name.py`` are the source of the notebooks; each is
executed with nbclient (in the notebooks folder, on the shipped data and cached answers)
and written back as its paired ``.ipynb`` with fresh outputs. ``LRLIB_QUICK=1`` (or
``--quick``) makes the notebooks use a few steps; a quick run does not rewrite the committed
notebooks unless asked to (a notebook reads it as ``settings.current().quick``). Nothing here
calls a model: the notebooks decide, through :mod:`lrlib.report.replay`, whether an endpoint
is configured.

>>> [p.stem for p in notebook_sources()][:1]
['00_quickstart']
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib import paths, settings

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "CI_COLUMNS",
    "TOKEN_EDGES",
    "PALETTE",
    "bin_tokens",
    "needs_model",
    "require_model",
    "save",
    "reduction_boxplot",
    "metric_bars",
    "tree_sizes",
    "QUICK_ENV",
    "KERNEL",
    "notebook_sources",
    "Executed",
    "read_source",
    "execute",
    "run_all",
    "add_arguments",
    "run",
]

# the interval columns of a knob sweep (lrlib.eval.evaluation.sweep) that figures carry
CI_COLUMNS = ("coverage_lo", "coverage_hi", "reduction_lo", "reduction_hi", "coverage_n")
TOKEN_EDGES = (0, 1_000, 2_000, 2_500, 3_000, 4_000, 6_000, 8_000, 16_000)
PALETTE = ("#1f5a94", "#d1495b", "#edae49", "#00798c", "#66a182", "#8d6a9f", "#2e4057",
           "#b5651d", "#7f7f7f", "#bcbd22", "#e377c2", "#17becf", "#5c3317")  # fmt: skip


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
    from lrlib.reducers import describe

    def answers(label: str) -> bool:
        try:
            return describe(label).model_answers
        except KeyError:  # a label that names no registered reducer
            return False

    return any(answers(r) for r in reducers)


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


def _ci(sub: pd.DataFrame, column: str, stat: str = "mean") -> tuple[dict, str]:
    """The 95% interval of ``column`` (booleans/None as floats, None -> NaN) clustered by
    episode (each step its own without an ``episode`` column), and its ``" [lo, hi]"`` in
    percent ('' when none can be drawn)."""
    import pandas as pd

    from lrlib.eval.intervals import interval

    clusters = sub.get("episode", sub.get("step_id", pd.Series(range(len(sub)), index=sub.index)))
    values = pd.to_numeric(sub[column].astype("float64"), errors="coerce")
    r = interval(values, clusters, stat)
    return r, f" [{100 * r['lo']:.0f}, {100 * r['hi']:.0f}]" if r["lo"] == r["lo"] else ""


def _coverage_note(sub: pd.DataFrame) -> str:
    """``"\nevidence coverage 81% [75, 87] n=141/26\ntarget coverage 97% [93, 100] n=91/19"``: a panel
    title: evidence coverage first, target coverage beside it ('' without either)."""
    parts = []
    for column, what in (("evidence_covered", "evidence coverage"), ("covered", "target coverage")):
        if column not in sub or sub.empty:
            continue
        r, band = _ci(sub, column)
        if r["n_steps"]:
            parts.append(
                f"{what} {100 * r['estimate']:.0f}%{band} n={r['n_steps']}/{r['n_episodes']}"
            )
    return "".join("\n" + p for p in parts)


def reduction_boxplot(
    results: pd.DataFrame,
    reducers: Sequence[str] | None = None,
    model: str | None = None,
    name: str = "fig3_reduction_boxplot",
    title: str | None = None,
) -> Path:
    """The paper's Figure 3: token reduction (%) against the original tree's token count,
    binned; one panel per reducer. ``results`` needs ``reducer``, ``tokens_before`` and
    ``reduction`` (0-1). Each box shows its number of steps; the dashed line is the median
    over all the panel's steps, the band its 95% interval from a bootstrap over episodes
    (``episode`` column; each step its own episode without one); a panel title gives the
    evidence and target coverage with their intervals and n when ``evidence_covered`` /
    ``covered`` are present.
    """
    import matplotlib.pyplot as plt

    reducers = list(reducers or sorted(results["reducer"].unique())) or ["(no results)"]
    require_model(reducers, model)
    data = results[results["reducer"].isin(reducers)].copy()
    data["bin"] = bin_tokens(data["tokens_before"])
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
        ci, band = _ci(sub, "reduction", "median")
        med = 100 * ci["estimate"]
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
) -> Path:
    """Grouped bars of several metrics (one panel each) for the rows of ``summary``: one
    group per value of ``by``, one bar per value of ``hue``. Used for the prompt ablations
    (variants x history x think x answer mode).
    """
    import matplotlib.pyplot as plt
    import numpy as np

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
        ax.set_title(metric, fontsize=10)
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


# --- lrlib figures: execute the notebooks ----------------------------------------------

QUICK_ENV = "LRLIB_QUICK"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
KERNEL = "python3"


def notebook_sources(folder: Path | None = None) -> list[Path]:
    """The percent-format sources ``NN_*.py`` of the notebooks, in execution order."""
    folder = folder or paths.notebooks_dir()
    return sorted(p for p in folder.glob("[0-9][0-9]_*.py") if p.is_file())


@dataclass
class Executed:
    """One executed notebook: its name, wall time and error (None when it ran through)."""

    name: str
    seconds: float
    error: str | None = None


def read_source(source: Path):
    """The notebook of a percent-format ``.py`` (code and prose, no outputs), paired with
    its ``.ipynb`` and bound to the ``python3`` kernel."""
    import jupytext

    nb = jupytext.read(source, fmt="py:percent")
    for i, cell in enumerate(nb.cells):  # stable ids: regenerating changes only real outputs
        cell["id"] = f"{source.stem[:2]}-{i:02d}"
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    return nb


def execute(
    source: Path, quick: bool = False, write: Path | None = None, timeout: int = 1200
) -> Executed:
    """Execute one notebook source; write the executed ``.ipynb`` to ``write`` if given."""
    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = read_source(source)
    env = {
        QUICK_ENV: "1" if quick else "0",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        record_timing=False,
        resources={"metadata": {"path": str(source.parent)}},
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no TCP-encryption warning
    )
    start = time.perf_counter()
    error = None
    try:
        # the kernel's environment, ours untouched; it imports the lrlib of this checkout,
        # whatever the install looks like
        client.execute(env=settings.child_env(env, prepend={"PYTHONPATH": str(paths.REPO_DIR)}))
    except CellExecutionError as exc:
        lines = _ANSI.sub("", str(exc)).strip().splitlines()
        error = lines[-1] if lines else repr(exc)
    except Exception as exc:  # a dead kernel or a timeout: report, go on with the next
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    if write is not None:
        _drop_widget_state(nb)
        jupytext.write(nb, write, fmt="ipynb")
    return Executed(source.stem, seconds, error)


def _drop_widget_state(nb: Any) -> None:
    """Live widgets need a kernel: keep their text fallback, drop their saved state (random
    model ids that would change on every run and show nothing in a static viewer)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data and "text/plain" in data:
                del data["application/vnd.jupyter.widget-view+json"]


def run_all(
    quick: bool = False,
    only: Sequence[str] = (),
    write: bool = True,
    timeout: int = 1200,
    folder: Path | None = None,
    jobs: int = 1,
) -> list[Executed]:
    """Execute the notebooks (those whose name starts with one of ``only``, if given),
    ``jobs`` at a time (each in its own kernel; they do not read each other's outputs),
    the slowest of the last run first (never-timed ones before them, longest source
    first); with ``write`` rewrite each paired ``.ipynb``.
    Prints one line per notebook as it finishes, with the time left (from the last run's
    times). Returns them in notebook order."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    sources = [
        s for s in notebook_sources(folder) if not only or any(s.stem.startswith(o) for o in only)
    ]
    last = _last_times(quick)
    expected = {s.stem: last.get(s.stem, 0.0) for s in sources}
    order = _run_order(sources, last)
    jobs = max(1, min(jobs, len(sources) or 1))
    mode = " (quick)" if quick else ""
    print(f"executing {len(sources)} notebooks{mode}, {jobs} at a time ...", flush=True)
    start, done = time.perf_counter(), {}

    def one(source: Path) -> Executed:
        print(f"  {source.stem} started", flush=True)
        target = source.with_suffix(".ipynb") if write else None
        return execute(source, quick=quick, write=target, timeout=timeout)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in as_completed([pool.submit(one, source) for source in order]):
            result = future.result()
            done[result.name] = result
            status = "ok" if result.error is None else f"FAILED: {result.error}"
            mean = sum(r.seconds for r in done.values()) / len(done)  # for never-timed ones
            left = sum(t or mean for n, t in expected.items() if n not in done) / jobs
            eta = f", ~{left:.0f} s left" if len(done) < len(sources) else ""
            print(
                f"  [{len(done)}/{len(sources)}] {result.name}: {result.seconds:.1f} s, {status} "
                f"({time.perf_counter() - start:.0f} s elapsed{eta})",
                flush=True,
            )
    _save_times(quick, {**last, **{n: r.seconds for n, r in done.items() if r.error is None}})
    return [done[s.stem] for s in sources]


def _run_order(sources: Sequence[Path], last: dict[str, float]) -> list[Path]:
    """Longest first, for the shortest makespan: the slowest of the last run first; before
    them the never-timed ones (a fresh clone's first run), the longest source first (in
    this repository 05 and 06 are both the longest sources and the slowest runs)."""
    return sorted(
        sources, key=lambda s: (s.stem in last, -last.get(s.stem, 0.0), -s.stat().st_size)
    )


def _times_file() -> Path:
    return paths.work_dir() / "figures-times.json"


def _last_times(quick: bool) -> dict[str, float]:
    """Seconds per notebook of the last run in this mode (none yet: empty)."""
    import json

    try:
        return dict(json.loads(_times_file().read_text())["quick" if quick else "full"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _save_times(quick: bool, times: dict[str, float]) -> None:
    import json

    try:
        saved = json.loads(_times_file().read_text())
    except (OSError, ValueError):
        saved = {}
    saved["quick" if quick else "full"] = {k: round(v, 1) for k, v in times.items()}
    try:
        with paths.atomic_write(_times_file()) as f:
            f.write(json.dumps(saved, indent=1).encode())
    except OSError:
        pass  # only the next run's order and time estimate need it


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lrlib figures``."""
    parser.add_argument(
        "--quick", action="store_true", help=f"few steps per notebook (same as {QUICK_ENV}=1)"
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        metavar="NN",
        help="run only the notebooks whose name starts with these prefixes",
    )
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="do not rewrite the .ipynb files (a quick run never does unless --write is given)",
    )
    parser.add_argument(
        "--write", action="store_true", help="rewrite the .ipynb files even in quick mode"
    )
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="notebooks executed at the same time (default: 2, or 1 on one core)",
    )


def run(args: argparse.Namespace) -> int:
    """Execute the notebooks; a table of wall times; non-zero exit if one failed."""
    quick = args.quick or settings.current().quick
    write = args.write or not (args.no_write or quick)
    start = time.perf_counter()
    results = run_all(
        quick=quick, only=args.only, write=write, timeout=args.timeout, jobs=args.jobs
    )
    total = time.perf_counter() - start
    print("\n| notebook | seconds | status |\n|---|---:|---|")
    for r in results:
        print(f"| {r.name} | {r.seconds:.1f} | {'ok' if r.error is None else 'failed'} |")
    print(f"| total | {total:.1f} | {'quick' if quick else 'full'} |")
    print(f"figures in {paths.figures_dir()}")
    failed = [r.name for r in results if r.error]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed or not results else 0
