"""Extensions that live outside lrlib: packages that declare an entry point in the
``lrlib.plugins`` group (this repository's research wing, :mod:`lrlab`, is one; yours can
be another). lrlib never imports them by name: it reads what they declare, on first use.

A plugin is a module with any of

- ``REDUCER_MODULES``: modules to import, each registering reducers with
  :func:`lrlib.register_reducer`;
- ``COMMANDS``: ``{name: (module, one-line help)}``, ``lrlib`` subcommands, each module
  providing ``add_arguments(parser)`` and ``run(args)`` (and optionally ``plan(args)``);
- ``LOCAL_SERVER``: ``"module:function"``, a function returning the embedded
  OpenAI-compatible server (started; with ``base_url``, ``api_key``, ``parallel``) an
  :class:`~lrlib.llm.client.LLMClient` without an endpoint uses, and ``LOCAL_SLOTS``: a
  function returning how many requests that server takes at once (without starting it);
- ``EVALUATE_BACKEND``: ``"module"``, ``lrlib evaluate``'s backend for large files
  (:func:`evaluate_backend`), providing ``add_arguments(parser)`` (its options),
  ``applies(args)`` (whether it takes this run), ``plan(args)`` and ``run(args)``.

Declare it in your ``pyproject.toml``::

    [project.entry-points."lrlib.plugins"]
    mine = "my_package.lrlib_plugin"

>>> isinstance(commands(), dict)
True
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

GROUP = "lrlib.plugins"


@cache
def plugins() -> tuple[ModuleType, ...]:
    """The plugin modules, loaded once (in entry-point name order)."""
    found = sorted(entry_points(group=GROUP), key=lambda ep: ep.name)
    return tuple(ep.load() for ep in found)


def load_reducers() -> None:
    """Import every plugin's reducer modules (each registers its reducers)."""
    for plugin in plugins():
        for module in getattr(plugin, "REDUCER_MODULES", ()):
            importlib.import_module(module)


def commands() -> dict[str, tuple[str, str]]:
    """The subcommands plugins add: ``{name: (module, help)}``."""
    out: dict[str, tuple[str, str]] = {}
    for plugin in plugins():
        out.update(getattr(plugin, "COMMANDS", {}))
    return out


def local_server() -> Any:
    """The embedded server a plugin provides (started on first call), or a one-line error
    when no installed plugin provides one."""
    return _call("LOCAL_SERVER")


def local_slots() -> int:
    """How many requests the embedded server takes at once (it is not started)."""
    return int(_call("LOCAL_SLOTS"))


def local_speed() -> dict[str, Any] | None:
    """The embedded model's last measured speed on this machine (``prefill_tps``,
    ``decode_tps``, ``answer_s``: seconds of a typical answer, ``threads``, ``at``: epoch
    seconds), or None: never measured, or no plugin provides the model. Starts nothing."""
    try:
        return _call("LOCAL_SPEED")
    except LookupError:
        return None


def evaluate_backend() -> ModuleType | None:
    """The module ``lrlib evaluate`` hands large files to (the first plugin's
    ``EVALUATE_BACKEND``), or None when no installed plugin provides one.

    >>> backend = evaluate_backend()
    >>> backend is None or all(hasattr(backend, f) for f in ("applies", "plan", "run"))
    True
    """
    for plugin in plugins():
        module = getattr(plugin, "EVALUATE_BACKEND", None)
        if module:
            return importlib.import_module(module)
    return None


def _call(attr: str) -> Any:
    for plugin in plugins():
        spec = getattr(plugin, attr, None)
        if spec:
            module, _, name = spec.partition(":")
            return getattr(importlib.import_module(module), name)()
    raise LookupError(
        "no endpoint and no embedded model: set base_url (or OPENAI_BASE_URL / "
        "OPENAI_API_KEY), or install lrlib with its research wing (lrlab) for the local model"
    )
