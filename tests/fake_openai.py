"""A scripted OpenAI-compatible ``/v1/chat/completions`` for tests and benchmarks.

It is a real HTTP server (pytest-httpserver / werkzeug), so the openai client (httpx2)
talks to it exactly as to a remote endpoint. :class:`Script` answers each request from a
function of the request body, counts requests and how many were in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from werkzeug import Request, Response

PATH = "/v1/chat/completions"


def chat_body(
    text: str,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 10,
    cached_tokens: int | None = 0,
    model: str = "fake-model-2024",
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A chat.completion response body holding ``text``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage,
    }


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body), status=status, headers=headers, content_type="application/json"
    )


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """An OpenAI-style error response."""
    return json_response(
        {"error": {"message": message, "type": "test", "code": None}}, status, headers
    )


class Script:
    """Answers requests with ``answer(body, n)`` (``n``: 0-based request count), which
    returns a text (wrapped as a chat completion), a dict (a body) or a Response."""

    def __init__(self, answer: Callable[[dict[str, Any], int], Any], delay: float = 0.0):
        self.answer = answer
        self.delay = delay
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._released = threading.Event()

    @property
    def calls(self) -> int:
        return len(self.bodies)

    def release(self, timeout: float = 10.0) -> None:
        """End the delay of every request now and later; wait (at most ``timeout`` s) until
        none is in flight, so a test does not stop the server under a sleeping handler."""
        self._released.set()
        deadline = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)

    def __call__(self, request: Request) -> Response:
        body = json.loads(request.get_data() or b"{}")
        with self._lock:
            n = len(self.bodies)
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                self._released.wait(self.delay)  # release() ends the wait early
            out = self.answer(body, n)
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(out, Response):
            return out
        if isinstance(out, str):
            out = chat_body(out)
        return json_response(out)


def serve(httpserver: Any, script: Script) -> str:
    """Route the chat endpoint of ``httpserver`` to ``script``; return the base URL."""
    httpserver.expect_request(PATH, method="POST").respond_with_handler(script)
    return httpserver.url_for("/v1")


def user_text(body: dict[str, Any]) -> str:
    """The user message of a request body."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")
