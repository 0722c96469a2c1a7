"""The record of one chat call: a :class:`Request`, its :class:`Completion`, and the
conversions the answer goes through — read from the openai response
(:func:`from_response`), stored as a response-cache entry (:func:`to_entry`, or
:func:`error_entry` for a deterministic failure) and read back (:func:`from_entry`).

>>> from lrlib.llm.client import Endpoint
>>> request = Request(({"role": "user", "content": "hi"},), {"seed": 0}, "plain", "ab12")
>>> done = Completion("[(1, 2)]", "m", "compatible", 90, 5, 0, 1.5, "stop", "k1")
>>> entry = to_entry(done, request, Endpoint("compatible", "m", "http://h/v1"))
>>> again = from_entry(entry, "k1", request)
>>> again.text, again.prompt_tokens, again.from_cache, again.prompt_name
('[(1, 2)]', 90, True, 'plain')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lrlib.core.tokens import DEFAULT_ENCODING, count_tokens
from lrlib.llm.errors import Endpoint, LLMError

# chat formatting overhead of OpenAI's chat models: per message, and to prime the reply
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3


def chat_tokens(
    messages: Sequence[Mapping[str, str]], encoding: str = DEFAULT_ENCODING, reply: bool = True
) -> int:
    """Prompt tokens of one chat request, as OpenAI's chat models count them: the messages'
    tokens, :data:`TOKENS_PER_MESSAGE` each, and :data:`TOKENS_PER_REPLY` (``reply=False``:
    without them, e.g. a prefix of the prompt). The one formula for prompt tokens (client
    estimate and context planning, cost model, ablations).

    >>> chat_tokens([{"role": "user", "content": "hello"}]), chat_tokens([{"content": "hello"}], reply=False)
    (7, 4)
    """
    return sum(count_tokens(m["content"], encoding) + TOKENS_PER_MESSAGE for m in messages) + (
        TOKENS_PER_REPLY if reply else 0
    )


@dataclass(frozen=True)
class Request:
    """One chat request: messages, sampling parameters, and the prompt it was built from."""

    messages: tuple[Mapping[str, str], ...]
    params: Mapping[str, Any]
    prompt_name: str | None = None
    prompt_hash: str | None = None


@dataclass
class Completion:
    """An answer and its record."""

    text: str
    model: str
    endpoint: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    latency_s: float  # of the call that produced the answer (replays keep the original)
    finish_reason: str | None
    key: str
    from_cache: bool = False
    attempts: int = 1
    prompt_name: str | None = None
    prompt_hash: str | None = None

    @property
    def usage(self) -> dict[str, Any]:
        """The per-call record as a flat dict."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "latency_s": self.latency_s,
            "model": self.model,
            "endpoint": self.endpoint,
            "prompt": self.prompt_name,
            "prompt_hash": self.prompt_hash,
            "from_cache": self.from_cache,
            "attempts": self.attempts,
            "finish_reason": self.finish_reason,
        }


def from_response(
    response: Any, latency: float, endpoint: Endpoint, key: str, request: Request, attempts: int
) -> Completion:
    """Read an openai ChatCompletion; a body without a message is ``malformed`` (retried).

    >>> from types import SimpleNamespace as NS
    >>> from lrlib.llm.client import Endpoint
    >>> answer = NS(message=NS(content="[(3, 4)]"), finish_reason="stop")
    >>> reply = NS(choices=[answer], usage=None, model="/models/qwen2.5-7b.gguf")
    >>> where = Endpoint("compatible", "q", "http://h/v1")
    >>> c = from_response(reply, 0.25, where, "k", Request((), {}), attempts=1)
    >>> c.text, c.model, c.latency_s
    ('[(3, 4)]', 'qwen2.5-7b.gguf', 0.25)
    """
    try:
        choice = response.choices[0]
        text = choice.message.content
    except (AttributeError, IndexError, TypeError):
        msg = f"response without a message: {str(response)[:200]}"
        raise LLMError(msg, kind="malformed") from None
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    served = str(getattr(response, "model", None) or "")
    if "/" in served or "\\" in served:  # llama.cpp reports its GGUF path: keep the file name
        served = served.replace("\\", "/").rsplit("/", 1)[-1]
    model = endpoint.model if endpoint.kind == "embedded" or not served else served
    return Completion(
        text=text or "",
        model=model,
        endpoint=endpoint.kind,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cached_tokens=getattr(details, "cached_tokens", None),
        latency_s=round(latency, 4),
        finish_reason=getattr(choice, "finish_reason", None),
        key=key,
        attempts=attempts,
        prompt_name=request.prompt_name,
        prompt_hash=request.prompt_hash,
    )


def to_entry(c: Completion, request: Request, endpoint: Endpoint) -> dict[str, Any]:
    """The response-cache entry of an answer: text, usage, parameters, prompt, runtime.

    >>> from lrlib.llm.client import Endpoint
    >>> done = Completion("ok", "m-0613", "openai", 9, 1, 0, 0.5, "stop", "k")
    >>> entry = to_entry(done, Request((), {"seed": 0}), Endpoint("openai", "m", None, "sk"))
    >>> entry["model"], entry["runtime"], entry["usage"]["prompt_tokens"]
    ('m', {'served_model': 'm-0613'}, 9)
    """
    usage = {
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "cached_tokens": c.cached_tokens,
    }
    runtime: dict[str, Any] = {"served_model": c.model}
    if endpoint.kind == "embedded":
        runtime["server"] = _xllamacpp_version()
    return {
        "text": c.text,
        "finish_reason": c.finish_reason,
        "usage": usage,
        "latency_s": c.latency_s,
        "endpoint": endpoint.kind,
        "model": endpoint.model,
        "params": dict(request.params),
        "meta": {"prompt": request.prompt_name, "prompt_hash": request.prompt_hash},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "runtime": runtime,
    }


def error_entry(exc: LLMError, request: Request, endpoint: Endpoint) -> dict[str, Any]:
    """The response-cache entry of a deterministic failure, so that replays fail the same way.

    >>> from lrlib.llm.client import Endpoint
    >>> from lrlib.llm.errors import ContextLengthError
    >>> exc = ContextLengthError("prompt too long for m")
    >>> error_entry(exc, Request((), {}), Endpoint("compatible", "m", "http://h/v1"))["error"]
    {'kind': 'context', 'message': 'prompt too long for m'}
    """
    return {
        "error": {"kind": exc.kind, "message": str(exc)[:500]},
        "endpoint": endpoint.kind,
        "model": endpoint.model,
        "params": dict(request.params),
        "meta": {"prompt": request.prompt_name, "prompt_hash": request.prompt_hash},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def from_entry(entry: Mapping[str, Any], key: str, request: Request) -> Completion:
    """The :class:`Completion` a cache entry holds, labelled with ``request``'s prompt.

    >>> entry = {"text": "[(1, 1)]", "model": "m", "endpoint": "openai", "latency_s": 2.0}
    >>> c = from_entry(entry, "k", Request((), {}, "plain"))
    >>> c.text, c.from_cache, c.prompt_name, c.prompt_tokens
    ('[(1, 1)]', True, 'plain', None)
    """
    usage = entry.get("usage") or {}
    return Completion(
        text=entry.get("text") or "",
        model=(entry.get("runtime") or {}).get("served_model") or entry.get("model", ""),
        endpoint=entry.get("endpoint", ""),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        cached_tokens=usage.get("cached_tokens"),
        latency_s=float(entry.get("latency_s") or 0.0),
        finish_reason=entry.get("finish_reason"),
        key=key,
        from_cache=True,
        prompt_name=request.prompt_name,
        prompt_hash=request.prompt_hash,
    )


def _xllamacpp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"xllamacpp {version('xllamacpp')}"
    except PackageNotFoundError:
        return "xllamacpp"
