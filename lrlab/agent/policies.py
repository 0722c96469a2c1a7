"""The policy registry: a name -> a :class:`~lrlab.agent.policy.Policy`.

>>> list_policies()
['greedy', 'llm', 'scripted']
>>> get_policy("scripted").name
'scripted'
>>> get_policy("nope")
Traceback (most recent call last):
...
KeyError: "unknown policy 'nope'; valid policies: greedy, llm, scripted"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lrlab.agent.greedy import GreedyPolicy
from lrlab.agent.policy import LLMPolicy, Policy
from lrlab.agent.scripted import ScriptedPolicy

POLICIES: dict[str, Callable[..., Policy]] = {
    "greedy": GreedyPolicy,
    "llm": LLMPolicy,
    "scripted": ScriptedPolicy,
}


def list_policies() -> list[str]:
    """The registered policy names."""
    return sorted(POLICIES)


def get_policy(name: str, **params: Any) -> Policy:
    """A policy by name (``params`` go to its constructor); an unknown name raises
    ``KeyError`` listing the valid ones."""
    if name not in POLICIES:
        raise KeyError(f"unknown policy {name!r}; valid policies: {', '.join(list_policies())}")
    return POLICIES[name](**params)
