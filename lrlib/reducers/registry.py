"""The registry of named reducers: :func:`register_reducer` (a decorator), and
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lrlib.reducers.base import Reducer

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
    name: str, factory: Callable[..., Reducer] | None = None, *, overwrite: bool = False
):
    """Register a reducer class or factory under ``name`` (usable as a decorator)."""

    def add(f: Callable[..., Reducer]) -> Callable[..., Reducer]:
        if name in _REGISTRY and not overwrite:
            raise ValueError(f"reducer {name!r} exists; pass overwrite=True to replace it")
        _REGISTRY[name] = f
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
        kind = kinds.get(key)
        if kind is not None and not _fits(value, kind):
            raise ValueError(f"reducer {name!r} option {key!r} takes {_KINDS[kind]}, not {value!r}")


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
            kind = type(p.default) if p.default not in (p.empty, None) else None
            if kind is None and isinstance(p.annotation, str):  # postponed annotations
                plain = p.annotation.replace(" ", "").removesuffix("|None").removeprefix("None|")
                kind = {k.__name__: k for k in _KINDS}.get(plain)
            if kind in _KINDS and p.name not in out:
                out[p.name] = kind
    return out
