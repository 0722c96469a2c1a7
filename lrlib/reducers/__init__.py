"""Reducers: one interface (:class:`Reducer`), named variants in a registry.

Every module in this folder is imported on the registry's first use
(:mod:`lrlib.reducers.base`): a new reducer is one new file with a
``@register_reducer`` class that declares its ``name`` (and, if it has them, its place in
the default listing and its swept knob: :class:`Knob`).

>>> "full" in list_reducers()
True
"""

from __future__ import annotations

from lrlib.reducers.base import (
    Knob,
    Output,
    Reducer,
    Reduction,
    check_options,
    describe,
    get_reducer,
    knobs,
    list_reducers,
    listed_reducers,
    reducer_options,
    register_reducer,
)

__all__ = [
    "Knob",
    "Output",
    "Reducer",
    "Reduction",
    "check_options",
    "describe",
    "get_reducer",
    "knobs",
    "list_reducers",
    "listed_reducers",
    "register_reducer",
    "reducer_options",
]
