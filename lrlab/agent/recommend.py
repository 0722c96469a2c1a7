"""The recommendation of issue 33: live success on the held-out task types at a reduction.

A reducer (with its knobs: an *operating point*) **meets the target** when, on the held-out
half of the task split (:mod:`lrlab.agent.split`), its live success is at least
``min_share`` of the ``full`` observation's on the same episodes at a median token
reduction of at least ``min_reduction``. A point is **dominated** when another point's
success interval lies wholly above its own at an equal or higher reduction: such a point is
never recommended. Knobs are chosen on the tuning half only (offline replay,
``benchmarks/bench_replay.py --half tuning --pick``); this module only scores.

>>> import pandas as pd
>>> eps = pd.DataFrame({"reducer": ["full"] * 4 + ["x"] * 4, "task": list("aabb") * 2,
...                     "seed": [0, 1] * 4, "success": [1, 1, 1, 1, 1, 1, 1, 0]})
>>> t = recommendation(eps, {"full": 0.0, "x": 0.6}, min_share=0.7)
>>> t[["reducer", "share_of_full", "meets", "dominated_by"]].values.tolist()
[['full', 1.0, False, ''], ['x', 0.75, True, '']]
>>> recommended(t)
'x'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lrlib.eval.intervals import paired

__all__ = [
    "MIN_SHARE",
    "MIN_REDUCTION",
    "recommendation",
    "dominated_by",
    "recommended",
]

MIN_SHARE = 0.97  # of full's success (issue 33)
MIN_REDUCTION = 0.55  # median token reduction per step (issue 33)


def recommendation(
    episodes: Any,
    reductions: Mapping[str, float],
    min_share: float = MIN_SHARE,
    min_reduction: float = MIN_REDUCTION,
    reference: str = "full",
) -> Any:
    """One row per reducer of ``episodes`` (``reducer``, ``task``, ``seed``, ``success``; the
    episodes of one half): success with its 95% interval over task types, the paired
    difference to ``reference`` on the episodes both played (interval: task types
    resampled), ``share_of_full`` (success / the reference's on those episodes),
    ``median_token_reduction`` (from ``reductions``), ``meets`` and ``dominated_by``."""
    import pandas as pd

    from lrlab.agent.live_report import success_table

    frame = episodes.assign(success=episodes["success"].astype(float),
                            key=episodes["task"] + "#" + episodes["seed"].astype(str))  # fmt: skip
    table = success_table(frame)
    rows = []
    for r in table["reducer"]:
        d = paired(frame, "success", r, reference, key="key", cluster="task")
        mine = frame[frame["reducer"] == r]
        ref = frame[(frame["reducer"] == reference) & frame["key"].isin(mine["key"])]
        base = ref["success"].mean() if len(ref) else float("nan")
        got = mine[mine["key"].isin(ref["key"])]["success"].mean()
        rows.append({"reducer": r, "diff_to_full": d["estimate"], "diff_lo": d["lo"],
                     "diff_hi": d["hi"], "share_of_full": got / base if base else float("nan"),
                     "median_token_reduction": reductions.get(r, float("nan"))})  # fmt: skip
    out = table.merge(pd.DataFrame(rows), on="reducer")
    out["meets"] = (out["share_of_full"] >= min_share) & (
        out["median_token_reduction"] >= min_reduction
    )
    out["dominated_by"] = [dominated_by(out, i) for i in range(len(out))]
    return out


def dominated_by(table: Any, i: int) -> str:
    """The reducers whose success interval lies wholly above row ``i``'s at an equal or
    higher median token reduction (``;``-separated, empty when none)."""
    me = table.iloc[i]
    above = table[(table["success_lo"] > me["success_hi"])
                  & (table["median_token_reduction"] >= me["median_token_reduction"])]  # fmt: skip
    return ";".join(above["reducer"])


def recommended(table: Any) -> str | None:
    """The point to recommend: among those that meet the target and are not dominated, the
    highest reduction (ties: the higher success); None when no point meets it."""
    ok = table[table["meets"] & (table["dominated_by"] == "")]
    if not len(ok):
        return None
    return str(ok.sort_values(["median_token_reduction", "success"]).iloc[-1]["reducer"])
