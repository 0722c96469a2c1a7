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
