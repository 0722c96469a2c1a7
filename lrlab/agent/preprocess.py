"""A reducer as an observation preprocessor for any BrowserGym or AgentLab agent.

``ObsPreprocessor(reducer)(obs, history)`` takes BrowserGym's observation dict (its
``axtree_txt`` if the agent already flattened the tree, else ``axtree_object`` flattened by
BrowserGym's own ``flatten_axtree_to_str``) and the agent's action history, and returns a
:class:`Preprocessed`: the reduced tree text, the full-tree number of each of its lines, and
an ``info`` dict for the agent's ``agent_info.extra_info`` (reducer name, parameters, kept
lines, token counts and lrlib's own latency, which BrowserGym does not time for an
``obs_preprocessor``). Nothing of BrowserGym is imported unless a tree must be flattened.

>>> pre = ObsPreprocessor("truncate", budget=8)
>>> out = pre({"goal": "Click Ok", "axtree_txt": "RootWebArea 'T'\\n\\t[15] button 'Ok'\\n\\t[17] button 'No'"}, [])
>>> out.info["reducer"], out.numbers == [1, 2, 3][: len(out.numbers)], out.info["latency_s"] >= 0
('truncate', True, True)

In an AgentLab agent (``pip install agentlab``; AgentLab is not a dependency of lrlib), wrap the
generic agent's preprocessor so the prompt sees the reduced tree::

    from agentlab.agents.generic_agent import GenericAgentArgs
    from agentlab.agents.generic_agent.generic_agent import GenericAgent
    from lrlab.agent.preprocess import ObsPreprocessor

    class ReducedGenericAgent(GenericAgent):
        reduce = ObsPreprocessor("learned")

        def obs_preprocessor(self, obs):
            obs = super().obs_preprocessor(obs)    # flattens axtree_txt, pruned_html...
            out = self.reduce(obs, self.actions)  # the actions taken so far
            obs["axtree_txt"] = out.text          # what the prompt will show
            obs["lrlib"] = out.info               # reducer, params, kept lines, latency
            return obs

    class ReducedGenericAgentArgs(GenericAgentArgs):
        def make_agent(self):
            return ReducedGenericAgent(self.chat_model_args, self.flags, self.max_retry)

(``benchmarks/check_agentlab_generic.py`` runs this very block with AgentLab 0.4.2: the agent
played MiniWoB's click-test with AgentLab's prompt, the reduced tree and SmolLM2 behind
AgentLab's vLLM chat model. On MiniWoB AgentLab also shows the HTML, ``flags.obs.use_html``,
which this does not reduce.)
``obs["lrlib"]`` is saved with every step. ``lrlib import-traces`` reads ``obs["axtree_txt"]``,
so runs recorded this way import the *reduced* trees; to score other reducers offline on the
same steps, keep the full tree there (``lrlib live`` does, with the policy's view in
``agent_info``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lrlib.core.step import Step
from lrlib.reducers.base import Reducer, get_reducer


@dataclass
class Preprocessed:
    """The reduced observation: text, full-tree line numbers of its lines, and the record."""

    text: str
    numbers: list[int]
    full_text: str
    info: dict[str, Any] = field(default_factory=dict)


def flatten(obs: Mapping[str, Any]) -> str:
    """The observation's tree as text: ``axtree_txt`` if present, else BrowserGym's flattening
    of ``axtree_object`` without ``InlineTextBox`` nodes (recent Chromium adds them; the
    recorded traces have none)."""
    text = obs.get("axtree_txt")
    if isinstance(text, str) and text:
        return text
    from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str

    roles = [*IGNORED_AXTREE_ROLES, "InlineTextBox"]
    return str(flatten_axtree_to_str(obs["axtree_object"], ignored_roles=roles))


def goal_text(obs: Mapping[str, Any]) -> str:
    """The goal: BrowserGym's ``goal`` string, or the text parts of ``goal_object``."""
    if isinstance(obs.get("goal"), str) and obs["goal"]:
        return str(obs["goal"])
    parts = obs.get("goal_object") or ()
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def line_numbers(text: str, kept: Sequence[int], stubs: Sequence[int], n_full: int) -> list[int]:
    """The full-tree number of each line of a reduced ``text``: its kept and stubbed lines in
    order when they account for every line, else ``1..n`` (the reducer rewrote the text).

    >>> line_numbers("a\\nc", [1, 3], [], 3)
    [1, 3]
    """
    n_text = len(text.split("\n")) if text else 0
    shown = sorted(set(kept) | set(stubs))
    if len(shown) == n_text and all(1 <= x <= n_full for x in shown):
        return shown
    return list(range(1, n_text + 1))


class ObsPreprocessor:
    """A reducer applied to BrowserGym observations (module doc); ``reducer`` is a name of
    :func:`lrlib.list_reducers` (with ``params``) or a :class:`Reducer`."""

    def __init__(self, reducer: str | Reducer = "full", **params: Any) -> None:
        self.reducer = reducer if isinstance(reducer, Reducer) else get_reducer(reducer, **params)

    def __call__(self, obs: Mapping[str, Any], history: Sequence[str] = ()) -> Preprocessed:
        """Reduce the observation ``obs`` after the actions ``history``."""
        start = time.perf_counter()
        full = flatten(obs)
        flattened = time.perf_counter()
        step = Step(goal=goal_text(obs), tree=full, history=tuple(str(a) for a in history))
        r = self.reducer.reduce(step)
        numbers = line_numbers(r.text, r.kept, r.stubs, len(step.axtree))
        end = time.perf_counter()
        info = {
            "reducer": self.reducer.name,
            "params": r.params,
            "kept": list(r.kept),
            "stubs": list(r.stubs),
            "n_lines": len(step.axtree),
            "tokens_before": r.tokens_before,
            "tokens_after": r.tokens_after,
            "failure": r.failure,
            "reducer_latency_s": r.latency_s,  # the reducer's select() alone
            "flatten_s": flattened - start,  # BrowserGym's flattening (0 if already flat)
            "latency_s": end - flattened,  # lrlib's whole share: parse, reduce, count, number
        }
        return Preprocessed(r.text, numbers, full, info)
