"""The one interface every reducer follows, and the registry of named reducers.

A reducer takes a :class:`~lrlib.core.step.Step` and returns a :class:`Reduction`: the kept
lines, the reduced text, token counts before and after, latency, and for model-based
reducers their usage and failures. Subclasses implement :meth:`Reducer.select`; the base
class times it and counts tokens (counting is not part of the latency).

>>> class KeepFirst(Reducer):
...     name = "keep-first"
...     def select(self, step):
...         return Output(text=step.axtree.texts[0], kept=[1])
>>> r = KeepFirst().reduce(Step(goal="g", tree="a\\nb"))
>>> r.kept, r.tokens_after <= r.tokens_before
([1], True)

A reducer describes itself on its class: ``name`` (declared once; ``@register_reducer``
registers the class under it), ``listed`` (its place in the default listing of
``lrlib evaluate`` and the results tables; None: not listed), ``sweep`` (the :class:`Knob`
its coverage-vs-reduction curve varies, with the values swept by default), ``model_answers``
(its results are a language model's answers, replayed from the response cache offline) and
``uses_target`` (it reads the recorded action: an upper bound, never a fallback).

The registry (the last section): :func:`register_reducer` (a decorator), and
:func:`get_reducer` / :func:`list_reducers`, which first import every module of the
``lrlib/reducers/`` folder (so a reducer file registers itself by being there: no list to
edit) and those plugins declare (:mod:`lrlib.plugins`), and check a reducer's options
against its constructor.

>>> "full" in list_reducers()
True
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lrlib.core.axtree import AxTree
from lrlib.core.pruning import prune
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING, count_lines, count_tokens


@dataclass(frozen=True)
class Knob:
    """The knob a reducer's coverage-vs-reduction curve sweeps (:func:`lrlib.eval.evaluation.sweep`):
    the option's name and the values swept by default. ``variant`` fixes other options for
    a variant swept on its own (``"unit=chunks"``: the curve of ``bm25:unit=chunks``).

    A reducer declares it on its class, ``sweep = Knob("budget", (500, 1000, 2000))``, or
    one per variant, ``sweep = (Knob("top_k", (5, 10)), Knob("top_k", (1, 2), "unit=chunks"))``;
    :func:`knobs` collects every registered reducer's.

    >>> Knob("top_k", (1, 2), "unit=chunks").spec("bm25")
    'bm25:unit=chunks'
    """

    option: str
    values: tuple[Any, ...]
    variant: str = ""

    def spec(self, name: str) -> str:
        """The reducer spec this knob's curve runs (``name``, or ``name:variant``)."""
        return f"{name}:{self.variant}" if self.variant else name


@dataclass
class Output:
    """What :meth:`Reducer.select` returns."""

    text: str
    kept: list[int]  # 1-based lines kept verbatim
    stubs: list[int] = field(default_factory=list)  # lines shown as "[bid] role"
    usage: dict[str, Any] | None = None
    failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reduction:
    """The result of reducing one step."""

    reducer: str
    step_id: str
    text: str
    kept: list[int]
    tokens_before: int
    tokens_after: int
    latency_s: float
    params: dict[str, Any]
    stubs: list[int] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reduction(self) -> float:
        """``1 - |reduced| / |original|`` in tokens (the paper's measure)."""
        return 1.0 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0


class Reducer(ABC):
    """Base class: subclasses set ``name`` and implement :meth:`select`; the other class
    attributes describe the reducer to the listings and sweeps (module docstring)."""

    name: ClassVar[str] = "reducer"
    #: place in the default listing (lower first); None: registered but not listed
    listed: ClassVar[float | None] = None
    #: the knob(s) of its coverage-vs-reduction curves: one :class:`Knob`, or one per variant
    sweep: ClassVar[Knob | tuple[Knob, ...]] = ()
    #: results are a language model's answers (replayed from the response cache offline)
    model_answers: ClassVar[bool] = False
    #: reads the recorded action (an upper bound): never a fallback
    uses_target: ClassVar[bool] = False

    def __init__(self, encoding: str = DEFAULT_ENCODING, **params: Any) -> None:
        self.encoding = encoding
        self._params = params

    @property
    def params(self) -> dict[str, Any]:
        """The reducer's parameters (recorded with every result)."""
        return dict(self._params)

    @abstractmethod
    def select(self, step: Step) -> Output:
        """Reduce ``step``; return the kept text and lines."""

    def reduce(self, step: Step) -> Reduction:
        """Run :meth:`select`, timed, and count tokens before and after."""
        _ = step.axtree  # parse before the clock starts: shared work, not the latency
        start = time.perf_counter()
        out = self.select(step)
        return self._reduction(step, out, time.perf_counter() - start)

    def _reduction(self, step: Step, out: Output, latency: float) -> Reduction:
        """The :class:`Reduction` of ``out``: token counts before and after, parameters."""
        before = count_lines(step.axtree.texts, self.encoding)
        after = count_tokens(out.text, self.encoding)
        return Reduction(
            self.name,
            step.step_id,
            out.text,
            out.kept,
            before,
            after,
            latency,
            self.params,
            out.stubs,
            out.usage,
            out.failure,
            out.extra,
        )

    def requests(self, step: Step) -> list[Any]:
        """The model requests reducing ``step`` sends (each through ``self.client``'s
        response cache): none for a plain reducer; a model-backed one returns them."""
        return []

    def cached_steps(self, steps: Sequence[Step]) -> list[bool]:
        """Which ``steps`` this reducer can reduce offline, without computing anything a
        model would: all of them for plain reducers; for one with a ``client``, the steps
        whose :meth:`requests` are all in its response cache (read without any network;
        a step whose requests cannot be made, e.g. too long for the context, is not).

        >>> Reducer.cached_steps(object(), [Step(goal="g", tree="a")])
        [True]
        """
        client = getattr(self, "client", None)
        if client is None:
            return [True] * len(steps)
        out = []
        for step in steps:
            try:
                needed = self.requests(step)
            except Exception:
                out.append(False)
                continue
            out.append(bool(needed) and all(client.cached(r) is not None for r in needed))
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"


def lines_output(
    tree: AxTree, lines: Iterable[int], strategy: str = "structure", markers: bool = False, **extra
) -> Output:
    """An :class:`Output` for a set of 1-based lines, pruned with ``strategy``.

    >>> from lrlib.core.axtree import parse
    >>> lines_output(parse("a\\n\\t[1] b\\n\\t[2] c"), [3], "structure").text
    'a\\n\\t[2] c'
    """
    pruned = prune(tree, sorted(set(lines)), strategy, markers=markers)
    return Output(text=pruned.text, kept=pruned.kept, stubs=pruned.stubs, extra=extra)


# --- the registry -----------------------------------------------------------------------

PACKAGE = "lrlib.reducers"
_loaded = False


def _load_builtins() -> None:
    """Import every module in the reducers folder once (each registers its reducers), then
    the reducer modules of installed plugins (:mod:`lrlib.plugins`)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{PACKAGE}.{info.name}")
    from lrlib.plugins import load_reducers

    load_reducers()


_REGISTRY: dict[str, Callable[..., Reducer]] = {}


def register_reducer(
    name: Any = None, factory: Callable[..., Reducer] | None = None, *, overwrite: bool = False
):
    """Register a reducer class under its ``name`` attribute (a decorator: ``@register_reducer``
    or ``@register_reducer(overwrite=True)``), or a factory under ``name``.

    >>> @register_reducer(overwrite=True)
    ... class KeepNone(Reducer):
    ...     name = "keep-none"
    ...     def select(self, step):
    ...         return Output(text="", kept=[])
    >>> "keep-none" in list_reducers()
    True
    """
    if isinstance(name, type) or (callable(name) and factory is None):
        return register_reducer(None, name, overwrite=overwrite)  # bare @register_reducer

    def add(f: Callable[..., Reducer]) -> Callable[..., Reducer]:
        key = name or getattr(f, "name", None)
        if not isinstance(key, str) or key == Reducer.name:
            raise ValueError(f"{f!r} declares no name: set its class attribute name = '...'")
        if isinstance(f, type) and f.name == Reducer.name:
            f.name = key  # an old-style @register_reducer("x") on a class without a name
        if key in _REGISTRY and not overwrite:
            raise ValueError(f"reducer {key!r} exists; pass overwrite=True to replace it")
        _REGISTRY[key] = f
        return f

    return add(factory) if factory is not None else add


def get_reducer(name: str, **params: Any) -> Reducer:
    """Build the reducer registered as ``name``; the error lists the valid names."""
    _load_builtins()
    if name not in _REGISTRY:
        raise KeyError(f"unknown reducer {name!r}; valid reducers: {', '.join(sorted(_REGISTRY))}")
    check_options(name, params)  # a misspelled option fails here, not silently
    return _REGISTRY[name](**params)


def list_reducers() -> list[str]:
    """Names of the registered reducers."""
    _load_builtins()
    return sorted(_REGISTRY)


def describe(name: str) -> type[Reducer]:
    """The class registered as ``name`` (a factory that is not a class, or a class registered
    under another name than its own: the base class's description, i.e. unlisted, no knob).
    A spec ``name:options`` gives its reducer's.

    >>> describe("truncate:budget=500").name, describe("full").model_answers
    ('truncate', False)
    """
    _load_builtins()
    base = name.partition(":")[0].partition("+")[0].strip()
    if base not in _REGISTRY:
        raise KeyError(f"unknown reducer {base!r}; valid reducers: {', '.join(sorted(_REGISTRY))}")
    factory = _REGISTRY[base]
    own = isinstance(factory, type) and issubclass(factory, Reducer) and factory.name == base
    return factory if own else Reducer  # a class registered under another name: undescribed


def listed_reducers(model_answers: bool = True) -> list[str]:
    """The default listing: the specs of every reducer whose class sets ``listed``, in that
    order, each followed by its swept variants (``bm25:unit=chunks``); reducers with
    ``model_answers`` only when ``model_answers``.

    >>> listed_reducers()[:3]
    ['full', 'truncate', 'truncate-agentlab']
    """
    _load_builtins()
    ranked = sorted(
        (describe(n).listed, n)
        for n in _REGISTRY
        if describe(n).listed is not None and (model_answers or not describe(n).model_answers)
    )
    out: list[str] = []
    for _, n in ranked:
        out += [n] + [k.spec(n) for k in _knobs_of(n) if k.variant]
    return out


def _knobs_of(name: str) -> tuple[Knob, ...]:
    sweep = describe(name).sweep
    return (sweep,) if isinstance(sweep, Knob) else tuple(sweep)


def knobs() -> dict[str, Knob]:
    """Every registered reducer's swept knobs, by the spec each curve runs (a reducer in
    its own file declares ``sweep`` and is swept like a shipped one).

    >>> knobs()["truncate"].option
    'budget'
    """
    _load_builtins()
    ranked = sorted(
        _REGISTRY, key=lambda n: (describe(n).listed is None, describe(n).listed or 0, n)
    )
    return {k.spec(n): k for n in ranked for k in _knobs_of(n)}


def _signatures(name: str) -> Iterator[tuple[Any, inspect.Signature]]:
    """The constructors of reducer ``name`` with their signatures, nearest first, followed
    up the class hierarchy while a constructor passes ``**kwargs`` on (to :class:`Reducer`
    at most)."""
    _load_builtins()
    factory = _REGISTRY[name]
    for cls in getattr(factory, "__mro__", (factory,)):
        if isinstance(cls, type) and "__init__" not in cls.__dict__:
            continue
        sig = inspect.signature(cls.__dict__["__init__"] if isinstance(cls, type) else cls)
        yield cls, sig
        if cls is Reducer or not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            return


def reducer_options(name: str) -> list[str] | None:
    """The options the reducer ``name`` accepts, from its constructors' signatures (each
    ``**kwargs`` followed up the class hierarchy to :class:`Reducer`); None when a
    constructor takes open options that it checks itself (e.g. the program's knobs).

    >>> reducer_options("truncate")
    ['budget', 'encoding']
    """
    names: set[str] = set()
    for cls, sig in _signatures(name):
        names |= {
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
        }
        var = [p.name for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD]
        if var and cls is not Reducer and (var[0] != "kwargs" or not isinstance(cls, type)):
            return None  # open options: checked inside
    return sorted(names)


def check_options(name: str, options: dict) -> None:
    """Raise ValueError if ``options`` holds one that the reducer ``name`` does not take
    (listing the valid options), or a value of another kind than the option's default (a
    word where a number goes: ``truncate:budget=abc``).

    >>> check_options("bm25", {"bogus": 3})
    Traceback (most recent call last):
    ...
    ValueError: reducer 'bm25' has no option 'bogus'; valid options: encoding, markers, order, overlap, size, strategy, top_k, unit
    >>> check_options("truncate", {"budget": "abc"})
    Traceback (most recent call last):
    ...
    ValueError: reducer 'truncate' option 'budget' takes an integer, not 'abc'
    """
    valid = reducer_options(name)
    unknown = sorted(set(options) - set(valid)) if valid is not None else []
    if unknown:
        raise ValueError(
            f"reducer {name!r} has no option {', '.join(map(repr, unknown))}; "
            f"valid options: {', '.join(valid)}"
        )
    kinds = _option_kinds(name)
    for key, value in options.items():
        check_kind(name, key, value, kinds.get(key))


def check_kind(name: str, option: str, value: Any, kind: type | str | None) -> None:
    """Raise ValueError (one line) when ``value`` may not stand where option ``option`` of
    reducer ``name``, of kind ``kind`` (bool, int, float or str, or an annotation such as
    ``"int | None"``; None: not checked), goes. The one check of an option's kind.

    >>> check_kind("lineretriever", "budget", "abc", "int | None")
    Traceback (most recent call last):
    ...
    ValueError: reducer 'lineretriever' option 'budget' takes an integer, not 'abc'
    """
    if isinstance(kind, str):
        plain = kind.replace(" ", "").removesuffix("|None").removeprefix("None|")
        kind = {k.__name__: k for k in _KINDS}.get(plain)
    if kind in _KINDS and not _fits(value, kind):
        raise ValueError(f"reducer {name!r} option {option!r} takes {_KINDS[kind]}, not {value!r}")


# the kinds of option a default value stands for (None or other defaults: not checked)
_KINDS = {bool: "True or False", int: "an integer", float: "a number", str: "a word"}


def _fits(value: Any, kind: type) -> bool:
    """Whether ``value`` may stand where a default of type ``kind`` stands (an integer
    where a float goes; None, "unset", anywhere).

    >>> _fits(3, float), _fits(True, int), _fits("abc", int), _fits(None, int)
    (True, False, False, True)
    """
    if value is None:
        return True
    if kind is bool or isinstance(value, bool):
        return isinstance(value, bool) and kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _option_kinds(name: str) -> dict[str, type]:
    """The kind (bool, int, float or str) of each option whose kind is plain: from its
    default value, or from an annotation such as ``int | None`` when the default is None;
    the nearest constructor up the class hierarchy wins.

    >>> kinds = _option_kinds("bm25")
    >>> kinds["size"], kinds["top_k"], "embedder" in _option_kinds("embedding")
    (<class 'int'>, <class 'int'>, False)
    """
    out: dict[str, type] = {}
    for _, sig in _signatures(name):
        for p in sig.parameters.values():
            kind: Any = type(p.default) if p.default not in (p.empty, None) else None
            if kind is None and isinstance(p.annotation, str):  # postponed annotations
                plain = p.annotation.replace(" ", "").removesuffix("|None").removeprefix("None|")
                kind = {k.__name__: k for k in _KINDS}.get(plain)
            if kind in _KINDS and p.name not in out:
                out[p.name] = kind
    return out
