"""One recorded agent step: what a reducer gets as input.

>>> s = Step(goal="Open settings", tree="RootWebArea 'x'\\n\\t[5] button 'Settings'",
...          target_bids=("5",))
>>> s.target_lines
[2]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lrlib.core.axtree import AxTree, parse


@dataclass(frozen=True)
class Step:
    """Goal, action history and AxTree text of one step, plus what the agent did next.

    ``target_bids`` are the bids the recorded next action names (empty when it names none).
    ``episode``, ``benchmark`` and ``family`` (task family = task name) group steps for
    cross-validation and the episode bootstrap (:mod:`lrlab.tuning.crossval`, :mod:`lrlib.eval.intervals`);
    they stay ``""`` for steps built by hand.
    """

    goal: str
    tree: str
    history: tuple[str, ...] = ()
    target_bids: tuple[str, ...] = ()
    step_id: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    episode: str = ""
    benchmark: str = ""
    family: str = ""

    @cached_property
    def axtree(self) -> AxTree:
        """The parsed tree (parsed once, on first use)."""
        return parse(self.tree)

    @property
    def target_lines(self) -> list[int]:
        """1-based lines of the target bids that the tree contains."""
        found = (self.axtree.line_of(b) for b in self.target_bids)
        return sorted({n for n in found if n is not None})

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Step:
        """A step from a row of :func:`lrlib.load_observations` (a Series or a dict)."""
        keys = ("goal", "axtree_txt", "history", "action_bids", "step_id")
        goal, tree, history, bids, step_id = (row.get(k) for k in keys)
        meta = {k: row[k] for k in row.keys() if k not in keys}  # noqa: SIM118 (Series)
        return cls(
            goal=str(goal or ""),
            tree=str(tree or ""),
            history=tuple(history if history is not None else ()),
            target_bids=tuple(str(b) for b in (bids if bids is not None else ())),
            step_id=str(step_id or ""),
            meta=meta,
            episode=str(row.get("episode") or ""),
            benchmark=str(row.get("benchmark") or ""),
            family=str(row.get("family") or row.get("task") or ""),
        )
