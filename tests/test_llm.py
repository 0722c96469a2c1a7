"""LLMClient against a real local HTTP server serving scripted chat completions."""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import time

import pytest
from fake_openai import Script, chat_body, error, serve
from pytest_httpserver import HTTPServer
from werkzeug import Response

from lrlib.core.prompts import PromptOptions, get_prompt
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import (
    CacheMissError,
    ContextLengthError,
    Endpoint,
    LLMClient,
    LLMError,
    LLMTimeout,
)
from lrlib.llm.errors import MODEL_ID

MSGS = [{"role": "system", "content": "You select lines."}, {"role": "user", "content": "1: a"}]


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def threaded_server():
    server = HTTPServer(threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


KEY = "sk-test-" + secrets.token_hex(8)  # made per run: no key-like literal in the tree


def client_for(url: str, tmp_path, **kw) -> LLMClient:
    kw.setdefault("cache", ResponseCache(tmp_path / "llm"))
    return LLMClient("fake-model", base_url=url, api_key=KEY, **kw)


def test_success_records_usage_latency_model_and_prompt(httpserver, tmp_path):
    script = Script(
        lambda body, n: chat_body(
            "<answer>[(1, 1)]</answer>", prompt_tokens=321, completion_tokens=12, cached_tokens=300
        )
    )
    client = client_for(serve(httpserver, script), tmp_path)
    variant, options = get_prompt("paper"), PromptOptions(answer="json")
    req = client.request(
        MSGS,
        response_format=variant.response_format(options),
        prompt_name="paper",
        prompt_hash=variant.fingerprint(options),
    )
    out = client.complete(req)
    assert out.text == "<answer>[(1, 1)]</answer>"
    assert (out.prompt_tokens, out.completion_tokens, out.cached_tokens) == (321, 12, 300)
    assert out.model == "fake-model-2024" and out.endpoint == "compatible"
    assert out.prompt_name == "paper" and out.prompt_hash == variant.fingerprint(options)
    assert out.latency_s > 0 and out.attempts == 1 and not out.from_cache
    assert client.records == [out.usage]
    sent = script.bodies[0]
    assert sent["model"] == "fake-model" and sent["messages"] == MSGS
    assert sent["temperature"] == 0 and sent["seed"] == 0 and sent["max_tokens"] == 512
    assert sent["response_format"] == variant.response_format(options)  # structured mode
    assert script.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_tag_mode_sends_no_response_format(httpserver, tmp_path):
    script = Script(lambda body, n: "<answer>1</answer>")
    client = client_for(serve(httpserver, script), tmp_path, cache=False)
    client.complete(MSGS, response_format=get_prompt("paper").response_format(PromptOptions()))
    assert "response_format" not in script.bodies[0]


def test_second_call_is_answered_by_the_cache(httpserver, tmp_path):
    script = Script(lambda body, n: f"<answer>{n + 1}</answer>")
    url = serve(httpserver, script)
    first = client_for(url, tmp_path).complete(MSGS)
    again = client_for(url, tmp_path).complete(MSGS)
    assert script.calls == 1
    assert again.from_cache and again.text == first.text
    assert again.latency_s == first.latency_s  # the original call's latency is kept
    assert again.prompt_tokens == first.prompt_tokens
    other = client_for(url, tmp_path, max_tokens=64).complete(MSGS)  # params are in the key
    assert script.calls == 2 and other.text == "<answer>2</answer>"


def test_offline_replays_and_refuses_misses(httpserver, tmp_path):
    url = serve(httpserver, Script(lambda body, n: "<answer>1</answer>"))
    client_for(url, tmp_path).complete(MSGS)
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    offline = client_for(dead, tmp_path, offline=True)
    assert offline.complete(MSGS).from_cache
    with pytest.raises(CacheMissError, match="offline"):
        offline.complete([{"role": "user", "content": "never asked"}])


def test_refresh_asks_again_and_overwrites(httpserver, tmp_path):
    script = Script(lambda body, n: f"<answer>{n + 1}</answer>")
    url = serve(httpserver, script)
    client_for(url, tmp_path).complete(MSGS)
    fresh = client_for(url, tmp_path, refresh=True).complete(MSGS)
    assert script.calls == 2 and not fresh.from_cache
    assert client_for(url, tmp_path).complete(MSGS).text == "<answer>2</answer>"


def test_429_then_success_is_retried_after_retry_after(httpserver, tmp_path):
    def answer(body, n):
        if n == 0:
            return error(429, "Rate limit reached", headers={"Retry-After": "0.2"})
        return "<answer>1</answer>"

    script = Script(answer)
    client = client_for(serve(httpserver, script), tmp_path, max_retries=3)
    start = time.perf_counter()
    out = client.complete(MSGS)
    assert out.text == "<answer>1</answer>" and out.attempts == 2 and script.calls == 2
    assert time.perf_counter() - start >= 0.2  # honoured Retry-After (the SDK's retry)
    assert [h.get("X-Stainless-Retry-Count") for h in script.headers] == ["0", "1"]


def test_500s_are_retried_then_raise_with_the_status(httpserver, tmp_path):
    script = Script(lambda body, n: error(500, "upstream exploded"))
    client = client_for(serve(httpserver, script), tmp_path, max_retries=2)
    with pytest.raises(LLMError, match="HTTP 500.*upstream exploded.*3 attempts") as info:
        client.complete(MSGS)
    assert info.value.kind == "server" and info.value.status == 500
    assert script.calls == 3
    assert not list((tmp_path / "llm").rglob("*.json"))  # failures are not cached


def test_server_error_then_success(httpserver, tmp_path):
    script = Script(lambda body, n: error(503, "busy") if n < 2 else "<answer>2</answer>")
    out = client_for(serve(httpserver, script), tmp_path, max_retries=3).complete(MSGS)
    assert out.attempts == 3 and out.text == "<answer>2</answer>"


def test_timeout_is_retried_then_raises_llmtimeout(threaded_server, tmp_path):
    script = Script(lambda body, n: "<answer>1</answer>", delay=4.0)
    client = client_for(serve(threaded_server, script), tmp_path, timeout=0.3, max_retries=1)
    start = time.perf_counter()
    with pytest.raises(LLMTimeout, match="within 0.3 s"):
        client.complete(MSGS)
    # gave up without waiting for an answer (4 s): two 0.3 s tries and the SDK's back-off,
    # with room for a loaded machine (1.6-3.1 s measured at load 12)
    assert time.perf_counter() - start < 3.5
    assert script.calls == 2
    script.release()  # the abandoned handlers finish before the server stops
    assert script.in_flight == 0


def test_dropped_connection_is_retried_then_raises(tmp_path):
    client = client_for(f"http://127.0.0.1:{_free_port()}/v1", tmp_path, max_retries=2)
    with pytest.raises(LLMError, match="cannot reach") as info:
        client.complete(MSGS)
    assert info.value.kind == "connection"


@pytest.mark.parametrize(
    ("status", "message", "kind", "hint"),
    [
        (401, "Incorrect API key provided", "auth", "OPENAI_API_KEY"),
        (404, "The model `nope` does not exist", "not_found", "model name"),
        (400, "Invalid value for 'temperature'", "request", "rejected the request"),
    ],
)
def test_non_retryable_errors_raise_at_once_with_a_hint(
    httpserver, tmp_path, status, message, kind, hint
):
    script = Script(lambda body, n: error(status, message))
    with pytest.raises(LLMError, match=hint) as info:
        client_for(serve(httpserver, script), tmp_path, max_retries=3).complete(MSGS)
    assert info.value.kind == kind and info.value.status == status and message in str(info.value)
    assert script.calls == 1


def test_error_messages_never_repeat_the_key(httpserver, tmp_path):
    key = KEY  # the client's own key, quoted back by the server
    script = Script(lambda body, n: error(401, f"Incorrect API key provided: {key}"))
    with pytest.raises(LLMError) as info:
        client_for(serve(httpserver, script), tmp_path).complete(MSGS)
    assert key not in str(info.value) and "<the API key>" in str(info.value)


def test_context_error_is_recognised_and_cached(httpserver, tmp_path):
    llama = "request (9000 tokens) exceeds the available context size (8192 tokens)"
    script = Script(lambda body, n: error(400, llama))
    url = serve(httpserver, script)
    with pytest.raises(ContextLengthError, match="exceeds the available context"):
        client_for(url, tmp_path).complete(MSGS)
    with pytest.raises(ContextLengthError, match="cached"):  # a replay fails the same way
        client_for(url, tmp_path).complete(MSGS)
    assert script.calls == 1


@pytest.mark.parametrize(
    "body",
    [{"id": "x", "object": "chat.completion", "choices": []}, {"unexpected": True}],
)
def test_malformed_bodies_are_retried_then_raise(httpserver, tmp_path, body):
    script = Script(lambda b, n: body)
    with pytest.raises(LLMError) as info:
        client_for(serve(httpserver, script), tmp_path, max_retries=1).complete(MSGS)
    assert info.value.kind == "malformed" and script.calls == 2


def test_cut_off_body_is_retried_then_succeeds(httpserver, tmp_path):
    body = chat_body("<answer>1</answer>")
    cut = Response(json.dumps(body)[:150], content_type="application/json")  # a dropped stream
    script = Script(lambda b, n: cut if n == 0 else body)
    out = client_for(serve(httpserver, script), tmp_path, max_retries=2).complete(MSGS)
    assert out.text == "<answer>1</answer>" and out.attempts == 2


def test_malformed_answer_text_is_returned_as_is(httpserver, tmp_path):
    # an unreadable answer is the retriever's business (its failure policy), not an error
    url = serve(httpserver, Script(lambda b, n: "Sure! Here are the lines: ```python\n"))
    assert client_for(url, tmp_path).complete(MSGS).text.startswith("Sure!")


def test_concurrency_is_bounded_and_used(threaded_server, tmp_path):
    script = Script(lambda body, n: "<answer>1</answer>", delay=0.2)
    client = client_for(serve(threaded_server, script), tmp_path, concurrency=4, cache=False)
    reqs = [client.request([{"role": "user", "content": f"q{i}"}]) for i in range(12)]
    done = []
    start = time.perf_counter()
    out = client.complete_many(reqs, progress=lambda: done.append(1))
    elapsed = time.perf_counter() - start
    assert [o.text for o in out] == ["<answer>1</answer>"] * 12 and len(done) == 12
    assert script.max_in_flight == 4
    assert elapsed < 12 * 0.2 / 2  # far from sequential


def test_complete_many_returns_errors_in_place(httpserver, tmp_path):
    def answer(body, n):
        return error(401, "bad key") if "bad" in body["messages"][0]["content"] else "ok"

    client = client_for(serve(httpserver, Script(answer)), tmp_path, cache=False)
    good, bad = (
        client.request([{"role": "user", "content": "good"}]),
        client.request([{"role": "user", "content": "bad"}]),
    )
    out = client.complete_many([good, bad])
    assert out[0].text == "ok" and isinstance(out[1], LLMError) and out[1].kind == "auth"


def test_sync_call_works_inside_a_running_event_loop(httpserver, tmp_path):
    url = serve(httpserver, Script(lambda body, n: "<answer>1</answer>"))
    client = client_for(url, tmp_path)

    async def notebook_cell():  # Jupyter runs cells inside an event loop
        return client.complete(MSGS)

    assert asyncio.run(notebook_cell()).text == "<answer>1</answer>"


def test_endpoint_resolution_from_arguments_and_environment(monkeypatch):
    assert Endpoint.resolve().kind == "embedded" and Endpoint.resolve().model == MODEL_ID
    with pytest.raises(LLMError, match="needs an endpoint"):
        Endpoint.resolve("gpt-4o")
    env_key = "sk-env-" + secrets.token_hex(6)
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    with pytest.raises(LLMError, match="LRLIB_MODEL"):
        Endpoint.resolve()
    monkeypatch.setenv("LRLIB_MODEL", "gpt-4.1-mini")
    e = Endpoint.resolve()
    assert (e.kind, e.model, e.base_url, e.api_key) == (
        "openai",
        "gpt-4.1-mini",
        None,
        env_key,
    )
    assert "sk-env" not in repr(e)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert Endpoint.resolve().kind == "compatible"
    assert Endpoint.resolve("other", "http://h:1/v1").base_url == "http://h:1/v1"  # args win
    assert Endpoint.resolve(MODEL_ID).kind == "embedded"  # `lrlib serve` shares the cache


def test_context_and_token_ratio_defaults():
    assert LLMClient(cache=False).context_tokens == 8192
    c = LLMClient("m", base_url="http://localhost:1/v1", cache=False, context_tokens=32000)
    assert c.context_tokens == 32000
    long = [{"role": "user", "content": "[12] button 'Submit order' " * 100}]
    assert LLMClient(cache=False).estimate_tokens(long) > c.estimate_tokens(long)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_readme_example_builds_the_messages_the_pipeline_sends(capsys):
    """The README's Python example shows exactly what `lrlib run` and the notebooks send
    (LineRetriever in its one default configuration, RetrieverConfig())."""
    import re as _re

    from lrlib import paths
    from lrlib.reducers.lineretriever import LineRetriever

    readme = (paths.REPO_DIR / "README.md").read_text()
    blocks = _re.findall(r"```python\n(.*?)```", readme, _re.S)
    example = next(b for b in blocks if "get_prompt" in b and "messages" in b)
    scope: dict = {}
    exec(compile(example, "README.md", "exec"), scope)
    assert capsys.readouterr().out.strip()  # it prints the reduced tree
    retriever = LineRetriever(cache=False)
    sent = retriever.request(scope["step"])
    assert [dict(m) for m in sent.messages] == scope["messages"]
