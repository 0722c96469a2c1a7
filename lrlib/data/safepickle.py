"""Read BrowserGym / AgentLab pickles without BrowserGym, AgentLab, or trusting the file.

A pickle is a program: every class or function it names is looked up and may be called.
:class:`SafeUnpickler` answers that lookup from a fixed allow-list and refuses everything
else *before* anything is called, with an :class:`UnsafePickleError` naming the file and
the global. What it allows:

- BrowserGym / AgentLab record classes (``StepInfo``, ``StepTimestamps``, ``AgentInfo``...,
  under both the old ``browsergym.experiments`` and the newer ``agentlab.experiments``
  paths) and LLM message classes, each mapped to a plain stand-in (:class:`Record`, or
  :class:`Message` for dict-like messages) that only stores the pickled attributes;
- the numpy pieces that arrays and scalars need (``_reconstruct``, ``ndarray``, ``dtype``,
  ``scalar``, ``_frombuffer``, under ``numpy.core`` and ``numpy._core``);
- a few inert builtins (``set``, ``frozenset``, ``bytes``, ``bytearray``, ``complex``,
  ``slice``, and ``_codecs.encode``, which protocol 0-2 pickles use for ``bytes``).

>>> import pickle
>>> loads(pickle.dumps({"step": 3, "ok": True}))
{'step': 3, 'ok': True}
>>> loads(b"cos\\nsystem\\n(S'echo hi'\\ntR.", source="evil.pkl")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lrlib.data.safepickle.UnsafePickleError: evil.pkl: refusing to load global 'os.system' ...
"""

from __future__ import annotations

import gzip
import importlib
import io
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle names a global outside the allow-list; nothing from it was run."""

    def __init__(self, source: str, module: str, name: str) -> None:
        self.source, self.module, self.name = source, module, name
        super().__init__(
            f"{source}: refusing to load global '{module}.{name}' "
            "(not a BrowserGym/AgentLab record, a message, or an allowed numpy/builtin type)"
        )


class Record:
    """Plain stand-in for a pickled BrowserGym/AgentLab object: just its attributes.

    ``pickled_class`` is the dotted name the pickle asked for.

    >>> r = _standin("browsergym.experiments.loop", "StepInfo")()
    >>> r.__setstate__({"step": 2, "action": None})
    >>> r.step, r.pickled_class, r
    (2, 'browsergym.experiments.loop.StepInfo', StepInfo(step=2, action=None))
    """

    pickled_class = "Record"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            self.args = args
        self.__dict__.update(kwargs)

    def __setstate__(self, state: Any) -> None:
        _apply_state(self, state)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Message(dict):
    """Stand-in for a dict-like LLM message (AgentLab's ``HumanMessage``...)."""

    pickled_class = "Message"

    def __setstate__(self, state: Any) -> None:
        _apply_state(self, state)


def _apply_state(obj: object, state: Any) -> None:
    """BUILD semantics for stand-ins: a dict, a (dict, slots) pair, or pydantic's layout."""
    if isinstance(state, tuple) and len(state) == 2:
        state = {**(state[0] or {}), **(state[1] or {})}
    if isinstance(state, dict):
        inner = state.get("__dict__")  # pydantic models keep their fields under "__dict__"
        if isinstance(inner, dict):
            state = {**inner, **(state.get("__pydantic_extra__") or {})}
        for key, value in state.items():
            if isinstance(key, str):
                obj.__dict__[key] = value
    elif state is not None:
        obj.__dict__["state"] = state


# Records: (module, class names). Both the BrowserGym and the AgentLab homes of the loop.
_RECORDS: dict[str, tuple[str, ...]] = {
    "browsergym.experiments.loop": ("StepInfo", "StepTimestamps", "ExpResult"),
    "agentlab.experiments.loop": ("StepInfo", "StepTimestamps", "ExpResult"),
    "browsergym.experiments.agent": ("AgentInfo",),
    "agentlab.agents.agent_utils": ("AgentInfo",),
    "agentlab.llm.llm_utils": ("Discussion",),
    "agentlab.llm.tracking": ("LLMTracker",),
}
# Dict-like chat messages: AgentLab's own, and langchain's (older AgentLab versions).
_MESSAGES: dict[str, tuple[str, ...]] = {
    "agentlab.llm.llm_utils": ("BaseMessage", "SystemMessage", "HumanMessage", "AIMessage"),
    "langchain.schema.messages": ("SystemMessage", "HumanMessage", "AIMessage", "BaseMessage"),
    "langchain_core.messages.base": ("BaseMessage",),
    "langchain_core.messages.system": ("SystemMessage",),
    "langchain_core.messages.human": ("HumanMessage",),
    "langchain_core.messages.ai": ("AIMessage",),
}
_NUMPY = {
    ("multiarray", "_reconstruct"),
    ("multiarray", "scalar"),
    ("numeric", "_frombuffer"),  # protocol-5 arrays
    ("", "ndarray"),
    ("", "dtype"),
}
_BUILTINS = {"set": set, "frozenset": frozenset, "bytearray": bytearray, "complex": complex}
_BUILTINS.update(slice=slice, bytes=bytes)
_standins: dict[tuple[str, str], type] = {}


def _standin(module: str, name: str) -> type:
    """The stand-in class for a record or message (one class per dotted name)."""
    key = (module, name)
    if key not in _standins:
        base = Message if name in _MESSAGES.get(module, ()) else Record
        _standins[key] = type(name, (base,), {"pickled_class": f"{module}.{name}"})
    return _standins[key]


def _numpy_global(module: str, name: str) -> Callable[..., Any] | None:
    """The real numpy object for an allowed numpy global, under either numpy layout."""
    for prefix in ("numpy._core.", "numpy.core.", "numpy."):
        if module == "numpy" or module.startswith(prefix):
            sub = "" if module == "numpy" else module.removeprefix(prefix)
            break
    else:
        return None
    if (sub, name) not in _NUMPY:
        return None
    import numpy as np

    if not sub:
        return getattr(np, name)
    for home in ("numpy._core", "numpy.core"):  # numpy 2 first: no deprecation warning
        try:
            return getattr(importlib.import_module(f"{home}.{sub}"), name)
        except (ImportError, AttributeError):
            continue
    return None


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that resolves globals from the allow-list only (see the module doc).

    >>> import pickle
    >>> SafeUnpickler(io.BytesIO(pickle.dumps([1, {2}])), source="x").load()
    [1, {2}]
    """

    def __init__(self, file: BinaryIO, *, source: str = "<pickle>") -> None:
        super().__init__(file)
        self.source = source

    def find_class(self, module: str, name: str) -> Any:
        if name in _RECORDS.get(module, ()) or name in _MESSAGES.get(module, ()):
            return _standin(module, name)
        if module in ("builtins", "__builtin__") and name in _BUILTINS:
            return _BUILTINS[name]
        if (module, name) == ("_codecs", "encode"):
            import _codecs

            return _codecs.encode
        found = _numpy_global(module, name)
        if found is not None:
            return found
        raise UnsafePickleError(self.source, module, name)


def loads(data: bytes, *, source: str = "<bytes>") -> Any:
    """Unpickle bytes with :class:`SafeUnpickler`.

    >>> loads(pickle.dumps(("a", 1.5)))
    ('a', 1.5)
    """
    return SafeUnpickler(io.BytesIO(data), source=source).load()


def load_path(path: str | Path, *, source: str | None = None) -> Any:
    """Unpickle a file (gzip-compressed when its name ends in ``.gz``) safely.

    Errors keep their type: ``UnsafePickleError``, ``pickle.UnpicklingError``,
    ``EOFError``, ``gzip.BadGzipFile``/``zlib.error`` (corrupt or truncated gzip), ``OSError``.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.pkl.gz")
    >>> with gzip.open(p, "wb") as f:
    ...     pickle.dump({"a": [1, 2]}, f)
    >>> load_path(p)
    {'a': [1, 2]}
    """
    path = Path(path)
    raw = path.read_bytes()
    data = gzip.decompress(raw) if path.name.endswith(".gz") else raw
    return loads(data, source=source or str(path))
