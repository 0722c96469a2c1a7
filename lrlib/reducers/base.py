"""The one interface every reducer follows (the registry of names is :mod:`lrlib.reducers.registry`).

A reducer takes a :class:`~lrlib.core.step.Step` and returns a :class:`Reduction`: the kept
lines, the reduced text, token counts before and after, latency, and for model-based
reducers their usage and failures. Subclasses implement :meth:`Reducer.select`; the base
class times it and counts tokens (counting is not part of the latency).

>>> class KeepFirst(Reducer):
...     name = "keep-first"
...     def select(self, step):
...         return Output(text=step.axtree.texts[0], kept=[1])
>>> r = KeepFirst().reduce(Step(goal="g", tree="a\\nb"))
>>> r.kept, r.tokens_after <= r.tokens_before
([1], True)
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lrlib.core.axtree import AxTree
from lrlib.core.pruning import prune
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING, count_lines, count_tokens


@dataclass
class Output:
    """What :meth:`Reducer.select` returns."""

    text: str
    kept: list[int]  # 1-based lines kept verbatim
    stubs: list[int] = field(default_factory=list)  # lines shown as "[bid] role"
    usage: dict[str, Any] | None = None
    failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reduction:
    """The result of reducing one step."""

    reducer: str
    step_id: str
    text: str
    kept: list[int]
    tokens_before: int
    tokens_after: int
    latency_s: float
    params: dict[str, Any]
    stubs: list[int] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reduction(self) -> float:
        """``1 - |reduced| / |original|`` in tokens (the paper's measure)."""
        return 1.0 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0


class Reducer(ABC):
    """Base class: subclasses set ``name`` and implement :meth:`select`."""

    name: ClassVar[str] = "reducer"

    def __init__(self, encoding: str = DEFAULT_ENCODING, **params: Any) -> None:
        self.encoding = encoding
        self._params = params

    @property
    def params(self) -> dict[str, Any]:
        """The reducer's parameters (recorded with every result)."""
        return dict(self._params)

    @abstractmethod
    def select(self, step: Step) -> Output:
        """Reduce ``step``; return the kept text and lines."""

    def reduce(self, step: Step) -> Reduction:
        """Run :meth:`select`, timed, and count tokens before and after."""
        _ = step.axtree  # parse before the clock starts: shared work, not the latency
        start = time.perf_counter()
        out = self.select(step)
        return self._reduction(step, out, time.perf_counter() - start)

    def _reduction(self, step: Step, out: Output, latency: float) -> Reduction:
        """The :class:`Reduction` of ``out``: token counts before and after, parameters."""
        before = count_lines(step.axtree.texts, self.encoding)
        after = count_tokens(out.text, self.encoding)
        return Reduction(
            self.name,
            step.step_id,
            out.text,
            out.kept,
            before,
            after,
            latency,
            self.params,
            out.stubs,
            out.usage,
            out.failure,
            out.extra,
        )

    def cached_steps(self, steps: Sequence[Step]) -> list[bool]:
        """Which ``steps`` this reducer can reduce offline, without computing anything a
        model would (answers, vectors): all of them for plain reducers; reducers that read a
        cache override it.

        >>> Reducer.cached_steps(None, [Step(goal="g", tree="a")])
        [True]
        """
        return [True] * len(steps)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"


def lines_output(
    tree: AxTree, lines: Iterable[int], strategy: str = "structure", markers: bool = False, **extra
) -> Output:
    """An :class:`Output` for a set of 1-based lines, pruned with ``strategy``.

    >>> from lrlib.core.axtree import parse
    >>> lines_output(parse("a\\n\\t[1] b\\n\\t[2] c"), [3], "structure").text
    'a\\n\\t[2] c'
    """
    pruned = prune(tree, sorted(set(lines)), strategy, markers=markers)
    return Output(text=pruned.text, kept=pruned.kept, stubs=pruned.stubs, extra=extra)
