"""The ``exp_args.pkl`` of an ``lrlib live`` episode: what BrowserGym's result loader
(``browsergym.experiments.loop.yield_all_exp_results``), and through it AgentLab's
``load_result_df`` and AgentXray, look for to find an experiment folder.

It is BrowserGym's own :class:`ExpArgs` with the task as :class:`EnvArgs` and the agent as
:class:`LiveAgentArgs`, a record of the policy and the reducer (it cannot be re-run by
BrowserGym's loop: ``lrlib live`` plays the episode). Unpickling it needs lrlib and
BrowserGym installed, as every AgentLab result needs its agent's package.

>>> args = exp_args("click-test", 3, max_steps=8, policy="scripted", policy_model="scripted",
...                 reducer="bm25:top_k=2", reducer_params={"top_k": 2})
>>> args.env_args.task_name, args.agent_args.agent_name, args.exp_name
('miniwob.click-test', 'lrlib-scripted-bm25:top_k=2', 'lrlib-scripted-bm25:top_k=2_on_miniwob.click-test_3')
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browsergym.experiments.loop import AbstractAgentArgs, EnvArgs, ExpArgs


@dataclass
class LiveAgentArgs(AbstractAgentArgs):
    """The agent of an ``lrlib live`` episode: a policy acting on a reducer's observation."""

    agent_name: str = "lrlib-live"
    policy: str = "scripted"
    policy_model: str | None = None
    reducer: str = "full"
    reducer_params: dict[str, Any] = field(default_factory=dict)

    def make_agent(self) -> Any:
        """Not runnable by BrowserGym's loop: ``lrlib live`` plays these episodes."""
        raise NotImplementedError("a record of an lrlib live episode; rerun it with `lrlib live`")


def exp_args(
    task: str,
    seed: int,
    *,
    max_steps: int,
    policy: str,
    policy_model: str | None,
    reducer: str,
    reducer_params: dict[str, Any],
    exp_dir: Path | None = None,
    benchmark: str = "miniwob",
) -> ExpArgs:
    """BrowserGym's ``ExpArgs`` describing one live episode (see the module example)."""
    agent = LiveAgentArgs(
        agent_name=f"lrlib-{policy}-{reducer}",
        policy=policy,
        policy_model=policy_model,
        reducer=reducer,
        reducer_params=dict(reducer_params),
    )
    env = EnvArgs(task_name=f"{benchmark}.{task}", task_seed=seed, max_steps=max_steps)
    args = ExpArgs(agent_args=agent, env_args=env, exp_dir=exp_dir)
    args.exp_name = f"{agent.agent_name}_on_{env.task_name}_{seed}"
    return args


def write_exp_args(folder: Path, args: ExpArgs) -> Path:
    """Pickle ``args`` to ``folder/exp_args.pkl`` (whole or not at all)."""
    path = Path(folder) / "exp_args.pkl"
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(args, f)
    os.replace(tmp, path)
    return path
