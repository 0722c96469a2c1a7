"""One chat client for every endpoint: OpenAI, any OpenAI-compatible server, the embedded model.

Where requests go (arguments first, then the environment, never hard-coded):

- ``base_url`` / ``OPENAI_BASE_URL``: an OpenAI-compatible server (vLLM, llama.cpp, Ollama,
  ``lrlib serve``...); ``api_key`` / ``OPENAI_API_KEY`` if it wants one.
- only a key: the OpenAI API.
- neither: the embedded SmolLM2-135M-Instruct (:mod:`lrlib.llm.server`), started on the first
  request that the cache cannot answer, so a cached run never starts it.

The model comes from ``model``, ``LRLIB_MODEL`` or ``OPENAI_MODEL``. Requests run
concurrently (asyncio, at most ``concurrency`` at once), each attempt bounded by
``timeout``; rate limits (429), server errors (5xx), timeouts and dropped connections are
retried with exponential backoff and jitter (honouring ``Retry-After``); other errors raise
:class:`LLMError` at once with a message that says what to fix (the taxonomy and the mapping
of transport errors: :mod:`lrlib.llm.errors`). Every answer is a :class:`Completion` that
records its tokens (prompt, completion, cached), latency, model and the prompt variant's name
and hash; answers go through :class:`~lrlib.llm.cache.ResponseCache` (the records and their cache
entries: :mod:`lrlib.llm.completions`). The errors and records are importable from here too.

>>> client = LLMClient("llama3", base_url="http://localhost:8000/v1", cache=False)
>>> client.endpoint.kind, client.model
('compatible', 'llama3')
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from lrlib.core.tokens import count_tokens
from lrlib.llm.cache import ResponseCache, request_key
from lrlib.llm.completions import (
    Completion,
    Request,
    error_entry,
    from_entry,
    from_response,
    to_entry,
)
from lrlib.llm.errors import (
    RETRYABLE,
    CacheMissError,
    ContextLengthError,
    Endpoint,
    LLMError,
    LLMTimeout,
    classify,
)
from lrlib.llm.server import shared_parallel, shared_server

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

T = TypeVar("T")
# tokens of the model per o200k token, to estimate prompt sizes offline (measured on
# numbered AxTree prompts: SmolLM2's tokenizer needs 1.27-1.51x; a margin on top)
TOKEN_RATIO = {"embedded": 1.6, "openai": 1.0, "compatible": 1.3}


@dataclass
class _Session:
    client: Any  # openai.AsyncOpenAI, bound to one event loop
    semaphore: asyncio.Semaphore


class LLMClient:
    """Chat completions with concurrency, retries, a response cache and per-call records.

    Sampling defaults are deterministic (``temperature=0``, ``seed=0``). For models that
    reject a parameter (e.g. OpenAI reasoning models and ``temperature``) pass ``None``;
    ``extra`` adds endpoint-specific parameters (they count in the cache key).
    ``cache``: a :class:`ResponseCache`, True for the default one, False for none.
    ``offline=True`` answers from the cache only (:class:`CacheMissError` otherwise).
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
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        concurrency: int = 8,
        cache: ResponseCache | bool = True,
        refresh: bool = False,
        offline: bool = False,
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
        self.backoff, self.max_backoff = backoff, max_backoff
        self.concurrency = max(1, concurrency)
        if cache is True:
            cache = ResponseCache(refresh=refresh)
        elif cache is not False and refresh:
            cache.refresh = True
        self.cache: ResponseCache | None = None if cache is False else cache  # (len 0 is falsy)
        self.offline = offline
        self.context_tokens = (
            context_tokens
            or _env_int("LRLIB_CONTEXT_TOKENS")
            or (8192 if self.endpoint.kind == "embedded" else None)
        )
        self.token_ratio = token_ratio or TOKEN_RATIO[self.endpoint.kind]
        self.records: list[dict[str, Any]] = []  # one usage record per completed call
        # per event loop: the openai client + semaphore, and the requests in flight
        self._loops: weakref.WeakKeyDictionary[Any, asyncio.Task[_Session]]
        self._loops = weakref.WeakKeyDictionary()
        self._inflight: weakref.WeakKeyDictionary[Any, dict[str, asyncio.Future[Completion]]]
        self._inflight = weakref.WeakKeyDictionary()

    @property
    def parallel(self) -> int:
        """How many requests this client has in flight at most (the embedded server's
        slots bound it too)."""
        if self.endpoint.kind == "embedded" and self.endpoint.base_url is None:
            return min(self.concurrency, shared_parallel())
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
        """Prompt size in the model's tokens, estimated offline (o200k x ``token_ratio``).

        >>> c = LLMClient("m", base_url="http://localhost:8000/v1", cache=False)
        >>> c.estimate_tokens([{"role": "user", "content": "hello"}])
        27
        """
        o200k = sum(count_tokens(m["content"]) + 8 for m in messages)
        return int(o200k * self.token_ratio) + 16

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
        """One answer (blocking). Takes messages (plus :meth:`request` options) or a Request."""
        req = messages if isinstance(messages, Request) else self.request(messages, **kw)
        return self.run(lambda: self.acomplete(req))

    def complete_many(
        self, requests: Sequence[Request], *, progress: Callable[[], None] | None = None
    ) -> list[Completion | LLMError]:
        """Answers to many requests, concurrently; a failed request yields its LLMError.

        ``progress`` is called once per finished request (e.g. a tqdm bar's ``update``).
        """
        return self.run(lambda: self.acomplete_many(requests, progress=progress))

    async def acomplete_many(
        self, requests: Sequence[Request], *, progress: Callable[[], None] | None = None
    ) -> list[Completion | LLMError]:
        """Async :meth:`complete_many`."""

        async def one(req: Request) -> Completion | LLMError:
            try:
                return await self.acomplete(req)
            except LLMError as exc:
                return exc
            finally:
                if progress is not None:
                    progress()

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def acomplete(self, request: Request) -> Completion:
        """One answer: from the cache, else from the endpoint (at most ``concurrency`` at once;
        identical requests in flight at the same time are sent once)."""
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
                f"offline and no cached answer for {self.model} (key {key[:12]}); "
                "run once with the endpoint available, or turn offline off"
            )
        pending = self._inflight.setdefault(asyncio.get_running_loop(), {})
        task = pending.get(key)
        if task is not None:  # the same request is on its way: share its answer
            shared = await asyncio.shield(task)
            twin = replace(
                shared,
                from_cache=True,
                prompt_name=request.prompt_name,
                prompt_hash=request.prompt_hash,
            )
            self.records.append(twin.usage)
            return twin
        task = asyncio.ensure_future(self._fetch(request, key))
        pending[key] = task
        task.add_done_callback(lambda _: pending.pop(key, None))
        return await asyncio.shield(task)

    async def _fetch(self, request: Request, key: str) -> Completion:
        session = await self._session()
        async with session.semaphore:
            try:
                completion = await self._call_with_retries(session.client, request, key)
            except ContextLengthError as exc:
                if self.cache is not None:  # deterministic: replays must fail the same way
                    self.cache.put(key, error_entry(exc, request, self.endpoint))
                raise
        if self.cache is not None:
            entry = to_entry(completion, request, self.endpoint)
            self.cache.put(key, entry, secrets=[self.endpoint.api_key or ""])
        self.records.append(completion.usage)
        return completion

    def run(self, factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a coroutine to completion from sync code, also inside Jupyter's running loop."""

        async def main() -> T:
            try:
                return await factory()
            finally:
                await self.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(main())
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a loop runs here already
            return pool.submit(asyncio.run, main()).result()

    async def _session(self) -> _Session:
        """The openai client and semaphore of the running event loop (made once per loop)."""
        loop = asyncio.get_running_loop()
        task = self._loops.get(loop)
        if task is None:  # stored before any await, so concurrent callers share it
            task = self._loops[loop] = loop.create_task(self._open_session())
        return await task

    async def _open_session(self) -> _Session:
        import openai

        base_url, limit = self.endpoint.base_url, self.concurrency
        key = self.endpoint.api_key or "no-key"  # local servers may need none
        if self.endpoint.kind == "embedded" and base_url is None:
            server = await asyncio.to_thread(shared_server)
            base_url, key = server.base_url, server.api_key
            limit = min(limit, server.parallel)  # queued requests would time out waiting
        client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=key,
            timeout=self.timeout,
            max_retries=0,  # retries are ours: backoff with jitter, Retry-After, records
        )
        return _Session(client, asyncio.Semaphore(limit))

    async def aclose(self) -> None:
        """Close this client's connections in the running event loop (:meth:`run` does)."""
        task = self._loops.pop(asyncio.get_running_loop(), None)
        if task is not None and task.done() and not task.exception():
            await task.result().client.close()

    async def _call_with_retries(self, client: Any, request: Request, key: str) -> Completion:
        import openai

        for attempt in range(1, self.max_retries + 2):
            start = time.perf_counter()
            try:
                response = await client.chat.completions.create(
                    model=self.model, messages=list(request.messages), **request.params
                )
                return from_response(
                    response, time.perf_counter() - start, self.endpoint, key, request, attempt
                )
            except (openai.APIError, LLMError, ValueError) as exc:  # ValueError: cut-off JSON
                error, retry_after = classify(exc, self.endpoint, self.timeout)
            if error.kind not in RETRYABLE:
                raise error
            if attempt > self.max_retries:
                raise type(error)(
                    f"{error} (gave up after {attempt} attempts)",
                    status=error.status,
                    kind=error.kind,
                )
            delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
            delay = delay * (0.5 + random.random() / 2)  # jitter: callers do not retry in step
            await asyncio.sleep(max(delay, min(retry_after or 0.0, self.max_backoff)))
        raise AssertionError("unreachable")


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value else None
