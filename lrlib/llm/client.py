"""One chat client for every endpoint: OpenAI, any OpenAI-compatible server, the embedded model.

Where requests go (arguments first, then the environment, never hard-coded):

- ``base_url`` / ``OPENAI_BASE_URL``: an OpenAI-compatible server (vLLM, llama.cpp, Ollama,
  ``lrlib serve``...); ``api_key`` / ``OPENAI_API_KEY`` if it wants one.
- only a key: the OpenAI API.
- neither: the embedded SmolLM2-135M-Instruct (served by :mod:`lrlab.server` through :mod:`lrlib.plugins`), started on the first
  request that the cache cannot answer, so a cached run never starts it.

The model comes from ``model``, ``LRLIB_MODEL`` or ``OPENAI_MODEL``. Calls are plain
blocking calls on one ``openai.OpenAI`` client; :meth:`LLMClient.complete_many` runs them in
threads (at most ``concurrency`` requests in flight), the same in a script and in Jupyter.
Retries are the openai SDK's own (``max_retries``, exponential backoff with jitter, honouring
``Retry-After``; each attempt bounded by ``timeout``): rate limits (429), server errors (5xx),
timeouts, dropped connections, and bodies that are not a chat completion (marked retryable
on the way in by the client's transport). After the SDK gives up, the error becomes one
:class:`LLMError` with a message that says what to fix (:mod:`lrlib.llm.errors`). Every
answer is a :class:`Completion` that records its tokens (prompt, completion, cached), latency,
attempts, model and the prompt variant's name and hash; answers go through
:class:`~lrlib.llm.cache.ResponseCache` (:mod:`lrlib.llm.completions`).

>>> client = LLMClient("llama3", base_url="http://localhost:8000/v1", cache=False)
>>> client.endpoint.kind, client.model
('compatible', 'llama3')
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from lrlib import plugins
from lrlib.llm.cache import ResponseCache, request_key
from lrlib.llm.completions import (
    Completion,
    Request,
    chat_tokens,
    error_entry,
    from_entry,
    from_response,
    to_entry,
)
from lrlib.llm.errors import (
    MALFORMED_HEADER,
    RETRYABLE,
    CacheMissError,
    ContextLengthError,
    Endpoint,
    LLMError,
    LLMTimeout,
    classify,
)
from lrlib.settings import current, offline_reason

__all__ = [
    "TOKEN_RATIO",
    "CacheMissError",
    "Completion",
    "ContextLengthError",
    "Endpoint",
    "LLMClient",
    "LLMError",
    "LLMTimeout",
    "Request",
]

# tokens of the model per o200k token, to estimate prompt sizes offline (measured on
# numbered AxTree prompts: SmolLM2's tokenizer needs 1.27-1.51x; a margin on top)
TOKEN_RATIO = {"embedded": 1.6, "openai": 1.0, "compatible": 1.3}


class LLMClient:
    """Chat completions with concurrency, the SDK's retries, a response cache and records.

    Sampling defaults are deterministic (``temperature=0``, ``seed=0``). For models that
    reject a parameter (e.g. OpenAI reasoning models and ``temperature``) pass ``None``;
    ``extra`` adds endpoint-specific parameters (they count in the cache key).
    ``cache``: a :class:`ResponseCache`, True for the default one, False for none.
    Offline (:func:`lrlib.settings.offline_reason`: ``LRLIB_OFFLINE=1`` always; ``offline``
    when given; else live with ``LRLIB_OFFLINE=0`` or an endpoint, passed or in the
    environment) it answers from the cache only: it starts no server and opens no
    connection, and an uncached request raises :class:`CacheMissError`, one line that says
    how to go live.
    ``max_retries`` and ``timeout`` (seconds per attempt) go to ``openai.OpenAI``.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float | None = 0.0,
        max_tokens: int | None = 512,
        seed: int | None = 0,
        extra: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int = 4,
        concurrency: int = 8,
        cache: ResponseCache | bool = True,
        refresh: bool = False,
        offline: bool | None = None,
        context_tokens: int | None = None,
        token_ratio: float | None = None,
    ) -> None:
        self.endpoint = Endpoint.resolve(model, base_url, api_key)
        self.params: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            **(extra or {}),
        }
        # a CPU model needs minutes for a long prompt; an API answers in seconds
        self.timeout = timeout or (600.0 if self.endpoint.kind == "embedded" else 120.0)
        self.max_retries = max_retries
        self.concurrency = max(1, concurrency)
        if cache is True:
            cache = ResponseCache(refresh=refresh)
        elif cache is not False and refresh:
            cache.refresh = True
        self.cache: ResponseCache | None = None if cache is False else cache  # (len 0 is falsy)
        self.offline_reason = offline_reason(offline, endpoint=bool(base_url or api_key))
        self.offline = self.offline_reason is not None
        self.context_tokens = (
            context_tokens
            or current().context_tokens
            or (8192 if self.endpoint.kind == "embedded" else None)
        )
        self.token_ratio = token_ratio or TOKEN_RATIO[self.endpoint.kind]
        self.records: list[dict[str, Any]] = []  # one usage record per completed call
        self._openai: Any = None  # openai.OpenAI, made on the first uncached request
        self._slots: threading.BoundedSemaphore | None = None  # requests in flight
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[Completion]] = {}

    @property
    def parallel(self) -> int:
        """How many requests this client has in flight at most (the embedded server's
        slots bound it too)."""
        if self.endpoint.kind == "embedded" and self.endpoint.base_url is None:
            return min(self.concurrency, plugins.local_slots())
        return self.concurrency

    @property
    def model(self) -> str:
        """The model name requests carry."""
        return self.endpoint.model

    def __repr__(self) -> str:
        e = self.endpoint
        return f"LLMClient({e.kind}, model={e.model!r}, base_url={e.base_url!r})"

    # --- requests ------------------------------------------------------------------------

    def request(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        response_format: Mapping[str, Any] | None = None,
        prompt_name: str | None = None,
        prompt_hash: str | None = None,
        **params: Any,
    ) -> Request:
        """A :class:`Request` with this client's sampling parameters (``params`` override).

        >>> c = LLMClient("m", base_url="http://localhost:8000/v1", cache=False)
        >>> c.request([{"role": "user", "content": "hi"}]).params["seed"]
        0
        """
        merged = {**self.params, **params}
        if response_format is not None:
            merged["response_format"] = dict(response_format)
        merged = {k: v for k, v in merged.items() if v is not None}
        msgs = tuple({"role": m["role"], "content": m["content"]} for m in messages)
        return Request(msgs, merged, prompt_name, prompt_hash)

    def key(self, request: Request) -> str:
        """The cache key of ``request`` at this client's endpoint and model."""
        return request_key(self.endpoint.kind, self.model, request.messages, request.params)

    def estimate_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        """Prompt size in the model's tokens, estimated offline: :func:`chat_tokens` without
        the reply's tokens, plus a margin of 5 a message, times ``token_ratio``, plus 16.

        >>> c = LLMClient("m", base_url="http://localhost:8000/v1", cache=False)
        >>> c.estimate_tokens([{"role": "user", "content": "hello"}])
        27
        """
        o200k = chat_tokens(messages, reply=False) + 5 * len(messages)
        return int(o200k * self.token_ratio) + 16

    def tree_budget(self, estimate: int, tree_tokens: int, reserve: int) -> int:
        """o200k tokens of tree that fit this client's context beside the rest of a prompt
        whose :meth:`estimate_tokens` is ``estimate`` with a tree of ``tree_tokens`` (o200k),
        leaving ``reserve`` model tokens for the answer: the inverse of the estimate.

        >>> c = LLMClient("m", base_url="http://localhost:8000/v1", cache=False, context_tokens=1000)
        >>> c.tree_budget(estimate=400, tree_tokens=300, reserve=100)
        684
        """
        assert self.context_tokens is not None
        overhead = estimate - int(tree_tokens * self.token_ratio)
        return int((self.context_tokens - reserve - overhead) / self.token_ratio)

    def cached(self, request: Request) -> Completion | None:
        """The cached answer to ``request``, if any (no network)."""
        if self.cache is None:
            return None
        entry = self.cache.get(self.key(request))
        if not entry or entry.get("error"):
            return None
        return from_entry(entry, self.key(request), request)

    # --- calling -------------------------------------------------------------------------

    def complete(self, messages: Sequence[Mapping[str, str]] | Request, **kw: Any) -> Completion:
        """One answer (blocking): from the cache, else from the endpoint. Takes messages (plus
        :meth:`request` options) or a Request; identical requests in flight at the same time
        are sent once."""
        request = messages if isinstance(messages, Request) else self.request(messages, **kw)
        key = self.key(request)
        entry = self.cache.get(key) if self.cache is not None else None
        if entry is not None and entry.get("error"):
            raise ContextLengthError(f"{entry['error'].get('message', '')} (cached)")
        if entry is not None:
            hit = from_entry(entry, key, request)
            self.records.append(hit.usage)
            return hit
        if self.offline:
            raise CacheMissError(
                f"no cached answer for {self.model} (key {key[:12]}) and offline "
                f"({self.offline_reason}): set OPENAI_BASE_URL (an endpoint) or LRLIB_OFFLINE=0 "
                "(the embedded model) to ask a model"
            )
        with self._lock:
            pending = self._inflight.get(key)
            if pending is None:
                mine: Future[Completion] = Future()
                self._inflight[key] = mine
        if pending is not None:  # the same request is on its way: share its answer
            shared = pending.result()
            twin = replace(
                shared,
                from_cache=True,
                prompt_name=request.prompt_name,
                prompt_hash=request.prompt_hash,
            )
            self.records.append(twin.usage)
            return twin
        try:
            completion = self._fetch(request, key)
            mine.set_result(completion)
            return completion
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._inflight.pop(key, None)

    def complete_many(
        self, requests: Sequence[Request], *, progress: Callable[[], None] | None = None
    ) -> list[Completion | LLMError]:
        """Answers to many requests, concurrently; a failed request yields its LLMError.

        ``progress`` is called once per finished request (e.g. a tqdm bar's ``update``).
        """

        def one(request: Request) -> Completion | LLMError:
            try:
                return self.complete(request)
            except LLMError as exc:
                return exc
            finally:
                if progress is not None:
                    progress()

        if len(requests) <= 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            return list(pool.map(one, requests))

    def _fetch(self, request: Request, key: str) -> Completion:
        """Ask the endpoint (the SDK retries), cache the answer or a deterministic failure."""
        client, slots = self._connect()
        with slots:
            try:
                completion = self._call(client, request, key)
            except ContextLengthError as exc:
                if self.cache is not None:  # deterministic: replays must fail the same way
                    self.cache.put(key, error_entry(exc, request, self.endpoint))
                raise
        if self.cache is not None:
            entry = to_entry(completion, request, self.endpoint)
            self.cache.put(key, entry, secrets=[self.endpoint.api_key or ""])
        self.records.append(completion.usage)
        return completion

    def _call(self, client: Any, request: Request, key: str) -> Completion:
        import openai

        _attempt.count = 0  # the transport counts this thread's attempts
        start = time.perf_counter()
        try:
            response = client.chat.completions.create(
                model=self.model, messages=list(request.messages), **request.params
            )
            return from_response(
                response,
                time.perf_counter() - start,
                self.endpoint,
                key,
                request,
                max(1, _attempt.count),
            )
        except (openai.APIError, LLMError, ValueError) as exc:  # ValueError: cut-off JSON
            error = classify(exc, self.endpoint, self.timeout)
        if error.kind in RETRYABLE and _attempt.count > 1:
            raise type(error)(
                f"{error} (gave up after {_attempt.count} attempts)",
                status=error.status,
                kind=error.kind,
            )
        raise error

    def _connect(self) -> tuple[Any, threading.BoundedSemaphore]:
        """The openai client and the in-flight bound (made once, on the first request)."""
        with self._lock:
            if self._openai is None:
                import openai

                base_url, key = self.endpoint.base_url, self.endpoint.api_key or "no-key"
                limit = self.concurrency
                if self.endpoint.kind == "embedded" and base_url is None:
                    server = plugins.local_server()
                    base_url, key = server.base_url, server.api_key
                    limit = min(limit, server.parallel)  # queued requests would time out
                self._openai = openai.OpenAI(
                    base_url=base_url,
                    api_key=key,  # local servers may need none
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                    http_client=openai.DefaultHttpxClient(transport=_checked_transport()()),
                )
                self._slots = threading.BoundedSemaphore(limit)
            assert self._slots is not None
            return self._openai, self._slots


_attempt = threading.local()  # attempts of the request the current thread is sending


@functools.cache
def _checked_transport() -> type:
    """The transport class of the openai client (made on first use: httpx2 loads lazily)."""
    import httpx2

    class CheckedTransport(httpx2.HTTPTransport):
        """Counts attempts, and turns an HTTP 200 that is not a chat completion (a cut-off
        or unexpected body) into a retryable 502, so the SDK retries it like a server error."""

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            _attempt.count = getattr(_attempt, "count", 0) + 1
            response = super().handle_request(request)
            if response.status_code != 200 or not request.url.path.endswith("/chat/completions"):
                return response
            raw = response.read()
            try:
                body = json.loads(raw)
                ok = isinstance(body["choices"][0]["message"], dict)
            except (ValueError, KeyError, IndexError, TypeError):
                ok = False
            if ok:
                return response
            text = raw.decode("utf-8", "replace")[:200]
            return httpx2.Response(
                502,
                headers={"x-should-retry": "true", MALFORMED_HEADER: "1"},
                json={"error": {"message": f"not a chat completion: {text}"}},
                request=request,
            )

    return CheckedTransport
