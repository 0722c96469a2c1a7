"""Reducers: one interface (:class:`Reducer`), named variants in a registry.

Every module in this folder is imported on the registry's first use
(:mod:`lrlib.reducers.base`): a new reducer is one new file with a
``@register_reducer("name")`` class.

>>> "full" in list_reducers()
True
"""

from __future__ import annotations

from lrlib.reducers.base import (
    Output,
    Reducer,
    Reduction,
    check_options,
    get_reducer,
    list_reducers,
    reducer_options,
    register_reducer,
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
