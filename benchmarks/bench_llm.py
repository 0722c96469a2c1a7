"""LLM layer speed: concurrency against a slow endpoint, and a cache-hit rerun of the dataset.

1. A local OpenAI-compatible test server (a real HTTP server) that takes 200 ms per call:
   the same requests sequentially and 8 at a time. Target: 8-way >= 6x faster.
2. LineRetriever (paper prompt, compact view) over every step of the shipped dataset: a
   first pass against the test server fills a temporary cache; the timed rerun is
   ``offline=True`` (no endpoint at all), in-process and as the ``lrlib run`` command.
   Target: < 5 s.

    .venv/bin/python benchmarks/bench_llm.py
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from lrlib.data.dataset import load_steps
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMClient
from lrlib.reducers.lineretriever import LineRetriever

LATENCY = 0.2
N_CALLS = 48
CONFIG = {"view": "compact", "think": False}  # as `lrlib run --view compact --no-think`
DEAD = "http://127.0.0.1:9/v1"  # nothing listens here: replays must not need the endpoint


def handler(delay: float) -> Callable[[Request], Response]:
    """A chat endpoint that answers every request after ``delay`` seconds."""
    message = {"role": "assistant", "content": "<answer>[(1, 40)]</answer>"}
    body = json.dumps(
        {
            "id": "bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 8},
        }
    )

    def answer(request: Request) -> Response:
        time.sleep(delay)
        return Response(body, content_type="application/json")

    return answer


def timed_calls(url: str, concurrency: int) -> float:
    client = LLMClient("bench", base_url=url, cache=False, concurrency=concurrency)
    reqs = [client.request([{"role": "user", "content": f"q{i}"}]) for i in range(N_CALLS)]
    start = time.perf_counter()
    out = client.complete_many(reqs)
    elapsed = time.perf_counter() - start
    assert not [o for o in out if isinstance(o, Exception)]
    return elapsed


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = HTTPServer(threaded=True)
    server.start()
    url = server.url_for("/v1")
    rows = []
    try:
        server.expect_request("/v1/chat/completions").respond_with_handler(handler(LATENCY))
        seq, par = timed_calls(url, 1), timed_calls(url, 8)
        ms = f"{LATENCY * 1000:.0f} ms"
        rows += [
            (f"{N_CALLS} calls of {ms}, sequential", f"{seq:.2f} s"),
            (f"{N_CALLS} calls of {ms}, 8-way concurrency", f"{par:.2f} s"),
            ("speedup (target >= 6x)", f"{seq / par:.1f}x"),
        ]

        server.clear()
        server.expect_request("/v1/chat/completions").respond_with_handler(handler(0.0))
        steps = load_steps()
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "llm"
            fill = LLMClient("bench", base_url=url, cache=ResponseCache(root), concurrency=16)
            LineRetriever(client=fill, **CONFIG).reduce_many(steps)

            start = time.perf_counter()
            replay = LLMClient("bench", base_url=DEAD, cache=ResponseCache(root), offline=True)
            out = LineRetriever(client=replay, **CONFIG).reduce_many(steps)
            warm = time.perf_counter() - start
            assert all(r.usage["from_cache"] and r.failure is None for r in out)

            out_csv = str(Path(tmp) / "run.csv")
            cmd = [sys.executable, "-m", "lrlib", "run", "--offline", "--no-progress"]
            cmd += ["--model", "bench", "--base-url", DEAD, "--cache-dir", str(root)]
            cmd += ["--view", "compact", "--no-think", "--max-tokens", "512", "-o", out_csv]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            cli = time.perf_counter() - start
            size = sum(p.stat().st_size for p in root.rglob("*.json"))
        rows += [
            (f"cache-hit rerun, {len(steps)} steps, in-process (target < 5 s)", f"{warm:.2f} s"),
            ("same, `lrlib run --offline` (process start included)", f"{cli:.2f} s"),
            ("cache: entries, bytes per entry", f"{len(out)}, {size // len(out)}"),
        ]
    finally:
        server.stop()
    print("| measure | value |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
