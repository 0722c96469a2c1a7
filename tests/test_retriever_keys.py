"""The requests LineRetriever sends are byte for byte those it sent before it moved into one
file (5b13922): the shipped answers in data/cache/llm are keyed by the request, so a changed
byte would turn a replay into a cache miss. ``fixtures/retriever_keys.json`` holds, per
configuration the notebooks, the CLI and the injection benchmark use (plus sanitised and
forced-window ones), the sha256 of the request keys over the pinned steps and the longest
recorded trees (one key per window)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lrlib.core.prompts import BUILTIN
from lrlib.data.dataset import load_steps
from lrlib.llm.client import Completion
from lrlib.reducers import get_reducer
from lrlib.reducers.lineretriever import LineRetriever
from lrlib.report import replay

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "retriever_keys.json").read_text())


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LRLIB_MODEL", "OPENAI_MODEL",
                "LRLIB_CONTEXT_TOKENS"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)


def configs() -> dict[str, LineRetriever]:
    out = {}
    for a in ("tags", "json"):
        for p in BUILTIN:
            for h in (True, False):
                for t in (True, False):
                    extra = {"max_tokens": replay.THINK_MAX_TOKENS} if t else {}
                    out[f"grid {p} h{h:d} t{t:d} {a}"] = replay.lineretriever(
                        p, "structure", a, history=h, think=t, **extra
                    )
    for a in ("tags", "json"):
        out[f"default {a} sanitize"] = replay.lineretriever("paper", answer=a, sanitize=True)
        out[f"defender {a} sanitize"] = replay.lineretriever("defender", answer=a, sanitize=True)
        for ctx in (1500, 3000):
            out[f"default {a} ctx{ctx}"] = replay.lineretriever(
                "paper", answer=a, context_tokens=ctx
            )
        # the paper's setting on an API model (the fields RetrieverConfig() set otherwise
        # before it became the one shipped default are given explicitly)
        api = {"answer": a, "view": "full", "model": "gpt-4.1-mini", "base_url": "http://h/v1",
               "think": True, "max_tokens": 512}  # fmt: skip
        out[f"api full {a} ctx6000"] = get_reducer(
            "lineretriever", max_ranges=4, cache=False, context_tokens=6000, **api
        )
        out[f"api full {a}"] = get_reducer("lineretriever", cache=False, max_ranges=None, **api)
    return out


def keys_of(r: LineRetriever, step) -> list[str] | str:
    try:
        windows = r.plan(step)
    except Exception as exc:  # recorded as such in the fixture
        return type(exc).__name__
    return [r.client.key(r.request(step, w)) for w in windows]


@pytest.fixture(scope="module")
def steps():
    every = {s.step_id: s for s in load_steps()}
    return [every[i] for i in FIXTURE["steps"]]


def test_request_keys_are_those_of_before_the_merge(steps):
    made = configs()
    assert sorted(made) == sorted(FIXTURE["configs"])
    changed = []
    for name, r in made.items():
        keys = [keys_of(r, s) for s in steps]
        if hashlib.sha256(json.dumps(keys).encode()).hexdigest() != FIXTURE["configs"][name]:
            changed.append(name)
    assert not changed, f"requests changed for {changed}"


def test_a_reduction_sends_exactly_the_planned_window_requests(steps):
    step = max(steps, key=lambda s: len(s.tree))
    r = replay.lineretriever("paper", answer="json", context_tokens=1500)
    windows = r.plan(step)
    assert len(windows) > 2  # a long tree in small windows: the window prompts are exercised
    sent = []

    def record(request):
        sent.append(r.client.key(request))
        return Completion('{"ranges": [[1, 3]]}', "m", "embedded", 1, 1, None, 0.1, "stop", "k")

    r.client.complete = record  # what select() sends, without a model
    out = r.reduce(step)
    assert sorted(sent) == sorted(r.client.key(r.request(step, w)) for w in windows)
    assert out.extra["windows"] == [list(w) for w in windows] and out.failure is None
