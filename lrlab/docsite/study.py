"""What live episodes on documentation sites show: success per reducer with bootstrap
intervals over tasks and over task families, next to its median token reduction, the
size of the trees played, and the offline target / evidence / MFS coverage of the same
steps (:func:`lrlab.agent.live_report.own_coverage` with the docs scripted policy).

:func:`plot_success_vs_reduction` is the study's figure: success against median token
reduction, one point per reducer, 95% intervals in both directions.

>>> import pandas as pd
>>> eps = pd.DataFrame({"reducer": ["full"] * 4, "site": ["s"] * 4, "family": ["a", "a", "b", "b"],
...                     "seed": [0, 1, 0, 1], "success": [True, True, True, False]})
>>> success_table(eps)[["reducer", "success", "n_episodes", "n_families"]].values.tolist()
[['full', 0.75, 4, 2]]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lrlib.eval.intervals import bootstrap

__all__ = [
    "BIG_LINES",
    "STUDY_REDUCERS",
    "episodes_frame",
    "steps_frame",
    "success_table",
    "reduction_table",
    "coverage",
    "relative_success",
    "site_summary",
    "failure_reasons",
    "summarise",
    "plot_success_vs_reduction",
    "overhead_ms",
]

BIG_LINES = 9_000  # lrlib's latency is also reported on the steps of trees at least this big

#: The study's reducers: the learned and program reducers with their injection guard on
#: (default) and off, so what the guard costs in success on clean pages is measured, and
#: ``anchor`` (:mod:`lrlab.reducers.anchor`, its ``top_k`` chosen by grouped cross-validation
#: on the development sites: ``benchmarks/tune_docs_reducer.py``).
STUDY_REDUCERS = ("full", "truncate-agentlab", "bm25", "anchor", "program",
                  "program:guard=False", "learned", "learned:guard=False")  # fmt: skip


def episodes_frame(results: Sequence[dict[str, Any]]) -> Any:
    """One row per episode: reducer, site, family, seed (task index), success, steps."""
    import pandas as pd

    rows = []
    for r in results:
        site, family = str(r["task"]).rsplit(".", 1)
        steps = r.get("steps") or []
        rows.append({"reducer": r["reducer"], "site": site, "family": family,
                     "seed": r["seed"], "task": f"{site}.{family}.{r['seed']}",
                     "success": bool(r.get("success")), "n_steps": len(steps),
                     "err_msg": r.get("err_msg"), "episode_s": r.get("episode_s")})  # fmt: skip
    return pd.DataFrame(rows)


def steps_frame(results: Sequence[dict[str, Any]]) -> Any:
    """One row per step played: tree lines, tokens before/after, reduction, latencies."""
    import pandas as pd

    rows = []
    for r in results:
        site, family = str(r["task"]).rsplit(".", 1)
        for s in r.get("steps") or []:
            before, after = s.get("tokens_before"), s.get("tokens_after")
            red = 1 - after / before if before else None
            rows.append({"reducer": r["reducer"], "site": site, "family": family,
                         "seed": r["seed"], "task": f"{site}.{family}.{r['seed']}",
                         "step": s["step"], "n_lines": s["n_lines"], "kept": s["kept"],
                         "tokens_before": before, "tokens_after": after, "reduction": red,
                         "reduction_ms": 1e3 * s["reduction_s"], "browser_ms": 1e3 * s["browser_s"],
                         "action": s["action"]})  # fmt: skip
    return pd.DataFrame(rows)


def success_table(episodes: Any) -> Any:
    """Success per reducer with 95% intervals bootstrapped over tasks (``success_lo/hi``)
    and over task families (``family_lo/hi``), and the counts."""
    frame = episodes.assign(success=episodes["success"].astype(float),
                            family=episodes["site"] + "." + episodes["family"],
                            task=episodes["site"] + "." + episodes["family"] + "."
                            + episodes["seed"].astype(str))  # fmt: skip
    a = bootstrap(frame, "success", by="reducer", cluster="task")
    b = bootstrap(frame, "success", by="reducer", cluster="family")
    a = a[["reducer", "estimate", "lo", "hi", "n_steps"]]
    out = a.rename(columns={"estimate": "success", "lo": "success_lo", "hi": "success_hi",
                            "n_steps": "n_episodes"})  # fmt: skip
    b = b.rename(columns={"lo": "family_lo", "hi": "family_hi", "n_episodes": "n_families"})
    return out.merge(b[["reducer", "family_lo", "family_hi", "n_families"]], on="reducer")


def reduction_table(steps: Any) -> Any:
    """Median token reduction per reducer with a 95% interval over tasks, and the median
    tree size (lines) and lrlib's median latency per step."""
    if not len(steps):
        return None
    r = bootstrap(steps.dropna(subset=["reduction"]), "reduction", by="reducer", stat="median",
                  cluster="task")  # fmt: skip
    r = r[["reducer", "estimate", "lo", "hi", "n_steps"]].rename(
        columns={"estimate": "reduction", "lo": "reduction_lo", "hi": "reduction_hi"}
    )
    med = steps.groupby("reducer", sort=False).agg(
        median_lines=("n_lines", "median"), lrlib_ms=("reduction_ms", "median")
    )
    big = steps[steps["n_lines"] >= BIG_LINES].groupby("reducer", sort=False)
    med = med.join(big.agg(n_big=("n_lines", "size"), lrlib_ms_big=("reduction_ms", "median")))
    return r.merge(med.reset_index(), on="reducer")


def _episode_keys(results: Sequence[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """``(reducer, task, seed)`` of every episode, in the order coverage rows come: by
    reducer (first seen), then task (first seen), then seed."""
    by_reducer: dict[str, dict[str, set[int]]] = {}
    for r in results:
        by_reducer.setdefault(r["reducer"], {}).setdefault(r["task"], set()).add(r["seed"])
    return [(reducer, task, seed) for reducer, tasks in by_reducer.items()
            for task, seeds in tasks.items() for seed in sorted(seeds)]  # fmt: skip


def _coverage_of(keys: Sequence[tuple[str, str, int]], out: str, policy: str) -> Any:
    """:func:`own_coverage` of the steps of the episodes ``keys`` (one worker's share)."""
    from lrlab.agent.live_report import live_steps, own_coverage
    from lrlab.docsite.policy import DocsScriptedPolicy

    played = []
    for reducer, task, seed in keys:
        played += live_steps(Path(out), policy, reducer, [task], [seed], "docs")
    return own_coverage(played, DocsScriptedPolicy(), max_sets=8) if played else None


def coverage(results: Sequence[dict[str, Any]], out: Path, policy: str, jobs: int = 1) -> Any:
    """Offline coverage of the steps each reducer's episodes played (scripted policy only:
    its reference actions and failure sets are free to ask), one row per step.

    With ``jobs`` > 1 the episodes are shared among that many worker processes (joblib),
    every reducer's episodes of one task in the same share, so the minimal failure sets of a
    tree that several reducers' steps show are searched once, as in one process; the rows
    are the same, in the same order."""
    import pandas as pd

    keys = _episode_keys(results)
    if jobs <= 1 or len(keys) < 2:
        return _coverage_of(keys, str(out), policy)
    from joblib import Parallel, delayed

    # shares by task (a tree's failure sets are searched where all its steps are), the
    # tasks with most episodes first, each to the share with the fewest episodes so far
    by_task: dict[tuple[str, int], list[int]] = {}
    for i, (_, task, seed) in enumerate(keys):
        by_task.setdefault((task, seed), []).append(i)
    shares: list[list[int]] = [[] for _ in range(min(len(by_task), 4 * jobs))]
    for idx in sorted(by_task.values(), key=len, reverse=True):
        min(shares, key=len).extend(idx)
    shares = [sorted(share) for share in shares if share]
    parts = Parallel(n_jobs=jobs)(
        delayed(_coverage_of)([keys[i] for i in share], str(out), policy) for share in shares
    )
    frames = []
    for share, part in zip(shares, parts, strict=True):
        if part is not None and len(part):
            rank = {keys[i]: i for i in share}
            order = [rank[(r, t.removeprefix("docs."), int(s))]
                     for r, t, s in zip(part["reducer"], part["task"], part["seed"], strict=True)]  # fmt: skip
            frames.append(part.assign(_order=order))
    if not frames:
        return None
    frame = pd.concat(frames, ignore_index=True)
    return frame.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)


def relative_success(episodes: Any, base: str = "full", n_boot: int = 2000, seed: int = 0) -> Any:
    """Each reducer's success relative to ``base``'s on the same tasks (their ratio: the
    tasks both played), with a 95% interval from a paired bootstrap over those tasks, per
    site and over all sites.

    >>> import pandas as pd
    >>> eps = pd.DataFrame({"reducer": ["full", "x"] * 4, "site": ["s"] * 8,
    ...     "family": ["a"] * 8, "seed": [0, 0, 1, 1, 2, 2, 3, 3],
    ...     "success": [True, True, True, False, True, True, False, False]})
    >>> r = relative_success(eps)
    >>> row = r[(r.reducer == "x") & (r.site == "all")].iloc[0]
    >>> round(float(row["ratio"]), 3), int(row["n_tasks"])
    (0.667, 4)
    """
    import numpy as np
    import pandas as pd

    frame = episodes.assign(key=episodes["site"] + "." + episodes["family"] + "."
                            + episodes["seed"].astype(str))  # fmt: skip
    wide = frame.pivot_table(index=["site", "key"], columns="reducer", values="success",
                             aggfunc="max").astype(float)  # fmt: skip
    rng = np.random.default_rng(seed)
    rows = []
    for site in ["all", *sorted(frame["site"].unique())]:
        sub = wide if site == "all" else wide.xs(site, level="site", drop_level=False)
        if base not in sub:
            continue
        for reducer in sub.columns:  # each reducer on the tasks it and base both played
            pair = sub[[base, reducer]].dropna() if reducer != base else sub[[base]].dropna()
            if not len(pair):
                continue
            picks = rng.integers(0, len(pair), (n_boot, len(pair)))
            b, x = pair[base].to_numpy(), pair[reducer].to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                boots = x[picks].sum(axis=1) / b[picks].sum(axis=1)
            boots = boots[np.isfinite(boots)]
            lo, hi = (np.quantile(boots, [0.025, 0.975]).tolist() if len(boots)
                      else (float("nan"), float("nan")))  # fmt: skip
            rows.append({"site": site, "reducer": reducer, "n_tasks": len(pair),
                         "ratio": x.sum() / b.sum() if b.sum() else float("nan"),
                         "ratio_lo": lo, "ratio_hi": hi})  # fmt: skip
    return pd.DataFrame(rows)


def site_summary(episodes: Any, steps: Any) -> Any:
    """:func:`success_table` and :func:`reduction_table` per site (a ``site`` column)."""
    import pandas as pd

    parts = []
    for site in sorted(episodes["site"].unique()):
        table = success_table(episodes[episodes["site"] == site])
        red = reduction_table(steps[steps["site"] == site])
        if red is not None:
            table = table.merge(red, on="reducer", how="left")
        parts.append(table.assign(site=site))
    return pd.concat(parts, ignore_index=True) if parts else None


_REASONS = (("no row", "row key dropped"), ("no column", "column header dropped"),
            ("row and header", "row or header cells dropped"),
            ("no heading", "heading dropped"), ("under", "labelled line dropped"),
            ("no link", "link dropped"), ("did not arrive", "click did not navigate"),
            ("no search box", "search box dropped"))  # fmt: skip


def failure_reasons(episodes: Any) -> Any:
    """Failed episodes per reducer by what the scripted policy missed (its stop message in
    ``err_msg``); a failure without a stop is a wrong answer or a wrong page.

    >>> import pandas as pd
    >>> eps = pd.DataFrame({"reducer": ["a", "a", "a"], "success": [False, False, True],
    ...     "err_msg": ["policy stopped: no row 'x'", None, None]})
    >>> failure_reasons(eps).to_dict("index")
    {'a': {'row key dropped': 1, 'wrong answer or page': 1}}
    """

    def reason(msg: Any) -> str:
        if not isinstance(msg, str) or not msg:
            return "wrong answer or page"
        return next((name for key, name in _REASONS if key in msg), "other: " + msg[:40])

    failed = episodes[~episodes["success"].astype(bool)]
    kinds = failed["err_msg"].map(reason)
    return failed.assign(reason=kinds).groupby(["reducer", "reason"]).size().unstack(fill_value=0)


def summarise(
    results: Sequence[dict[str, Any]],
    out: Path,
    policy: str,
    with_coverage: bool = True,
    jobs: int = 1,
) -> tuple[Any, Any, Any]:
    """``(table, episodes, steps)``: the per-reducer table (success with both intervals,
    reduction, tree size, latency, and for the scripted policy the share of played steps
    whose target / evidence / every minimal failure set the reducer kept: :func:`coverage`
    in ``jobs`` processes)."""
    episodes = episodes_frame(results)
    steps = steps_frame(results)
    table = success_table(episodes)
    red = reduction_table(steps)
    if red is not None:
        table = table.merge(red, on="reducer", how="left")
    if with_coverage and policy == "scripted":
        cov = coverage(results, out, policy, jobs)
        if cov is not None and len(cov):
            agg = cov.groupby("reducer", sort=False).agg(
                step_target=("target", "mean"), step_evidence=("evidence", "mean"),
                step_mfs=("mfs", "mean"), mfs_size=("mfs_size", "median"))  # fmt: skip
            table = table.merge(agg.reset_index(), on="reducer", how="left")
            cov.to_csv(out / "coverage.csv", index=False)
    return table, episodes, steps


def plot_success_vs_reduction(table: Any, title: str = "") -> Any:
    """Live success (y) against median token reduction (x), one point per reducer, each
    with its 95% intervals (success over tasks; reduction over tasks). Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    for _, r in table.iterrows():
        ax.errorbar(r["reduction"], r["success"],
                    xerr=[[r["reduction"] - r["reduction_lo"]], [r["reduction_hi"] - r["reduction"]]],
                    yerr=[[r["success"] - r["success_lo"]], [r["success_hi"] - r["success"]]],
                    fmt="o", capsize=3, label=f"{r['reducer']} (n={int(r['n_episodes'])})")  # fmt: skip
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="median token reduction per step",
           ylabel="live success rate",
           title=title or "documentation sites: success vs reduction")  # fmt: skip
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def overhead_ms(
    tree: str, goal: str, reducers: Sequence[str], repeats: int = 5
) -> dict[str, float]:
    """lrlib's median share per step (parse, reduce, number, count tokens:
    :class:`~lrlab.agent.preprocess.ObsPreprocessor`) on one tree, per reducer, in ms."""
    import statistics

    from lrlab.agent.preprocess import ObsPreprocessor
    from lrlib.eval.evaluation import parse_spec

    out = {}
    for spec in reducers:
        name, params = parse_spec(spec)
        pre = ObsPreprocessor(name, **params)
        pre({"goal": goal, "axtree_txt": tree})  # warm: models and lexicons load once
        times = [pre({"goal": goal, "axtree_txt": tree}).info["latency_s"] for _ in range(repeats)]
        out[spec] = 1e3 * statistics.median(times)
    return out
