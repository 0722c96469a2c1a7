"""LineRetriever in the notebooks: cached answers replayed offline, or a live endpoint.

Two modes, decided from the settings (:func:`offline`, :mod:`lrlib.settings`):

- **offline** (the default when no endpoint is configured, and in quick mode): the
  answers come from the response cache in ``data/cache`` and nothing else. A step without a
  cached answer is **skipped and counted** (:class:`lrlib.report.ablations.RetrieverRun` says how many), never sent
  to a model behind the user's back.
- **live**: ``OPENAI_BASE_URL`` and/or ``OPENAI_API_KEY`` (plus ``LRLIB_MODEL``) name an
  endpoint, or ``LRLIB_OFFLINE=0`` allows the embedded SmolLM2 to run: missing answers are
  asked for (concurrently) and cached, so the next run replays them. ``LRLIB_OFFLINE=1``
  forces replay even with an endpoint configured.

The retriever runs in :data:`lrlib.report.run.DEFAULT_CONFIG` (whose answers ship in the cache)
unless a notebook overrides an option; results always carry the model that produced them.

>>> from lrlib import settings
>>> with settings.override(offline=True):
...     offline(), mode()
(True, 'replayed from the response cache (offline)')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lrlib.core.step import Step
from lrlib.reducers.base import Reducer, Reduction
from lrlib.reducers.lineretriever import LineRetriever
from lrlib.settings import current

if TYPE_CHECKING:
    import pandas as pd

THINK_MAX_TOKENS = 384  # room for a <think> block when an ablation turns thinking on
NO_ANSWER = "offline:no_cached_answer"
EMPTY_COLUMNS = [
    "step_id",
    "reducer",
    "tokens_before",
    "tokens_after",
    "reduction",
    "reduction_chars",
    "reduction_lines",
    "target_status",
    "covered",
    "covered_visible",
    "episode_success",
    "latency_s",
    "failure",
    "usage_prompt_tokens",
    "usage_completion_tokens",
    "retriever_prompt_tokens",
    "retriever_output_tokens",
    "output_tokens",
]


def offline() -> bool:
    """True unless answers may be requested. ``LRLIB_OFFLINE=1``/``0`` decides when set;
    otherwise a quick run (``LRLIB_QUICK=1``) is offline, and a full run is live exactly
    when an endpoint is configured (``OPENAI_BASE_URL`` or ``OPENAI_API_KEY``).

    >>> from lrlib import settings
    >>> with settings.override(offline=False):
    ...     offline()
    False
    """
    env = current()
    if env.offline is not None:
        return env.offline
    if env.quick:
        return True
    return not _endpoint_set()


def _endpoint_set() -> bool:
    env = current()
    return bool(env.base_url or env.api_key)


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
    if reducer.split("+")[0] == "lineretriever":
        return f"{reducer} - retriever model {model_name()}, {mode()}"
    return reducer


def lineretriever(
    prompt: str | None = None, strategy: str = "structure", answer: str = "tags", **overrides: Any
) -> LineRetriever:
    """LineRetriever in the notebooks' configuration (``run.DEFAULT_CONFIG``), offline or
    live as :func:`offline` decides; ``overrides`` change any reducer option. With an
    endpoint configured the model is the one it names (``LRLIB_MODEL``), not the pinned
    embedded model whose answers ship in the cache.

    >>> lineretriever(strategy="remove").params["strategy"]
    'remove'
    """
    from lrlib.report.run import DEFAULT_CONFIG

    config = DEFAULT_CONFIG.replace(answer=answer, strategy=strategy)
    if prompt is not None:
        config = config.replace(prompt=prompt)
    if _endpoint_set():
        config = config.replace(model=model_name())
    return LineRetriever(config, **{"offline": offline(), **overrides})


def default_steps(limit: int | None = None) -> list[Step]:
    """The fixed default selection of validation steps (``lrlib.report.run.default_steps``), whose
    answers ship in the cache; the first ``limit`` of them if given."""
    from lrlib.report.run import DEFAULT_N_STEPS
    from lrlib.report.run import default_steps as chosen

    return chosen(n=limit if limit is not None else DEFAULT_N_STEPS)


def has_answers(reducer: Reducer, step: Step) -> bool:
    """True when the cache holds every answer ``reducer`` needs for ``step`` (no network):
    :meth:`~lrlib.reducers.base.Reducer.cached_steps` of one step."""
    return reducer.cached_steps([step])[0]


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


def ready_steps(reducer: Reducer, steps: Sequence[Step]) -> list[Step]:
    """The steps ``reducer`` can reduce without running a model: everything for plain
    reducers; cached answers for LineRetriever; cached vectors for embedding retrieval.
    Live (not :func:`offline`), every step."""
    if not offline():
        return list(steps)
    return [s for s, ok in zip(steps, reducer.cached_steps(steps), strict=True) if ok]


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
    """:func:`lrlib.eval.evaluation.sweep` over each reducer's default knob values
    (``evaluation.KNOBS``), on the steps it can reduce without a model; notes as for
    :func:`evaluate_cached`. Each row carries ``n_steps``."""
    import pandas as pd

    from lrlib.eval.evaluation import KNOBS, resolve, sweep

    frames, notes = [], []
    for spec in specs:
        knob, values = KNOBS[spec]
        ready = ready_steps(resolve([spec])[spec], steps)
        if len(ready) < len(steps):
            notes.append(f"{spec} curve: {len(ready)} of {len(steps)} steps (others not cached)")
        if ready:
            frames.append(sweep(spec, knob, values, ready, progress=False))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), notes
