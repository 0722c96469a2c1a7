"""Reducers: one interface (:class:`Reducer`), named variants in a registry.

>>> "full" in list_reducers()
True
"""

from __future__ import annotations

import importlib

from lrlib.reducers.base import (
    Output,
    Reducer,
    Reduction,
    get_reducer,
    list_reducers,
    register_reducer,
)

# modules that register built-in reducers; imported on first registry use, not at import time
_BUILTIN_MODULES: tuple[str, ...] = (
    "simple",  # full, random, oracle
    "truncation",  # bottom truncation: exact, and AgentLab GenericAgent-style
    "embedding",  # the paper's embedding retrieval
    "bm25",  # BM25 over lines and over chunks
    "program",  # the tuned rule-based program reducer
    "learned",  # the learned line scorer (recommended offline reducer)
    "lineretriever",  # the LLM retriever (the paper's method)
)
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _BUILTIN_MODULES:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{mod}":
                raise  # a missing dependency inside the module is a real error


def reducer_options(name: str) -> list[str] | None:
    """The options the reducer ``name`` accepts, from its constructors' signatures (each
    ``**kwargs`` followed up the class hierarchy to :class:`Reducer`); None when a
    constructor takes open options that it checks itself (e.g. the program's knobs).

    >>> reducer_options("truncate")
    ['budget', 'encoding']
    """
    import inspect

    from lrlib.reducers.base import _REGISTRY

    _load_builtins()
    factory = _REGISTRY[name]
    names: set[str] = set()
    for cls in getattr(factory, "__mro__", (factory,)):
        init = cls.__dict__.get("__init__", cls) if isinstance(cls, type) else cls
        if isinstance(cls, type) and "__init__" not in cls.__dict__:
            continue
        sig = inspect.signature(init)
        names |= {
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
        }
        var = [p.name for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD]
        if cls is Reducer or not var:
            return sorted(names)
        if var[0] != "kwargs" or not isinstance(cls, type):  # open options: checked inside
            return None
    return sorted(names)


def check_options(name: str, options: dict) -> None:
    """Raise ValueError (listing the valid options) if ``options`` holds one that the
    reducer ``name`` does not take.

    >>> check_options("bm25", {"bogus": 3})
    Traceback (most recent call last):
    ...
    ValueError: reducer 'bm25' has no option 'bogus'; valid options: encoding, markers, order, overlap, size, strategy, top_k, unit
    """
    valid = reducer_options(name)
    unknown = sorted(set(options) - set(valid)) if valid is not None else []
    if unknown:
        raise ValueError(
            f"reducer {name!r} has no option {', '.join(map(repr, unknown))}; "
            f"valid options: {', '.join(valid)}"
        )


__all__ = [
    "Output",
    "Reducer",
    "Reduction",
    "check_options",
    "get_reducer",
    "list_reducers",
    "register_reducer",
    "reducer_options",
]
