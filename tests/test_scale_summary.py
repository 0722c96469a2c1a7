"""The summary of a large evaluation from per-episode sums (lrlab.scale.episode_stats): the
same table, the same intervals, as from the whole frame, whichever way the rows arrive."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.scale.episode_stats import EpisodeStats
from lrlib.data import dataset
from lrlib.eval import intervals, metrics
from lrlib.eval.evaluation import evaluate
from lrlib.report.tables import MEASURES, interval_table

SPECS = ["full", "program", "bm25", "truncate"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return evaluate(SPECS, dataset.load_steps(split="validation"), progress=False)


def _shards(frame: pd.DataFrame, size: int) -> list[pd.DataFrame]:
    """Whole episodes, ``size`` steps or so per shard, reducer-major in each (as
    lrlab.scale.sharded yields them)."""
    episodes = list(dict.fromkeys(frame["episode"]))
    out, current = [], []
    for e in episodes:
        current.append(e)
        n = (frame["episode"].isin(current) & (frame["reducer"] == SPECS[0])).sum()
        if n >= size:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return [frame[frame["episode"].isin(part)] for part in out]


@pytest.mark.parametrize("size", [1, 16, 10_000])
def test_folded_shards_give_the_frames_intervals_and_summary(frame, size) -> None:
    stats = EpisodeStats()
    for part in _shards(frame, size):
        stats.add(part)
    assert len(stats) == len(frame)
    pd.testing.assert_frame_equal(
        intervals.summary(stats, by=["reducer"], measures=MEASURES),
        intervals.summary(frame, by=["reducer"], measures=MEASURES),
        check_exact=True,
    )
    pd.testing.assert_frame_equal(metrics.summarize(stats), metrics.summarize(frame))
    pd.testing.assert_frame_equal(interval_table(stats), interval_table(frame))
    # the shares are not trivially 0 or 1 on this data: the comparison can fail
    cov = intervals.summary(frame)["coverage"]
    assert ((cov > 0) & (cov < 1)).any()


def test_only_grouping_by_reducer(frame) -> None:
    stats = EpisodeStats()
    stats.add(frame)
    with pytest.raises(ValueError, match="by reducer only"):
        intervals.summary(stats, by=["reducer", "benchmark"])


@settings(max_examples=60, deadline=None)
@given(
    episodes=st.lists(
        st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=6),
        min_size=1, max_size=12,
    ),
    cut=st.integers(0, 12),
)  # fmt: skip
def test_any_split_of_the_rows_gives_the_same_intervals(episodes, cut) -> None:
    rows = [
        {"reducer": r, "episode": f"e{i}", "covered": v, "reduction": (j + 1) / (len(ep) + 2),
         "target_status": "ok" if v is not None else "none"}
        for r in ("a", "b") for i, ep in enumerate(episodes) for j, v in enumerate(ep)
    ]  # fmt: skip
    frame = pd.DataFrame(rows)
    stats = EpisodeStats()
    stats.add(frame.iloc[:cut])
    stats.add(frame.iloc[cut:])
    pd.testing.assert_frame_equal(
        intervals.summary(stats, n_boot=200), intervals.summary(frame, n_boot=200),
        check_exact=True,
    )  # fmt: skip
