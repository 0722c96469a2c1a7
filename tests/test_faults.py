"""Fault drills for the LLM layer: a local endpoint dies, rate-limits, stalls, cuts its JSON.

For each: the run finishes or stops with a clear message; a rerun resumes from the response
cache and asks only for what is missing; every answer the server delivered in full is in
the cache (nothing paid for is lost); the cache is never left corrupt, and a corrupt entry is
detected, ignored and replaced. Runs go through :func:`lrlib.report.run.run_steps` (what
``lrlib run`` does) and the ``lrlib run`` command itself.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from drill_server import DrillServer

from lrlib.data.dataset import load_steps
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMError
from lrlib.reducers import get_reducer
from lrlib.report.run import run_steps as _run_steps

MODEL = "drill-model"


@pytest.fixture(scope="module")
def steps():
    return sorted(load_steps(split="validation"), key=lambda s: s.step_id)[:10]


def answer_for(body: dict) -> str:
    """A deterministic answer per prompt (the same prompt always gets the same lines)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    k = zlib.crc32(user.encode()) % 40 + 1
    return f"<answer>[(1, 3), ({k}, {k + 4})]</answer>"


def run_steps(steps, reducer, progress=False):
    """The run: ``lrlib.report.run.run_steps`` with one reducer."""
    return _run_steps(steps, [reducer], progress=progress)


def ok(n, body):
    return ("ok", answer_for(body))


def retriever(url: str, cache_dir: Path, **kw):
    options = {
        "prompt": "paper",
        "view": "full",
        "answer": "tags",
        "think": False,
        "strategy": "remove",
        "model": MODEL,
        "base_url": url,
        "concurrency": 3,
        "cache": ResponseCache(cache_dir),
        "max_retries": 2,
        "timeout": 5.0,
    }
    options.update(kw)  # fmt: skip
    return get_reducer("lineretriever", **options)


def assert_cache_sound(cache_dir: Path, delivered: list[tuple[str, str]]) -> ResponseCache:
    """Every entry verifies, no stray files, and every delivered answer is stored."""
    cache = ResponseCache(cache_dir)
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert all(p.suffix == ".json" for p in files), files  # no temporary files left behind
    keys = list(cache.keys())
    assert all(cache.load(k) is not None for k in keys) and cache.stats.corrupt == 0
    for key, text in delivered:
        entry = cache.load(key)
        assert entry is not None and entry["text"] == text, "a delivered answer was lost"
    return cache


def test_server_dies_mid_run_then_rerun_resumes(steps, tmp_path):
    dies = DrillServer(lambda n, body: ("die",) if n >= 4 else ok(n, body))
    with dies as dying, pytest.raises(LLMError) as err:
        run_steps(steps, retriever(dying.url, tmp_path), progress=False)
    assert err.value.kind == "connection" and "cannot reach" in str(err.value)
    assert dying.url in str(err.value) and "gave up after" in str(err.value)
    paid = len(dying.delivered)  # 4, or fewer if a request raced the crash
    assert 1 <= paid <= 4
    assert_cache_sound(tmp_path, dying.delivered)
    with DrillServer(ok) as fresh:  # back on another port: the cache key has no URL in it
        rows = run_steps(steps, retriever(fresh.url, tmp_path), progress=False)
        assert len(fresh.requests) == len(steps) - paid  # only what was missing
    assert all(r["failure"] is None for r in rows) and len(rows) == len(steps)
    assert sum(bool(r["from_cache"]) for r in rows) == paid
    assert_cache_sound(tmp_path, fresh.delivered + dying.delivered)


def test_rate_limited_for_a_while_then_finishes(steps, tmp_path):
    with DrillServer(lambda n, body: ("status", 429) if n < 6 else ok(n, body)) as server:
        # one step may draw every 429: enough retries that it still gets through
        rows = run_steps(steps[:5], retriever(server.url, tmp_path, max_retries=6), progress=False)
    assert all(r["failure"] is None for r in rows)
    assert len(server.requests) == 5 + 6 and len(server.delivered) == 5
    cache = assert_cache_sound(tmp_path, server.delivered)
    assert len(cache) == 5


def test_rate_limited_for_good_stops_with_a_clear_message(steps, tmp_path):
    behave = lambda n, body: ok(n, body) if n < 2 else ("status", 429, "Rate limit reached")  # noqa: E731
    limited = "rate limited by .*Rate limit reached.*gave up"
    with DrillServer(behave) as server, pytest.raises(LLMError, match=limited) as err:
        run_steps(steps[:4], retriever(server.url, tmp_path, concurrency=1), progress=False)
    assert err.value.kind == "rate_limit" and err.value.status == 429
    assert_cache_sound(tmp_path, server.delivered)
    assert len(server.delivered) == 2


def test_slow_answers_within_the_timeout_all_arrive(steps, tmp_path):
    slow = lambda n, body: ("slow", 0.3, answer_for(body))  # noqa: E731
    with DrillServer(slow) as server:
        rows = run_steps(steps[:6], retriever(server.url, tmp_path, concurrency=3), progress=False)
    assert all(r["failure"] is None for r in rows) and len(server.requests) == 6
    assert 1 < server.max_in_flight <= 3  # concurrent, and bounded
    assert_cache_sound(tmp_path, server.delivered)


def test_answers_slower_than_the_timeout_fall_back_and_are_retried_on_rerun(steps, tmp_path):
    slow = lambda n, body: ("slow", 1.0, answer_for(body))  # noqa: E731
    few = steps[:3]
    with DrillServer(slow) as server:
        rows = run_steps(few, retriever(server.url, tmp_path, timeout=0.25, max_retries=1),
                         progress=False)  # fmt: skip
        assert len(server.requests) == 2 * len(few)  # one retry each, then the policy
    assert [r["failure"] for r in rows] == ["timeout"] * len(few)
    assert all(r["kept_lines"] == r["n_lines"] for r in rows)  # the full tree, never empty
    assert len(ResponseCache(tmp_path)) == 0  # an answer never received is not cached
    with DrillServer(ok) as fast:
        rows = run_steps(few, retriever(fast.url, tmp_path), progress=False)
        assert len(fast.requests) == len(few)
    assert all(r["failure"] is None for r in rows)


def test_truncated_json_is_retried_then_the_run_finishes(steps, tmp_path):
    behave = lambda n, body: ("truncated", answer_for(body)) if n < 3 else ok(n, body)  # noqa: E731
    with DrillServer(behave) as server:
        rows = run_steps(
            steps[:3], retriever(server.url, tmp_path, concurrency=1, max_retries=3), progress=False
        )
    assert all(r["failure"] is None for r in rows)
    cache = assert_cache_sound(tmp_path, server.delivered)
    assert len(cache) == 3 and len(server.requests) == 6


def test_truncated_json_for_good_stops_with_a_clear_message(steps, tmp_path):
    cut = DrillServer(lambda n, body: ("truncated", answer_for(body)))
    with cut, pytest.raises(LLMError) as err:
        run_steps(steps[:2], retriever(cut.url, tmp_path), progress=False)
    assert err.value.kind == "malformed" and "gave up after" in str(err.value)
    assert len(ResponseCache(tmp_path)) == 0


def test_corrupt_cache_entries_are_detected_ignored_and_replaced(steps, tmp_path):
    few = steps[:6]
    with DrillServer(ok) as server:
        first = run_steps(few, retriever(server.url, tmp_path), progress=False)
    cache = ResponseCache(tmp_path)
    keys = sorted(cache.keys())
    paths = [cache.path(k) for k in keys]
    raw = paths[0].read_bytes()
    paths[0].write_bytes(raw[: len(raw) // 2])  # cut short (a crash without atomic writes)
    tampered = paths[1].read_text().replace("<answer>", "<answer>[(1, 9999)] ", 1)
    paths[1].write_text(tampered)  # edited answer, stale checksum
    paths[2].write_text(paths[3].read_text())  # someone else's entry under this key
    paths[4].write_bytes(b"\x00\xff" * 10)  # garbage
    assert [cache.load(k) is None for k in keys] == [True, True, True, False, True, False]
    with DrillServer(ok) as server:
        reducer = retriever(server.url, tmp_path)
        again = run_steps(few, reducer, progress=False)
        assert len(server.requests) == 4  # exactly the corrupt ones were asked again
        assert reducer.client.cache.stats.corrupt == 4
    strip = lambda rows: [(r["step_id"], r["selection"], r["tokens_after"]) for r in rows]  # noqa: E731
    assert strip(again) == strip(first)
    assert_cache_sound(tmp_path, server.delivered)


def test_cli_run_stops_clearly_and_resumes(tmp_path, monkeypatch, capsys):
    """``lrlib run`` against a server that dies: exit 1, says what happened and that a rerun
    resumes; the rerun asks only for what is missing and writes the full table."""
    from lrlib.cli import main

    out = tmp_path / "run.csv"

    def cli(url: str) -> int:
        return main(["run", "--split", "validation", "--limit", "6", "--base-url", url,
                     "--model", MODEL, "--view", "full", "--no-think", "--answer", "tags", "--cache-dir",
                     str(tmp_path / "cache"), "--concurrency", "2", "--max-retries", "1", "-o", str(out),
                     "--no-progress"])  # fmt: skip

    with DrillServer(lambda n, body: ("die",) if n >= 3 else ok(n, body)) as dying:
        assert cli(dying.url) == 1
    err = capsys.readouterr().err
    assert "cannot reach" in err and "rerun to resume" in err and "Traceback" not in err
    assert not out.exists()
    assert_cache_sound(tmp_path / "cache", dying.delivered)
    with DrillServer(ok) as fresh:
        assert cli(fresh.url) == 0
        assert len(fresh.requests) == 6 - len(dying.delivered) and dying.delivered
    import pandas as pd

    table = pd.read_csv(out)
    assert len(table) == 6 and table["failure"].isna().all()
    assert table["from_cache"].sum() == len(dying.delivered)


def test_killed_run_leaves_a_sound_cache_and_resumes(tmp_path, monkeypatch):
    """SIGKILL in the middle of ``lrlib run``: whatever is on disk verifies, at most the
    answers in flight are lost, and a rerun asks for exactly the rest."""
    from lrlib.cli import main

    cache_dir, out = tmp_path / "cache", tmp_path / "run.csv"

    def args(url: str) -> list[str]:
        return ["run", "--split", "validation", "--limit", "16", "--base-url", url, "--model",
                MODEL, "--view", "full", "--no-think", "--answer", "tags", "--cache-dir", str(cache_dir),
                "--concurrency", "2", "-o", str(out), "--no-progress"]  # fmt: skip

    slow = lambda n, body: ("slow", 0.15, answer_for(body))  # noqa: E731
    with DrillServer(slow) as server:
        cmd = [sys.executable, "-m", "lrlib", *args(server.url)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(server.delivered) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        server.wait_idle()
        delivered = list(server.delivered)
    assert 5 <= len(delivered) < 16, proc.stderr.read().decode()[-2000:]
    cache = ResponseCache(cache_dir)
    stored = set(cache.keys())
    assert all(cache.load(k) is not None for k in stored)  # nothing half-written is trusted
    assert len({k for k, _ in delivered} - stored) <= 2  # at most the answers in flight
    with DrillServer(ok) as fresh:
        assert main(args(fresh.url)) == 0
        assert len(fresh.requests) == 16 - len(stored)
    import pandas as pd

    table = pd.read_csv(out)
    assert len(table) == 16 and table["failure"].isna().all()
    assert table["from_cache"].sum() == len(stored)
