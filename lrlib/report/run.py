"""``lrlib run``: LineRetriever over the dataset, with a progress bar, cached and resumable.

Every answer is cached (:mod:`lrlib.llm.cache`) as soon as it arrives, so an interrupted run
resumes where it stopped: a rerun replays the answers it already has and asks only for the
rest; ``--offline`` replays without any model. The result is a tidy table (one row per
step, CSV) with a ``.provenance.json`` beside it (lrlib version, git commit, time, the
configuration and the model).

The notebooks use a fixed configuration, :data:`DEFAULT_CONFIG`, over a fixed selection of
steps, :func:`default_steps`; the answers of the embedded model (SmolLM2-135M-Instruct,
Q4_1 GGUF) for both answer modes ship in ``data/cache/llm``, so they replay instantly:

>>> DEFAULT_CONFIG.prompt, DEFAULT_CONFIG.view, DEFAULT_ANSWERS
('paper', 'compact', ('tags', 'json'))

``default_results()`` returns that run as a DataFrame (one row per step and answer mode).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lrlib import paths
from lrlib.core.step import Step
from lrlib.reducers.base import Reduction
from lrlib.reducers.lineretriever import LineRetriever, RetrieverConfig, each

# the configuration whose answers of the embedded model ship in data/cache/llm
DEFAULT_CONFIG = RetrieverConfig(
    prompt="paper",
    view="compact",
    think=False,  # SmolLM2 generates ~26 tokens/s on 2 cores: no free-form reasoning
    history=True,
    max_tokens=128,
    max_ranges=6,  # structured mode: a bounded schema, so SmolLM2 closes its JSON
    temperature=0.0,
    seed=0,
    model="SmolLM2-135M-Instruct.Q4_1",  # pinned: the notebooks never call another model
)
DEFAULT_ANSWERS = ("tags", "json")
DEFAULT_ANSWER = "json"  # structured output: the embedded model closes it, tags it does not
DEFAULT_SPLIT = "validation"
DEFAULT_N_STEPS = 40
TICK_SECONDS = 1.0  # how often the progress bar of a run redraws while answers are awaited


def default_reducer(answer: str = "tags", **overrides: Any) -> LineRetriever:
    """LineRetriever in :data:`DEFAULT_CONFIG` (``overrides`` change any option, e.g.
    ``offline=True`` to refuse to run a model, or ``strategy="remove"``; a ``client``
    brings its own model and sampling).

    >>> default_reducer("json", cache=False).params["answer"]
    'json'
    """
    return LineRetriever(DEFAULT_CONFIG.replace(answer=answer), **overrides)


def default_steps(n: int = DEFAULT_N_STEPS, split: str = DEFAULT_SPLIT) -> list[Step]:
    """The fixed step selection of the notebooks, whose answers ship in ``data/cache/llm``.

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

    every = {s.step_id: s for s in load_steps()}
    pinned = json.loads(Path(__file__).with_name("run_steps.json").read_text())["default"]
    if split == DEFAULT_SPLIT and n <= len(pinned) and all(i in every for i in pinned[:n]):
        return [every[i] for i in pinned[:n]]
    probes = [
        default_reducer(a, cache=False, context_tokens=CONTEXT_TOKENS) for a in DEFAULT_ANSWERS
    ]
    chosen = []
    for step in sorted(load_steps(split=split), key=lambda s: s.step_id):
        if all(r.fits(step) for r in probes):
            chosen.append(step)
            if len(chosen) == n:
                break
    return chosen


def default_results(offline: bool = True, **overrides: Any) -> Any:
    """The notebooks' run as a tidy DataFrame: :data:`DEFAULT_CONFIG` in both answer modes
    over :func:`default_steps`, replayed from the shipped cache (``offline=False`` lets a
    missing answer be computed by the embedded model; ``overrides`` e.g.
    ``strategy="remove"``, which needs no new answers).
    """
    import pandas as pd

    steps = default_steps()
    reducers = [default_reducer(a, offline=offline, **overrides) for a in DEFAULT_ANSWERS]
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
        total=len(steps) * len(reducers), desc="lineretriever", unit="answer", disable=not progress
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
