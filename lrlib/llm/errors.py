"""Where an LLM request goes (:class:`Endpoint`) and what a failed one is: the :class:`LLMError` taxonomy, and :func:`classify`, which
turns a transport error (openai exception, timeout, dropped connection, cut-off body) into one
with a message that says what to fix.

Each error has a ``kind``; the kinds in :data:`RETRYABLE` are transient: the openai SDK
retries them (``max_retries``) before they reach :func:`classify`, any other raises at once.

>>> ContextLengthError("prompt too long", status=400).kind
'context'
>>> sorted(RETRYABLE)
['connection', 'malformed', 'rate_limit', 'server', 'timeout']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lrlib.settings import current

# the error kinds worth another attempt (the SDK's retries): the same request may well succeed later
# the embedded default model (SmolLM2-135M-Instruct, served by lrlab.server through the
# lrlib.plugins entry point): the name the cache keys and results carry, its label, its context
MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"
MODEL_LABEL = "SmolLM2-135M-Instruct (Q4_1 GGUF, embedded llama.cpp)"
CONTEXT_TOKENS = 8192  # SmolLM2's training context; the server gives each slot this much

RETRYABLE = frozenset({"timeout", "rate_limit", "server", "connection", "malformed"})
# set by the client's transport on an HTTP 200 that is not a chat completion (then a retryable 502)
MALFORMED_HEADER = "x-lrlib-malformed"
_CONTEXT_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "context size",
    "context window",
    "too many tokens",
    "exceed_context",
    "prompt is too long",
)


class LLMError(RuntimeError):
    """A request failed. ``kind``: timeout, context, rate_limit, server, connection,
    auth, not_found, request, malformed or offline; ``status`` the HTTP status if any."""

    kind = "request"

    def __init__(self, message: str, *, status: int | None = None, kind: str | None = None):
        super().__init__(message)
        self.status = status
        if kind:
            self.kind = kind


class LLMTimeout(LLMError):
    """Every attempt timed out."""

    kind = "timeout"


class ContextLengthError(LLMError):
    """The endpoint says the prompt does not fit the model's context."""

    kind = "context"


class CacheMissError(LLMError):
    """Offline mode and the cache holds no answer for this request."""

    kind = "offline"


def classify(exc: Exception, endpoint: Endpoint, timeout: float) -> LLMError:
    """Map an openai exception (raised once the SDK gave up) to an LLMError with a clear
    message. The message never repeats the API key, even when the server quotes it back.

    >>> from lrlib.llm.client import Endpoint
    >>> class Busy(Exception):  # what an openai.APIStatusError carries
    ...     status_code, body, response = 503, {"error": {"message": "overloaded"}}, None
    >>> error = classify(Busy(), Endpoint("compatible", "m", "http://h/v1"), 60)
    >>> error.kind, str(error)
    ('server', 'http://h/v1 failed (HTTP 503): overloaded')
    """
    error = _classify_raw(exc, endpoint, timeout)
    key = endpoint.api_key
    if key and len(key) >= 8 and key in str(error):
        text = str(error).replace(key, "<the API key>")
        return type(error)(text, status=error.status, kind=error.kind)
    return error


def _classify_raw(exc: Exception, endpoint: Endpoint, timeout: float) -> LLMError:
    import openai

    where = endpoint.base_url or f"the embedded {MODEL_ID} server"
    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeout(f"no answer from {where} within {timeout} s")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(f"cannot reach {where}: {exc}", kind="connection")
    status = getattr(exc, "status_code", None)
    message = _error_message(exc)
    response = getattr(exc, "response", None)
    if response is not None and response.headers.get(MALFORMED_HEADER):
        return LLMError(f"unreadable response from {where}: {message}", kind="malformed")
    if status == 429:
        return LLMError(f"rate limited by {where}: {message}", status=429, kind="rate_limit")
    if status is not None and (status >= 500 or status == 408):
        return LLMError(f"{where} failed (HTTP {status}): {message}", status=status, kind="server")
    if status in (401, 403):
        return LLMError(
            f"{where} refused the credentials (HTTP {status}): {message}; check OPENAI_API_KEY",
            status=status,
            kind="auth",
        )
    if status == 404:
        return LLMError(
            f"not found at {where} (HTTP 404): {message}; check the model name "
            f"{endpoint.model!r} and OPENAI_BASE_URL (it usually ends in /v1)",
            status=404,
            kind="not_found",
        )
    lowered = message.lower()
    if status in (400, 413, 422) and any(h in lowered for h in _CONTEXT_HINTS):
        return ContextLengthError(f"prompt too long for {endpoint.model}: {message}", status=status)
    if status is None:
        return LLMError(f"unreadable response from {where}: {exc}", kind="malformed")
    return LLMError(f"{where} rejected the request (HTTP {status}): {message}", status=status)


def _error_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:500]
        if isinstance(inner, str):
            return inner[:500]
    return str(getattr(exc, "message", exc))[:500]


@dataclass(frozen=True)
class Endpoint:
    """Where requests go. ``kind``: ``embedded``, ``openai`` or ``compatible``; the key
    never appears in ``repr`` (nor in the cache)."""

    kind: str
    model: str
    base_url: str | None = None  # None for the embedded server until it starts
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(
        cls, model: str | None = None, base_url: str | None = None, api_key: str | None = None
    ) -> Endpoint:
        """Fill in from ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``LRLIB_MODEL``/``OPENAI_MODEL``.

        >>> Endpoint.resolve("llama3", "http://localhost:8000/v1").kind
        'compatible'
        """
        env = current()
        base_url = base_url or env.base_url or None
        api_key = api_key or env.api_key or None
        model = model or env.model or None
        if base_url is None and api_key is None:
            if model not in (None, MODEL_ID):
                raise LLMError(
                    f"model {model!r} needs an endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY "
                    f"if it wants one), or leave the model unset for the embedded {MODEL_ID}"
                )
            return cls("embedded", MODEL_ID)
        if not model:
            raise LLMError(
                f"no model named for the endpoint {base_url or 'api.openai.com'}: pass --model "
                "NAME (model=... in Python) or set LRLIB_MODEL (e.g. LRLIB_MODEL=gpt-4.1-mini)"
            )
        host = urlsplit(base_url).hostname if base_url else "api.openai.com"
        if model == MODEL_ID:
            kind = "embedded"  # `lrlib serve` elsewhere: the same weights, the same answers
        else:
            kind = "openai" if host == "api.openai.com" else "compatible"
        return cls(kind, model, base_url, api_key)
