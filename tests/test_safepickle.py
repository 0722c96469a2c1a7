"""lrlib.data.safepickle: real step pickles load; anything outside the allow-list is refused unrun."""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import os
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.data.safepickle import (
    Message,
    Record,
    SafeUnpickler,
    UnsafePickleError,
    load_path,
    loads,
)
from lrlib.data.traces import READ_ERRORS


class _Evil:
    """Pickles to a call of ``func(*args)``: what a crafted file does."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def _marker_command(marker: Path) -> str:
    return f"touch {marker}"


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_os_system_pickle_is_refused_and_not_run(tmp_path, protocol):
    marker = tmp_path / "pwned"
    data = pickle.dumps(_Evil(os.system, _marker_command(marker)), protocol=protocol)
    path = tmp_path / "step_0.pkl.gz"
    path.write_bytes(gzip.compress(data))
    with pytest.raises(UnsafePickleError) as err:
        load_path(path)
    assert str(path) in str(err.value)  # names the file...
    assert f"{os.system.__module__}.system" in str(err.value)  # ...and the global
    assert err.value.name == "system"
    assert not marker.exists()
    # the unsafe pickle is what a plain pickle.loads would have run
    pickle.loads(data)
    assert marker.exists()


@pytest.mark.parametrize(
    "target",
    [
        ("builtins", "eval"),
        ("builtins", "getattr"),
        ("builtins", "__import__"),
        ("subprocess", "Popen"),
        ("numpy", "load"),
        ("numpy.core.multiarray", "fromfile"),
        ("numpy.testing._private.utils", "runstring"),
        ("browsergym.experiments.loop", "ExpArgs"),  # a real class, but not a record we map
        ("agentlab.experiments.loop", "_move_old_exp"),
    ],
)
def test_other_globals_are_refused(target):
    module, name = target
    data = b"\x80\x04c" + f"{module}\n{name}\n".encode() + b")R."
    with pytest.raises(UnsafePickleError, match=f"'{module}.{name}'"):
        loads(data, source="crafted.pkl")


def test_refusal_happens_inside_allowed_numpy_call():
    # _reconstruct is allowed, but the class it is asked to build must pass the list too
    reconstruct = SafeUnpickler(io.BytesIO()).find_class("numpy.core.multiarray", "_reconstruct")
    evil = _Evil(reconstruct, _Evil(os.system, "true"), (0,), b"b")
    with pytest.raises(UnsafePickleError, match="system"):
        loads(pickle.dumps(evil))


def test_extension_registry_opcode_is_checked_too():
    import copyreg

    code = 0xF1
    copyreg.add_extension(os.system.__module__, "system", code)
    try:
        data = pickle.dumps(_Evil(os.system, "true"), protocol=2)
        assert b"\x82" in data  # EXT1: no module name in the bytes at all
        with pytest.raises(UnsafePickleError):
            loads(data)
    finally:
        copyreg.remove_extension(os.system.__module__, "system", code)


def test_real_step_pickles_load_with_stand_ins(traces_dir):
    files = sorted(traces_dir.glob("*/step_*.pkl.gz"))[:60]
    assert files
    for f in files:
        info = load_path(f)
        assert isinstance(info, Record)
        assert info.pickled_class.endswith("loop.StepInfo")
        assert isinstance(info.step, int)
        assert isinstance(info.profiling, Record)
        assert info.profiling.pickled_class.endswith("StepTimestamps")
        if info.obs:
            assert isinstance(info.obs["axtree_txt"], str)
            assert isinstance(info.obs["active_page_index"], np.ndarray)


def test_real_goal_objects_load(traces_dir):
    for f in sorted(traces_dir.glob("*/goal_object.pkl.gz"))[:10]:
        goal = load_path(f)
        assert isinstance(goal, list) and goal[0]["type"] == "text"


def _fake_module(monkeypatch, name: str, **classes) -> None:
    module = types.ModuleType(name)
    for cls_name, cls in classes.items():
        cls.__module__, cls.__qualname__, cls.__name__ = name, cls_name, cls_name
        setattr(module, cls_name, cls)
    monkeypatch.setitem(sys.modules, name, module)
    parts = name.split(".")
    for i in range(1, len(parts)):  # parents must import too
        parent = ".".join(parts[:i])
        if parent not in sys.modules:
            monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))


def test_agentlab_records_and_messages_map_to_stand_ins(monkeypatch):
    @dataclasses.dataclass
    class StepInfo:
        step: int = 0
        obs: dict | None = None
        agent_info: dict | None = None

    class HumanMessage(dict):
        pass

    _fake_module(monkeypatch, "agentlab.experiments.loop", StepInfo=StepInfo)
    _fake_module(monkeypatch, "agentlab.llm.llm_utils", HumanMessage=HumanMessage)
    msg = HumanMessage(role="user", content="buy an ipad")
    msg.note = "extra attribute"
    original = StepInfo(3, {"axtree_txt": "RootWebArea ''"}, {"chat_messages": [msg]})
    data = pickle.dumps(original, protocol=4)
    for name in [m for m in sys.modules if m.split(".")[0] == "agentlab"]:
        monkeypatch.delitem(sys.modules, name)  # nothing left to import from
    back = loads(data)
    assert type(back).__name__ == "StepInfo" and isinstance(back, Record)
    assert back.pickled_class == "agentlab.experiments.loop.StepInfo"
    assert (back.step, back.obs) == (3, {"axtree_txt": "RootWebArea ''"})
    (message,) = back.agent_info["chat_messages"]
    assert isinstance(message, Message) and message == {"role": "user", "content": "buy an ipad"}
    assert message.note == "extra attribute"


def test_pydantic_style_state_is_flattened():
    cls = SafeUnpickler(io.BytesIO(), source="x").find_class(
        "langchain_core.messages.human", "HumanMessage"
    )
    msg = cls()
    msg.__setstate__({"__dict__": {"content": "hi"}, "__pydantic_extra__": {"k": 1}})
    assert (msg.content, msg.k) == ("hi", 1)


def test_numpy_arrays_and_scalars_round_trip():
    for value in (np.array([1]), np.arange(6, dtype=np.float32).reshape(2, 3), np.float64(2.5)):
        for protocol in (2, 4, 5):
            back = loads(pickle.dumps(value, protocol=protocol))
            assert np.array_equal(back, value) and back.dtype == value.dtype


_plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.binary(),
    lambda children: st.lists(children, max_size=4)
    | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=5), children, max_size=4)
    | st.frozensets(st.integers(), max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(value=_plain, protocol=st.integers(0, pickle.HIGHEST_PROTOCOL))
def test_plain_data_round_trips_at_every_protocol(value, protocol):
    assert loads(pickle.dumps(value, protocol=protocol)) == value


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes_never_escape_as_anything_but_errors(data):
    errors = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
              AttributeError, OverflowError, MemoryError, UnicodeDecodeError, RecursionError)  # fmt: skip
    with contextlib.suppress(*errors):
        loads(data)


def test_truncated_and_corrupt_gzip_raise_ordinary_errors(tmp_path, traces_dir):
    real = next(iter(sorted(traces_dir.glob("*/step_1.pkl.gz"))))
    raw = real.read_bytes()
    truncated = tmp_path / "t.pkl.gz"
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(EOFError):
        load_path(truncated)
    garbled = tmp_path / "g.pkl.gz"
    garbled.write_bytes(raw[:20] + bytes(b ^ 0xFF for b in raw[20:60]) + raw[60:])
    with pytest.raises(READ_ERRORS):
        load_path(garbled)
