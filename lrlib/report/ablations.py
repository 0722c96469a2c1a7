"""LineRetriever runs and prompt ablations in the notebooks, on top of the replay of
:mod:`lrlib.report.replay` (cached answers offline, or a live endpoint):
:func:`run_lineretriever` (a :class:`RetrieverRun` that counts what it skipped), the
ablation grid and its prompt tokens, and one step's token summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any

from lrlib.core.step import Step
from lrlib.reducers.base import Output, Reducer, Reduction
from lrlib.reducers.lineretriever import LineRetriever
from lrlib.report.replay import (
    EMPTY_COLUMNS,
    THINK_MAX_TOKENS,
    has_answers,
    lineretriever,
    mode,
    model_name,
    offline,
)

if TYPE_CHECKING:
    import pandas as pd


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

    def failures(self) -> Counter:
        """Fallbacks of the failure policy among the answered steps, by reason."""
        return Counter(f for f in self.frame.get("failure", []) if isinstance(f, str) and f)

    def median_output_tokens(self, default: float) -> float:
        """Median o200k tokens the retriever wrote per step (``default`` with no answers)."""
        values = self.frame["retriever_output_tokens"].dropna()
        return float(values.median()) if len(values) else float(default)

    def note(self) -> str:
        """One line: model, mode, steps answered / skipped / fallen back."""
        fails = self.failures()
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
    strategy: str = "structure",
    answer: str = "tags",
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

    reducer = _Kept(lineretriever(prompt, strategy, answer, **overrides))
    label = label or f"lineretriever+{strategy}/{answer}"
    if offline():
        ready = [s for s in steps if has_answers(reducer.inner, s)]
    else:
        results = reducer.inner.reduce_many(list(steps), errors="raise")
        reducer.results.update((r.step_id, r) for r in results)  # type: ignore[union-attr]
        ready = list(steps)
    ready_ids = {s.step_id for s in ready}
    skipped = [s.step_id for s in steps if s.step_id not in ready_ids]
    frame = (
        evaluate({label: reducer}, ready, progress=False)
        if ready
        else pd.DataFrame(columns=EMPTY_COLUMNS)
    )
    if ready:
        prompt_tokens, output_tokens = [], []
        for step in ready:  # the results evaluate() got: no second reduction
            result = reducer.results[step.step_id]
            windows = result.extra.get("windows") or [[1, len(step.axtree)]]
            prompt_tokens.append(
                sum(chat_tokens(reducer.inner.messages(step, (a, b))) for a, b in windows)
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
        super().__init__(inner.encoding)
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.results: dict[str, Reduction] = {}

    @property
    def params(self) -> dict[str, Any]:
        """The retriever's parameters."""
        return self.inner.params

    def select(self, step: Step) -> Output:
        """The retriever's :meth:`~LineRetriever.select`."""
        return self.inner.select(step)

    def reduce(self, step: Step) -> Reduction:
        """The kept result of ``step``, else the retriever's (then kept)."""
        if step.step_id not in self.results:
            self.results[step.step_id] = self.inner.reduce(step)
        return self.results[step.step_id]


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
    grid = []
    for p, h, t, a in product(variants, history, think, answer):
        grid.append(
            {
                "config": f"{p} h{'+' if h else '-'} t{'+' if t else '-'} {a}",
                "switches": f"history {'on' if h else 'off'}, think {'on' if t else 'off'}, {a}",
                "prompt": p,
                "history": h,
                "think": t,
                "answer": a,
            }
        )
    return grid


def _options(cfg: dict[str, Any]) -> dict[str, Any]:
    extra = {"max_tokens": THINK_MAX_TOKENS} if cfg["think"] else {}
    return {"history": cfg["history"], "think": cfg["think"], **extra}


def prompt_token_table(steps: Sequence[Step], grid: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Exact o200k prompt tokens of every configuration on every step (no model needed)."""
    import pandas as pd

    from lrlib.core.prompts import PromptOptions
    from lrlib.eval.costs import retriever_prompt_tokens
    from lrlib.report.run import DEFAULT_CONFIG

    frames = []
    for cfg in grid:
        options = PromptOptions(
            use_history=cfg["history"],
            think=cfg["think"],
            answer=cfg["answer"],
            view=DEFAULT_CONFIG.view,
        )
        t = retriever_prompt_tokens(steps, cfg["prompt"], options)
        frames.append(t.assign(**cfg).rename(columns={"retriever_prompt_tokens": "prompt_tokens"}))
    return pd.concat(frames, ignore_index=True)


@dataclass
class Ablation:
    """One summary row per configuration, the per-step frames, and a note on coverage."""

    summary: pd.DataFrame
    frames: dict[str, pd.DataFrame]
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

    runs = [
        run_lineretriever(steps, cfg["prompt"], strategy, cfg["answer"],
                          label=f"lineretriever ({cfg['config']})", **_options(cfg))
        for cfg in grid
    ]  # fmt: skip
    with_answers = [r for r in runs if r.n_answered]
    common = set.intersection(*(set(r.frame["step_id"]) for r in with_answers)) \
        if with_answers else set()  # fmt: skip
    rows, frames = [], {}
    for cfg, run in zip(grid, runs, strict=True):
        frames[cfg["config"]] = run.frame
        f = run.frame[run.frame["step_id"].isin(common)]
        rows.append({**cfg, "n_steps": run.n_steps, "n_answered": run.n_answered,
                     "n_paired": len(f), **_measures(f)})  # fmt: skip
    model = runs[0].model if runs else model_name()
    note = (
        f"retriever model {model}, {mode()}: {len(with_answers)} of {len(grid)} configurations "
        f"have answers (the others are skipped: no cached answer); measures are paired over "
        f"the {len(common)} steps answered in all of them"
    )
    return Ablation(pd.DataFrame(rows), frames, model, note)


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
