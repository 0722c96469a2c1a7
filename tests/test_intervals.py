"""Episode-bootstrap intervals: agree with a plain loop, cover the truth, are fast."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.eval import intervals


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
    w = np.random.default_rng(3).multinomial(12, np.full(12, 1 / 12), size=200)
    if stat == "mean":
        sums, counts = np.bincount(clusters, weights=values), np.bincount(clusters)
        fast = intervals.mean_statistic(sums, counts.astype(float))(w)
    else:
        fast = intervals.median_statistic(values, clusters)(w)
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


# ---- whole tables: summary, gap, paired_table, on real evaluations --------------------------


@pytest.fixture(scope="module")
def real_frame():
    """Three cheap reducers on the validation and test splits (real steps, real episodes)."""
    from lrlib.data import dataset as data
    from lrlib.eval.evaluation import evaluate

    steps = data.load_steps(split="validation") + data.load_steps(split="test")
    return evaluate(["full", "truncate:budget=1000", "oracle"], steps, progress=False)


def test_summary_matches_bootstrap_and_counts_episodes(real_frame):
    s = intervals.summary(real_frame, by=["reducer", "split"]).set_index(["reducer", "split"])
    b = intervals.bootstrap(real_frame, "covered", by=["reducer", "split"]).set_index(
        ["reducer", "split"]
    )
    for key in b.index:
        assert s.loc[key, "coverage"] == b.loc[key, "estimate"]
        assert (s.loc[key, "coverage_lo"], s.loc[key, "coverage_hi"]) == (
            b.loc[key, "lo"], b.loc[key, "hi"],
        )  # fmt: skip
    val = real_frame[(real_frame.reducer == "full") & (real_frame.split == "validation")]
    assert s.loc[("full", "validation"), "coverage_n"] == (val.target_status == "ok").sum()
    assert (
        s.loc[("full", "validation"), "coverage_episodes"]
        == val[val.target_status == "ok"].episode.nunique()
    )
    assert (
        s.loc[("full", "test"), "evidence_n"]
        == (
            real_frame[
                (real_frame.reducer == "full") & (real_frame.split == "test")
            ].evidence_status
            == "ok"
        ).sum()
    )
    # full keeps everything: coverage 1 with a degenerate interval; truncation is below it
    assert s.loc[("full", "test"), "coverage"] == 1.0 == s.loc[("full", "test"), "coverage_lo"]
    assert s.loc[("truncate:budget=1000", "validation"), "coverage_hi"] < 1.0


def test_gap_is_validation_minus_test_with_independent_sides(real_frame):
    g = intervals.gap(real_frame, "covered").set_index("reducer")
    t = real_frame[real_frame.reducer == "truncate:budget=1000"]
    ok = t[t.target_status == "ok"]
    by_split = ok.groupby("split")["covered"].mean()
    row = g.loc["truncate:budget=1000"]
    assert row["gap"] == pytest.approx(by_split["validation"] - by_split["test"])
    assert row["lo"] <= row["gap"] <= row["hi"]
    assert (row["n_a"], row["n_b"]) == (
        (ok.split == "validation").sum(), (ok.split == "test").sum(),
    )  # fmt: skip
    assert g.loc["full", "gap"] == 0.0


def test_paired_table_pairs_on_shared_steps(real_frame):
    val = real_frame[real_frame.split == "validation"]
    p = intervals.paired_table(val, "covered", "full").set_index("a")
    assert list(p.index) == ["truncate:budget=1000", "oracle"]
    ok = val[(val.reducer == "full") & (val.target_status == "ok")]
    assert p.loc["oracle", "n_steps"] == len(ok)
    trunc = val[(val.reducer == "truncate:budget=1000") & (val.target_status == "ok")]
    assert p.loc["truncate:budget=1000", "estimate"] == pytest.approx(trunc.covered.mean() - 1)
    assert p.loc["truncate:budget=1000", "hi"] < 0  # truncation loses targets: not noise
