"""Evaluation sharded by episode (lrlab.scale.sharded): the same rows as a serial run, read
and written episode by episode, on one machine's cores or a Ray cluster."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from lrlab.scale import episodes, sharded
from lrlib.data import dataset
from lrlib.eval.evaluation import evaluate
from lrlib.report.tables import interval_table

SPECS = ["full", "program", "learned", "bm25"]
TIMING = ["latency_s", "cold_latency_s", "created"]  # measured per run, never equal


@pytest.fixture(scope="module")
def steps() -> list:
    return dataset.load_steps(split="validation")


@pytest.fixture(scope="module")
def serial(steps: list) -> pd.DataFrame:
    return evaluate(SPECS, steps, progress=False)


def _episodes(steps: list) -> list[list]:
    out: list[list] = []
    for s in steps:
        if out and out[-1][-1].episode == s.episode:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        a.drop(columns=TIMING).reset_index(drop=True),
        b.drop(columns=TIMING).reset_index(drop=True),
    )


def test_processes_give_the_serial_rows(steps: list, serial: pd.DataFrame) -> None:
    frames = list(
        sharded.evaluate_shards(SPECS, _episodes(steps), jobs=2, progress=False, shard_steps=16)
    )
    assert len(frames) > 2
    got = pd.concat(frames, ignore_index=True)
    # shards are reducer-major within themselves: compare row by row after a stable order
    key = ["reducer", "step_id"]
    _same(serial.sort_values(key, kind="stable"), got.sort_values(key, kind="stable"))
    assert got["created"].nunique() == 1  # one provenance for the whole run


def test_file_in_pieces_gives_the_summary_of_the_whole_frame(
    serial: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "rows.csv.gz"
    kept = sharded.evaluate_file(
        SPECS, dataset.default_path(), out, split="validation", jobs=1, progress=False
    )
    written = pd.read_csv(out)
    assert len(written) == len(serial) == len(kept)
    assert "params" in written.columns
    drop = [c for c in interval_table(serial).columns if "latency" in c]
    pd.testing.assert_frame_equal(
        interval_table(serial).drop(columns=drop), interval_table(kept).drop(columns=drop)
    )


def test_parquet_output(tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    kept = sharded.evaluate_file(
        ["full", "bm25"], dataset.default_path(), out, split="validation", limit=30, jobs=1,
        progress=False,
    )  # fmt: skip
    assert len(pd.read_parquet(out)) == len(kept) == 60


def test_episodes_are_pulled_as_workers_need_them(steps: list) -> None:
    """Bounded memory: when the first frame comes back, only a few shards were read.

    The source is read as workers finish shards (joblib dispatches on completion), so how
    many are read when the main thread gets the first frame depends on how long it waited:
    20 copies of the split and the learned scorer make the shards many and slow enough that
    a main thread starved for seconds on a loaded machine still sees a small share read."""
    pulled = []
    eps = _episodes(steps) * 20

    def source():
        for ep in eps:
            pulled.append(ep)
            yield ep

    frames = sharded.evaluate_shards(["learned"], source(), jobs=2, progress=False, shard_steps=4)
    next(frames)
    assert len(pulled) < len(eps) // 2
    frames.close()


def test_store_groups_contiguous_episodes(tmp_path: Path) -> None:
    rows = dataset.read_rows()
    p = tmp_path / "obs.parquet"
    dataset.write_row_batches([rows[:100], rows[100:]], p)
    eps = list(episodes.iter_episode_rows(p))
    assert [r for ep in eps for r in ep] == rows
    assert all(len({r["episode"] for r in ep}) == 1 for ep in eps)
    assert episodes.count_rows(p) == (len(rows), len(eps))
    assert dataset.load_steps(path=p)[5].step_id == rows[5]["step_id"]


def test_backend_errors() -> None:
    with pytest.raises(ValueError, match="valid: loky, serial, ray"):
        sharded.check_backend("threads")


def test_ray_cluster_gives_the_serial_rows(steps: list, serial: pd.DataFrame) -> None:
    ray = pytest.importorskip("ray", reason="ray not installed (pip install 'lrlib[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        frames = sharded.evaluate_shards(
            SPECS, _episodes(steps), jobs=2, backend="ray", progress=False, shard_steps=32
        )
        got = pd.concat(list(frames), ignore_index=True)
    finally:
        ray.shutdown()
    key = ["reducer", "step_id"]
    _same(serial.sort_values(key, kind="stable"), got.sort_values(key, kind="stable"))


def test_workers_are_released_when_the_evaluation_ends(steps: list) -> None:
    """Their memory is not held through the summary that follows."""
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()

    def workers() -> list:
        alive = []
        for p in me.children(recursive=True):
            try:  # one that has just ended (or an unreaped zombie) holds no memory
                if "LokyProcess" in " ".join(p.cmdline()):
                    alive.append(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass  # ZombieProcess is a NoSuchProcess
        return alive

    frames = list(sharded.evaluate_shards(["full"], _episodes(steps)[:8], jobs=2, progress=False,
                                          shard_steps=4))  # fmt: skip
    assert frames
    deadline = time.monotonic() + 10
    while workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers()
