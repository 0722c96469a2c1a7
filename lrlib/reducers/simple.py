"""Reference points: ``full`` (the whole tree), ``random`` (a seeded share of the lines)
and ``oracle`` (the next action's target lines and their ancestors).

``oracle`` reads the answer off the recorded step, so it is the upper bound of what the
target-coverage metric can reward at the smallest possible observation; it is not a
reducer an agent could use.

>>> s = Step(goal="g", tree="RootWebArea 'r'\\n\\t[1] form\\n\\t\\t[2] button 'A'", target_bids=("2",))
>>> Oracle().reduce(s).text
"RootWebArea\\n\\t[1] form\\n\\t\\t[2] button 'A'"
"""

from __future__ import annotations

import hashlib
import random

from lrlib.core.step import Step
from lrlib.reducers.base import Output, Reducer, lines_output
from lrlib.reducers.registry import register_reducer


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


def step_seed(seed: int, step: Step) -> int:
    """A seed that depends on ``seed`` and the step (its id, else its tree), stable
    across processes and Python versions (unlike ``hash``).

    >>> step_seed(0, Step(goal="g", tree="a", step_id="x")) == step_seed(0, Step(goal="h", tree="b", step_id="x"))
    True
    """
    key = step.step_id or step.tree
    return int.from_bytes(hashlib.sha256(f"{seed}\0{key}".encode()).digest()[:8], "big")


@register_reducer("random")
class RandomLines(Reducer):
    """Keep ``round(keep_ratio * n)`` lines drawn uniformly at random (seeded per step).

    >>> tree = "\\n".join(f"[{i}] link 'x{i}'" for i in range(10))
    >>> out = RandomLines(keep_ratio=0.3, seed=1, strategy="remove").select(Step(goal="g", tree=tree))
    >>> len(out.kept)
    3
    """

    name = "random"

    def __init__(
        self,
        keep_ratio: float = 0.3,
        seed: int = 0,
        strategy: str = "structure",
        markers: bool = False,
        **kwargs,
    ) -> None:
        if not 0.0 <= keep_ratio <= 1.0:
            raise ValueError(f"keep_ratio must be in [0, 1], got {keep_ratio}")
        self.keep_ratio, self.seed, self.strategy, self.markers = (
            keep_ratio,
            seed,
            strategy,
            markers,
        )
        super().__init__(
            keep_ratio=keep_ratio, seed=seed, strategy=strategy, markers=markers, **kwargs
        )

    def select(self, step: Step) -> Output:
        n = len(step.axtree)
        k = round(self.keep_ratio * n)
        lines = random.Random(step_seed(self.seed, step)).sample(range(1, n + 1), k)
        return lines_output(step.axtree, lines, self.strategy, self.markers)


@register_reducer("oracle")
class Oracle(Reducer):
    """The target lines of the recorded next action, with their ancestors as stubs
    (``strategy="structure"``: the paper's structure-preserving rendering). A step whose
    action names no element in the tree keeps nothing."""

    name = "oracle"

    def __init__(self, strategy: str = "structure", markers: bool = False, **kwargs) -> None:
        self.strategy, self.markers = strategy, markers
        super().__init__(strategy=strategy, markers=markers, **kwargs)

    def select(self, step: Step) -> Output:
        return lines_output(step.axtree, step.target_lines, self.strategy, self.markers)
