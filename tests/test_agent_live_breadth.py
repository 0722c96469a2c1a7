"""``lrlib live`` plays task types the scripted policy learnt in issue 33, in Debian's
chromium (offline: the ``miniwob`` package's pages on 127.0.0.1), one development seed each.

Skipped, with the reason, when chromium or the live extra is missing.
"""

from __future__ import annotations

import pandas as pd
import pytest
from test_agent_live import pytestmark  # noqa: F401  (skipped without chromium or the extra)

from lrlib.cli import main

# a date input, an equation read from the page, the n-th text area, a spinner
TASKS = "enter-date,simple-algebra,copy-paste-2,use-spinner"
CROSS_TASKS = "copy-paste-2,use-spinner"  # the second policy's tasks
CROSS_REDUCERS = "full;bm25:top_k=1"


def _live(out, tasks: str, reducers: str, policy: str = "scripted") -> None:
    args = ["live", "--tasks", tasks, "--seeds", "1", "--reducers", reducers, "--jobs", "1",
            "--policy", policy, "--out", str(out)]  # fmt: skip
    assert main(args) == 0


@pytest.fixture(scope="session")
def scripted(tmp_path_factory):
    """The scripted policy's episodes, played once for both tests: the second policy's tasks
    with both reducers, then every task with ``full`` (its two ``full`` episodes resume),
    so the run's tables are those of the last plan, every task on ``full``."""
    out = tmp_path_factory.mktemp("scripted")
    _live(out, CROSS_TASKS, CROSS_REDUCERS)
    _live(out, TASKS, "full")
    return out


def test_new_task_types_succeed_on_the_full_observation(scripted):
    episodes = pd.read_csv(scripted / "episodes.csv")
    assert sorted(episodes["task"]) == sorted(TASKS.split(","))
    assert episodes["success"].all(), episodes[["task", "err_msg"]].to_dict("records")
    summary = pd.read_csv(scripted / "summary.csv").set_index("reducer")
    assert list(summary.index) == ["full"]
    # the halves of the fixed task split are reported apart
    assert summary.loc["full", "n_tasks_tuning"] + summary.loc["full", "n_tasks_heldout"] == 4
    # token reduction per step, overall and per half: none for the full observation
    for col in ("median_token_reduction", "median_token_reduction_tuning"):
        assert summary.loc["full", col] == 0.0


def test_second_policy_against_the_first_policys_failure_sets(scripted, tmp_path):
    from lrlab.agent.cross_policy import cross_table

    second = tmp_path / "greedy"
    _live(second, CROSS_TASKS, CROSS_REDUCERS, policy="greedy")
    reducers = CROSS_REDUCERS.split(";")
    per_episode, table = cross_table(scripted, second, "greedy", reducers,
                                     CROSS_TASKS.split(","), [0])  # fmt: skip
    assert len(per_episode) == 4 and per_episode["covered"].notna().all()
    full = per_episode[per_episode["reducer"] == "full"]
    assert (full["covered"] == 1.0).all()  # the full tree keeps every set
    # greedy fills the first text field with the goal's quoted text: not the 2nd text area's
    assert not per_episode["success"].any()
    assert set(table["reducer"]) == {"full", "bm25:top_k=1", "all"}
    assert table.set_index("reducer").loc["all", "n_episodes"] == 4
