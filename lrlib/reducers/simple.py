"""The reference point: ``full`` keeps the whole tree."""

from __future__ import annotations

from ..step import Step
from .base import Output, Reducer, register_reducer


@register_reducer("full")
class Full(Reducer):
    """No reduction: the whole tree, every line kept.

    >>> Full().reduce(Step(goal="g", tree="a\\nb")).reduction
    0.0
    """

    name = "full"

    def select(self, step: Step) -> Output:
        tree = step.axtree
        return Output(text=tree.text, kept=list(range(1, len(tree) + 1)))
