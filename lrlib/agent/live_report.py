"""What live episodes show: success per reducer beside its offline coverage of the same steps.

The *reference steps* are the steps of the ``full`` reducer's successful episodes, read back
from their AgentLab folders by the importer's own code (:func:`lrlib.data.importer.episode_rows`),
so they are exactly what ``lrlib import-traces`` would make of them. Each reducer is scored
offline on them (:mod:`lrlib.eval.metrics`): target coverage (every target line kept),
evidence coverage (every evidence group kept), and per episode "covered" (all of the
episode's steps' targets kept), which is what success should follow if offline coverage is
the right proxy. Intervals bootstrap over task types (:func:`lrlib.eval.intervals.bootstrap`
with task as the cluster: seeds of one task share its page layout).

>>> import pandas as pd
>>> eps = pd.DataFrame({"reducer": ["full"] * 4, "task": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
...                     "success": [True, True, True, False]})
>>> success_table(eps)[["reducer", "success", "n_episodes", "n_tasks"]].values.tolist()
[['full', 0.75, 4, 2]]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lrlib.agent.live import episode_dir
from lrlib.core.step import Step
from lrlib.data.importer import episode_rows
from lrlib.data.traces import read_episode
from lrlib.eval.evaluation import parse_spec
from lrlib.eval.intervals import bootstrap
from lrlib.eval.metrics import covers, covers_evidence
from lrlib.reducers.registry import get_reducer


def episodes_frame(results: Sequence[dict[str, Any]]) -> Any:
    """One row per episode: reducer, task, seed, success, steps, latencies (medians per step)."""
    import pandas as pd

    rows = []
    for r in results:
        steps = r.get("steps") or []

        def med(key: str, steps: list = steps) -> float:
            vals = sorted(s[key] for s in steps if key in s)
            return vals[len(vals) // 2] if vals else float("nan")

        rows.append({"reducer": r["reducer"], "task": r["task"], "seed": r["seed"],
                     "success": bool(r.get("success")), "n_steps": len(steps),
                     "err_msg": r.get("err_msg"), "reduction_ms": 1e3 * med("reduction_s"),
                     "policy_ms": 1e3 * med("policy_s"), "browser_ms": 1e3 * med("browser_s")})  # fmt: skip
    return pd.DataFrame(rows)


def step_latencies(results: Sequence[dict[str, Any]]) -> Any:
    """One row per step played: reducer, task, seed, reduction/flatten/policy/browser seconds."""
    import pandas as pd

    keys = ("reduction_s", "flatten_s", "policy_s", "browser_s")
    return pd.DataFrame([{"reducer": r["reducer"], "task": r["task"], "seed": r["seed"],
                          **{k: s.get(k) for k in keys}}
                         for r in results for s in r.get("steps") or []])  # fmt: skip


def success_table(episodes: Any) -> Any:
    """Success rate per reducer with a 95% interval over task types, and its n."""
    frame = episodes.assign(success=episodes["success"].astype(float))
    b = bootstrap(frame, "success", by="reducer", cluster="task")
    out = b.rename(columns={"estimate": "success", "lo": "success_lo", "hi": "success_hi",
                            "n_steps": "n_episodes", "n_episodes": "n_tasks"})  # fmt: skip
    return out[["reducer", "success", "success_lo", "success_hi", "n_episodes", "n_tasks"]]


def reference_steps(
    out: Path, policy: str, tasks: Sequence[str], seeds: Sequence[int]
) -> list[Step]:
    """The steps of the ``full`` reducer's successful episodes, as the importer reads them."""
    steps = []
    for task in tasks:
        for seed in seeds:
            folder = episode_dir(out, "full", policy, task, seed)
            ep = read_episode(folder, out)
            if not (ep.summary or {}).get("success"):
                continue
            for row in episode_rows(ep, set(), []):
                row.update(task=f"miniwob.{task}", seed=seed)
                step = Step.from_row(row)
                if step.target_bids:
                    steps.append(step)
    return steps


def offline_coverage(
    steps: Sequence[Step], reducers: Sequence[str], mfs: dict[str, list[int]] | None = None
) -> Any:
    """One row per (reducer, step): target and evidence coverage of the reducer's kept lines,
    and with ``mfs`` (step_id -> minimal failure set) whether it keeps the whole set."""
    import pandas as pd

    rows = []
    for spec in reducers:
        name, params = parse_spec(spec)
        reducer = get_reducer(name, **params)
        for s in steps:
            r = reducer.reduce(s)
            rows.append({"reducer": spec, "task": s.meta["task"].removeprefix("miniwob."),
                         "seed": s.meta["seed"], "step_id": s.step_id,
                         "target": covers(s, r.kept), "evidence": covers_evidence(s, r.kept),
                         "reduction": r.reduction,
                         "mfs": (set(mfs[s.step_id]) <= set(r.kept)) if mfs and s.step_id in mfs else None})  # fmt: skip
    return pd.DataFrame(rows)


def coverage_table(cov: Any) -> Any:
    """Per reducer: step target/evidence coverage and episode coverage, 95% over task types."""
    import pandas as pd

    cov = cov.assign(target=cov["target"].astype(float), evidence=cov["evidence"].astype(float),
                     mfs=cov["mfs"].astype(float))  # fmt: skip
    ep = cov.groupby(["reducer", "task", "seed"], sort=False, as_index=False)[
        ["target", "mfs"]
    ].min()
    parts = []
    for frame, col, name in ((cov, "target", "target_cov"), (cov, "evidence", "evidence_cov"),
                             (ep, "target", "episode_cov"), (ep, "mfs", "episode_mfs_cov")):  # fmt: skip
        if frame[col].isna().all():
            continue
        b = bootstrap(frame, col, by="reducer", cluster="task")
        parts.append(b.rename(columns={"estimate": name, "lo": f"{name}_lo", "hi": f"{name}_hi",
                                       "n_steps": f"{name}_n"}).drop(columns="n_episodes"))  # fmt: skip
    out = parts[0]
    for p in parts[1:]:
        out = out.merge(p, on="reducer")
    red = cov.groupby("reducer", sort=False)["reduction"].median().rename("median_reduction")
    return out.merge(pd.DataFrame(red).reset_index(), on="reducer")


def agreement(episodes: Any, cov: Any, column: str = "target") -> Any:
    """Per reducer: share of episodes where live success equals offline episode coverage
    (``column``: ``target``, or ``mfs`` for minimal-failure-set coverage)."""
    ep = cov.groupby(["reducer", "task", "seed"], as_index=False)[column].min()
    m = episodes.merge(ep.dropna(), on=["reducer", "task", "seed"])
    m["agree"] = (m["success"].astype(bool) == m[column].astype(bool)).astype(float)
    return m.groupby("reducer", sort=False)["agree"].agg(["mean", "size"]).reset_index()


def summarise(results: Sequence[dict[str, Any]], out: Path, policy: str) -> Any:
    """The per-reducer table: success [95%] beside offline coverage [95%], latencies."""
    episodes = episodes_frame(results)
    tasks = list(dict.fromkeys(episodes["task"]))
    seeds = sorted(set(episodes["seed"]))
    reducers = list(dict.fromkeys(episodes["reducer"]))
    table = success_table(episodes)
    if "full" in reducers:
        steps = reference_steps(out, policy, tasks, seeds)
        if steps:
            sets = None
            if policy == "scripted":  # free to ask: the same policy's minimal failure sets
                from lrlib.agent.mfs import build_mfs
                from lrlib.agent.scripted import ScriptedPolicy

                sets = {s.step_id: build_mfs(s, ScriptedPolicy()).mfs for s in steps}
            cov = offline_coverage(steps, reducers, sets)
            table = table.merge(coverage_table(cov), on="reducer", how="left")
            for column, name in (("target", "agreement"), ("mfs", "mfs_agreement")):
                if cov[column].notna().any():
                    agree = agreement(episodes, cov, column)
                    agree.columns = ["reducer", name, f"{name}_n"]
                    table = table.merge(agree, on="reducer", how="left")
    lat = step_latencies(results)
    if len(lat):
        med = lat.groupby("reducer", sort=False)[["reduction_s", "policy_s", "browser_s"]].median()
        med = (1e3 * med).add_suffix("_ms_median").reset_index()
        med.columns = [c.replace("_s_ms", "_ms") for c in med.columns]
        table = table.merge(med, on="reducer", how="left")
    return table


def plot_success_vs_coverage(table: Any, title: str = "") -> Any:
    """Live success (y) against offline episode coverage (x), one point per reducer, both with
    their 95% intervals; the diagonal is "success follows coverage". Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    for _, r in table.iterrows():
        ax.errorbar(r["episode_cov"], r["success"],
                    xerr=[[r["episode_cov"] - r["episode_cov_lo"]], [r["episode_cov_hi"] - r["episode_cov"]]],
                    yerr=[[r["success"] - r["success_lo"]], [r["success_hi"] - r["success"]]],
                    fmt="o", capsize=3, label=f"{r['reducer']} (n={int(r['n_episodes'])})")  # fmt: skip
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="offline episode coverage (all targets kept)",
           ylabel="live success rate", title=title or "live success vs offline coverage")  # fmt: skip
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
