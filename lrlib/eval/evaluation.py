"""Evaluate reducers offline on recorded steps: one tidy row per step and reducer.

:func:`evaluate` runs every reducer on every step and measures each result with
:mod:`lrlib.eval.metrics` (token/char/line reduction, target coverage), adding the step's
metadata (episode, task, split, success) and provenance (lrlib version, git commit, model,
prompt name and hash, reducer parameters). What is expensive is cached where it is
computed: embedding vectors on disk (:mod:`lrlab.reducers.embeddings`), LLM answers in the
LineRetriever's response cache, per-line token counts in memory; re-running an evaluation
therefore only redoes the cheap reducers.

:func:`sweep` varies one knob of one reducer (a budget, a keep ratio, a top-k) and returns
a coverage-versus-reduction curve; :func:`curves` does so for every reducer that declares
a knob (its class's ``sweep``, :class:`lrlib.reducers.Knob`; :func:`lrlib.reducers.knobs`).

Reducers are given as names, as specs ``"name:key=value,key=value"`` (values read as
Python literals when they can be), as :class:`~lrlib.reducers.Reducer` objects, or as a
mapping label -> any of those.

>>> from lrlib.core.step import Step
>>> steps = [Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", target_bids=("4",),
...               step_id="s1")]
>>> frame = evaluate(["full", "truncate:budget=6"], steps, progress=False)
>>> frame[["reducer", "covered", "reduction"]].round(2).values.tolist()
[['full', True, 0.0], ['truncate:budget=6', False, 0.57]]
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from lrlib import runinfo
from lrlib.core.step import Step
from lrlib.data.evidence import horizon_lines, mfs_covered, mfs_sets
from lrlib.eval import intervals, metrics
from lrlib.reducers import (
    Reducer,
    check_options,
    describe,
    get_reducer,
    knobs,
    list_reducers,
    listed_reducers,
)

__all__ = [
    "CURVE_BOOT",
    "META",
    "all_reducers",
    "parse_spec",
    "ReducerSpec",
    "parse_reducers",
    "specs_of",
    "resolve",
    "as_steps",
    "reducer_provenance",
    "evaluate",
    "sweep",
    "curves",
    "markdown_table",
    "split_arg",
    "count_arg",
    "add_step_arguments",
    "USER_FILES",
    "add_user_files",
]

CURVE_BOOT = 1000  # bootstrap replicates per curve point (a curve has up to ten points)
_CI_SUFFIXES = ("_lo", "_hi", "_n", "_episodes")
META = ("episode", "benchmark", "task", "family", "step", "split", "episode_success",
        "episode_reward")  # fmt: skip


def all_reducers(llm: bool = False) -> list[str]:
    """The default listing (:func:`lrlib.reducers.listed_reducers`: the reducers whose class
    sets ``listed``) plus every other registered reducer (a newly registered one joins every
    results table this way); reducers of model answers (``model_answers``, e.g. LineRetriever)
    only with ``llm``, since they are replayed from a cache instead.

    >>> names = all_reducers()
    >>> names[: len(listed_reducers(False))] == listed_reducers(False), "lineretriever" in names
    (True, False)
    """
    out = listed_reducers(model_answers=llm)
    named = {parse_spec(s)[0] for s in out}
    out += [n for n in list_reducers() if n not in named and (llm or not describe(n).model_answers)]
    return out


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,..."`` -> (name, params); values are Python literals or strings.

    >>> parse_spec("truncate:budget=500")
    ('truncate', {'budget': 500})
    >>> parse_spec("bm25:unit=chunks,top_k=5")
    ('bm25', {'unit': 'chunks', 'top_k': 5})
    """
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"bad reducer parameter {item!r} in {spec!r}; expected key=value")
        try:
            params[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key.strip()] = value.strip()
    return name.strip(), params


class ReducerSpec(NamedTuple):
    """One reducer of a ``--reducers`` value: its label (the spec as written), the
    registered name and the options (:func:`parse_reducers`)."""

    label: str
    name: str
    params: dict[str, Any]


def parse_reducers(text: str) -> list[ReducerSpec]:
    """The reducers of a ``--reducers`` value (specs ``name:key=value,...`` separated by
    ``;``, blanks dropped), each checked against the registry without being built: an
    unknown reducer, an option its constructor does not take, or a value of the wrong kind
    raises, naming the valid ones (values a constructor refuses fail where it is built).

    >>> parse_reducers("full; truncate:budget=500;;")  # doctest: +NORMALIZE_WHITESPACE
    [ReducerSpec(label='full', name='full', params={}),
     ReducerSpec(label='truncate:budget=500', name='truncate', params={'budget': 500})]
    >>> parse_reducers("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    KeyError: "unknown reducer 'nope'; valid reducers: ..."
    """
    out, valid = [], list_reducers()
    for label in (s.strip() for s in text.split(";")):
        if not label:
            continue
        name, params = parse_spec(label)
        if name not in valid:
            hint = " (specs are separated by ';', options by ',')" if "," in name else ""
            raise KeyError(f"unknown reducer {name!r}{hint}; valid reducers: {', '.join(valid)}")
        check_options(name, params)
        out.append(ReducerSpec(label, name, params))
    return out


def specs_of(args: argparse.Namespace) -> list[ReducerSpec]:
    """A command's ``--reducers``, parsed and checked once (kept on ``args``: the command
    line checks them before the plan line, and the command reuses them).

    >>> [s.label for s in specs_of(argparse.Namespace(reducers="full;random"))]
    ['full', 'random']
    """
    if getattr(args, "specs", None) is None:
        text = args.reducers if args.reducers is not None else ";".join(listed_reducers())
        args.specs = parse_reducers(text)
        if not args.specs:
            raise ValueError(
                f"no reducer in --reducers {text!r}: give specs separated by ';' (e.g. "
                f"'full;truncate:budget=500'); valid reducers: {', '.join(list_reducers())}"
            )
    return args.specs


def resolve(reducers: Any) -> dict[str, Reducer]:
    """Normalise the ``reducers`` argument (names, specs, :class:`ReducerSpec` or Reducer
    objects, or a mapping label -> any of those) to an ordered mapping label -> Reducer.

    >>> list(resolve(["full", "random:keep_ratio=0.5"]))
    ['full', 'random:keep_ratio=0.5']
    """
    if isinstance(reducers, str | Reducer):
        reducers = [reducers]
    items = reducers.items() if isinstance(reducers, Mapping) else [(None, r) for r in reducers]
    out: dict[str, Reducer] = {}
    for label, r in items:
        if isinstance(r, ReducerSpec):
            reducer, label = get_reducer(r.name, **r.params), label or r.label
        elif isinstance(r, str):
            name, params = parse_spec(r)
            reducer, label = get_reducer(name, **params), label or r
        elif isinstance(r, Reducer):
            reducer, label = r, label or r.name
        else:
            raise TypeError(f"a reducer is a name, a spec or a Reducer, not {type(r).__name__}")
        if label in out:
            raise ValueError(f"two reducers are labelled {label!r}; pass a mapping of labels")
        out[label] = reducer
    return out


def as_steps(steps: Any) -> list[Step]:
    """Steps from a list of :class:`Step` or a frame of :func:`lrlib.load_observations`."""
    if hasattr(steps, "iterrows"):
        return [Step.from_row(row) for row in steps.to_dict("records")]
    return list(steps)


def reducer_provenance(reducer: Reducer) -> dict[str, Any]:
    """Model, prompt name and prompt hash of a reducer (None where it has none).

    A reducer may define ``provenance()`` returning these keys; otherwise they are read
    from its parameters or attributes (``model``, ``prompt``, ``prompt_hash``).

    >>> reducer_provenance(get_reducer("full"))
    {'model': None, 'prompt': None, 'prompt_hash': None}
    """
    own = getattr(reducer, "provenance", None)
    info = dict(own()) if callable(own) else {}
    params = reducer.params
    aliases = {
        "model": ("model",),
        "prompt": ("prompt", "prompt_name"),
        "prompt_hash": ("prompt_hash", "fingerprint"),
    }
    for key, names in aliases.items():
        for name in names:
            if info.get(key) is None:
                info[key] = _plain(params.get(name, getattr(reducer, name, None)))
    return {k: info.get(k) for k in aliases}


def _plain(value: Any) -> Any:
    """A recordable form of a model/prompt value (objects give their ``name``/``model``)."""
    if value is None or isinstance(value, str | int | float):
        return value
    for attr in ("name", "model"):
        inner = getattr(value, attr, None)
        if isinstance(inner, str):
            return inner
    return None if callable(value) else str(value)


def _row(
    step: Step, label: str, reducer: Reducer, result, base: dict, horizon: Any = None
) -> dict[str, Any]:
    row: dict[str, Any] = {"step_id": step.step_id}
    row.update({k: step.meta.get(k) for k in META})
    for k in ("episode", "benchmark", "family"):  # the Step's own grouping fields win
        row[k] = getattr(step, k, "") or row[k]
    if not row["episode"]:  # a hand-made step is its own episode for the bootstrap
        row["episode"] = step.step_id
    row.update(reducer=label, reducer_name=reducer.name)
    row.update(metrics.step_metrics(step, result.text, result.kept, result.stubs,
                                    result.tokens_before, result.tokens_after, horizon))  # fmt: skip
    extra = result.extra or {}
    row["latency_s"] = result.latency_s
    row["cold_latency_s"] = extra.get("cold_latency_s", result.latency_s)
    row["failure"] = result.failure
    row["on_failure"] = (result.params or {}).get("on_failure")  # what a failure lets through
    usage = result.usage or {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        row[f"usage_{key}"] = usage.get(key)
    for key, value in usage.items():  # whatever else the reducer reports (cached tokens...)
        if isinstance(value, int | float | str | bool):
            row.setdefault(f"usage_{key}", value)
    row["cache_hit"] = extra.get("cache_hit")
    row.update(base)
    return row


def evaluate(reducers: Any, steps: Any, progress: bool = True) -> Any:
    """Run ``reducers`` on ``steps``; a DataFrame with one row per (step, reducer).

    ``steps``: a list of :class:`~lrlib.core.step.Step` or an observations frame. Columns: the
    step's metadata (:data:`META`), ``reducer`` (label), the measures of
    :func:`lrlib.eval.metrics.step_metrics` (planning horizons from the episodes among
    ``steps``: pass whole episodes), latency (``cold_latency_s``: as if nothing were
    cached), failures, token usage, MFS coverage where minimal failure sets exist for the
    steps (``mfs_<policy>``: the whole set kept; :mod:`lrlib.data.evidence`), and provenance
    (``lrlib_version``, ``git_commit``, ``created``, ``model``, ``prompt``, ``prompt_hash``,
    ``params`` as JSON).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    table, steps = resolve(reducers), as_steps(steps)
    plans = horizon_lines(steps)  # planning horizons, from the episodes among ``steps``
    mfs = mfs_sets(s.step_id for s in steps)  # minimal failure sets where they exist (lrlib mfs)
    bases = {}
    for label, reducer in table.items():
        prov = runinfo.provenance(**reducer_provenance(reducer))
        prov["params"] = json.dumps(reducer.params, sort_keys=True, default=str)
        bases[label] = prov
    rows: dict[str, list[dict[str, Any]]] = {label: [] for label in table}
    with tqdm(
        total=len(steps) * len(table), disable=not progress, unit="step", desc="evaluate"
    ) as bar:
        # step by step, every reducer in turn: what reducers compute per step whatever their
        # knobs (features, rankings) is computed once while the step is at hand
        for step, plan in zip(steps, plans, strict=True):
            for label, reducer in table.items():
                result = reducer.reduce(step)
                rows[label].append(_row(step, label, reducer, result, bases[label], plan))
                rows[label][-1].update(mfs_covered(mfs, step.step_id, result.kept))
                bar.update()
    return pd.DataFrame([row for label in table for row in rows[label]])  # reducer by reducer


def sweep(
    reducer: str, knob: str, values: Iterable[Any], steps: Any, progress: bool = True, **fixed: Any
) -> Any:
    """Coverage against reduction while ``knob`` of ``reducer`` takes each of ``values``.

    ``reducer`` is a name or spec; ``fixed`` adds parameters. One row per value with the
    summary of :func:`lrlib.eval.metrics.summarize` (``knob``, ``value``, ``median_reduction``,
    ``coverage``, ``coverage_success``, ``evidence_coverage``...) and the episode-bootstrap
    intervals of :func:`lrlib.eval.intervals.summary` (``reduction_lo``/``_hi``,
    ``coverage_lo``/``_hi``, ``evidence_lo``/``_hi``, each with its n).

    >>> from lrlib.core.step import Step
    >>> s = [Step(goal="g", tree="[1] link 'a'\\n[2] link 'b'", target_bids=("2",), step_id="x")]
    >>> curve = sweep("truncate", "budget", [3, 100], s, progress=False)
    >>> [(int(r.value), float(r.coverage)) for r in curve.itertuples()]
    [(3, 0.0), (100, 1.0)]
    """
    import pandas as pd

    name, params = parse_spec(reducer)
    steps = as_steps(steps)
    values = list(values)
    table = {
        f"{i}": get_reducer(name, **{**params, **fixed, knob: v}) for i, v in enumerate(values)
    }
    everything = evaluate(table, steps, progress=progress)  # each step once, every value
    summaries = metrics.summarize(everything).set_index("reducer").to_dict("index")
    cis = intervals.summary(everything, n_boot=CURVE_BOOT).set_index("reducer").to_dict("index")
    rows = []
    for (label, r), value in zip(table.items(), values, strict=True):
        summary, ci = {"reducer": reducer, **summaries[label]}, cis[label]
        summary.update({k: v for k, v in ci.items() if k.endswith(_CI_SUFFIXES)})
        rows.append(
            {
                "reducer": reducer,
                "knob": knob,
                "value": value,
                **summary,
                "params": json.dumps(r.params, sort_keys=True, default=str),
            }
        )
    return pd.DataFrame(rows)  # columns: reducer, knob, value first (the rows' key order)


def curves(steps: Any, reducers: Sequence[str] | None = None, progress: bool = True) -> Any:
    """:func:`sweep` over the default values of each reducer's declared knob
    (:func:`lrlib.reducers.knobs`), for ``reducers`` (specs) or every reducer with a knob."""
    import pandas as pd

    steps = as_steps(steps)
    table = knobs()
    names = list(reducers) if reducers is not None else list(table)
    for spec in names:
        if spec not in table:
            raise KeyError(f"no knob known for {spec!r}; reducers with knobs: {', '.join(table)}")
    frames = [
        sweep(spec, table[spec].option, table[spec].values, steps, progress=progress)
        for spec in names
    ]
    return pd.concat(frames, ignore_index=True)


def markdown_table(frame, floats: str = "{:.3f}") -> str:
    """A DataFrame as a GitHub markdown table (no extra dependency).

    >>> import pandas as pd
    >>> print(markdown_table(pd.DataFrame({"a": [1], "b": [0.5]})))
    | a | b |
    |---|---|
    | 1 | 0.500 |
    """
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        cells = [floats.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---- command line: ``lrlib evaluate`` ------------------------------------------------


def split_arg(value: str) -> str | None:
    """``--split``'s value: a split name, or ``all`` (None: every step).

    >>> split_arg("all"), split_arg("test")
    (None, 'test')
    """
    from lrlib.data.dataset import SPLITS

    if value != "all" and value not in SPLITS:
        valid = ", ".join(("all", *SPLITS))
        raise argparse.ArgumentTypeError(f"unknown split {value!r}; valid: {valid}")
    return None if value == "all" else value


def count_arg(value: str) -> int:
    """``--limit``'s value: a whole number of at least 1 (``0`` or ``-3`` would select no
    steps or all but three, silently).

    >>> count_arg("3")
    3
    >>> count_arg("-3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number of at least 1, got '-3'
    """
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return n


def add_step_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    """``--reducers`` (specs separated by ';', e.g. ``example``), ``--split``, ``--benchmark``:
    the options shared by the commands that run reducers over recorded steps."""
    parser.add_argument(
        "--reducers",
        default=None,
        help=f"reducer specs separated by ';', not ',' (e.g. '{example}'; default: the "
        "listed reducers, lrlib.reducers.listed_reducers())",
    )
    parser.add_argument(
        "--split",
        default=None,
        type=split_arg,
        help="train, validation, test or all (every step of the dataset)",
    )
    parser.add_argument("--benchmark", default=None, help="only steps of this benchmark")
    add_user_files(parser)


#: the option (two spellings) naming a user's own Python files to import before the reducer
#: specs and prompt names are read (``lrlib.cli`` imports them)
USER_FILES = ("--prompts", "--plugins")


def add_user_files(parser: argparse.ArgumentParser) -> None:
    """``--prompts FILE`` (or ``--plugins FILE``, repeatable): a Python file of the user's,
    imported by the command line before anything else is read, so that the prompt variants
    and reducers it registers can be named in ``--reducers``, ``--prompt``...

    >>> p = argparse.ArgumentParser()
    >>> add_user_files(p)
    >>> p.parse_args(["--prompts", "a.py", "--plugins", "b.py"]).user_files
    ['a.py', 'b.py']
    """
    parser.add_argument(
        *USER_FILES,
        dest="user_files",
        action="append",
        metavar="FILE",
        default=None,
        help="a Python file of yours to import first (repeatable; --prompts and --plugins are "
        "the same option): prompt variants it registers (lrlib.register_prompt) can be used "
        "as 'lineretriever:prompt=NAME' or --prompt NAME, reducers it registers "
        "(lrlib.register_reducer) by name in --reducers",
    )
