"""LineRetriever in the notebooks: cached answers replayed offline, or a live endpoint; runs
that count what they skipped, the prompt ablations, one step's token summary.

Two modes, decided by the one offline switch (:func:`lrlib.settings.offline_reason`, which
every :class:`~lrlib.llm.client.LLMClient` honours itself):

- **offline** (the default when no endpoint is configured, and in quick mode): the
  answers come from the response cache in ``data/cache`` and nothing else. A step without a
  cached answer is **skipped and counted** (:class:`RetrieverRun` says how many), never sent
  to a model behind the user's back.
- **live**: ``OPENAI_BASE_URL`` and/or ``OPENAI_API_KEY`` (plus ``LRLIB_MODEL``) name an
  endpoint, or ``LRLIB_OFFLINE=0`` allows the embedded SmolLM2 to run: missing answers are
  asked for (concurrently) and cached, so the next run replays them. ``LRLIB_OFFLINE=1``
  forces replay even with an endpoint configured.

The retriever runs in the shipped default configuration, ``RetrieverConfig()`` (whose
answers ship in the cache, over the steps of :func:`lrlib.report.run.default_steps`),
unless a notebook overrides an option; results always carry the model that produced them.

>>> from lrlib import settings
>>> with settings.override(offline=True):
...     offline(), mode()
(True, 'replayed from the response cache (offline)')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any

from lrlib.core.step import Step
from lrlib.reducers.base import Output, Reducer, Reduction
from lrlib.reducers.base import describe as described
from lrlib.reducers.lineretriever import LineRetriever, RetrieverConfig
from lrlib.settings import offline_reason

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "THINK_MAX_TOKENS",
    "NO_ANSWER",
    "EMPTY_COLUMNS",
    "offline",
    "mode",
    "model_name",
    "describe",
    "lineretriever",
    "ready_steps",
    "safe_reduce",
    "evaluate_cached",
    "curves_cached",
    "RetrieverRun",
    "run_lineretriever",
    "token_summary",
    "ablation_grid",
    "prompt_token_table",
    "Ablation",
    "ablation",
]

THINK_MAX_TOKENS = 384  # room for a <think> block when an ablation turns thinking on
NO_ANSWER = "offline:no_cached_answer"
# the columns of a run with no answered step
EMPTY_COLUMNS = ["step_id", "reducer", "tokens_before", "tokens_after", "reduction",
                 "reduction_chars", "reduction_lines", "target_status", "covered",
                 "covered_visible", "episode_success", "latency_s", "failure",
                 "usage_prompt_tokens", "usage_completion_tokens", "retriever_prompt_tokens",
                 "retriever_output_tokens", "output_tokens"]  # fmt: skip


# --- offline or live ------------------------------------------------------------------


def offline() -> bool:
    """True unless answers may be requested (:func:`lrlib.settings.offline_reason`: what
    every LLMClient decides when not told otherwise).

    >>> from lrlib import settings
    >>> with settings.override(offline=False):
    ...     offline()
    False
    """
    return offline_reason() is not None


def mode() -> str:
    """How answers are obtained, in words (for notes and titles)."""
    if offline():
        return "replayed from the response cache (offline)"
    from lrlib.llm.client import Endpoint

    return f"live ({Endpoint.resolve().kind} endpoint), answers cached"


def model_name() -> str:
    """The retriever model the notebooks use: ``LRLIB_MODEL``/``OPENAI_MODEL`` with an
    endpoint, else the embedded SmolLM2-135M-Instruct.

    >>> model_name()
    'SmolLM2-135M-Instruct.Q4_1'
    """
    from lrlib.llm.client import Endpoint

    return Endpoint.resolve().model


def describe(reducer: str) -> str:
    """A title for results of ``reducer``: LLM reducers name their model and mode.

    >>> describe("bm25")
    'bm25'
    """
    if described(reducer).model_answers:
        return f"{reducer} - retriever model {model_name()}, {mode()}"
    return reducer


def lineretriever(
    prompt: str | None = None,
    strategy: str | None = None,
    answer: str | None = None,
    **overrides: Any,
) -> LineRetriever:
    """LineRetriever in the shipped default configuration (``RetrieverConfig()``, exactly as
    ``lrlib.get_reducer("lineretriever")`` builds it), with the prompt, pruning strategy
    and answer format given (None: the default's), offline or live as the client decides
    (:func:`offline`); ``overrides`` change any reducer option. With an endpoint configured
    the model is the one it names (``LRLIB_MODEL``).

    >>> lineretriever(strategy="remove").params["strategy"]
    'remove'
    """
    given = {"prompt": prompt, "strategy": strategy, "answer": answer}
    return LineRetriever(
        RetrieverConfig(**{k: v for k, v in given.items() if v is not None}), **overrides
    )


# --- what can be reduced without a model ------------------------------------------------


def ready_steps(
    reducer: Reducer, steps: Sequence[Step], offline_only: bool | None = None
) -> list[Step]:
    """The steps ``reducer`` can reduce without running a model: everything for plain
    reducers; cached answers for LineRetriever; cached vectors for embedding retrieval.
    Live (``offline_only`` False; None: :func:`offline`), every step."""
    if not (offline() if offline_only is None else offline_only):
        return list(steps)
    return [s for s, ok in zip(steps, reducer.cached_steps(steps), strict=True) if ok]


def safe_reduce(reducer: Reducer, step: Step) -> Reduction:
    """``reducer.reduce(step)``; offline with no cached answer, a labelled full-tree fallback
    (``failure="offline:no_cached_answer"``) instead of an error.

    >>> from lrlib.reducers import get_reducer
    >>> s = Step(goal="g", tree="a\\nb")
    >>> safe_reduce(get_reducer("full"), s).failure is None
    True
    """
    from lrlib.core.tokens import count_lines
    from lrlib.llm.client import CacheMissError

    try:
        return reducer.reduce(step)
    except CacheMissError:
        tree = step.axtree
        n = count_lines(tree.texts)
        return Reduction(
            reducer.name,
            step.step_id,
            tree.text,
            list(range(1, len(tree) + 1)),
            n,
            n,
            0.0,
            reducer.params,
            failure=NO_ANSWER,
            extra={"fallback": "full", "answers": []},
        )


def evaluate_cached(
    reducers: Sequence[str], steps: Sequence[Step]
) -> tuple[pd.DataFrame, list[str]]:
    """:func:`lrlib.evaluate` for each reducer on the steps it can reduce without running a
    model (:func:`ready_steps`); returns the frame and one note per reducer that skipped
    steps (counted, never computed behind the user's back)."""
    import pandas as pd

    from lrlib.eval.evaluation import evaluate, resolve

    frames, notes = [], []
    for label, reducer in resolve(list(reducers)).items():
        ready = ready_steps(reducer, steps)
        if len(ready) < len(steps):
            notes.append(
                f"{label}: {len(ready)} of {len(steps)} steps evaluated, {len(steps) - len(ready)} "
                "skipped (their embeddings are not cached; LRLIB_OFFLINE=0 computes them)"
            )
        if ready:
            frames.append(evaluate({label: reducer}, ready, progress=False))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=EMPTY_COLUMNS)
    return frame, notes


def curves_cached(steps: Sequence[Step], specs: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """:func:`lrlib.eval.evaluation.sweep` over each reducer's declared knob values
    (:func:`lrlib.reducers.knobs`), on the steps it can reduce without a model; notes as for
    :func:`evaluate_cached`. Each row carries ``n_steps``."""
    import pandas as pd

    from lrlib.eval.evaluation import resolve, sweep
    from lrlib.reducers import knobs

    frames, notes = [], []
    for spec in specs:
        knob, values = knobs()[spec].option, knobs()[spec].values
        ready = ready_steps(resolve([spec])[spec], steps)
        if len(ready) < len(steps):
            notes.append(f"{spec} curve: {len(ready)} of {len(steps)} steps (others not cached)")
        if ready:
            frames.append(sweep(spec, knob, values, ready, progress=False))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), notes


# --- LineRetriever runs -----------------------------------------------------------------


@dataclass
class RetrieverRun:
    """LineRetriever results on some steps: an evaluation frame (one row per answered step,
    as :func:`lrlib.evaluate` makes them, plus the retriever's prompt and output tokens in
    o200k), the model, the mode, and the steps skipped for want of a cached answer."""

    frame: pd.DataFrame
    model: str
    mode: str
    label: str
    n_steps: int
    skipped: list[str] = field(default_factory=list)

    @property
    def n_answered(self) -> int:
        """Steps with results."""
        return len(self.frame)

    def median_output_tokens(self, default: float) -> float:
        """Median o200k tokens the retriever wrote per step (``default`` with no answers)."""
        values = self.frame["retriever_output_tokens"].dropna()
        return float(values.median()) if len(values) else float(default)

    def note(self) -> str:
        """One line: model, mode, steps answered / skipped / fallen back (by reason)."""
        fails = Counter(f for f in self.frame.get("failure", []) if isinstance(f, str) and f)
        fell = sum(fails.values())
        reasons = ", ".join(f"{k} {v}" for k, v in fails.most_common())
        return (
            f"{self.label}: retriever model {self.model}, {self.mode}; "
            f"{self.n_answered} of {self.n_steps} steps answered, "
            f"{len(self.skipped)} skipped (no cached answer)"
            + (f", {fell} fell back to the full tree ({reasons})" if fell else "")
        )


def run_lineretriever(
    steps: Sequence[Step],
    prompt: str | None = None,
    strategy: str | None = None,
    answer: str | None = None,
    label: str | None = None,
    **overrides: Any,
) -> RetrieverRun:
    """Evaluate LineRetriever on ``steps``, reducing each step once: offline, only the
    steps with cached answers (the others are counted in ``skipped``); live, every step
    (missing answers are asked for concurrently and cached)."""
    import pandas as pd

    from lrlib.core.tokens import count_tokens
    from lrlib.eval.evaluation import evaluate
    from lrlib.llm.completions import chat_tokens

    retriever = lineretriever(prompt, strategy, answer, **overrides)
    reducer = _Kept(retriever)
    params = retriever.params
    label = label or f"{retriever.name}+{params['strategy']}/{params['answer']}"
    ready = ready_steps(retriever, steps)
    if not offline():  # every step, asked concurrently up front
        reducer.results.update((r.step_id, r) for r in retriever.reduce_many(ready))
    ready_ids = {s.step_id for s in ready}
    skipped = [s.step_id for s in steps if s.step_id not in ready_ids]
    if not ready:
        frame = pd.DataFrame(columns=EMPTY_COLUMNS)
    else:
        frame = evaluate({label: reducer}, ready, progress=False)
        prompt_tokens, output_tokens = [], []
        for step in ready:  # the results evaluate() got: no second reduction
            result = reducer.results[step.step_id]
            windows = result.extra.get("windows") or [[1, len(step.axtree)]]
            prompt_tokens.append(
                sum(chat_tokens(retriever.messages(step, (a, b))) for a, b in windows)
            )
            output_tokens.append(sum(count_tokens(a) for a in result.extra.get("answers", [])))
        frame["retriever_prompt_tokens"] = prompt_tokens
        frame["retriever_output_tokens"] = output_tokens
        frame["output_tokens"] = output_tokens
        for key in ("view", "answer", "think", "history", "strategy"):
            frame[key] = reducer.params.get(key)
    return RetrieverRun(
        frame, reducer.params.get("model", model_name()), mode(), label, len(steps), skipped
    )


class _Kept(Reducer):
    """A LineRetriever that keeps each result by step id (and answers from it when it has
    one), so that :func:`evaluate` and the token columns share one reduction per step."""

    def __init__(self, inner: LineRetriever) -> None:
        super().__init__(inner.encoding, **inner.params)
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.results: dict[str, Reduction] = {}

    def select(self, step: Step) -> Output:
        """The retriever's :meth:`~LineRetriever.select`."""
        return self.inner.select(step)

    def reduce(self, step: Step) -> Reduction:
        """The kept result of ``step``, else the retriever's (then kept)."""
        if step.step_id not in self.results:
            self.results[step.step_id] = self.inner.reduce(step)
        return self.results[step.step_id]


def token_summary(step: Step, result: Reduction) -> str:
    """A markdown table of token counts along the pipeline for one step."""
    from lrlib.core.tokens import count_tokens

    usage = result.usage or {}
    answers = result.extra.get("answers") or []
    targets = step.target_lines
    kept = set(result.kept)
    rows = [
        ("original tree", f"{result.tokens_before:,}", "o200k"),
        (
            "retriever prompt (as the endpoint counted it)",
            f"{usage.get('prompt_tokens') or 0:,}",
            f"{usage.get('model', '')} tokenizer",
        ),
        ("retriever answer", f"{sum(count_tokens(a) for a in answers):,}", "o200k"),
        ("reduced tree", f"{result.tokens_after:,}", "o200k"),
        ("token reduction", f"{result.reduction:.1%}", ""),
        ("target lines kept", f"{sum(t in kept for t in targets)}/{len(targets)}", ""),
        ("failure / fallback", str(result.failure or "none"), ""),
    ]
    lines = ["| | value | unit |", "|---|---:|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


# --- prompt ablations -------------------------------------------------------------------


def ablation_grid(
    variants: Iterable[str],
    history: Iterable[bool] = (True,),
    think: Iterable[bool] = (False,),
    answer: Iterable[str] = ("tags",),
) -> list[dict[str, Any]]:
    """Every combination of prompt variant and switches, each with a short ``config`` name.

    >>> [g["config"] for g in ablation_grid(["paper"], (True, False))]
    ['paper h+ t- tags', 'paper h- t- tags']
    """
    return [
        {
            "config": f"{p} h{'+' if h else '-'} t{'+' if t else '-'} {a}",
            "switches": f"history {'on' if h else 'off'}, think {'on' if t else 'off'}, {a}",
            "prompt": p,
            "history": h,
            "think": t,
            "answer": a,
        }
        for p, h, t, a in product(variants, history, think, answer)
    ]


def prompt_token_table(steps: Sequence[Step], grid: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Exact o200k prompt tokens of every configuration on every step (no model needed)."""
    import pandas as pd

    from lrlib.core.prompts import PromptOptions
    from lrlib.eval.costs import retriever_prompt_tokens

    frames = []
    for cfg in grid:
        options = PromptOptions(
            use_history=cfg["history"],
            think=cfg["think"],
            answer=cfg["answer"],
            view=RetrieverConfig().view,
        )
        t = retriever_prompt_tokens(steps, cfg["prompt"], options)
        frames.append(t.assign(**cfg).rename(columns={"retriever_prompt_tokens": "prompt_tokens"}))
    return pd.concat(frames, ignore_index=True)


@dataclass
class Ablation:
    """One summary row per configuration, the retriever model, and a note on coverage."""

    summary: pd.DataFrame
    model: str
    note: str


def ablation(
    steps: Sequence[Step], grid: Sequence[dict[str, Any]], strategy: str = "structure"
) -> Ablation:
    """Run :func:`run_lineretriever` for every configuration of ``grid`` and summarise each:
    reduction, target coverage, parse-failure and fallback rates, the endpoint's prompt and
    completion tokens. The measures are *paired*: computed on the steps answered in every
    configuration that has answers (``n_paired``), so configurations compare on the same
    steps; ``n_answered`` counts all of a configuration's answered steps."""
    import pandas as pd

    runs = []
    for cfg in grid:
        think = {"max_tokens": THINK_MAX_TOKENS} if cfg["think"] else {}
        runs.append(run_lineretriever(steps, cfg["prompt"], strategy, cfg["answer"],
                    label=f"lineretriever ({cfg['config']})", history=cfg["history"],
                    think=cfg["think"], **think))  # fmt: skip
    with_answers = [r for r in runs if r.n_answered]
    common = set.intersection(*(set(r.frame["step_id"]) for r in with_answers)) \
        if with_answers else set()  # fmt: skip
    rows = []
    for cfg, run in zip(grid, runs, strict=True):
        f = run.frame[run.frame["step_id"].isin(common)]
        rows.append({**cfg, "n_steps": run.n_steps, "n_answered": run.n_answered,
                     "n_paired": len(f), **_measures(f)})  # fmt: skip
    model = runs[0].model if runs else model_name()
    note = (
        f"retriever model {model}, {mode()}: {len(with_answers)} of {len(grid)} configurations "
        f"have answers (the others are skipped: no cached answer); measures are paired over "
        f"the {len(common)} steps answered in all of them"
    )
    return Ablation(pd.DataFrame(rows), model, note)


def _measures(f: pd.DataFrame) -> dict[str, float]:
    """Summary measures of one configuration's rows (NaN when there are none)."""
    from lrlib.eval.metrics import coverage

    if not len(f):
        keys = ("median_reduction", "coverage", "parse_failure_rate", "fallback_rate",
                "median_prompt_tokens", "median_completion_tokens")  # fmt: skip
        return dict.fromkeys(keys, float("nan"))
    fail = f["failure"].fillna("").astype(str)
    return {
        "median_reduction": float(f["reduction"].median()),
        "coverage": coverage(f)["coverage"],
        "parse_failure_rate": float(fail.str.startswith("parse:").mean()),
        "fallback_rate": float((fail != "").mean()),
        "median_prompt_tokens": float(f["usage_prompt_tokens"].median()),
        "median_completion_tokens": float(f["usage_completion_tokens"].median()),
    }
