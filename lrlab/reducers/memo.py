"""What a reducer computes from a step whatever its knobs, computed once per step.

A knob sweep reduces every step once per knob value, and ``lrlib evaluate`` runs every
reducer on a step before the next step (:func:`lrlib.eval.evaluation.evaluate`): features,
rankings, chunks and the guard's verdicts of the step at hand are read from here the second
time. Keys are the step's content (goal, tree, history) plus the function's other
arguments; the memo holds the last :data:`SIZE` keys of each function, so memory stays
bounded on any number of steps. Values are shared: callers must not modify them.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from lrlib.core.axtree import AxTree
from lrlib.core.step import Step

__all__ = ["SIZE", "clear", "per_step", "step_key"]

SIZE = 64  # keys kept per function: a few steps' worth of every value of a sweep

F = TypeVar("F", bound=Callable[..., Any])
_MEMOS: list[OrderedDict] = []  # every memo, for clear()


def step_key(step: Step | AxTree) -> tuple[str, ...]:
    """What a step's (or a parsed tree's) derived values depend on: its goal, tree, page URL
    (``meta["url"]``: the guard reads the page's own host from it) and history (a tree: its
    text).

    >>> step_key(Step(goal="g", tree="[1] link 'a'", history=("click('1')",)))
    ('g', "[1] link 'a'", '', "click('1')")
    """
    if isinstance(step, AxTree):
        return ("", step.text)
    url = str((step.meta or {}).get("url") or "")
    return (step.goal, step.tree, url, *step.history)


def per_step(fn: F, size: int = SIZE) -> F:
    """``fn(step, *args)`` memoised on :func:`step_key` and ``args``.

    >>> calls = []
    >>> @per_step
    ... def n_lines(step):
    ...     calls.append(1)
    ...     return len(step.axtree)
    >>> s = Step(goal="g", tree="[1] link 'a'\\n[2] link 'b'")
    >>> n_lines(s), n_lines(Step(goal="g", tree=s.tree)), len(calls)
    (2, 2, 1)
    """
    memo: OrderedDict[tuple, Any] = OrderedDict()
    lock = threading.Lock()
    _MEMOS.append(memo)

    @functools.wraps(fn)
    def wrapper(step: Any, *args: Any) -> Any:
        key = (step_key(step), args)
        with lock:
            if key in memo:
                memo.move_to_end(key)
                return memo[key]
        value = fn(step, *args)
        for array in value if isinstance(value, tuple) else (value,):
            if isinstance(array, np.ndarray):
                array.setflags(write=False)  # shared: a caller writing into it fails loudly
        with lock:
            memo[key] = value
            while len(memo) > size:
                memo.popitem(last=False)  # the least recently used
        return value

    wrapper.cache_clear = memo.clear  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def clear() -> None:
    """Empty every memo: a benchmark timing one reducer on one step again and again (or a
    reducer after another that shares its work) measures the work, not the memo. Latencies
    in an evaluation are measured with the memo, as users run it.

    >>> clear()
    """
    for memo in _MEMOS:
        memo.clear()
