"""``lrlib run``: LineRetriever over the dataset or the pinned default steps, with a progress
bar, cached and resumable; it says first what it will compute (:func:`plan`).

Every answer is cached (:mod:`lrlib.llm.cache`) as soon as it arrives, so an interrupted run
resumes where it stopped: a rerun replays the answers it already has and asks only for the
rest; ``--offline`` replays without any model. The result is a tidy table (one row per
step, CSV) with a ``.provenance.json`` beside it (lrlib version, git commit, time, the
configuration and the model).

The notebooks use the shipped default configuration, ``RetrieverConfig()`` (the one
everything starts from), over a fixed selection of steps, :func:`default_steps`; the
answers of the embedded model (SmolLM2-135M-Instruct, Q4_1 GGUF) for both answer modes
ship in ``data/cache/llm``, so they replay instantly:

>>> RetrieverConfig().prompt, RetrieverConfig().view, DEFAULT_ANSWERS
('paper', 'compact', ('tags', 'json'))

``default_results()`` returns that run as a DataFrame (one row per step and answer mode).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lrlib import paths
from lrlib.core.pruning import STRATEGIES
from lrlib.core.step import Step
from lrlib.llm.errors import CacheMissError
from lrlib.reducers.base import Reduction
from lrlib.reducers.lineretriever import LineRetriever, RetrieverConfig, each

__all__ = [
    "DEFAULT_ANSWERS",
    "DEFAULT_SPLIT",
    "DEFAULT_N_STEPS",
    "TICK_SECONDS",
    "default_steps",
    "default_results",
    "result_row",
    "run_steps",
    "write_table",
    "add_arguments",
    "EMBEDDED_SECONDS_PER_ANSWER",
    "plan",
    "model_time",
    "duration",
    "run",
]

# the answer modes whose answers of the embedded model ship (RetrieverConfig() is "json")
DEFAULT_ANSWERS = ("tags", "json")
DEFAULT_SPLIT = "validation"
DEFAULT_N_STEPS = 40
TICK_SECONDS = 1.0  # how often the progress bar of a run redraws while answers are awaited


def default_steps(n: int | None = DEFAULT_N_STEPS, split: str | None = DEFAULT_SPLIT) -> list[Step]:
    """The fixed step selection of the notebooks, whose answers ship in ``data/cache/llm``
    (the first ``n`` of them; None: :data:`DEFAULT_N_STEPS`).

    On the shipped dataset: the ``n`` steps pinned by id in ``run_steps.json`` (the first 40
    of the validation split, in ``step_id`` order, whose prompt fits the embedded model's
    context in both answer modes, chosen before the test split existed; some now belong to
    the test split, which is fine: LineRetriever is not tuned on any split). On another
    dataset (``LRLIB_DATA_DIR``), or with another ``split``, the same rule picks them afresh.

    >>> [s.step_id for s in default_steps(2)] == sorted(s.step_id for s in default_steps(2))
    True
    """
    from lrlib.data.dataset import load_steps
    from lrlib.llm.errors import CONTEXT_TOKENS

    n = DEFAULT_N_STEPS if n is None else n
    every = {s.step_id: s for s in load_steps()}
    pinned = json.loads(Path(__file__).with_name("run_steps.json").read_text())["default"]
    if split == DEFAULT_SPLIT and n <= len(pinned) and all(i in every for i in pinned[:n]):
        return [every[i] for i in pinned[:n]]
    probes = [
        LineRetriever(RetrieverConfig(answer=a), cache=False, context_tokens=CONTEXT_TOKENS)
        for a in DEFAULT_ANSWERS
    ]
    chosen = []
    for step in sorted(load_steps(split=split), key=lambda s: s.step_id):
        if all(r.fits(step) for r in probes):
            chosen.append(step)
            if len(chosen) == n:
                break
    return chosen


def default_results(offline: bool | None = True, **overrides: Any) -> Any:
    """The notebooks' run as a tidy DataFrame: ``RetrieverConfig()`` in both answer modes
    over :func:`default_steps`, replayed from the shipped cache (``offline=False`` lets a
    missing answer be computed by the model; None: as :func:`lrlib.settings.offline_reason`
    decides; ``overrides`` e.g. ``strategy="remove"``, which needs no new answers).
    """
    import pandas as pd

    steps = default_steps()
    reducers = [
        LineRetriever(RetrieverConfig(answer=a), offline=offline, **overrides)
        for a in DEFAULT_ANSWERS
    ]
    return pd.DataFrame(run_steps(steps, reducers, progress=False))


def result_row(step: Step, r: Reduction) -> dict[str, Any]:
    """One tidy row: the step, the configuration, the outcome, the model's usage."""
    usage = r.usage or {}
    targets = step.target_lines
    kept = set(r.kept)
    return {
        "step_id": r.step_id,
        "benchmark": step.meta.get("benchmark"),
        "split": step.meta.get("split"),
        "reducer": r.reducer,
        "prompt": r.params.get("prompt"),
        "prompt_hash": r.params.get("prompt_hash"),
        "view": r.params.get("view"),
        "answer": r.params.get("answer"),
        "think": r.params.get("think"),
        "strategy": r.params.get("strategy"),
        "model": usage.get("model", r.params.get("model")),
        "served_model": usage.get("served_model"),
        "endpoint": usage.get("endpoint", r.params.get("endpoint")),
        "n_lines": len(step.axtree),
        "kept_lines": len(r.kept),
        "stub_lines": len(r.stubs),
        "tokens_before": r.tokens_before,
        "tokens_after": r.tokens_after,
        "reduction": round(r.reduction, 6),
        "n_targets": len(targets),
        "targets_kept": all(t in kept for t in targets) if targets else None,
        "failure": r.failure,
        "n_windows": len(r.extra.get("windows") or []),
        "calls": usage.get("calls"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cached_tokens": usage.get("cached_tokens"),
        "llm_latency_s": usage.get("llm_latency_s"),
        "latency_s": round(r.latency_s, 4),
        "from_cache": usage.get("from_cache"),
        "selection": json.dumps(r.extra.get("selection")),
        "answers": json.dumps(r.extra.get("answers"), ensure_ascii=False),
    }


def run_steps(
    steps: Sequence[Step], reducers: Sequence[Any], *, progress: bool = True
) -> list[dict[str, Any]]:
    """Reduce every step with every reducer, through the cache; return the tidy rows.

    Steps run concurrently (bounded by the client's ``concurrency``); the reducers of one
    step run one after the other, so a local server reuses the prompt they share. The
    first error is raised after every other step finished (their answers are cached).
    The progress bar ticks every second while answers are awaited (elapsed time, how many
    are being waited on), so a slow model never looks like a hung command.
    """
    from tqdm.auto import tqdm

    waiting = [0]
    lock = threading.Lock()

    def one(step: Step) -> list[dict[str, Any]]:
        rows = []
        for reducer in reducers:
            with lock:
                waiting[0] += 1
            try:
                rows.append(result_row(step, reducer.reduce(step)))
            finally:
                with lock:
                    waiting[0] -= 1
                    bar.set_postfix_str(f"waiting on {waiting[0]}", refresh=False)
                    bar.update(1)
        return rows

    def tick(stop: threading.Event) -> None:
        while not stop.wait(TICK_SECONDS):
            with lock:
                bar.set_postfix_str(f"waiting on {waiting[0]}", refresh=False)
                bar.refresh()

    with tqdm(
        total=len(steps) * len(reducers),
        desc=LineRetriever.name,
        unit="answer",
        disable=not progress,
    ) as bar:
        stop = threading.Event()
        ticker = threading.Thread(target=tick, args=(stop,), daemon=True)
        if progress:
            ticker.start()
        try:  # no more steps open than requests in flight
            results = each(one, list(steps), reducers[0].client.parallel)
        finally:
            stop.set()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return [row for i in range(len(reducers)) for rows in results for row in rows[i : i + 1]]


def write_table(rows: Iterable[dict[str, Any]], out: str | Path, **provenance: Any) -> Path:
    """Write ``rows`` as CSV (atomically; gzipped when ``out`` ends in ``.gz``) and
    ``<out>.provenance.json`` beside it.

    >>> import gzip, tempfile
    >>> p = write_table([{"a": 1}], Path(tempfile.mkdtemp()) / "t.csv.gz", model="m")
    >>> gzip.decompress(p.read_bytes()), p.with_name("t.csv.gz.provenance.json").is_file()
    (b'a\\n1\\n', True)
    """
    import pandas as pd

    from lrlib.runinfo import provenance as make_provenance

    out = Path(out)
    with paths.atomic_write(out) as f:
        gz = "gzip" if out.name.endswith(".gz") else None  # a handle hides the suffix
        pd.DataFrame(list(rows)).to_csv(f, index=False, encoding="utf-8", compression=gz)
    meta = json.dumps(make_provenance(**provenance), indent=2, default=str)
    with paths.atomic_write(out.with_name(out.name + ".provenance.json")) as f:
        f.write((meta + "\n").encode("utf-8"))
    return out


# --- the command -----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lrlib run``."""
    d = RetrieverConfig()
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
        default=d.answer,
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
    cfg.add_argument("--strategy", default=d.strategy, choices=STRATEGIES, help="pruning")
    cfg.add_argument(
        "--on-failure",
        default=d.on_failure,
        help="what a failed step keeps: full, truncate (with --budget), closed (no page, one "
        "notice line) or fallback:<reducer> (e.g. fallback:program)",
    )
    cfg.add_argument(
        "--budget", type=int, default=d.budget, help="tokens, for --on-failure truncate"
    )
    cfg.add_argument(
        "--min-lines", type=int, default=d.min_lines, help="fewer selected lines: a failure"
    )
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
    llm.add_argument(
        "--offline",
        action="store_const",
        const=True,
        default=None,
        help="answers from the cache only (the default without an endpoint or LRLIB_OFFLINE=0)",
    )
    llm.add_argument(
        "--refresh", action="store_true", help="ask again; new answers shadow the cached ones"
    )
    llm.add_argument(
        "--cache-dir",
        default=None,
        help="write answers here (default: .lrlib/cache/llm, reading data/cache/llm too)",
    )
    parser.add_argument(
        "-o",
        "--out",
        default=None,
        help="results CSV, .csv or .csv.gz (default .lrlib/results/lineretriever.csv)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_user_files(parser)  # --prompts my_prompts.py: --prompt then lists its variants too


def _steps(args: argparse.Namespace) -> list[Step]:
    """The selected steps, chosen once (``plan`` and ``run`` share them)."""
    if getattr(args, "steps", None) is not None:
        return args.steps
    pinned = not hasattr(args, "split")  # no --split: every step, or the pinned selection
    args.split = getattr(args, "split", None)
    if args.default_steps:
        if args.benchmark:
            raise ValueError("--default-steps takes no --benchmark (they are a fixed selection)")
        # pinned: the selection whose answers ship; with --split the same rule picks afresh
        steps = default_steps() if pinned else default_steps(args.limit, args.split)
    else:
        from lrlib.data.dataset import load_steps

        steps = sorted(
            load_steps(split=args.split, benchmark=args.benchmark), key=lambda s: s.step_id
        )
    args.steps = steps[: args.limit]
    return args.steps


# seconds per uncached answer of the embedded SmolLM2 on 2 cores: 43-68 s measured (README, "Your own model");
# 100 s and more while other jobs load the machine
EMBEDDED_SECONDS_PER_ANSWER = 45


def plan(args: argparse.Namespace) -> str:
    """One line, before any work: what ``lrlib run`` will compute, how many answers are
    already cached (replayed at once) and how many the model must give, and roughly how
    long that takes. Checks the endpoint and the options first."""
    if args.out and not str(args.out).endswith((".csv", ".csv.gz")):
        raise ValueError(f"-o {args.out}: lrlib run writes a .csv or .csv.gz table")
    steps, reducers = _steps(args), _reducers(args)
    client = reducers[0].client
    endpoint = client.endpoint
    n, modes = len(steps), len(reducers)
    cached = sum(sum(r.cached_steps(steps)) for r in reducers)
    new = n * modes - cached
    where = "cache only" if client.offline else f"{endpoint.model} ({endpoint.kind})"
    line = f"{n} steps x {modes} answer format(s) = {n * modes} answers from {where}"
    if client.offline:
        if not new:
            return line + f": all {cached} cached, replayed at once; no model is asked"
        return line + (
            f": {cached} cached; {new} are not, and no model may be asked "
            f"({client.offline_reason}): set OPENAI_BASE_URL (an endpoint) or LRLIB_OFFLINE=0 "
            "(the embedded model) to ask one"
        )
    if not new:
        return line + f": all {cached} cached, replayed at once; no model is asked"
    line += f": {cached} cached (replayed at once), {new} to ask the model"
    skip = "--offline (cached answers only)" + (", or no --refresh" if args.refresh else "")
    return f"{line}, {model_time(client, new)}; to skip the model: {skip}"


def model_time(client: Any, answers: int) -> str:
    """How long ``answers`` new answers from ``client``'s model take, in words: for the
    embedded model, from its speed measured on this machine (prefill and decoding tokens/s,
    :func:`lrlib.plugins.local_speed`) or, before the first measurement, a typical figure;
    the endpoint's own time otherwise.

    >>> from lrlib.llm.client import LLMClient
    >>> "s an answer" in model_time(LLMClient(cache=False), 4)
    True
    """
    endpoint = client.endpoint
    if endpoint.kind == "embedded" and endpoint.base_url is None:
        from lrlib import plugins

        speed = plugins.local_speed()
        if not speed:  # the server's slots share the cores: answers take turns
            return (
                f"~{duration(answers * EMBEDDED_SECONDS_PER_ANSWER)} "
                f"(~{EMBEDDED_SECONDS_PER_ANSWER} s an answer on 2 idle cores; its speed here "
                "is measured when it starts)"
            )
        return (
            f"~{duration(answers * speed['answer_s'])} (~{speed['answer_s']:.0f} s an answer: "
            f"prefill {speed['prefill_tps']:.0f} tokens/s ({_threads(speed['batch_threads'])}), "
            f"decoding {speed['decode_tps']:.1f} tokens/s ({_threads(speed['threads'])}), "
            f"measured here {_ago(speed.get('at'))})"
        )
    return "in the endpoint's time"


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n > 1 else ''}"


def _ago(at: Any) -> str:
    """``"5 min ago"`` for an epoch time.

    >>> import time
    >>> _ago(time.time() - 300)
    '5 min ago'
    """
    import time

    return f"{duration(max(0.0, time.time() - float(at or 0)))} ago"


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

    answers = list(DEFAULT_ANSWERS) if args.answer == "both" else [args.answer]
    cache = ResponseCache(args.cache_dir, refresh=args.refresh) if args.cache_dir else True
    given = vars(args)  # the options named as their client or configuration field
    sampling = ("max_tokens", "temperature", "seed", "concurrency", "timeout", "max_retries")
    client = LLMClient(
        args.model,
        args.base_url,
        context_tokens=args.context,
        cache=cache,
        **{k: given[k] for k in (*sampling, "offline", "refresh")},
    )
    fields = ("prompt", "view", "think", "history", "strategy", "on_failure", "budget", "min_lines")
    config = RetrieverConfig(max_ranges=args.max_ranges or None, **{k: given[k] for k in fields})
    args.retrievers = [
        LineRetriever(config.replace(answer=answer), client=client) for answer in answers
    ]
    return args.retrievers


def run(args: argparse.Namespace) -> int:
    """Run the retriever over the selected steps (each answer mode); write one table."""
    from lrlib.llm.client import LLMError

    steps, reducers = _steps(args), _reducers(args)
    answers = [r.params["answer"] for r in reducers]
    try:
        rows = run_steps(steps, reducers, progress=not args.no_progress)
    except CacheMissError as exc:  # offline: one line, saying how to go live
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except LLMError as exc:
        print(f"error: {exc}\nanswers received so far are cached: rerun to resume", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out else paths.results_dir() / f"{LineRetriever.name}.csv"
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
