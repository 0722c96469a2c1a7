"""LineRetriever: a language model reads the numbered tree and names the line ranges to keep.

One reduction, in the order of this file: the configuration (:class:`RetrieverConfig`) ->
**plan** the windows (one, unless the prompt is too long for the model's context) ->
**build** the prompt of each window (from the window: its lines, with their global numbers)
-> **ask** the model (through the response cache; a window the endpoint still refuses is
halved and asked again) -> **parse** the answer (tags or JSON, echo-checked) -> **prune**
the tree (``remove`` or ``structure``) -> on a failure, the **failure policy**.

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
the answer is checked against every text the model was shown (:class:`~lrlib.core.ranges.PageEcho`).

Answers go through the response cache, so a rerun, or a run with ``offline=True``, replays
them with no model. In structured mode ``max_ranges`` bounds the JSON schema (at most that
many ranges, line numbers within the tree): under constrained decoding a small model must
then finish its answer. ``latency_s`` of a result is the local work plus the recorded
latency of its model calls (a replay reports the original latency; ``usage["from_cache"]``
says so).

>>> config = RetrieverConfig(view="full", answer="tags", model="gpt-4.1-mini")
>>> r = LineRetriever(config, base_url="http://localhost:1/v1", cache=False)
>>> r.params["view"], r.params["answer"], r.config.prompt
('full', 'tags', 'paper')
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from typing import Any

from lrlib.core.axtree import number_lines
from lrlib.core.prompts import PromptOptions, get_prompt
from lrlib.core.pruning import STRATEGIES, attach_hidden, get_view, prune, render
from lrlib.core.ranges import AnswerParseError, Selection, parse_answer
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING, count_tokens, line_token_counts, truncate_bottom
from lrlib.llm.client import Completion, ContextLengthError, LLMClient, LLMTimeout, Request
from lrlib.reducers.base import Output, Reducer, Reduction, check_kind, register_reducer

THINK_CHARS = 600  # bounded schema: the longest "think" string
FAILURE_POLICIES = ("full", "truncate", "closed", "fallback:<reducer>")
CLOSED_NOTICE = (
    "[observation withheld: the page filter failed ({reason}); no page content is shown. "
    "Do not act on this page; retry or stop.]"
)
SLACK = 0.25  # a window's cut may come this share of the budget early, to land on a shallow line
_EMPTY_ANSWERS = ("no_ranges", "out_of_range")  # "nothing here": fine for one window of many
_MAX_SPLITS = 4
_CLIENT_FIELDS = ("model", "max_tokens", "temperature", "seed")

Window = tuple[int, int]


# --- 1. the configuration ---------------------------------------------------------------


@dataclass(frozen=True)
class RetrieverConfig:
    """Everything that shapes what LineRetriever asks and keeps: the prompt (variant, view,
    answer mode, switches), the pruning, the failure policy, and the model and sampling its
    client uses when none is given.

    ``RetrieverConfig()`` is **the** shipped default, the one configuration whose answers of
    the embedded model ship in ``data/cache/llm``: ``lrlib.get_reducer("lineretriever")``,
    ``lrlib run``, ``lrlib evaluate`` and the notebooks all start from it (compact view,
    JSON answers under a bounded schema, no free-form reasoning: SmolLM2 writes ~26 tokens/s
    on 2 cores). Change a field with :meth:`replace` (or a reducer option); the prompt hash
    then changes, and the shipped answers no longer apply.

    >>> RetrieverConfig().replace(answer="tags").answer, RetrieverConfig().view
    ('tags', 'compact')
    """

    prompt: str = "paper"
    view: str = "compact"
    answer: str = "json"  # structured output: the embedded model closes it, tags it does not
    think: bool = False
    history: bool = True
    strategy: str = "structure"
    markers: bool = True
    on_failure: str = "full"
    budget: int | None = None
    min_lines: int = 3
    max_ranges: int | None = 6  # structured mode: a bounded schema, so SmolLM2 closes its JSON
    sanitize: bool = False
    encoding: str = DEFAULT_ENCODING
    model: str | None = None  # the client's (None: LRLIB_MODEL, or the embedded model)
    max_tokens: int | None = 128
    temperature: float | None = 0.0
    seed: int | None = 0

    def __post_init__(self) -> None:
        """A value of another kind than its field's (``budget="abc"``) fails here, in one line."""
        for f in fields(self):
            check_kind(LineRetriever.name, f.name, getattr(self, f.name), str(f.type))

    def replace(self, **changes: Any) -> RetrieverConfig:
        """A copy with ``changes`` (an unknown name raises TypeError)."""
        return replace(self, **changes)

    @property
    def options(self) -> PromptOptions:
        """The prompt switches of this configuration."""
        return PromptOptions(
            use_history=self.history, think=self.think, answer=self.answer, view=self.view
        )


_CONFIG_FIELDS = frozenset(f.name for f in fields(RetrieverConfig))


@register_reducer
class LineRetriever(Reducer):
    """The paper's LLM retriever (see the module docstring).

    ``config`` (a :class:`RetrieverConfig`; its fields may also be passed as keywords, which
    override it), and ``client`` (an :class:`~lrlib.llm.client.LLMClient`) or client options
    (``base_url``, ``api_key``, ``cache``, ``offline``, ``refresh``, and any other
    :class:`LLMClient` keyword). Without a client the model is the configuration's, by
    default the embedded SmolLM2; with one, the client's model and sampling are used.
    """

    name = "lineretriever"
    listed = 10  # in lrlib evaluate's default listing: the steps whose answers are cached
    model_answers = True

    def __init__(
        self,
        config: RetrieverConfig | None = None,
        *,
        client: LLMClient | None = None,
        **options: Any,
    ) -> None:
        changes = {k: v for k, v in options.items() if k in _CONFIG_FIELDS}
        client_options = {k: v for k, v in options.items() if k not in _CONFIG_FIELDS}
        config = (config or RetrieverConfig()).replace(**changes)
        if config.strategy not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {config.strategy!r}; valid: {', '.join(STRATEGIES)}"
            )
        self._safe = failure_reducer(config.on_failure, config.budget)
        self.variant = get_prompt(config.prompt)
        get_view(config.view)  # fail now on an unknown view
        if client is not None and (client_options or set(changes) & set(_CLIENT_FIELDS)):
            given = sorted(set(client_options) | (set(changes) & set(_CLIENT_FIELDS)))
            raise TypeError(f"pass client= or client options, not both: {given}")
        self.config = config
        self.options = config.options
        sampling = {k: getattr(config, k) for k in _CLIENT_FIELDS}
        self.client = client or LLMClient(**sampling, **client_options)
        super().__init__(
            config.encoding,
            prompt=config.prompt,
            prompt_hash=self.variant.fingerprint(self.options),
            view=config.view,
            answer=config.answer,
            think=config.think,
            history=config.history,
            strategy=config.strategy,
            on_failure=config.on_failure,
            budget=config.budget,
            min_lines=config.min_lines,
            max_ranges=config.max_ranges,
            **({"sanitize": True} if config.sanitize else {}),  # absent when off: same fingerprints
            model=self.client.model,
            endpoint=self.client.endpoint.kind,
            max_tokens=self.client.params.get("max_tokens"),
            temperature=self.client.params.get("temperature"),
            seed=self.client.params.get("seed"),
        )

    # --- 2. plan the windows, build each window's prompt --------------------------------

    def shown(self, step: Step) -> Step:
        """The step as the retriever sees it: ``step`` itself, or (``sanitize=True``) a copy
        with its tree neutralised."""
        if not self.config.sanitize:
            return step
        from lrlib.core.sanitize import sanitize_step

        return sanitize_step(step)

    def messages(self, step: Step, window: Window | None = None) -> list[dict[str, str]]:
        """The chat messages for ``step``, or for one window of its lines.

        >>> r = LineRetriever(answer="json", model="m", base_url="http://h/v1", cache=False)
        >>> step = Step(goal="Go home", tree="RootWebArea 'Shop'\\n\\t[3] link 'Home'")
        >>> r.messages(step)[-1]["role"], "lines 2-2 of 2" in r.messages(step, (2, 2))[-1]["content"]
        ('user', True)
        """
        return self._build(self.shown(step), window)

    def _build(self, shown: Step, window: Window | None) -> list[dict[str, str]]:
        return self.variant.build(shown.goal, shown.axtree, shown.history, self.options, window)

    def request(self, step: Step, window: Window | None = None) -> Request:
        """The :class:`~lrlib.llm.client.Request` for ``step`` (or one window of it)."""
        return self._request(self.shown(step), window)

    def _request(
        self, shown: Step, window: Window | None, messages: list[dict[str, str]] | None = None
    ) -> Request:
        return self.client.request(
            messages or self._build(shown, window),
            response_format=self.response_format(len(shown.axtree)),
            prompt_name=self.variant.name,
            prompt_hash=self.params["prompt_hash"],
        )

    def response_format(self, n_lines: int) -> dict[str, Any] | None:
        """The prompt's JSON schema (structured mode; None for tags). With ``max_ranges``,
        bounded: at most that many ranges, line numbers within ``1..n_lines``, reasoning at
        most :data:`THINK_CHARS` characters, so that a constrained decoder (llama.cpp) must
        close the answer.

        >>> r = LineRetriever(answer="json", max_ranges=4, model="m", base_url="http://h/v1")
        >>> r.response_format(50)["json_schema"]["schema"]["properties"]["ranges"]["maxItems"]
        4
        """
        fmt = self.variant.response_format(self.options)
        if fmt is None or self.config.max_ranges is None:
            return fmt
        fmt = copy.deepcopy(fmt)
        try:
            props = fmt["json_schema"]["schema"]["properties"]
            if "think" in props:  # reasoning must leave room for the answer
                props["think"]["maxLength"] = THINK_CHARS
            ranges = props["ranges"]
            ranges["maxItems"] = self.config.max_ranges
            ranges["items"]["items"] = {"type": "integer", "minimum": 1, "maximum": max(1, n_lines)}
        except (KeyError, TypeError):
            raise RuntimeError("the prompt's response_format changed shape") from None
        return fmt

    def plan(self, step: Step) -> list[Window]:
        """The windows for ``step``: one, ``(1, n)``, when the prompt fits the context."""
        shown = self.shown(step)
        return self._plan(shown, self._build(shown, None))

    def _plan(self, shown: Step, whole: list[dict[str, str]]) -> list[Window]:
        tree = shown.axtree
        n = len(tree)
        context = self.client.context_tokens
        if n == 0 or context is None:  # no context limit known: one window
            return [(1, n)] if n else []
        reserve = (self.client.params.get("max_tokens") or 512) + 32
        estimate = self.client.estimate_tokens(whole)
        if estimate + reserve <= context:
            return [(1, n)]
        observation = count_tokens(render(tree, self.options.view), self.encoding)
        budget = self.client.tree_budget(estimate, observation, reserve) - 32
        if budget < 64:
            raise ContextLengthError(f"the prompt without the tree needs {estimate} tokens")
        lines = number_lines(get_view(self.options.view)(tree))
        return plan_windows(lines, tree.depths, budget, self.encoding)

    def _requests(self, shown: Step) -> list[tuple[Window, Request]]:
        """Each planned window of ``shown`` with its request, each prompt built once (the
        one-window prompt is the one the plan measured)."""
        whole = self._build(shown, None)
        n = len(shown.axtree)
        return [
            (w, self._request(shown, w, whole if w == (1, n) else None))
            for w in self._plan(shown, whole)
        ]

    def requests(self, step: Step) -> list[Request]:
        """The requests reducing ``step`` sends, one per planned window (what
        :meth:`~lrlib.reducers.base.Reducer.cached_steps` looks up in the cache)."""
        return [r for _, r in self._requests(self.shown(step))]

    def fits(self, step: Step) -> bool:
        """True when ``step`` needs a single window."""
        try:
            return len(self.plan(step)) <= 1
        except ContextLengthError:
            return False

    # --- 3. ask, parse, prune ------------------------------------------------------------

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
        """Reduce one step (blocking): plan, ask each window, parse, merge, prune."""
        shown = self.shown(step)
        tree = shown.axtree
        n = len(tree)
        completions: list[tuple[Window, Completion]] = []
        if n == 0:
            return Output(text="", kept=[], usage=self._usage([], 0.0))
        lines = get_view(self.options.view)(tree)
        wall = time.perf_counter()
        try:
            planned = self._requests(shown)  # each window's prompt, built once
        except ContextLengthError:
            planned = []
        if not planned:
            return self._fallback(step, shown, "context", completions, 0.0, [])
        windows = [w for w, _ in planned]
        several = len(windows) > 1

        def ask(item: tuple[Window, Request]) -> list[Selection]:
            window, request = item
            return self._ask(shown, window, lines, completions, several, 0, request)

        outcomes = each(ask, planned, self.client.parallel)
        wall = time.perf_counter() - wall
        for outcome in outcomes:  # the first failure in line order decides, deterministically
            if isinstance(outcome, _Failure):
                return self._fallback(step, shown, str(outcome), completions, wall, windows)
            if isinstance(outcome, BaseException):
                raise outcome
        merged = merge([s for parts in outcomes for s in parts], n)
        if not merged.ranges:
            return self._fallback(step, shown, "parse:no_ranges", completions, wall, windows)
        merged = attach_hidden(merged, lines)
        if len(merged) < min(self.config.min_lines, n):
            return self._fallback(step, shown, "near_empty", completions, wall, windows)
        pruned = prune(tree, merged, self.config.strategy, self.config.markers)  # type: ignore[arg-type]
        usage = self._usage(completions, wall)
        extra = self._extra(completions, windows, merged)
        return Output(pruned.text, pruned.kept, pruned.stubs, usage, None, extra)

    def _ask(
        self,
        shown: Step,
        window: Window,
        lines: list[str | None],
        completions: list[tuple[Window, Completion]],
        several: bool,
        depth: int,
        request: Request,
    ) -> list[Selection]:
        """Ask about one window and parse the answer; halve the window when the endpoint
        says it is too long."""
        n = len(shown.axtree)
        try:
            completion: Completion | None = self.client.complete(request)
        except ContextLengthError:
            completion = None
        except LLMTimeout:
            raise _Failure("timeout") from None
        if completion is None:  # too long after all: halve the window and ask again
            halves = split_window(number_lines(lines), shown.axtree.depths, window)
            if depth >= _MAX_SPLITS or len(halves) < 2:
                raise _Failure("context")

            def ask(half: Window) -> list[Selection]:
                request = self._request(shown, half)
                return self._ask(shown, half, lines, completions, True, depth + 1, request)

            parts = each(ask, halves, self.client.parallel)
            for p in parts:
                if isinstance(p, BaseException):
                    raise p
            return [s for p in parts for s in p]
        completions.append((window, completion))
        try:
            mode: Any = self.options.answer
            # given what the model was shown (and the raw page), an answer copied from it is
            # never taken for the model's own
            page = (shown.tree,) + ((shown.meta["raw_tree"],) if "raw_tree" in shown.meta else ())
            selection = parse_answer(completion.text, n, mode, page=page)
        except AnswerParseError as exc:
            if several and exc.reason in _EMPTY_ANSWERS:
                return []
            raise _Failure(f"parse:{exc.reason}") from None
        if window != (1, n):
            selection = restrict(selection, window)
        return [selection]

    # --- 4. the failure policy, and what a result records --------------------------------

    def _fallback(
        self,
        step: Step,
        shown: Step,
        reason: str,
        completions: list[tuple[Window, Completion]],
        wall: float,
        windows: list[Window],
    ) -> Output:
        """The failure policy (module docstring) applied to ``step``."""
        stubs: list[int] = []
        if self.config.on_failure == "closed":
            text, kept = CLOSED_NOTICE.format(reason=reason), []
        elif self._safe is not None:
            out = self._safe.select(shown)
            text, kept, stubs = out.text, out.kept, out.stubs
        elif self.config.on_failure == "truncate":
            text = truncate_bottom(shown.tree, int(self.config.budget or 0), self.encoding)
            kept = list(range(1, (text.count("\n") + 1 if text else 0) + 1))
        else:
            text, kept = shown.tree, list(range(1, len(step.axtree) + 1))
        extra = self._extra(completions, windows, None)
        extra["fallback"] = self.config.on_failure
        return Output(text, kept, stubs, self._usage(completions, wall), reason, extra)

    def _usage(self, answered: list[tuple[Window, Completion]], wall: float) -> dict[str, Any]:
        """``usage`` of a result: tokens, latency and calls over its windows' answers."""
        completions = [c for _, c in sorted(answered, key=lambda wc: wc[0])]

        def total(field: str) -> int | None:
            known = [v for c in completions if (v := getattr(c, field)) is not None]
            return sum(known) if known else None

        return {
            "prompt_tokens": total("prompt_tokens"),
            "completion_tokens": total("completion_tokens"),
            "cached_tokens": total("cached_tokens"),
            "llm_latency_s": round(sum(c.latency_s for c in completions), 4),
            "wall_s": wall,
            "calls": len(completions),
            "from_cache": bool(completions) and all(c.from_cache for c in completions),
            "model": self.client.model,
            "served_model": completions[0].model if completions else None,
            "endpoint": self.client.endpoint.kind,
            "prompt": self.variant.name,
            "prompt_hash": self.params["prompt_hash"],
        }

    @staticmethod
    def _extra(
        answered: list[tuple[Window, Completion]],
        windows: list[Window],
        selection: Selection | None,
    ) -> dict[str, Any]:
        """``extra`` of a result: its windows, selection and raw answers."""
        completions = [c for _, c in sorted(answered, key=lambda wc: wc[0])]
        return {
            "windows": [list(w) for w in windows],
            "selection": [list(r) for r in selection.ranges] if selection else None,
            "answer_truncated": bool(selection and selection.truncated),
            "answers": [c.text for c in completions],
            "finish_reasons": [c.finish_reason for c in completions],
        }


class _Failure(Exception):
    """A policy failure of one window (the reason string is recorded)."""


def failure_reducer(policy: str, budget: int | None) -> Any:
    """The reducer behind ``fallback:<name>`` (None for the other policies); the error of a
    bad policy lists the valid ones.

    >>> failure_reducer("closed", None) is None, CLOSED_NOTICE.format(reason="timeout")[:33]
    (True, '[observation withheld: the page f')
    """
    from lrlib.reducers.base import describe, get_reducer, list_reducers

    if policy in ("full", "closed"):
        return None
    if policy == "truncate":
        if not budget:
            raise ValueError("on_failure='truncate' needs budget=<tokens>")
        return None
    name = policy.removeprefix("fallback:")
    valid = [  # no model (a failure must not ask one again), no look at the recorded action
        r for r in list_reducers() if not (describe(r).model_answers or describe(r).uses_target)
    ]
    if not policy.startswith("fallback:") or name not in valid:
        raise ValueError(
            f"unknown on_failure {policy!r}; valid: full, truncate, closed, "
            + ", ".join(f"fallback:{r}" for r in valid)
        )
    from lrlib.reducers.baselines import Truncate

    extra = {"budget": budget} if budget and issubclass(describe(name), Truncate) else {}
    return get_reducer(name, **extra)


# --- 5. windows: a tree too long for the context, cut into parts -------------------------
# The tree is cut at line boundaries into windows that each fit a token budget; every window
# keeps the global line numbers (line 812 is "812:" in whichever window shows it), the model
# is asked once per window, and the selections are merged. Cuts prefer shallow lines near
# the end of a window, so a form or a table is not split when it can be helped.


def plan_windows(
    lines: Sequence[str | None],
    depths: Sequence[int],
    budget: int,
    encoding: str = DEFAULT_ENCODING,
) -> list[Window]:
    """Split lines ``1..len(lines)`` into consecutive windows of at most ``budget`` tokens.

    ``lines`` are the rendered lines (``None`` for hidden ones, which cost nothing and go
    with the window around them). A single line longer than the budget gets a window of its
    own. The windows cover every line exactly once, in order.

    >>> plan_windows(["1: a", None, "3: b"], [0, 0, 0], budget=100)
    [(1, 3)]
    >>> plan_windows([f"{i}: [{i}] button 'b{i}'" for i in range(1, 7)], [0] * 6, budget=25)
    [(1, 2), (3, 4), (5, 6)]
    """
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    n = len(lines)
    if n == 0:
        return []
    shown = [(i, t) for i, t in enumerate(lines) if t is not None]
    costs = line_token_counts([t for _, t in shown], encoding)
    counts = {i: c for (i, _), c in zip(shown, costs, strict=True)}
    windows: list[Window] = []
    start, used = 0, 0
    i = 0
    while i < n:
        cost = counts.get(i, 0)
        if used + cost > budget and used > 0:
            cut = _best_cut(start, i, depths, counts, budget)
            windows.append((start + 1, cut))
            start, used = cut, sum(counts.get(j, 0) for j in range(cut, i))
            continue
        used += cost
        i += 1
    windows.append((start + 1, n))
    return windows


def _best_cut(
    start: int, end: int, depths: Sequence[int], counts: dict[int, int], budget: int
) -> int:
    """0-based index where the next window starts: ``end`` (the line that did not fit), or
    a shallower line among those past ``1 - SLACK`` of the budget (the latest shallowest)."""
    spent = [0]
    for j in range(start, end):
        spent.append(spent[-1] + counts.get(j, 0))
    best, best_depth = end, depths[end]
    for j in range(end - 1, start, -1):
        if spent[j - start] < budget * (1 - SLACK):
            break
        if depths[j] < best_depth:
            best, best_depth = j, depths[j]
    return best


def split_window(
    lines: Sequence[str | None], depths: Sequence[int], window: Window
) -> list[Window]:
    """Two halves of ``window``, for a window the endpoint still found too long: cut near
    the middle by tokens (35-65%), on the shallowest line there. One line cannot be split.

    >>> split_window(["1: a", "2: b", "3: c", "4: d"], [0, 0, 0, 0], (1, 4))
    [(1, 2), (3, 4)]
    """
    a, b = window
    if a >= b:
        return [window]
    part = list(lines[a - 1 : b])
    shown = [t for t in part if t is not None]
    costs = iter(line_token_counts(shown) if shown else [])
    prefix, total = [], 0  # prefix[k]: tokens of the window's first k lines
    for t in part:
        prefix.append(total)
        total += next(costs) if t is not None else 0
    best = None
    for k in range(1, len(part)):  # the second half starts at line a + k
        share = prefix[k] / total if total else k / len(part)
        if 0.35 <= share <= 0.65:
            rank = (depths[a - 1 + k], abs(share - 0.5))
            if best is None or rank < best[0]:
                best = (rank, k)
    k = best[1] if best else (len(part) + 1) // 2
    return [(a, a + k - 1), (a + k, b)]


def restrict(selection: Selection, window: Window) -> Selection:
    """The part of ``selection`` inside ``window`` (ranges the model gave outside it go).

    >>> restrict(Selection.from_ranges([(1, 4), (9, 12)], 20), (3, 10)).ranges
    ((3, 4), (9, 10))
    """
    a, b = window
    parts = [(max(x, a), min(y, b)) for x, y in selection.ranges if y >= a and x <= b]
    return Selection.from_ranges(parts, selection.n_lines, selection.truncated)


def merge(selections: Sequence[Selection], n_lines: int) -> Selection:
    """Union of the windows' selections.

    >>> merge([Selection.from_lines([1], 9), Selection.from_lines([5, 6], 9)], 9).ranges
    ((1, 1), (5, 6))
    """
    ranges = [r for s in selections for r in s.ranges]
    return Selection.from_ranges(ranges, n_lines, any(s.truncated for s in selections))


def each(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    """``fn`` of every item, in threads (at most ``workers``); an exception is returned in
    its item's place. One item runs in the calling thread. On Ctrl-C the items not started
    are dropped (those in flight finish, so their answers are cached).

    >>> out = each(lambda x: 1 // x, [1, 0], 2)
    >>> out[0], type(out[1]).__name__
    (1, 'ZeroDivisionError')
    """

    def safe(item: Any) -> Any:
        try:
            return fn(item)
        except Exception as exc:
            return exc

    if len(items) <= 1:
        return [safe(i) for i in items]
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))))
    try:
        return list(pool.map(safe, items))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
