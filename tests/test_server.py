"""The embedded model: xllamacpp serving SmolLM2-135M-Instruct on 127.0.0.1, and `lrlib serve`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from lrlab.server import MODEL_ID, EmbeddedServer, gguf_path, stop_shared
from lrlib.core.step import Step
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMClient
from lrlib.reducers.lineretriever import LineRetriever

pytest.importorskip("xllamacpp")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _post(url: str, body: dict, key: str | None) -> int:
    """The HTTP status of a JSON POST, with ``key`` as bearer token if given."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def _refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=3)
    except (urllib.error.URLError, ConnectionError):
        return True
    return False


# The module's own work dir: the speed measure the threads test takes (first, below) is the
# one the other starts here reuse, as a user's starts within the hour do (one measure, not one
# per test); the repository's .lrlib is left alone.
@pytest.fixture(scope="module", autouse=True)
def _work_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LRLIB_WORK_DIR", str(tmp_path_factory.mktemp("server-work")))
        yield


def test_the_weights_ship_in_the_wheel():
    path = gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50e6
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"


def test_threads_are_measured_the_fastest_kept_and_the_measure_reused(monkeypatch):
    """No thread count set: a start measures each candidate with the server's own timings,
    keeps the fastest for the prompt and the fastest for the answer, writes the measure;
    the next start within the hour reuses it (no probe); `lrlib run`'s plan line reports it."""
    import argparse

    from lrlab import server as srv
    from lrlib.report import run

    monkeypatch.delenv("LRLIB_SERVER_THREADS", raising=False)
    srv.speed_file().unlink(missing_ok=True)  # measured here, whatever ran before
    probes = []
    real_probe = srv._probe
    monkeypatch.setattr(srv, "_probe", lambda *a, **k: probes.append(a) or real_probe(*a, **k))
    with EmbeddedServer(context=1024, parallel=1) as server:
        speed = server.speed
        assert _get(server.address + "/health")["status"] == "ok"
    trials = {int(t): v for t, v in speed["trials"].items()}
    assert sorted(trials) == srv.candidate_threads() and len(probes) == len(trials)
    assert trials[1]["prefill_tps"] > 0 and trials[1]["decode_tps"] > 0  # others may time out
    prefill = max(trials, key=lambda t: trials[t]["prefill_tps"])  # each its fastest
    decode = max(trials, key=lambda t: trials[t]["decode_tps"])
    assert (server.batch_threads, server.threads) == (prefill, decode)
    assert (speed["batch_threads"], speed["threads"]) == (prefill, decode)
    kept = srv.measured_speed()
    best = {
        "prefill_tps": trials[prefill]["prefill_tps"],
        "decode_tps": trials[decode]["decode_tps"],
    }
    assert kept["answer_s"] == round(srv.seconds_per_answer(best), 1)
    with EmbeddedServer(context=1024, parallel=1) as again:
        assert (again.batch_threads, again.threads) == (prefill, decode)
        assert again.speed["at"] == speed["at"]
    assert len(probes) == len(trials)  # reused, not measured again
    monkeypatch.setenv("LRLIB_OFFLINE", "0")  # the embedded model may be asked (the one rule)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    line = run.plan(parser.parse_args(["--default-steps", "--limit", "2", "--refresh"]))
    assert re.search(
        rf"prefill {best['prefill_tps']:.0f} tokens/s \({prefill} threads?\), decoding "
        rf"{best['decode_tps']:.1f} tokens/s \({decode} threads?\), measured here \d+ s ago",
        line,
    ), line


def test_server_binds_loopback_answers_and_stops(tmp_path):
    server = EmbeddedServer(context=1024, parallel=1)
    assert not server.running
    with server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.address)
        assert _get(server.address + "/health")["status"] == "ok"
        chat = {"model": MODEL_ID, "messages": [{"role": "user", "content": "hi"}]}
        for key in (None, "wrong-key"):  # other users and pages on this machine get nothing
            assert _post(server.base_url + "/chat/completions", chat, key) == 401
        assert server.api_key not in repr(server)
        client = LLMClient(
            MODEL_ID, base_url=server.base_url, api_key=server.api_key, max_tokens=4,
            cache=ResponseCache(tmp_path),
        )  # fmt: skip
        out = client.complete([{"role": "user", "content": "Say yes."}])
        assert out.completion_tokens and 0 < out.completion_tokens <= 4
        assert out.prompt_tokens > 5 and out.model == MODEL_ID and out.endpoint == "embedded"
        address = server.address
    assert not server.running and _refused(address + "/health")


@pytest.mark.slow
def test_default_client_runs_the_embedded_model_in_structured_mode(real_trees, tmp_path, capfd):
    t = real_trees["workarena_ipad"]
    small = "\n".join(t["tree"].split("\n")[:25])  # a real tree, cut to keep the test short
    step = Step(goal=t["goal"], tree=small, history=("click('a225')",), step_id="ipad")
    r = LineRetriever(
        view="compact",
        answer="json",
        think=False,
        max_ranges=3,
        max_tokens=48,
        cache=ResponseCache(tmp_path),
        offline=False,  # asked to run the model (no endpoint: offline otherwise)
    )
    assert r.client.endpoint.kind == "embedded"  # no endpoint configured
    try:
        red = r.reduce(step)
    finally:
        stop_shared()
    sel = red.extra["selection"]
    assert red.failure is None, (red.failure, red.extra["answers"])
    assert sel and all(1 <= a <= b <= len(step.axtree) for a, b in sel)
    assert json.loads(red.extra["answers"][0])["ranges"]  # constrained decoding: valid JSON
    u = red.usage
    assert u["model"] == MODEL_ID and u["endpoint"] == "embedded" and u["prompt_tokens"] > 100
    assert 0 < u["completion_tokens"] <= 48 and u["llm_latency_s"] > 0
    err = capfd.readouterr().err  # the shared server says when it starts and where
    # threads are measured on the machine: "(2 threads)" or "(1 thread, 2 for the prompt)"
    started = r"starting SmolLM2-135M-Instruct on 127\.0\.0\.1:\d+ \(\d+ threads?(, \d+ for the prompt)?\)"
    assert re.search(started, err), err
    assert re.search(r"SmolLM2-135M-Instruct ready in \d+\.\d s", err)


def test_serve_command_prints_the_url_and_stops_on_sigterm():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lrlib",
            "serve",
            "--port",
            "0",
            "--context",
            "512",
            "--parallel",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+)/v1", line)
        assert match and "SmolLM2-135M-Instruct" in line, line + proc.stderr.read()
        export = proc.stdout.readline()
        assert "OPENAI_BASE_URL=" in export, export
        key = re.search(r"OPENAI_API_KEY=(\S+)", export).group(1)
        assert _get(match.group(1) + "/health")["status"] == "ok"
        chat = {"model": MODEL_ID, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        assert _post(match.group(1) + "/v1/chat/completions", chat, None) == 401
        assert _post(match.group(1) + "/v1/chat/completions", chat, key) == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        time.sleep(0.2)
        assert _refused(match.group(1) + "/health")
    finally:
        if proc.poll() is None:
            proc.kill()
