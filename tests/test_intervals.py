"""Episode-bootstrap intervals: agree with a plain loop, cover the truth, are fast."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib import intervals


def _loop_replicates(values, clusters, stat, w):
    """The same statistic computed the slow way: expand each resampled episode."""
    uniq = pd.unique(pd.Series(clusters))
    out = []
    for row in w:
        vals = np.concatenate(
            [np.repeat(values[clusters == c], k) for c, k in zip(uniq, row, strict=True) if k]
        )
        out.append(vals.mean() if stat == "mean" else np.sort(vals)[(len(vals) - 1) // 2])
    return np.array(out)


@pytest.mark.parametrize("stat", ["mean", "median"])
def test_vectorised_replicates_match_a_loop(stat):
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(12), rng.integers(1, 9, size=12))
    values = rng.random(clusters.size).round(2)
    w = intervals._weights(12, 200, seed=3)
    fast = intervals._replicates(values, clusters, stat, w)
    slow = _loop_replicates(values, clusters, stat, w)
    # the weighted median takes the lower middle value, as the loop does
    np.testing.assert_allclose(fast, slow)


def test_interval_widens_when_steps_cluster():
    """Same 60 values: as 60 independent episodes, or as 6 episodes of identical steps."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, size=6).astype(float)
    clustered = np.repeat(base, 10)
    wide = intervals.interval(clustered, np.repeat(np.arange(6), 10))
    narrow = intervals.interval(clustered, np.arange(60))
    assert wide["hi"] - wide["lo"] > narrow["hi"] - narrow["lo"]
    assert (wide["n_steps"], wide["n_episodes"]) == (60, 6)


def test_coverage_of_the_true_mean_is_near_nominal():
    rng = np.random.default_rng(7)
    hits = 0
    for trial in range(200):
        clusters = np.repeat(np.arange(30), 4)
        effects = rng.normal(0, 1, 30)[clusters]
        values = 0.5 + effects + rng.normal(0, 1, clusters.size)
        r = intervals.interval(values, clusters, n_boot=400, seed=trial)
        hits += r["lo"] <= 0.5 <= r["hi"]
    assert 0.88 <= hits / 200 <= 0.99


def test_paired_difference_uses_the_same_steps():
    df = pd.DataFrame(
        {
            "reducer": ["a"] * 4 + ["b"] * 3,
            "step_id": [1, 2, 3, 4, 1, 2, 3],
            "episode": [1, 1, 2, 2, 1, 1, 2],
            "covered": [1, 1, 1, 1, 0, 1, 1],
        }
    )
    d = intervals.paired(df, "covered", "a", "b")
    assert d["n_steps"] == 3 and d["estimate"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="valid: a, b"):
        intervals.paired(df, "covered", "a", "zzz")


def test_bad_statistic_and_column_name_the_choices():
    df = pd.DataFrame({"reducer": ["a"], "episode": [1], "x": [1.0]})
    with pytest.raises(ValueError, match="mean, median"):
        intervals.bootstrap(df, "x", stat="mode")
    with pytest.raises(KeyError, match="the frame has"):
        intervals.bootstrap(df, "nope")


def test_degenerate_inputs():
    assert np.isnan(intervals.interval([], [])["estimate"])
    one = intervals.interval([1.0, 0.0], ["e", "e"])
    assert one["estimate"] == 0.5 and np.isnan(one["lo"])
    nan_dropped = intervals.interval([1.0, np.nan, 0.0], ["a", "b", "c"])
    assert nan_dropped["n_steps"] == 2 and nan_dropped["n_episodes"] == 2


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.floats(0, 1, allow_nan=False)), min_size=1, max_size=60
    ),
    st.sampled_from(intervals.STATISTICS),
)
def test_interval_brackets_the_estimate_range(pairs, stat):
    clusters = np.array([c for c, _ in pairs])
    values = np.array([v for _, v in pairs])
    r = intervals.interval(values, clusters, stat, n_boot=200)
    assert values.min() - 1e-12 <= r["estimate"] <= values.max() + 1e-12
    if r["n_episodes"] >= 2:
        assert values.min() - 1e-12 <= r["lo"] <= r["hi"] <= values.max() + 1e-12


def test_a_whole_results_table_is_fast():
    rng = np.random.default_rng(0)
    n = 446
    frame = pd.DataFrame(
        {
            "reducer": np.repeat([f"r{i}" for i in range(12)], n),
            "episode": np.tile(rng.integers(0, 89, n), 12),
            "covered": rng.integers(0, 2, 12 * n).astype(float),
            "reduction": rng.random(12 * n),
        }
    )
    t = time.perf_counter()
    intervals.bootstrap(frame, "covered")
    intervals.bootstrap(frame, "reduction", stat="median")
    assert time.perf_counter() - t < 10  # a loose ceiling; the benchmark reports the figure
