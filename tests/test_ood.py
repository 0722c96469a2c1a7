"""The out-of-domain MiniWoB check set (data/miniwob_ood.jsonl.gz) loads and is sound."""

from __future__ import annotations

import pytest

from lrlab.tuning import crossval
from lrlib import paths
from lrlib.core.step import Step
from lrlib.data import dataset as data
from lrlib.eval.evaluation import evaluate

OOD = paths.data_dir() / "miniwob_ood.jsonl.gz"


@pytest.fixture(scope="module")
def steps() -> list[Step]:
    return data.load_steps(path=OOD)


def test_loads_with_the_dataset_schema(steps):
    frame = data.load_observations(path=OOD)
    assert list(frame.columns[: len(data.COLUMNS)]) == data.COLUMNS
    assert len(frame) == len(steps) >= 150 and frame["step_id"].is_unique
    assert set(frame["benchmark"]) == {"miniwob"} and set(frame["split"]) == {"ood"}
    assert frame["episode_success"].all()  # only episodes the task's reward verified
    assert len(set(frame["family"])) >= 20


def test_every_step_has_a_goal_and_its_target_in_the_tree(steps):
    for s in steps:
        assert s.goal.strip(), s.step_id
        assert s.tree.startswith("RootWebArea "), s.step_id
        assert s.target_bids, s.step_id  # every oracle action names an element
        lines = s.axtree.bid_lines
        assert all(b in lines for b in s.target_bids), s.step_id
        assert s.target_lines == s.meta["target_lines"], s.step_id


def test_families_are_whole_and_episodes_are_task_and_seed(steps):
    for s in steps:
        assert s.family == s.meta["task"] and s.episode.startswith(s.family + "_"), s.step_id
        assert s.episode == f"{s.family}_{s.meta['seed']}"
    folds = crossval.folds(steps, "family")
    assert len(folds) == len({s.family for s in steps})
    for f in folds:  # a family's steps are all on the test side of its own fold, nowhere else
        assert {steps[i].family for i in f.test_idx} == {f.name}
        assert f.name not in {steps[i].family for i in f.train_idx}


def test_disjoint_from_the_development_data(steps):
    shipped = {r["episode"] for r in data.read_rows()}
    assert not shipped & {s.episode for s in steps}


def test_keep_all_covers_every_target_and_a_cut_reducer_does_not(steps):
    frame = evaluate(["full", "truncate:budget=5"], steps, progress=False)
    full = frame[frame.reducer == "full"]
    assert full["covered"].all() and (full["reduction"] == 0).all()
    assert not frame[frame.reducer == "truncate:budget=5"]["covered"].all()


def test_halves_are_fixed_whole_task_types(steps):
    half = {s.family: crossval.miniwob_half(s.family) for s in steps}
    assert set(half.values()) == {"train", "check"}
    counts = {h: sum(half[s.family] == h for s in steps) for h in ("train", "check")}
    assert counts == {"train": 240, "check": 185}  # a change of rule or data shows here
    assert sum(v == "check" for v in half.values()) == 19
    # the rule reads the name only: same answer for a step of another benchmark
    assert crossval.miniwob_half("miniwob.click-tab") == "check"
    assert crossval.miniwob_half("miniwob.click-button") == "train"
