"""Does what one agent needs predict another's success? (issue 33, item 5)

The *first* policy's minimal failure sets are found on the steps of its ``full`` run (every
disjoint set, :func:`lrlab.agent.mfs.build_mfs`, as ``lrlib mfs --sets``); each reducer is
applied offline to those steps' full trees, and an episode is *covered* when the reducer
keeps every set of every step (verbatim where the policy reads the line's text). The
*second* policy plays the same task types and seeds live with each reducer; its success
is set against the first policy's coverage, episode by episode: ``agree`` is the share of
episodes where the two are equal, with 95% intervals bootstrapped over task types.

>>> import pandas as pd
>>> m = pd.DataFrame({"reducer": ["r"] * 4, "task": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
...                   "covered": [1.0, 1.0, 0.0, 1.0], "success": [1.0, 0.0, 0.0, 1.0]})
>>> agreement(m)[["reducer", "agree", "n_episodes"]].values.tolist()
[['r', 0.75, 4], ['all', 0.75, 4]]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lrlab.agent.live import EpisodeSpec, done
from lrlab.agent.live_report import live_steps, reference_step, set_shown
from lrlib.eval.evaluation import parse_spec
from lrlib.eval.intervals import bootstrap
from lrlib.reducers.base import get_reducer


def mfs_coverage(
    out: Path,
    policy: Any,
    reducers: Sequence[str],
    tasks: Sequence[str],
    seeds: Sequence[int],
    max_sets: int = 32,
) -> Any:
    """Per (reducer, task, seed): whether ``reducer``, applied offline to the steps of
    ``policy``'s ``full`` episodes under ``out``, keeps every minimal failure set of them
    (``covered``, 0/1; NaN when the full episode is missing), and ``n_steps``."""
    import pandas as pd

    from lrlab.agent.mfs import build_mfs

    made = {r: get_reducer(parse_spec(r)[0], **parse_spec(r)[1]) for r in reducers}
    covered: dict[tuple[str, str, int], list[bool]] = {}
    for ls in live_steps(out, policy.name, "full", tasks, seeds):
        s = ls.step
        ref = reference_step(s, policy.act(s.goal, s.history, s.tree).action)
        m = build_mfs(ref, policy, max_sets=max_sets, stubs=True)
        sets = set().union(*map(set, m.sets)) if m.usable and m.sets else set()
        labels = set(m.labels or ())
        for spec, reducer in made.items():
            red = reducer.reduce(ref)
            kept = set(red.kept)
            ok = set_shown(sets, kept, kept | set(red.stubs), labels) if sets else True
            covered.setdefault((spec, ls.task, ls.seed), []).append(ok)
    rows = [{"reducer": r, "task": t, "seed": s,
             "covered": float(all(covered[(r, t, s)])) if (r, t, s) in covered else float("nan"),
             "n_steps": len(covered.get((r, t, s), []))}
            for r in reducers for t in tasks for s in seeds]  # fmt: skip
    return pd.DataFrame(rows)


def live_success(
    out: Path, policy: str, reducers: Sequence[str], tasks: Sequence[str], seeds: Sequence[int]
) -> Any:
    """Per (reducer, task, seed): the recorded episode's success under ``out`` (NaN when it
    was not played)."""
    import pandas as pd

    rows = []
    for r in reducers:
        for t in tasks:
            for s in seeds:
                summary = done(out, EpisodeSpec(r, t, s), policy)
                ok = float("nan") if summary is None else float(bool(summary.get("success")))
                rows.append({"reducer": r, "task": t, "seed": s, "success": ok})
    return pd.DataFrame(rows)


def agreement(merged: Any) -> Any:
    """Per reducer, and over all reducers (``all``): the first policy's MFS coverage, the
    second's success, and their agreement, each with a 95% interval over task types."""
    import pandas as pd

    m = merged.dropna(subset=["covered", "success"])
    m = m.assign(agree=(m["covered"] == m["success"]).astype(float))
    pooled = m.assign(reducer="all")
    out = None
    for col in ("covered", "success", "agree"):
        b = bootstrap(pd.concat([m, pooled]), col, by="reducer", cluster="task")
        b = b.rename(columns={"estimate": col, "lo": f"{col}_lo", "hi": f"{col}_hi",
                              "n_steps": "n_episodes", "n_episodes": "n_tasks"})  # fmt: skip
        keep = ["reducer", col, f"{col}_lo", f"{col}_hi"]
        out = (
            b[[*keep, "n_episodes", "n_tasks"]] if out is None else out.merge(b[keep], on="reducer")
        )
    return out


def cross_table(
    first_out: Path,
    second_out: Path,
    second_policy: str,
    reducers: Sequence[str],
    tasks: Sequence[str],
    seeds: Sequence[int],
    first_policy: Any = None,
) -> tuple[Any, Any]:
    """``(per_episode, table)``: the scripted policy's (or ``first_policy``'s) MFS coverage
    beside ``second_policy``'s live success, per episode, and :func:`agreement_both`."""
    if first_policy is None:
        from lrlab.agent.scripted import ScriptedPolicy

        first_policy = ScriptedPolicy()
    cov = mfs_coverage(first_out, first_policy, reducers, tasks, seeds)
    suc = live_success(second_out, second_policy, reducers, tasks, seeds)
    merged = cov.merge(suc, on=["reducer", "task", "seed"])
    return merged, agreement_both(merged)


def agreement_both(merged: Any) -> Any:
    """:func:`agreement` on every episode, and on the episodes the second policy can play at
    all (it succeeds on them with ``full``): there, only what the reducer drops decides."""
    import pandas as pd

    ok = merged[(merged["reducer"] == "full") & (merged["success"] == 1.0)][["task", "seed"]]
    able = merged.merge(ok, on=["task", "seed"])
    parts = [agreement(merged).assign(episodes="all")]
    if len(able):
        parts.append(agreement(able).assign(episodes="second succeeds on full"))
    return pd.concat(parts, ignore_index=True)
