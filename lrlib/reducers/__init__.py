"""Reducers: one interface (:class:`Reducer`), named variants in a registry.

>>> "full" in list_reducers()
True
"""

from __future__ import annotations

import importlib

from .base import Output, Reducer, Reduction, get_reducer, list_reducers, register_reducer

# modules that register built-in reducers; imported on first registry use, not at import time
_BUILTIN_MODULES: tuple[str, ...] = (
    "simple",  # full, random, oracle
    "truncation",  # bottom truncation: exact, and AgentLab GenericAgent-style
    "embedding",  # the paper's embedding retrieval
    "bm25",  # BM25 over lines and over chunks
    "program",  # the tuned rule-based program reducer
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


__all__ = ["Output", "Reducer", "Reduction", "get_reducer", "list_reducers", "register_reducer"]
