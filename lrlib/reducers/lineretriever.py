"""LineRetriever: a language model reads the numbered tree and names the line ranges to keep.

Step in (goal, history, tree), prompt out (a registered variant, under a retriever view),
answer parsed (tags or JSON), tree pruned (``remove`` or ``structure``). A tree too long for
the model's context is asked about in windows that keep the global line numbers
(:mod:`lrlib.core.windows`); a window the endpoint still refuses is halved and asked again.

Failure policy (``on_failure``), applied to the whole step and recorded in ``failure``:
an unreadable answer (``parse:<reason>``), a timeout (``timeout``), a prompt that cannot fit
(``context``) or a selection of fewer than ``min_lines`` lines (``near_empty``) gives

- ``"full"`` (default): the whole tree, attacks included (fails *open*);
- ``"truncate"``: its first lines within ``budget`` tokens (pop-ups sit at the top: open);
- ``"closed"``: no page at all, only the :data:`CLOSED_NOTICE` line (fails *closed*);
- ``"fallback:<reducer>"``: what the named registered reducer keeps (e.g.
  ``fallback:program``, ``fallback:bm25``): as safe as that reducer.

The policy is in ``params["on_failure"]`` and, on a failure, ``extra["fallback"]``. Other
errors (bad key, unknown model, endpoint down after the retries, a cache miss when offline)
raise: they are set-up problems, not results. With ``sanitize=True`` the retriever reads,
and the reducer returns, the tree with tag-like page text neutralised (:mod:`lrlib.core.sanitize`);
the answer is checked against every text the model was shown (:mod:`lrlib.core.echo`).

Answers go through the response cache, so a rerun, or a run with ``offline=True``, replays
them with no model. In structured mode ``max_ranges`` bounds the JSON schema (at most that
many ranges, line numbers within the tree): under constrained decoding a small model must
then finish its answer. ``latency_s`` of a result is the local work plus the recorded
latency of its model calls (a replay reports the original latency; ``usage["from_cache"]``
says so).

>>> r = LineRetriever(view="compact", answer="json", think=False, model="gpt-4.1-mini",
...                   base_url="http://localhost:1/v1", cache=False)
>>> r.params["view"], r.params["answer"]
('compact', 'json')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lrlib.core.prompts import PromptOptions, get_prompt
from lrlib.core.pruning import STRATEGIES, prune
from lrlib.core.ranges import AnswerParseError, Selection, parse_answer
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING, truncate_bottom
from lrlib.core.views import attach_hidden, get_view
from lrlib.core.windows import merge, restrict, split_window
from lrlib.llm.client import Completion, ContextLengthError, LLMClient, LLMTimeout, Request
from lrlib.reducers.base import Output, Reducer, Reduction
from lrlib.reducers.registry import register_reducer
from lrlib.reducers.retriever_prompts import THINK_CHARS, RetrieverPrompts, numbered_lines  # noqa: F401
from lrlib.reducers.retriever_records import (
    CLOSED_NOTICE,
    FAILURE_POLICIES,  # noqa: F401  (re-exported)
    failure_reducer,
    record_extra,
    record_usage,
)

_EMPTY_ANSWERS = ("no_ranges", "out_of_range")  # "nothing here": fine for one window of many
_MAX_SPLITS = 4


class _Failure(Exception):
    """A policy failure of one window (the reason string is recorded)."""


@register_reducer("lineretriever")
class LineRetriever(RetrieverPrompts, Reducer):
    """The paper's LLM retriever. See the module docstring for the failure policy.

    ``client`` (an :class:`~lrlib.llm.client.LLMClient`) or the client options (``model``,
    ``base_url``, ``api_key``, ``max_tokens``, ``cache``, ``offline``, ``refresh``, and any
    other :class:`LLMClient` keyword) choose the model; by default the embedded SmolLM2.
    """

    name = "lineretriever"

    def __init__(
        self,
        prompt: str = "paper",
        *,
        view: str = "full",
        answer: str = "tags",
        think: bool = True,
        history: bool = True,
        strategy: str = "structure",
        markers: bool = True,
        on_failure: str = "full",
        budget: int | None = None,
        min_lines: int = 3,
        max_ranges: int | None = None,
        sanitize: bool = False,
        client: LLMClient | None = None,
        encoding: str = DEFAULT_ENCODING,
        **client_options: Any,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        self._safe = failure_reducer(on_failure, budget)
        self.variant = get_prompt(prompt)
        get_view(view)  # fail now on an unknown view
        self.options = PromptOptions(use_history=history, think=think, answer=answer, view=view)
        if client is not None and client_options:
            raise TypeError(f"pass client= or client options, not both: {sorted(client_options)}")
        self.client = client or LLMClient(**client_options)
        self.strategy, self.markers = strategy, markers
        self.on_failure, self.budget, self.min_lines = on_failure, budget, min_lines
        self.max_ranges, self.sanitize = max_ranges, sanitize
        self._seen: dict[int, tuple[Step, Step]] = {}
        self._built: dict[int, tuple[Step, list[dict[str, str]]]] = {}
        super().__init__(
            encoding,
            prompt=prompt,
            prompt_hash=self.variant.fingerprint(self.options),
            view=view,
            answer=answer,
            think=think,
            history=history,
            strategy=strategy,
            on_failure=on_failure,
            budget=budget,
            min_lines=min_lines,
            max_ranges=max_ranges,
            **({"sanitize": True} if sanitize else {}),  # absent when off: same fingerprints
            model=self.client.model,
            endpoint=self.client.endpoint.kind,
            max_tokens=self.client.params.get("max_tokens"),
            temperature=self.client.params.get("temperature"),
            seed=self.client.params.get("seed"),
        )

    # --- reducing ------------------------------------------------------------------------

    def reduce(self, step: Step) -> Reduction:
        """Reduce one step (blocking); ``latency_s`` counts the recorded model latency."""
        _ = step.axtree  # parse before the clock starts: shared work, not the latency
        start = time.perf_counter()
        out = self.select(step)
        local = time.perf_counter() - start - (out.usage or {}).get("wall_s", 0.0)
        latency = max(0.0, local) + (out.usage or {}).get("llm_latency_s", 0.0)
        return self._reduction(step, out, latency)

    def reduce_many(
        self,
        steps: Sequence[Step],
        *,
        progress: Callable[[], None] | None = None,
        errors: str = "raise",
    ) -> list[Reduction | Exception]:
        """Reduce many steps concurrently, in threads (bounded by the client's ``concurrency``).

        With ``errors="raise"`` the first error is raised after every other step finished
        (so their answers are cached and a rerun resumes); ``"return"`` puts it in the list.
        """

        def one(step: Step) -> Reduction:
            try:
                return self.reduce(step)
            finally:
                if progress is not None:
                    progress()

        results = each(one, steps, self.client.parallel)
        if errors == "raise":
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        return results

    def select(self, step: Step) -> Output:
        """Reduce one step (blocking)."""
        original, step = step, self.shown(step)
        tree = step.axtree
        n = len(tree)
        if n == 0:
            return Output(
                text="",
                kept=[],
                usage=record_usage(
                    [], 0.0, self.client, self.variant.name, self.params["prompt_hash"]
                ),
            )
        self._whole(step)  # renders the view once; the line below reuses it (no await between)
        shown = get_view(self.options.view)(tree)
        completions: list[tuple[tuple[int, int], Completion]] = []
        wall = time.perf_counter()
        try:
            windows = self.plan(step)
        except ContextLengthError:
            windows = []
        if not windows:
            return self._fallback(original, "context", completions, 0.0, [])
        several = len(windows) > 1
        requests = [self.request(step, w) for w in windows]  # while the prompt is memoised

        def ask(i: int) -> list[Selection]:
            return self._ask(step, windows[i], shown, completions, several, 0, requests[i])

        outcomes = each(ask, range(len(windows)), self.client.parallel)
        wall = time.perf_counter() - wall
        for outcome in outcomes:  # the first failure in line order decides, deterministically
            if isinstance(outcome, _Failure):
                return self._fallback(original, str(outcome), completions, wall, windows)
            if isinstance(outcome, BaseException):
                raise outcome
        selections = [s for parts in outcomes for s in parts]  # type: ignore[union-attr]
        merged = merge(selections, n)
        if not merged.ranges:
            return self._fallback(original, "parse:no_ranges", completions, wall, windows)
        merged = attach_hidden(merged, shown)
        if len(merged) < min(self.min_lines, n):
            return self._fallback(original, "near_empty", completions, wall, windows)
        pruned = prune(tree, merged, self.strategy, self.markers)  # type: ignore[arg-type]
        extra = record_extra(completions, windows, merged)
        return Output(
            pruned.text,
            pruned.kept,
            pruned.stubs,
            record_usage(
                completions, wall, self.client, self.variant.name, self.params["prompt_hash"]
            ),
            None,
            extra,
        )

    def _ask(
        self,
        step: Step,
        window: tuple[int, int],
        shown: list[str | None],
        completions: list[tuple[tuple[int, int], Completion]],
        several: bool,
        depth: int,
        request: Request | None = None,
    ) -> list[Selection]:
        """Ask about one window; halve it when the endpoint says it is too long."""
        n = len(step.axtree)
        try:
            completion = self.client.complete(request or self.request(step, window))
        except ContextLengthError:
            completion = None
        except LLMTimeout:
            raise _Failure("timeout") from None
        if completion is None:  # too long after all: halve the window and ask again
            halves = split_window(numbered_lines(shown), step.axtree.depths, window)
            if depth >= _MAX_SPLITS or len(halves) < 2:
                raise _Failure("context")
            parts = each(
                lambda h: self._ask(step, h, shown, completions, True, depth + 1),
                halves,
                self.client.parallel,
            )
            for p in parts:
                if isinstance(p, BaseException):
                    raise p
            return [s for p in parts for s in p]  # type: ignore[union-attr]
        completions.append((window, completion))
        try:
            mode: Any = self.options.answer
            # given what the model was shown (and the raw page), an answer copied from it is
            # never taken for the model's own
            page = (step.tree,) + ((step.meta["raw_tree"],) if "raw_tree" in step.meta else ())
            selection = parse_answer(completion.text, n, mode, page=page)
        except AnswerParseError as exc:
            if several and exc.reason in _EMPTY_ANSWERS:
                return []
            raise _Failure(f"parse:{exc.reason}") from None
        if window != (1, n):
            selection = restrict(selection, window)
        return [selection]

    def _fallback(
        self,
        step: Step,
        reason: str,
        completions: list[tuple[tuple[int, int], Completion]],
        wall: float,
        windows: list[tuple[int, int]],
    ) -> Output:
        """The failure policy (module docstring) applied to ``step``."""
        tree = step.axtree
        stubs: list[int] = []
        if self.on_failure == "closed":
            text, kept = CLOSED_NOTICE.format(reason=reason), []
        elif self._safe is not None:
            out = self._safe.select(self.shown(step))
            text, kept, stubs = out.text, out.kept, out.stubs
        elif self.on_failure == "truncate":
            text = truncate_bottom(self.shown(step).tree, int(self.budget or 0), self.encoding)
            kept = list(range(1, (text.count("\n") + 1 if text else 0) + 1))
        else:
            text, kept = self.shown(step).tree, list(range(1, len(tree) + 1))
        extra = record_extra(completions, windows, None)
        extra["fallback"] = self.on_failure
        return Output(
            text,
            kept,
            stubs,
            record_usage(
                completions, wall, self.client, self.variant.name, self.params["prompt_hash"]
            ),
            reason,
            extra,
        )


def each(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    """``fn`` of every item, in threads (at most ``workers``); an exception is returned in
    its item's place. One item runs in the calling thread.

    >>> each(lambda x: 1 // x, [1, 0], 2)[0], type(each(lambda x: 1 // x, [1, 0], 2)[1]).__name__
    (1, 'ZeroDivisionError')
    """

    def safe(item: Any) -> Any:
        try:
            return fn(item)
        except Exception as exc:
            return exc

    if len(items) <= 1:
        return [safe(i) for i in items]
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
        return list(pool.map(safe, items))
