"""Grouped cross-validation: folds never leak a group, cover every row once, name schemes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lrlab.tuning import crossval
from lrlib.core.step import Step
from lrlib.data import dataset as data


@pytest.fixture(scope="module")
def train_steps() -> list[Step]:
    return data.load_steps(split="train")


@given(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=60))
def test_group_folds_never_leak_and_cover_each_row_once(groups):
    out = crossval.group_folds(groups)
    assert len(out) == len(set(groups))
    seen = np.concatenate([te for _, te in out])
    assert sorted(seen.tolist()) == list(range(len(groups)))  # every row tested exactly once
    for tr, te in out:
        held = {groups[i] for i in te}
        assert len(held) == 1  # one group per fold
        assert not held & {groups[i] for i in tr}  # no leak
        assert len(tr) + len(te) == len(groups)


@given(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=60), st.integers(1, 5))
def test_group_kfold_never_splits_a_group(groups, k):
    out = crossval.group_kfold(groups, k)
    assert len(out) == min(k, len(set(groups)))
    seen = np.concatenate([te for _, te in out])
    assert sorted(seen.tolist()) == list(range(len(groups)))
    for tr, te in out:
        assert len(te) and not {groups[i] for i in te} & {groups[i] for i in tr}


def test_family_folds_on_real_train_steps(train_steps):
    folds = crossval.folds(train_steps, "family")
    families = {s.family for s in train_steps}
    assert {f.name for f in folds} == families and len(families) > 5
    assert all(s.family and s.episode and s.benchmark for s in train_steps)
    counts = np.zeros(len(train_steps), dtype=int)
    for f in folds:
        counts[f.test_idx] += 1
        assert {train_steps[i].family for i in f.test_idx} == {f.name}
        assert f.name not in {train_steps[i].family for i in f.train_idx}
        # no episode straddles a fold either (an episode has one family)
        assert not {train_steps[i].episode for i in f.test_idx} & {
            train_steps[i].episode for i in f.train_idx
        }
    assert (counts == 1).all()


def test_folds_work_on_the_dataframe_too():
    df = data.load_observations(split="validation")
    by_df = crossval.folds(df, "family")
    by_steps = crossval.folds(data.load_steps(split="validation"), "family")
    assert [f.name for f in by_df] == [f.name for f in by_steps]
    assert all((a.test_idx == b.test_idx).all() for a, b in zip(by_df, by_steps, strict=True))


def test_benchmark_fold_trains_on_workarena_tests_on_webarena(train_steps):
    (fold,) = crossval.folds(train_steps, "benchmark")
    assert {train_steps[i].benchmark for i in fold.train_idx} == {"workarena"}
    assert {train_steps[i].benchmark for i in fold.test_idx} == {"webarena"}
    assert len(fold.train_idx) + len(fold.test_idx) == len(train_steps)
    only_workarena = [s for s in train_steps if s.benchmark == "workarena"]
    with pytest.raises(ValueError, match="both workarena and webarena"):
        crossval.folds(only_workarena, "benchmark")


def test_unknown_scheme_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid: benchmark, family"):
        crossval.folds([], "random")
    with pytest.raises(ValueError, match="valid: benchmark, family"):
        crossval.cross_validate(len, lambda m, te: 0.0, [], scheme="episode")


def test_cross_validate_fits_on_train_only(train_steps):
    seen: list[set[str]] = []

    def fit(train):
        seen.append({s.family for s in train})
        return {s.step_id for s in train}

    def score(model, test):
        return {"leaked": sum(s.step_id in model for s in test), "targets": len(test)}

    cv = crossval.cross_validate(fit, score, train_steps, scheme="family")
    assert (cv["leaked"] == 0).all()
    assert list(cv.columns[:4]) == ["fold", "n_train", "n", "n_episodes"]
    assert cv["n"].sum() == len(train_steps) and (cv["n"] + cv["n_train"] == len(train_steps)).all()
    assert all(fold not in fams for fold, fams in zip(cv["fold"], seen, strict=True))
