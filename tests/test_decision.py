"""Decision evidence, decision-state features, decision labels and offline replay (issue 33),
on the shipped MiniWoB steps (real BrowserGym trees, actions verified by the task's reward)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.agent.replay import replay_episodes, replay_steps, replay_table
from lrlab.agent.scripted import ScriptedPolicy
from lrlab.reducers.features import DECISION, DEMOTE_ONLY, FEATURES, line_features
from lrlab.tuning.learned_fit import fit_model, labels
from lrlib.data import dataset as data
from lrlib.data.evidence import decision_covered, decision_groups, typed_groups
from lrlib.eval.metrics import covers_evidence

OOD = REPO / "data" / "miniwob_ood.jsonl.gz"


@functools.cache
def _steps() -> tuple:
    return tuple(data.load_steps(path=OOD))


def first(task: str, step: int = 0):
    return next(s for s in _steps() if s.step_id == f"miniwob.{task}_0/{step}")


def named_lines(s, role: str) -> list[int]:
    return [n for n, r in enumerate(s.axtree.roles, 1) if r == role]


def test_decision_groups_hold_what_the_policy_checks():
    # every checkbox the goal names is a group of its own line (a state, or the target)
    for s in [x for x in _steps() if x.family == "miniwob.click-checkboxes"]:
        groups = decision_groups(s.axtree, s.meta["action"], s.goal)
        own = {g[0] for kind, g in groups if kind in ("state", "target")}
        boxes = named_lines(s, "checkbox")
        named = {n for n in boxes if f" {s.axtree.texts[n - 1].split(chr(39))[1]}" in s.goal}
        assert named and own & set(boxes) == named, s.step_id
    # both fields of a password pair, while the first is filled
    s = first("enter-password")
    kinds = decision_groups(s.axtree, s.meta["action"], s.goal)
    fields = {g[0] for kind, g in kinds if kind in ("target", "field")}
    assert fields == set(named_lines(s, "textbox"))
    # the first definition stays what it was: a prefix of the decision groups
    old = typed_groups(s.axtree, s.meta["action"], s.goal)
    assert kinds[: len(old)] == old and len(kinds) > len(old)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.floats(0.1, 0.9))
def test_the_decision_reading_is_never_above_the_first(seed, share):
    """The widened definition adds groups: whatever is kept, covering it implies covering
    the first definition."""
    steps = _steps()
    rng = np.random.default_rng(seed)
    s = steps[seed % len(steps)]
    n = len(s.axtree)
    kept = [k for k in range(1, n + 1) if rng.random() < share]
    d, e = decision_covered(s, kept), covers_evidence(s, kept)
    assert (d is None) == (e is None)
    assert not d or e


def test_decision_state_features_on_real_trees():
    s = first("enter-password")
    X = line_features(s)
    pair = X[:, FEATURES.index("pair_field")]
    assert sorted(np.flatnonzero(pair) + 1) == named_lines(s, "textbox")
    s = next(
        x for x in _steps() if x.family == "miniwob.click-checkboxes" and "checked='true'" in x.tree
    )
    X = line_features(s)
    ticked = [n for n in named_lines(s, "checkbox") if "checked='true'" in s.axtree.texts[n - 1]]
    assert sorted(np.flatnonzero(X[:, FEATURES.index("chosen")]) + 1) == ticked


def test_decision_features_may_raise_a_score():
    """Unlike the demote-only state, the decision features keep a positive weight when the
    labels call for one."""
    assert not set(DECISION) & set(DEMOTE_ONLY)
    X = np.vstack([line_features(s) for s in _steps()[:60]])
    k = FEATURES.index("goal_choice")
    y = (X[:, k] > 0).astype(int)
    y[::37] = 1
    assert fit_model(X, y).coef[k] > 0


def test_labels_take_decision_groups_and_failure_sets():
    s = first("click-checkboxes")
    y = labels(s, "decision", mfs=[1])
    groups = decision_groups(s.axtree, s.meta["action"], s.goal)
    assert all(y[n - 1] for _, g in groups for n in g) and y[0] == 1
    assert labels(s).sum() == len(s.target_lines)


def test_replay_full_always_replays_and_a_stub_page_does_not():
    steps = [x for x in _steps() if x.family in ("miniwob.click-checkboxes", "miniwob.login-user")]
    rows = replay_steps(steps, ["full", "truncate:budget=20"], ScriptedPolicy())
    eps = replay_episodes(rows)
    table = replay_table(eps).set_index("reducer")
    assert table.loc["full", "replay"] == 1.0 and table.loc["full", "n_episodes"] >= 6
    assert table.loc["truncate:budget=20", "replay"] < 0.5
    # token reduction: none for full, most of the page for a 20-token prefix
    assert table.loc["full", "median_token_reduction"] == 0.0
    assert table.loc["truncate:budget=20", "median_token_reduction"] > 0.3
    # bench_replay --pick: the best replay at >= the reduction asked, or why none
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_replay import pick

    assert pick(eps, 0.0).startswith("picked full: replay 100.0%")
    assert pick(eps, 0.3).startswith("picked truncate:budget=20")
    assert pick(eps[eps["reducer"] == "full"], 0.3).startswith("no spec reaches 30%")


def test_a_model_of_the_first_features_scores_as_before(tmp_path):
    """A weights file trained before the decision columns were appended loads with weight
    0 on them: its scores are those of its own columns; a file of other features is refused."""
    import json

    from lrlab.reducers.learned import MODEL_FILE, LineModel, load_model

    record = json.loads(MODEL_FILE.read_text())
    k = len(FEATURES) - len(DECISION)
    for key in ("mean", "scale", "coef"):
        record["model"][key] = record["model"][key][:k]
    record["model"]["features"] = list(FEATURES[:k])
    short = tmp_path / "short.json"
    short.write_text(json.dumps(record))
    model, _ = load_model(short)
    s = first("enter-password")
    X = line_features(s)
    own = LineModel(FEATURES[:k], model.mean[:k], model.scale[:k], model.coef[:k], model.intercept)
    assert np.allclose(model.predict(X), own.predict(X[:, :k]))
    record["model"]["features"] = ["x", *FEATURES[1:k]]
    short.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="retrain"):
        load_model(short)
