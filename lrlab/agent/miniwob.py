"""MiniWoB++ offline in Debian's chromium through BrowserGym (``pip install -e '.[live]'``).

:class:`MiniWoB` serves the ``miniwob`` package's HTML files on 127.0.0.1, points BrowserGym at
them and opens one BrowserGym environment per task type, with Playwright given Debian's
chromium (its own browser download is never used). BrowserGym's chat window (a second
browser no policy here reads) is replaced by an in-memory record of the messages.

>>> chromium_path("/nonexistent/chromium")
Traceback (most recent call last):
...
FileNotFoundError: no chromium at /nonexistent/chromium; install Debian's (make browser, or apt-get install chromium) or set CHROMIUM
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from lrlib.settings import current, export_env

CANONICAL_BASE = "http://localhost:8000/"  # BrowserGym's documented MiniWoB address


#: the browsers ``lrlib live`` looks for, in order, when neither ``path`` nor ``$CHROMIUM`` is
#: set: Debian's headless shell (chromium's engine without its UI: the same trees at about
#: half the CPU per episode, docs/performance.md), then Debian's chromium
DEFAULT_CHROMIUMS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")


def chromium_path(path: str | None = None) -> str:
    """The chromium executable: ``path``, ``$CHROMIUM`` or the first installed of
    :data:`DEFAULT_CHROMIUMS`.

    >>> from lrlib.settings import override
    >>> with override(chromium="/bin/sh"):  # $CHROMIUM wins over the defaults
    ...     chromium_path()
    '/bin/sh'
    """
    path = path or current().chromium
    if not path:
        found = [p for p in DEFAULT_CHROMIUMS if os.access(p, os.X_OK)]
        path = found[0] if found else DEFAULT_CHROMIUMS[-1]
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"no chromium at {path}; install Debian's (make browser, or apt-get install "
            "chromium) or set CHROMIUM"
        )
    return path


@lru_cache(maxsize=4)
def chromium_build(path: str | None = None) -> str:
    """The browser build, e.g. ``Chromium 150.0.7871.100 built on Debian GNU/Linux 12``, or
    ``Chromium 156.0.8078.108 (chromium-headless-shell)``: any executable but ``chromium``
    is named, since some print only the version."""
    exe = chromium_path(path)
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    build = " ".join(out.stdout.split()) or "unknown"
    name = Path(exe).name
    return build if name == "chromium" else f"{build} ({name})"


LIVE_PACKAGES = {"browsergym.miniwob": "browsergym-miniwob", "miniwob": "miniwob",
                 "browsergym.experiments": "browsergym-experiments"}  # fmt: skip


def missing_packages(need: dict[str, str] | None = None) -> list[str]:
    """The packages of ``need`` (module -> package; default: the live extra's, for MiniWoB)
    that are not installed (empty when ``lrlib live`` can run).

    >>> missing_packages({"json": "json"})
    []
    """
    from importlib.util import find_spec

    need = LIVE_PACKAGES if need is None else need
    out = []
    for mod, pkg in need.items():
        try:
            found = find_spec(mod) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            out.append(pkg)
    return out


class MissingExtra(LookupError):
    """The live extra is not installed (a user error: the message says what to install)."""


class ChatRecord:
    """Stands in for BrowserGym's chat window: the messages, no browser (MiniWoB's and the
    documentation sites' environments both use it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.messages: list[dict[str, Any]] = []
        self.recording_start_time = None

    def add_message(self, role: str, msg: str) -> None:
        self.messages.append({"role": role, "message": msg, "timestamp": time.time()})

    def close(self) -> None:
        pass

    def wait_for_user_message(self) -> None:
        pass


# http.server, but pages and scripts declared UTF-8: MiniWoB's pages carry no charset, and
# without one Chromium reads them as windows-1252 (unicode-test's "确定" became "ç¡®å®š")
_SERVER = """import functools, http.server, sys
H = http.server.SimpleHTTPRequestHandler
H.extensions_map = {**H.extensions_map, ".html": "text/html; charset=utf-8",
                    ".js": "text/javascript; charset=utf-8"}
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])),
                                functools.partial(H, directory=sys.argv[2])).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MiniWoB:
    """MiniWoB++ environments (module doc); a context manager that stops its server and
    browsers on exit. ``base`` reuses a server already running (parallel workers); at most
    ``keep`` task types' browsers stay open (46 task types would otherwise hold 46)."""

    def __init__(self, chromium: str | None = None, base: str | None = None, keep: int = 2) -> None:
        missing = missing_packages()
        if missing:
            raise MissingExtra(f"lrlib live needs {', '.join(missing)}: pip install -e '.[live]'")
        self.chromium = chromium_path(chromium)
        self.browser_build = chromium_build(self.chromium)
        self._server: subprocess.Popen | None = None
        self.base = base or self._serve()
        export_env("MINIWOB_URL", self.base + "miniwob/")  # BrowserGym reads it
        import browsergym.core.env as bgenv
        import browsergym.miniwob  # noqa: F401  (registers the tasks)
        from browsergym.core.action.highlevel import HighLevelActionSet

        bgenv.Chat = ChatRecord  # the module's public name; no second browser
        self.actions = HighLevelActionSet(subsets=["bid", "nav"], strict=False, multiaction=False)
        self._envs: dict[str, Any] = {}
        self.keep = max(1, keep)

    def _serve(self) -> str:
        import miniwob

        html = Path(miniwob.__file__).parent / "html"
        port = _free_port()
        cmd = [sys.executable, "-c", _SERVER, str(port), str(html)]
        self._server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        return f"http://127.0.0.1:{port}/"

    def env(self, task: str) -> Any:
        """The BrowserGym environment of MiniWoB++ task ``task`` (e.g. ``click-button``)."""
        if task not in self._envs:
            import gymnasium as gym

            for old in list(self._envs)[: max(0, len(self._envs) - self.keep + 1)]:
                self.close_env(old)  # one browser per task type open at most `keep` at once

            self._envs[task] = gym.make(
                f"browsergym/miniwob.{task}",
                headless=True,
                action_mapping=self.actions.to_python_code,
                pw_chromium_kwargs={"executable_path": self.chromium},
            )
        return self._envs[task]

    def close_env(self, task: str) -> None:
        """Close task ``task``'s environment (the next :meth:`env` opens a fresh one)."""
        env = self._envs.pop(task, None)
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()

    def canonical(self, text: str) -> str:
        """``text`` with the local server address written as BrowserGym's documented one."""
        return text.replace(self.base, CANONICAL_BASE)

    def close(self) -> None:
        """Close every environment and stop the server."""
        for env in self._envs.values():
            with contextlib.suppress(Exception):  # a dead browser must not keep the server up
                env.close()
        self._envs.clear()
        if self._server is not None:
            self._server.terminate()
            self._server.wait()
            self._server = None

    def __enter__(self) -> MiniWoB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
