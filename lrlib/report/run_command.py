"""``lrlib run``: LineRetriever over the dataset or the pinned default steps, cached and
resumable; says first what it will compute (:func:`plan`), then writes the table with its
provenance (:func:`lrlib.report.run.run_steps`, :func:`lrlib.report.run.write_table`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lrlib import paths
from lrlib.core.pruning import STRATEGIES
from lrlib.core.step import Step
from lrlib.report.run import (
    DEFAULT_ANSWER,
    DEFAULT_ANSWERS,
    DEFAULT_CONFIG,
    DEFAULT_N_STEPS,
    DEFAULT_SPLIT,
    default_steps,
    run_steps,
    write_table,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lrlib run``."""
    d = DEFAULT_CONFIG
    sel = parser.add_argument_group("steps")
    sel.add_argument(
        "--default-steps",
        action="store_true",
        help=f"the notebooks' {DEFAULT_N_STEPS} {DEFAULT_SPLIT} steps (default_steps())",
    )
    from lrlib.core.prompts import list_prompts
    from lrlib.core.pruning import list_views
    from lrlib.eval.evaluation import add_user_files, count_arg, split_arg

    sel.add_argument(
        "--split",
        default=argparse.SUPPRESS,  # absent: every step, or the pinned --default-steps
        type=split_arg,
        help="train, validation, test or all (default: all; with --default-steps, the same "
        "rule picks that split's steps)",
    )
    sel.add_argument("--benchmark", default=None, help="workarena or webarena")
    sel.add_argument(
        "--limit",
        type=count_arg,
        default=None,
        help="first N steps (by step_id; with --default-steps, the first N of them)",
    )
    cfg = parser.add_argument_group("retriever")
    cfg.add_argument("--prompt", default=d.prompt, choices=list_prompts(), help="prompt variant")
    cfg.add_argument("--view", default=d.view, choices=list_views(), help="retriever view")
    cfg.add_argument(
        "--answer",
        default=DEFAULT_ANSWER,
        choices=["tags", "json", "both"],
        help="json: structured output under a schema (OpenAI, vLLM, llama.cpp, the embedded "
        "model); tags: free text with <answer> tags, for endpoints without structured output",
    )
    cfg.add_argument(
        "--think", action=argparse.BooleanOptionalAction, default=d.think, help="reasoning"
    )
    cfg.add_argument(
        "--history", action=argparse.BooleanOptionalAction, default=d.history, help="actions"
    )
    cfg.add_argument("--strategy", default="structure", choices=STRATEGIES, help="pruning")
    cfg.add_argument(
        "--on-failure",
        default="full",
        help="what a failed step keeps: full, truncate (with --budget), closed (no page, one "
        "notice line) or fallback:<reducer> (e.g. fallback:program)",
    )
    cfg.add_argument("--budget", type=int, default=None, help="tokens, for --on-failure truncate")
    cfg.add_argument("--min-lines", type=int, default=3, help="fewer selected lines: a failure")
    cfg.add_argument(
        "--max-ranges",
        type=int,
        default=d.max_ranges,
        help="structured mode: bound the schema to N ranges (0: the prompt's)",
    )
    llm = parser.add_argument_group("model (default: the embedded SmolLM2-135M-Instruct)")
    llm.add_argument("--model", default=None, help="model name (or LRLIB_MODEL; default SmolLM2)")
    llm.add_argument("--base-url", default=None, help="OpenAI-compatible URL (or OPENAI_BASE_URL)")
    llm.add_argument("--max-tokens", type=int, default=d.max_tokens, help="answer length")
    llm.add_argument("--temperature", type=float, default=d.temperature, help="sampling")
    llm.add_argument("--seed", type=int, default=d.seed, help="sampling seed")
    llm.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    llm.add_argument("--timeout", type=float, default=None, help="seconds per attempt")
    llm.add_argument("--max-retries", type=int, default=4, help="retries on 429/5xx/timeouts")
    llm.add_argument("--context", type=int, default=None, help="model context in tokens")
    llm.add_argument("--offline", action="store_true", help="answers from the cache only")
    llm.add_argument(
        "--refresh", action="store_true", help="ask again; new answers shadow the cached ones"
    )
    llm.add_argument(
        "--cache-dir",
        default=None,
        help="write answers here (default: .lrlib/cache/llm, reading data/cache/llm too)",
    )
    parser.add_argument(
        "-o", "--out", default=None, help="results CSV (default .lrlib/results/lineretriever.csv)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_user_files(parser)  # --prompts my_prompts.py: --prompt then lists its variants too


def _select_steps(args: argparse.Namespace) -> list[Step]:
    if getattr(args, "steps", None) is not None:
        return args.steps
    args.steps = _choose_steps(args)
    return args.steps


def _choose_steps(args: argparse.Namespace) -> list[Step]:
    if args.default_steps:
        if args.benchmark:
            raise ValueError("--default-steps takes no --benchmark (they are a fixed selection)")
        if not hasattr(args, "split"):
            args.split = None
            return default_steps()[: args.limit]  # the pinned selection, cached answers ship
        return default_steps(args.limit or DEFAULT_N_STEPS, split=args.split)  # type: ignore[arg-type]
    args.split = getattr(args, "split", None)
    from lrlib.data.dataset import load_steps

    steps = sorted(load_steps(split=args.split, benchmark=args.benchmark), key=lambda s: s.step_id)
    return steps[: args.limit] if args.limit is not None else steps


# seconds per uncached answer of the embedded SmolLM2 on 2 cores: 43-68 s measured (README, "Your own model");
# 100 s and more while other jobs load the machine
EMBEDDED_SECONDS_PER_ANSWER = 45


def plan(args: argparse.Namespace) -> str:
    """One line, before any work: what ``lrlib run`` will compute, how many answers are
    already cached (replayed at once) and how many the model must give, and roughly how
    long that takes. Checks the endpoint and the options first."""
    from lrlib.report.replay import has_answers

    steps, reducers = _select_steps(args), _reducers(args)
    client = reducers[0].client
    endpoint = client.endpoint
    n, modes = len(steps), len(reducers)
    cached = sum(has_answers(r, s) for r in reducers for s in steps)
    new = n * modes - cached
    where = "cache only" if args.offline else f"{endpoint.model} ({endpoint.kind})"
    line = f"{n} steps x {modes} answer format(s) = {n * modes} answers from {where}"
    if args.offline:
        return line + f": {cached} cached; the other {new} fall back to the full tree"
    if not new:
        return line + f": all {cached} cached, replayed at once; no model is asked"
    line += f": {cached} cached (replayed at once), {new} to ask the model"
    return f"{line}, {model_time(client, new)}"


def model_time(client: Any, answers: int) -> str:
    """How long ``answers`` new answers from ``client``'s model take, in words: an estimate
    for the embedded model on this machine, the endpoint's own time otherwise.

    >>> from lrlib.llm.client import LLMClient
    >>> model_time(LLMClient(cache=False), 4)
    '~3 min on 2 idle cores (~45 s an answer; longer on a busy machine)'
    """
    endpoint = client.endpoint
    if endpoint.kind == "embedded" and endpoint.base_url is None:
        # the server's slots share the cores: answers take turns
        total = duration(answers * EMBEDDED_SECONDS_PER_ANSWER)
        return (
            f"~{total} on 2 idle cores (~{EMBEDDED_SECONDS_PER_ANSWER} s an answer; longer on a "
            "busy machine)"
        )
    return "in the endpoint's time"


def duration(seconds: float) -> str:
    """``"40 s"``, ``"3 min"`` or ``"9.8 h"``.

    >>> duration(40), duration(200), duration(35100)
    ('40 s', '3 min', '9.8 h')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


def _reducers(args: argparse.Namespace) -> list[Any]:
    """The LineRetriever of each answer mode, sharing one client (built once; a bad option
    or endpoint fails here, before the plan line)."""
    if getattr(args, "retrievers", None) is not None:
        return args.retrievers
    from lrlib.llm.cache import ResponseCache
    from lrlib.llm.client import LLMClient
    from lrlib.reducers.lineretriever import LineRetriever

    answers = list(DEFAULT_ANSWERS) if args.answer == "both" else [args.answer]
    cache = ResponseCache(args.cache_dir, refresh=args.refresh) if args.cache_dir else True
    client = LLMClient(
        args.model,
        args.base_url,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        seed=args.seed,
        concurrency=args.concurrency,
        timeout=args.timeout,
        max_retries=args.max_retries,
        context_tokens=args.context,
        offline=args.offline,
        refresh=args.refresh,
        cache=cache,
    )
    config = DEFAULT_CONFIG.replace(
        prompt=args.prompt,
        view=args.view,
        think=args.think,
        history=args.history,
        strategy=args.strategy,
        on_failure=args.on_failure,
        budget=args.budget,
        min_lines=args.min_lines,
        max_ranges=args.max_ranges or None,
    )
    args.retrievers = [
        LineRetriever(config.replace(answer=answer), client=client) for answer in answers
    ]
    return args.retrievers


def run(args: argparse.Namespace) -> int:
    """Run the retriever over the selected steps (each answer mode); write one table."""
    from lrlib.llm.client import LLMError

    steps, reducers = _select_steps(args), _reducers(args)
    answers = [r.params["answer"] for r in reducers]
    try:
        rows = run_steps(steps, reducers, progress=not args.no_progress)
    except LLMError as exc:
        print(f"error: {exc}\nanswers received so far are cached: rerun to resume", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out else paths.results_dir() / "lineretriever.csv"
    params = {k: v for k, v in reducers[0].params.items() if k not in ("answer", "prompt_hash")}
    write_table(
        rows,
        out,
        **params,
        answers=answers,
        prompt_hashes={r.params["answer"]: r.params["prompt_hash"] for r in reducers},
        n_steps=len(steps),
        steps={
            "default_steps": args.default_steps,
            "split": args.split,
            "benchmark": args.benchmark,
            "limit": args.limit,
        },
    )
    _summary(rows, out)
    return 0


def _summary(rows: list[dict[str, Any]], out: Path) -> None:
    print(f"wrote {out} ({len(rows)} rows)")
    for answer in dict.fromkeys(r["answer"] for r in rows):
        part = [r for r in rows if r["answer"] == answer]
        failed = sum(1 for r in part if r["failure"])
        cached = sum(1 for r in part if r["from_cache"])
        print(
            f"  {answer}: {len(part)} steps, model {part[0]['model']}, {failed} fallbacks "
            f"({failed / len(part):.0%}), {cached} replayed from the cache"
        )
