"""Metrics against values computed by hand on a small example."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lrlib.metrics import coverage, covers, reduction, step_metrics, summarize, target_status
from lrlib.reducers import get_reducer
from lrlib.step import Step
from lrlib.tokens import count_tokens

TREE = "RootWebArea 'Shop'\n\t[1] link 'Home'\n\t[2] button 'Buy'\n\tStaticText 'Price'"
# characters: 18 + 1 + 16 + 1 + 17 + 1 + 19 = 73


def test_reduction_by_hand():
    assert reduction(20, 8) == pytest.approx(0.6)
    assert reduction(20, 20) == 0.0 and reduction(20, 0) == 1.0 and reduction(0, 0) == 0.0


def test_step_metrics_by_hand():
    step = Step(goal="Buy", tree=TREE, target_bids=("2",))
    text = "RootWebArea 'Shop'\n\t[2] button 'Buy'"  # 18 + 1 + 17 = 36 characters
    m = step_metrics(step, text, kept=[1, 3], tokens_before=20, tokens_after=8)
    assert m["reduction"] == pytest.approx(0.6)
    assert (m["chars_before"], m["chars_after"]) == (73, 36)
    assert m["reduction_chars"] == pytest.approx(1 - 36 / 73)
    assert (m["lines_before"], m["lines_after"], m["reduction_lines"]) == (4, 2, 0.5)
    assert (m["n_kept"], m["n_stubs"], m["target_status"], m["n_targets"]) == (2, 0, "ok", 1)
    assert m["covered"] is True and m["covered_visible"] is True


def test_stubs_show_the_bid_but_do_not_cover():
    step = Step(goal="g", tree=TREE, target_bids=("1",))
    m = step_metrics(
        step, "RootWebArea\n\t[1] link", kept=[], stubs=[2], tokens_before=1, tokens_after=1
    )
    assert m["covered"] is False and m["covered_visible"] is True


def test_statuses_and_exclusion():
    assert target_status(Step(goal="g", tree=TREE)) == "none"
    assert target_status(Step(goal="g", tree=TREE, target_bids=("1", "2"))) == "ok"
    assert target_status(Step(goal="g", tree=TREE, target_bids=("1", "99"))) == "missing"
    assert covers(Step(goal="g", tree=TREE, target_bids=("1", "99")), kept=[1, 2, 3, 4]) is None
    # every target of a multi-bid action (drag_and_drop) must survive
    both = Step(goal="g", tree=TREE, target_bids=("1", "2"))
    assert covers(both, [2]) is False and covers(both, [2, 3]) is True


def _frame():
    # reducer a: 4 ok steps (3 covered), 1 none, 1 missing; reducer b: 2 ok (both missed)
    return pd.DataFrame(
        {
            "reducer": ["a"] * 6 + ["b"] * 2,
            "target_status": ["ok", "ok", "ok", "ok", "none", "missing", "ok", "ok"],
            "covered": [True, True, False, True, None, None, False, False],
            "covered_visible": [True, True, True, True, None, None, False, True],
            "episode_success": [True, False, True, True, True, False, True, None],
            "reduction": [0.1, 0.2, 0.3, 0.4, 0.5, 0.9, 0.0, 1.0],
            "reduction_chars": [0.0] * 8,
            "reduction_lines": [0.0] * 8,
            "latency_s": [0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.010, 0.020],
        }
    )


def test_coverage_by_hand():
    f = _frame()
    a = f[f.reducer == "a"]
    assert coverage(a) == {"coverage": 0.75, "n": 4, "n_none": 1, "n_missing": 1}
    # successful episodes: ok steps 1, 3, 4 (covered, missed, covered)
    assert coverage(a, successful_only=True)["coverage"] == pytest.approx(2 / 3)
    assert coverage(a, "covered_visible")["coverage"] == 1.0


def test_summarize_by_hand():
    s = summarize(_frame()).set_index("reducer")
    a, b = s.loc["a"], s.loc["b"]
    assert a["n_steps"] == 6 and a["n_target"] == 4 and a["n_target_success"] == 3
    assert a["median_reduction"] == pytest.approx(0.35)  # median of .1 .2 .3 .4 .5 .9
    assert a["mean_reduction"] == pytest.approx(2.4 / 6)
    assert a["coverage"] == 0.75 and a["coverage_success"] == pytest.approx(2 / 3)
    assert (a["n_none"], a["n_missing"]) == (1, 1)
    assert a["median_latency_ms"] == pytest.approx(3.5)
    assert a["p95_latency_ms"] == pytest.approx(5.75)  # linear interpolation of 6 values
    assert b["coverage"] == 0.0 and b["coverage_visible"] == 0.5
    assert b["coverage_success"] == 0.0 and b["n_target_success"] == 1


def test_no_target_steps_give_nan_not_zero():
    f = _frame()
    only_none = f[f.target_status == "none"]
    assert math.isnan(coverage(only_none)["coverage"])


@given(st.integers(1, 10**6), st.integers(0, 10**6))
def test_reduction_is_at_most_one(before, after):
    r = reduction(before, after)
    assert r <= 1.0 and (r >= 0) == (after <= before)


def test_a_reducer_result_measures_consistently(real_trees):
    t = real_trees["webarena_magento"]
    step = Step(goal=t["goal"], tree=t["tree"], target_bids=())
    r = get_reducer("truncate", budget=500).reduce(step)
    m = step_metrics(step, r.text, r.kept, r.stubs, r.tokens_before, r.tokens_after)
    assert m["reduction"] == pytest.approx(r.reduction)
    assert m["tokens_after"] == count_tokens(r.text) <= 500
    assert m["lines_after"] == len(r.kept) and m["covered"] is None
