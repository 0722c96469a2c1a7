"""Reducers: one interface (:class:`Reducer`), named variants in a registry.

>>> "full" in list_reducers()
True
"""

from __future__ import annotations

import importlib

from .base import Output, Reducer, Reduction, get_reducer, list_reducers, register_reducer

# modules that register built-in reducers; imported on first registry use, not at import time
_BUILTIN_MODULES: tuple[str, ...] = ("simple",)
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _BUILTIN_MODULES:
        importlib.import_module(f"{__name__}.{mod}")


__all__ = ["Output", "Reducer", "Reduction", "get_reducer", "list_reducers", "register_reducer"]
