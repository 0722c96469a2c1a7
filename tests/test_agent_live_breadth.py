"""``lrlib live`` plays task types the scripted policy learnt in issue 33, in Debian's
chromium (offline: the ``miniwob`` package's pages on 127.0.0.1), one development seed each.

Skipped, with the reason, when chromium or the live extra is missing.
"""

from __future__ import annotations

import pandas as pd
from test_agent_live import pytestmark  # noqa: F401  (skipped without chromium or the extra)

from lrlib.cli import main

# a date input, an equation read from the page, the n-th text area, a spinner
TASKS = "enter-date,simple-algebra,copy-paste-2,use-spinner"


def test_new_task_types_succeed_on_the_full_observation(tmp_path):
    args = ["live", "--tasks", TASKS, "--seeds", "1", "--reducers", "full", "--jobs", "1",
            "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    episodes = pd.read_csv(tmp_path / "episodes.csv")
    assert sorted(episodes["task"]) == sorted(TASKS.split(","))
    assert episodes["success"].all(), episodes[["task", "err_msg"]].to_dict("records")
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("reducer")
    # the halves of the fixed task split are reported apart
    assert summary.loc["full", "n_tasks_tuning"] + summary.loc["full", "n_tasks_heldout"] == 4
    # token reduction per step, overall and per half: none for the full observation
    for col in ("median_token_reduction", "median_token_reduction_tuning"):
        assert summary.loc["full", col] == 0.0


def test_second_policy_against_the_first_policys_failure_sets(tmp_path):
    from lrlab.agent.cross_policy import cross_table

    first, second = tmp_path / "scripted", tmp_path / "greedy"
    tasks = "copy-paste-2,use-spinner"
    for policy, out in (("scripted", first), ("greedy", second)):
        args = ["live", "--tasks", tasks, "--seeds", "1", "--reducers", "full;bm25:top_k=1",
                "--jobs", "1", "--policy", policy, "--out", str(out)]  # fmt: skip
        assert main(args) == 0
    reducers = ["full", "bm25:top_k=1"]
    per_episode, table = cross_table(first, second, "greedy", reducers, tasks.split(","), [0])
    assert len(per_episode) == 4 and per_episode["covered"].notna().all()
    full = per_episode[per_episode["reducer"] == "full"]
    assert (full["covered"] == 1.0).all()  # the full tree keeps every set
    # greedy fills the first text field with the goal's quoted text: not the 2nd text area's
    assert not per_episode["success"].any()
    assert set(table["reducer"]) == {"full", "bm25:top_k=1", "all"}
    assert table.set_index("reducer").loc["all", "n_episodes"] == 4
