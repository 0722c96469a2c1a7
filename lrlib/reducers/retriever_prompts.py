"""What LineRetriever sends: the messages for a step or one window of it, the bounded JSON
schema of structured answers, and the window plan for trees longer than the context.

A mixin of :class:`~lrlib.reducers.lineretriever.LineRetriever` (kept apart so each file
reads in one sitting); it uses the retriever's ``variant``, ``options``, ``client``,
``sanitize``, ``max_ranges``, ``params`` and ``encoding``.

>>> from lrlib.core.step import Step
>>> from lrlib.reducers.lineretriever import LineRetriever
>>> r = LineRetriever(answer="json", model="m", base_url="http://h/v1", cache=False)
>>> tree = "RootWebArea 'Shop'\\n\\t[3] link 'Home'"
>>> r.messages(Step(goal="Go home", tree=tree))[-1]["role"]
'user'
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens
from lrlib.core.views import get_view, render
from lrlib.core.windows import plan_windows, window_lines
from lrlib.llm.client import ContextLengthError, Request

THINK_CHARS = 600  # bounded schema: the longest "think" string


class RetrieverPrompts:
    """Prompt building and window planning of the LLM retriever (a mixin)."""

    def shown(self, step: Step) -> Step:
        """The step as the retriever sees it: ``step`` itself, or (``sanitize=True``) a copy
        with its tree neutralised (memoised, so the prompt is built once)."""
        if not self.sanitize:
            return step
        hit = self._seen.get(id(step))
        if hit is not None and hit[0] is step:
            return hit[1]
        from lrlib.core.sanitize import sanitize_step

        clean = sanitize_step(step)
        self._seen[id(step)] = (step, clean)
        while len(self._seen) > 64:
            self._seen.pop(next(iter(self._seen)))
        return clean

    def _whole(self, step: Step) -> list[dict[str, str]]:
        """The messages with the whole tree (built once per step: plan and ask share them)."""
        step = self.shown(step)
        hit = self._built.get(id(step))
        if hit is not None and hit[0] is step:
            return hit[1]
        msgs = self.variant.build(step.goal, step.axtree, step.history, self.options)
        self._built[id(step)] = (step, msgs)  # holds the step, so its id stays unique
        while len(self._built) > 64:
            self._built.pop(next(iter(self._built)))
        return msgs

    def messages(self, step: Step, window: tuple[int, int] | None = None) -> list[dict[str, str]]:
        """The chat messages for ``step``, or for one window of its lines."""
        step = self.shown(step)
        tree = step.axtree
        msgs = [dict(m) for m in self._whole(step)]
        if window is None or window == (1, len(tree)):
            return msgs
        whole = render(tree, self.options.view)
        header = f"accessibility tree, {len(tree)} numbered lines"
        user = msgs[-1]["content"]
        if whole not in user or header not in user:
            raise RuntimeError("the prompt layout changed: cannot cut it into windows")
        part = f"accessibility tree, lines {window[0]}-{window[1]} of {len(tree)} (one part)"
        user = user.replace(header, part, 1).replace(
            whole, window_lines(tree, self.options.view, window), 1
        )
        return [*msgs[:-1], {"role": msgs[-1]["role"], "content": user}]

    def request(self, step: Step, window: tuple[int, int] | None = None) -> Request:
        """The :class:`~lrlib.llm.client.Request` for ``step`` (or one window of it)."""
        return self.client.request(
            self.messages(step, window),
            response_format=self.response_format(len(step.axtree)),
            prompt_name=self.variant.name,
            prompt_hash=self.params["prompt_hash"],
        )

    def response_format(self, n_lines: int) -> dict[str, Any] | None:
        """The prompt's JSON schema (structured mode; None for tags). With ``max_ranges``,
        bounded: at most that many ranges, line numbers within ``1..n_lines``, reasoning at
        most :data:`THINK_CHARS` characters, so that a constrained decoder (llama.cpp) must
        close the answer.

        >>> from lrlib.reducers.lineretriever import LineRetriever
        >>> r = LineRetriever(answer="json", max_ranges=4, model="m", base_url="http://h/v1")
        >>> r.response_format(50)["json_schema"]["schema"]["properties"]["ranges"]["maxItems"]
        4
        """
        fmt = self.variant.response_format(self.options)
        if fmt is None or self.max_ranges is None:
            return fmt
        fmt = copy.deepcopy(fmt)
        try:
            props = fmt["json_schema"]["schema"]["properties"]
            if "think" in props:  # reasoning must leave room for the answer
                props["think"]["maxLength"] = THINK_CHARS
            ranges = props["ranges"]
            ranges["maxItems"] = self.max_ranges
            ranges["items"]["items"] = {"type": "integer", "minimum": 1, "maximum": max(1, n_lines)}
        except (KeyError, TypeError):
            raise RuntimeError("the prompt's response_format changed shape") from None
        return fmt

    def plan(self, step: Step) -> list[tuple[int, int]]:
        """The windows for ``step``: one, ``(1, n)``, when the prompt fits the context."""
        step = self.shown(step)
        tree = step.axtree
        n = len(tree)
        context = self.client.context_tokens
        if n == 0 or context is None:  # no context limit known: one window
            return [(1, n)] if n else []
        reserve = (self.client.params.get("max_tokens") or 512) + 32
        estimate = self.client.estimate_tokens(self._whole(step))
        if estimate + reserve <= context:
            return [(1, n)]
        ratio = self.client.token_ratio
        observation = count_tokens(render(tree, self.options.view), self.encoding)
        overhead = estimate - int(observation * ratio)
        budget = int((context - reserve - overhead) / ratio) - 32
        if budget < 64:
            raise ContextLengthError(f"the prompt without the tree needs {overhead} tokens")
        shown = numbered_lines(get_view(self.options.view)(tree))
        return plan_windows(shown, tree.depths, budget, self.encoding)

    def fits(self, step: Step) -> bool:
        """True when ``step`` needs a single window."""
        try:
            return len(self.plan(step)) <= 1
        except ContextLengthError:
            return False


def numbered_lines(shown: Sequence[str | None]) -> list[str | None]:
    """The shown lines with their global numbers; hidden lines (None) stay None.

    >>> numbered_lines(["a", None, "c"])
    ['1: a', None, '3: c']
    """
    return [None if t is None else f"{n}: {t}" for n, t in enumerate(shown, 1)]
