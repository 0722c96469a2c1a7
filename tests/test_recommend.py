"""lrlab.agent.recommend: the issue-33 rule on held-out live success (target met, dominance)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.agent.recommend import recommendation, recommended

TASKS = [f"t{i}" for i in range(6)]


def frame(outcomes: dict[str, list[int]]) -> pd.DataFrame:
    rows = [{"reducer": r, "task": TASKS[i // 2], "seed": i % 2, "success": bool(v)}
            for r, vals in outcomes.items() for i, v in enumerate(vals)]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_point_below_another_at_less_reduction_is_dominated_and_not_recommended():
    eps = frame({"full": [1] * 12, "good": [1] * 12, "bad": [0] * 12})
    t = recommendation(eps, {"full": 0.0, "good": 0.7, "bad": 0.6}).set_index("reducer")
    assert t.loc["bad", "dominated_by"] == "good" and not t.loc["bad", "meets"]
    assert t.loc["good", "meets"] and t.loc["good", "share_of_full"] == 1.0
    assert recommended(t.reset_index()) == "good"
    # more reduction protects a point from domination by a better but larger one
    t = recommendation(eps, {"full": 0.0, "good": 0.5, "bad": 0.6}).set_index("reducer")
    assert t.loc["bad", "dominated_by"] == "" and recommended(t.reset_index()) is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=12, max_size=12),
       st.floats(0.0, 1.0), st.floats(0.0, 1.0))  # fmt: skip
def test_the_rule_holds_on_any_outcomes(point, share, reduction):
    eps = frame({"full": [1] * 12, "x": point})
    t = recommendation(eps, {"full": 0.0, "x": reduction}, min_share=share).set_index("reducer")
    x = t.loc["x"]
    assert x["share_of_full"] == sum(point) / 12
    assert bool(x["meets"]) == (sum(point) / 12 >= share and reduction >= 0.55)
    assert "x" not in t.loc["x", "dominated_by"].split(";")  # never dominated by itself
    assert not t.loc["full", "meets"]  # no reduction: never the recommendation
    assert x["diff_lo"] <= x["diff_to_full"] <= x["diff_hi"]
