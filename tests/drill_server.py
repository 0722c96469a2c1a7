"""A local OpenAI-compatible endpoint that misbehaves on cue, for the fault drills.

Unlike pytest-httpserver it can *die*: drop the request in hand and every later connection,
the way a crashed or killed server does. Each request is answered by ``behave(n, body)``
(``n``: 0-based request count) returning one of:

- ``("ok", text)``: a chat completion holding ``text``;
- ``("status", code)``: an OpenAI-style error (429 carries ``Retry-After: 0.05``);
- ``("slow", seconds, text)``: the completion, after a delay;
- ``("truncated", text)``: HTTP 200 whose JSON body is cut in half;
- ``("die",)``: no answer; the server stops listening and drops requests in flight.

``delivered`` holds ``(cache key, text)`` of every completion written out in full: what the
client was sent (and, with a paid API, billed for).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lrlib.llm.cache import request_key

Behaviour = Callable[[int, dict[str, Any]], tuple]


def completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-drill",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 12, "total_tokens": 1012},
    }  # fmt: skip


def body_key(body: dict[str, Any]) -> str:
    """The response-cache key of a request body, as :class:`lrlib.llm.client.LLMClient` computes it."""
    params = {k: v for k, v in body.items() if k not in ("model", "messages")}
    return request_key("compatible", body["model"], body["messages"], params)


class DrillServer:
    """See the module docstring. Use as a context manager."""

    def __init__(self, behave: Behaviour) -> None:
        self.behave = behave
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.delivered: list[tuple[str, str]] = []
        self.in_flight = self.max_in_flight = 0
        self.dead = threading.Event()
        self._lock = threading.Lock()
        drill = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                drill._handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length") or 0)) or b"{}")
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.headers.append(dict(h.headers))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            action = ("die",) if self.dead.is_set() else self.behave(n, body)
            if action[0] == "slow":
                time.sleep(action[1])
                action = ("ok", action[2])
            if self.dead.is_set() or action[0] == "die":
                self.kill()
                h.close_connection = True
                h.connection.close()  # the request in hand gets no answer at all
                return
            if action[0] == "status":
                code = action[1]
                extra = {"Retry-After": "0.05"} if code == 429 else {}
                message = action[2] if len(action) > 2 else f"drill says {code}"
                self._send(h, code, {"error": {"message": message, "type": "drill"}}, extra)
                return
            data = completion(action[1], body.get("model", "?"))
            if action[0] == "truncated":
                raw = json.dumps(data).encode()
                self._send_raw(h, 200, raw[: len(raw) // 2])
                return
            self._send(h, 200, data)
            with self._lock:
                self.delivered.append((body_key(body), action[1]))
        finally:
            with self._lock:
                self.in_flight -= 1

    def _send(self, h: Any, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(h, code, json.dumps(obj).encode(), headers)

    @staticmethod
    def _send_raw(h: Any, code: int, raw: bytes, headers: dict[str, str] | None = None) -> None:
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(raw)
        h.wfile.flush()

    def kill(self) -> None:
        """Stop listening at once: later connections are refused."""
        if not self.dead.is_set():
            self.dead.set()
            self.httpd.socket.close()
            threading.Thread(target=self.httpd.shutdown, daemon=True).start()

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until no handler is running (e.g. slow answers the client gave up on)."""
        end = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < end:
            time.sleep(0.02)

    def close(self) -> None:
        self.wait_idle()
        self.kill()

    def __enter__(self) -> DrillServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
