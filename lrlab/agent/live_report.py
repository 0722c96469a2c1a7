"""What live episodes show: success per reducer beside its offline coverage of the same steps.

Each reducer is scored offline on **the steps its own live episodes played** (read back
from their AgentLab folders by the importer's own code, :func:`lrlib.data.importer.episode_rows`,
with the lines the live run kept for the policy), against the *reference action*: the one the
policy takes on the step's full tree. Per step (:func:`own_coverage`): target coverage and
evidence coverage (:mod:`lrlib.eval.metrics`), and minimal-failure-set coverage
(:mod:`lrlab.agent.mfs`): ``mfs1``, the first set (one ddmin run, the seeds' study), and
``mfs``, every disjoint set the policy cannot lose, shown verbatim where it reads the line's
text. An episode is covered when every step it played is; ``agree_<coverage>`` is the share
of episodes whose live success equals it. Intervals bootstrap over task types
(:func:`lrlib.eval.intervals.bootstrap` with task as the cluster: seeds of one task share
its page layout).

>>> import pandas as pd
>>> eps = pd.DataFrame({"reducer": ["full"] * 4, "task": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
...                     "success": [True, True, True, False]})
>>> success_table(eps)[["reducer", "success", "n_episodes", "n_tasks"]].values.tolist()
[['full', 0.75, 4, 2]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lrlab.agent.live import episode_dir
from lrlab.agent.preprocess import line_numbers
from lrlib.core.step import Step
from lrlib.data.importer import episode_rows
from lrlib.data.traces import read_episode
from lrlib.eval.evaluation import parse_spec
from lrlib.eval.intervals import bootstrap
from lrlib.eval.metrics import covers, covers_evidence, reduction
from lrlib.reducers.base import get_reducer

__all__ = [
    "episodes_frame",
    "step_latencies",
    "success_table",
    "halves_table",
    "LiveStep",
    "live_steps",
    "reference_step",
    "set_shown",
    "own_coverage",
    "COVERAGES",
    "episode_coverage",
    "disagreements",
    "agreement_table",
    "token_reductions",
    "halves_reduction",
    "summarise",
    "plot_success_vs_coverage",
]


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


def halves_table(episodes: Any) -> Any:
    """Success per reducer on each half of the fixed task split (:mod:`lrlab.agent.split`):
    ``success_tuning``, ``success_heldout``, each with its 95% interval over task types and
    its numbers of episodes and task types.

    >>> import pandas as pd
    >>> eps = pd.DataFrame({"reducer": ["full"] * 3, "task": ["click-test", "click-tab", "click-button"],
    ...                     "seed": [0, 0, 0], "success": [True, False, True]})
    >>> halves_table(eps)[["reducer", "success_tuning", "n_tasks_tuning", "success_heldout"]].values.tolist()
    [['full', 0.5, 2, 1.0]]
    """
    from lrlab.agent.split import half_of

    frame = episodes.assign(half=episodes["task"].map(half_of),
                            success=episodes["success"].astype(float))  # fmt: skip
    out = None
    for half in ("tuning", "heldout"):
        part = frame[frame["half"] == half]
        if not len(part):
            continue
        t = success_table(part)
        t.columns = [c if c == "reducer" else c.replace("success", f"success_{half}")
                     if c.startswith("success") else f"{c}_{half}" for c in t.columns]  # fmt: skip
        out = t if out is None else out.merge(t, on="reducer", how="outer")
    return out


@dataclass
class LiveStep:
    """A step a reducer's live episode played: the recorded step (FULL tree, goal, history,
    the action taken) and the lines the reducer kept for the policy at that step."""

    reducer: str
    task: str
    seed: int
    step: Step
    kept: list[int]
    stubs: list[int]  # lines shown shortened (bid and role kept: bm25's chunks)
    text: str  # what the policy was shown


def live_steps(
    out: Path,
    policy: str,
    reducer: str,
    tasks: Sequence[str],
    seeds: Sequence[int],
    benchmark: str = "miniwob",
) -> list[LiveStep]:
    """Every step at which the policy decided in ``reducer``'s recorded episodes, with the
    kept lines the live run recorded (``agent_info["extra_info"]["lrlib"]["kept"]``)."""
    from lrlib.data.safepickle import load_path

    found = []
    for task in tasks:
        for seed in seeds:
            folder = episode_dir(out, reducer, policy, task, seed, benchmark)
            if not (folder / "summary_info.json").is_file():
                continue
            ep = read_episode(folder, out)
            for row in episode_rows(ep, set(), []):
                info = load_path(folder / f"step_{row['step']}.pkl.gz")
                extra = (getattr(info, "agent_info", None) or {}).get("extra_info") or {}
                if "lrlib" not in extra:
                    continue  # the terminal observation: nothing was decided on it
                row.update(task=f"{benchmark}.{task}", seed=seed)
                kept = [int(n) for n in extra["lrlib"]["kept"]]
                stubs = [int(n) for n in extra["lrlib"].get("stubs") or ()]
                text = str(extra.get("reduced_axtree_txt") or "")
                step = Step.from_row(row)
                found.append(LiveStep(reducer, task, seed, step, kept, stubs, text))
    return found


def reference_step(step: Step, action: str) -> Step:
    """``step`` with ``action`` as its recorded action (its bids as the targets).

    >>> s = reference_step(Step(goal="g", tree="[3] button 'A'\\n[5] button 'B'"), "click('5')")
    >>> s.target_lines, s.meta["action"]
    ([2], "click('5')")
    """
    from lrlib.data.actions import parse_action

    act = parse_action(action)
    bids = tuple(act.bids) if act else ()
    return replace(step, target_bids=bids, meta={**(step.meta or {}), "action": action})


def set_shown(lines: set[int], kept: set[int], shown: set[int], labels: set[int]) -> bool:
    """Whether a reducer that kept ``kept`` verbatim and showed ``shown`` (kept or stubbed)
    keeps a failure set ``lines``: every line shown, verbatim where the policy reads its text
    (``labels``, :attr:`lrlab.agent.mfs.MFSResult.labels`).

    >>> set_shown({2, 5}, kept={2}, shown={2, 5}, labels={2}), set_shown({2, 5}, {2}, {2, 5}, {5})
    (True, False)
    """
    return lines <= shown and (lines & labels) <= kept


def own_coverage(
    played: Sequence[LiveStep], policy: Any, max_sets: int = 32, progress: bool = False
) -> Any:
    """One row per live step: offline coverage of what the reducer kept at that very step.

    The reference action is the policy's own on the step's FULL tree (the action it takes
    with ``full``; a deterministic policy such as the scripted one is free to ask). Beside
    target and evidence coverage (:mod:`lrlib.eval.metrics`): ``mfs1``, the whole first
    minimal failure set kept (the seeds' study), and ``mfs``, every disjoint set kept
    (:func:`lrlab.agent.mfs.build_mfs` with ``max_sets``); ``replay``, the policy shown the
    kept lines takes the reference action; ``reproduced``, reducing the recorded tree
    offline keeps exactly the lines the live run kept."""
    import pandas as pd
    from tqdm.auto import tqdm

    from lrlab.agent.mfs import build_mfs, same_action
    from lrlib.core.tokens import count_tokens

    reducers: dict[str, Any] = {}
    memo: dict[tuple, Any] = {}
    rows = []
    for ls in tqdm(played, desc="offline coverage", unit="step", disable=not progress):
        s = ls.step
        key = (s.goal, tuple(s.history), s.tree)
        if key not in memo:
            ref = reference_step(s, policy.act(s.goal, s.history, s.tree).action)
            memo[key] = (ref, build_mfs(ref, policy, max_sets=max_sets, stubs=True))
        ref, m = memo[key]
        if ls.reducer not in reducers:
            name, params = parse_spec(ls.reducer)
            reducers[ls.reducer] = get_reducer(name, **params)
        kept = set(ls.kept)
        shown = kept | set(ls.stubs)  # a stubbed line still shows its bid and role
        numbers = line_numbers(ls.text, ls.kept, ls.stubs, len(ref.axtree))
        replay = policy.act(ref.goal, ref.history, ls.text, numbers)
        offline = reducers[ls.reducer].reduce(ref)
        sets = set().union(*map(set, m.sets))
        labels = set(m.labels or ())

        rows.append({"reducer": ls.reducer, "task": ls.task, "seed": ls.seed,
                     "step_id": s.step_id, "action": ref.meta["action"],
                     "target": covers(ref, ls.kept),  # as lrlib evaluate: verbatim
                     "evidence": covers_evidence(ref, ls.kept),
                     "mfs1": set_shown(set(m.mfs), kept, shown, labels) if m.usable and m.mfs else None,
                     "mfs": set_shown(sets, kept, shown, labels) if m.usable and m.sets else None,
                     "n_sets": len(m.sets), "mfs_size": sum(map(len, m.sets)),
                     "replay": same_action(replay.action, ref.meta["action"]),
                     "reproduced": (sorted(offline.kept), sorted(offline.stubs)) == (sorted(kept), sorted(ls.stubs)),
                     "reduction": 1 - len(kept) / max(1, len(ref.axtree)),
                     "token_reduction": reduction(count_tokens(s.tree), count_tokens(ls.text))})  # fmt: skip
    return pd.DataFrame(rows)


COVERAGES = ("target", "evidence", "mfs1", "mfs")


def episode_coverage(cov: Any) -> Any:
    """Per (reducer, task, seed): each coverage of :data:`COVERAGES` over all its steps (an
    episode is covered when every step it played is; a step without a target or a set
    counts as covered)."""
    cols = list(COVERAGES)
    frame = cov.assign(**{c: cov[c].astype(object).where(cov[c].notna(), True).astype(float)
                          for c in cols})  # fmt: skip
    return frame.groupby(["reducer", "task", "seed"], sort=False, as_index=False)[cols].min()


def disagreements(per_episode: Any) -> Any:
    """The episodes whose live success differs from at least one episode coverage of
    :data:`COVERAGES` (``per_episode``: :func:`episode_coverage` joined with the episodes),
    one row each, with the policy's reason to stop.

    >>> import pandas as pd
    >>> ep = pd.DataFrame({"reducer": ["x", "x"], "task": ["t", "t"], "seed": [0, 1],
    ...     "success": [False, True], "target": [1.0, 1.0], "evidence": [1.0, 1.0],
    ...     "mfs1": [1.0, 1.0], "mfs": [0.0, 1.0], "err_msg": ["stopped", None]})
    >>> disagreements(ep)[["seed", "target", "mfs"]].values.tolist()
    [[0, True, False]]
    """
    cols = list(COVERAGES)
    frame = per_episode.assign(success=per_episode["success"].astype(bool),
                               **{c: per_episode[c].astype(bool) for c in cols})  # fmt: skip
    off = frame[cols].ne(frame["success"], axis=0).any(axis=1)
    keep = ["reducer", "task", "seed", "success", *cols]
    keep += [c for c in ("err_msg",) if c in frame.columns]
    return frame.loc[off, keep].reset_index(drop=True)


def agreement_table(episodes: Any, cov: Any) -> Any:
    """Per reducer: success beside each episode coverage, and how often success equals it
    (``agree_<coverage>``), every rate with a 95% interval bootstrapped over task types."""
    ep = episode_coverage(cov)
    m = episodes.merge(ep, on=["reducer", "task", "seed"], how="inner")
    m = m.assign(success=m["success"].astype(float))
    for c in COVERAGES:
        m[f"agree_{c}"] = (m["success"].astype(bool) == m[c].astype(bool)).astype(float)
    out = None
    for col in ["success", *COVERAGES, *(f"agree_{c}" for c in COVERAGES)]:
        name = col if col.startswith(("success", "agree")) else f"episode_{col}"
        b = bootstrap(m, col, by="reducer", cluster="task")
        b = b.rename(columns={"estimate": name, "lo": f"{name}_lo", "hi": f"{name}_hi"})
        b = b.rename(columns={"n_steps": "n_episodes", "n_episodes": "n_tasks"})
        keep = ["reducer", name, f"{name}_lo", f"{name}_hi"]
        if out is None:
            out = b[[*keep, "n_episodes", "n_tasks"]]
        else:
            out = out.merge(b[keep], on="reducer")
    steps = cov.groupby("reducer", sort=False).agg(
        n_live_steps=("step_id", "size"), step_target=("target", "mean"),
        step_evidence=("evidence", "mean"), step_mfs=("mfs", "mean"),
        replay_agrees=("replay", "mean"), reproduced=("reproduced", "mean"),
        median_reduction=("reduction", "median"),
        median_token_reduction=("token_reduction", "median"),
    )  # fmt: skip
    return out.merge(steps.reset_index(), on="reducer").merge(
        halves_reduction(cov), on="reducer", how="left"
    )


def token_reductions(
    out: Path, policy: str, reducers: Sequence[str], tasks: Sequence[str], seeds: Sequence[int]
) -> Any:
    """One row per step the reducers' recorded episodes decided on: ``reducer``, ``task``,
    ``seed``, ``token_reduction`` (tokens shown against the step's full tree; no policy
    or failure set is asked, unlike :func:`own_coverage`)."""
    import pandas as pd

    from lrlib.core.tokens import count_tokens

    return pd.DataFrame([{"reducer": r, "task": ls.task, "seed": ls.seed,
                          "token_reduction": reduction(count_tokens(ls.step.tree),
                                                       count_tokens(ls.text))}
                         for r in reducers for ls in live_steps(out, policy, r, tasks, seeds)],
                        columns=["reducer", "task", "seed", "token_reduction"])  # fmt: skip


def halves_reduction(cov: Any) -> Any:
    """Median token reduction per step of each reducer on each half of the task split
    (``median_token_reduction_tuning``, ``..._heldout``; ``cov``: :func:`own_coverage`).

    >>> import pandas as pd
    >>> cov = pd.DataFrame({"reducer": ["x"] * 3, "task": ["click-test", "click-test", "click-button"],
    ...                     "token_reduction": [0.2, 0.4, 0.9]})
    >>> halves_reduction(cov).round(2).values.tolist()
    [['x', 0.3, 0.9]]
    """
    from lrlab.agent.split import half_of

    frame = cov.assign(half=cov["task"].map(half_of))
    wide = frame.pivot_table(index="reducer", columns="half", values="token_reduction",
                             aggfunc="median", sort=False)  # fmt: skip
    wide = wide.reindex(columns=["tuning", "heldout"]).add_prefix("median_token_reduction_")
    wide.columns.name = None
    return wide.reset_index()


def summarise(
    results: Sequence[dict[str, Any]], out: Path, policy: str, steps_csv: Path | None = None
) -> Any:
    """The per-reducer table: success [95%] beside offline coverage of the same steps [95%]
    and their agreement [95%] (scripted policy: :func:`own_coverage`, its rows written to
    ``steps_csv`` if given; other policies: success only, since the reference actions would
    be model calls), latencies."""
    episodes = episodes_frame(results)
    tasks = list(dict.fromkeys(episodes["task"]))
    seeds = sorted(set(episodes["seed"]))
    reducers = list(dict.fromkeys(episodes["reducer"]))
    table = success_table(episodes).merge(halves_table(episodes), on="reducer", how="left")
    if policy == "scripted":  # free to ask: the same policy's actions and failure sets
        from lrlab.agent.scripted import ScriptedPolicy

        played = [s for r in reducers for s in live_steps(out, policy, r, tasks, seeds)]
        if played:
            cov = own_coverage(played, ScriptedPolicy())
            if steps_csv is not None:
                cov.to_csv(steps_csv, index=False)
            agree = agreement_table(episodes, cov).drop(
                columns=["success", "success_lo", "success_hi", "n_episodes", "n_tasks"]
            )
            table = table.merge(agree, on="reducer", how="left")
    lat = step_latencies(results)
    if len(lat):
        med = lat.groupby("reducer", sort=False)[["reduction_s", "policy_s", "browser_s"]].median()
        med = (1e3 * med).add_suffix("_ms_median").reset_index()
        med.columns = [c.replace("_s_ms", "_ms") for c in med.columns]
        table = table.merge(med, on="reducer", how="left")
    return table


def plot_success_vs_coverage(table: Any, title: str = "", coverage: str = "episode_mfs") -> Any:
    """Live success (y) against an offline episode coverage (x; ``episode_target``,
    ``episode_evidence``, ``episode_mfs1`` or ``episode_mfs``), one point per reducer, both
    with their 95% intervals; the diagonal is "success follows coverage". Returns the figure."""
    import matplotlib.pyplot as plt

    what = {"episode_target": "every target kept", "episode_evidence": "every evidence kept",
            "episode_mfs1": "the first minimal failure set kept",
            "episode_mfs": "every minimal failure set kept"}  # fmt: skip
    if coverage not in what:
        raise ValueError(f"unknown coverage {coverage!r}; valid: {', '.join(what)}")
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    x = coverage
    for _, r in table.iterrows():
        ax.errorbar(r[x], r["success"],
                    xerr=[[r[x] - r[f"{x}_lo"]], [r[f"{x}_hi"] - r[x]]],
                    yerr=[[r["success"] - r["success_lo"]], [r["success_hi"] - r["success"]]],
                    fmt="o", capsize=3, label=f"{r['reducer']} (n={int(r['n_episodes'])})")  # fmt: skip
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02),
           xlabel=f"offline episode coverage ({what[x]})", ylabel="live success rate",
           title=title or "live success vs offline coverage")  # fmt: skip
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
