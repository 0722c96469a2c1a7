"""Driving JupyterLab in headless Chromium, shared by tests/test_browser.py,
benchmarks/bench_lab_roundtrip.py and benchmarks/bench_explorer_latency.py: an isolated
server environment, a server on a copy of the notebooks, waiting for the server,
opening a notebook the way a user does (from the file browser, once the kernel list is
loaded, so JupyterLab never asks which kernel to start), running it, saving it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = Path(os.environ.get("LRLIB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CURRENT = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in the visible tab


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.is_file():
        return (
            f"NO BROWSER: {CHROMIUM} is missing, so the JupyterLab explorer is NOT TESTED; "
            "run `make browser` (apt-get install chromium, as root)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "NO PLAYWRIGHT: pip install -e '.[dev]'; the JupyterLab explorer is NOT TESTED"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of a JupyterLab server that ignores the user's own Jupyter settings
    (config, settings, workspaces and runtime folders under ``root``). Every cell stays in
    the DOM (JupyterLab 4 detaches cells scrolled out of view) and no news are fetched."""
    settings = root / "settings" / "@jupyterlab"
    for plugin, values in (
        ("notebook-extension/tracker", {"windowingMode": "none"}),
        ("apputils-extension/notification", {"fetchNews": "false"}),
    ):
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "LRLIB_"))}
    return env | {
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(root / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
        **extra,
    }


def server_args(port: int, token: str) -> list[str]:
    """Headless, local, fixed port and token, no update or news checks."""
    return [
        "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.news_url=None",
    ] + (["--allow-root"] if os.geteuid() == 0 else [])  # fmt: skip


def wait_up(url: str, token: str, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    """Until the server answers; RuntimeError with its log if it dies or takes too long."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.3)


@contextlib.contextmanager
def serve_copy(root: Path, notebooks: Path, repo: Path) -> Iterator[tuple[str, str, Path, Path]]:
    """A JupyterLab server on a copy of ``notebooks`` under ``root``, with the project's
    server settings (``repo/.jupyter``, what `make lab` adds), offline, in quick mode:
    ``(url, token, notebooks copy, work dir)``. RuntimeError with the log if it does not
    start; stopped on exit."""
    copy = root / "notebooks"
    shutil.copytree(notebooks, copy, ignore=shutil.ignore_patterns(".ipynb*"))
    port, token = free_port(), secrets.token_hex(16)
    env = lab_env(
        root,
        JUPYTER_CONFIG_PATH=str(repo / ".jupyter"),
        LRLIB_WORK_DIR=str(root / "work"),
        LRLIB_OFFLINE="1",
        LRLIB_QUICK="1",
        PYTHONPATH=str(repo),
    )
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={copy}"]
    log = root / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd + server_args(port, token), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, token, proc, log)
        yield url, token, copy, root / "work"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def open_notebook(page, url: str, token: str, name: str) -> bool:
    """Open ``name`` (e.g. ``01_explore.ipynb``) from the file browser of a loaded
    JupyterLab; wait until its kernel is idle. Returns whether JupyterLab asked for a kernel.

    The notebooks name their kernel (``python3``); JupyterLab asks which kernel to start
    only when it opens a notebook before it has the list of kernels, so the launcher's
    kernel cards are awaited first. Should the dialog still appear, its preselected kernel
    is accepted (and the run goes on)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if "/lab" not in page.url:
        load(page, url, token)
    item = page.locator(".jp-DirListing-item", has_text=name).first
    item.wait_for(timeout=90_000)  # the app is up
    cards = page.locator(".jp-LauncherCard[data-category='Notebook']")
    try:
        cards.first.wait_for(timeout=5_000)
    except PlaywrightTimeout:  # no launcher open: open one (the + of the tab bar)
        page.locator(".lm-TabBar-addButton").first.click()
    cards.first.wait_for(timeout=90_000)
    item.dblclick()
    page.locator(f"{CURRENT} .jp-Notebook").first.wait_for(timeout=60_000)
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    try:
        dialog.wait_for(timeout=2_000)
        dialog.get_by_role("button", name="Select", exact=True).click()
        print(f"!!! JupyterLab asked for a kernel when opening {name}")
        asked = True
    except PlaywrightTimeout:
        asked = False
    idle = page.locator(f"{CURRENT} .jp-Notebook-ExecutionIndicator[data-status='idle']")
    idle.first.wait_for(timeout=90_000)
    return asked


def load(page, url: str, token: str) -> None:
    """JupyterLab in its default layout (``?reset``: the launcher, no restored tabs),
    leaving the page even when a notebook is unsaved."""
    if not getattr(page, "_accepts_dialogs", False):
        page.on("dialog", lambda dialog: dialog.accept())
        page._accepts_dialogs = True
    page.goto(f"{url}/lab?reset&token={token}")


def close_current(page) -> None:
    """Close the visible tab (its close icon)."""
    page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").first.click()


def menu(page, top: str, item: str) -> None:
    """Click ``top`` in the menu bar, then its item labelled exactly ``item``."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
    label = re.compile(f"^{re.escape(item)}$")
    page.locator(".lm-Menu-itemLabel", has_text=label).first.click()


def run_all(page, tries: int = 3) -> None:
    """Clear every output, then Run > Run All Cells until the kernel takes it (a Run All
    sent while the kernel is still connecting is dropped): afterwards no cell shows a
    count that this run did not give, and :func:`wait_all_ran` means what it says."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    started = """current => [...document.querySelectorAll(`${current} .jp-CodeCell .jp-InputPrompt`)]
        .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""
    page.wait_for_function(f"current => !({started})(current)", arg=CURRENT, timeout=10_000)
    for attempt in range(tries):
        menu(page, "Run", "Run All Cells")
        try:
            page.wait_for_function(started, arg=CURRENT, timeout=20_000)
            return
        except Exception:
            if attempt == tries - 1:
                raise
            print("!!! Run All Cells did not start; again")


def wait_all_ran(page, timeout: float) -> None:
    """Until every code cell of the current notebook shows an execution count (none
    ``[*]`` or blank) and the kernel is idle."""
    page.wait_for_function(
        """current => {
            const nb = document.querySelector(`${current} .jp-Notebook`);
            if (!nb) return false;
            const prompts = [...nb.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
            const ran = prompts.length && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            const idle = document.querySelector(
                `${current} .jp-Notebook-ExecutionIndicator[data-status='idle']`);
            return ran && idle;
        }""",
        arg=CURRENT,
        timeout=timeout * 1000,
        polling=500,
    )


def save(page) -> None:
    """Ctrl+S in command mode, as a user saves; until the tab is no longer dirty."""
    page.keyboard.press("Escape")
    page.locator(f"{CURRENT} .jp-Notebook").first.focus()
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-dirty')",
        timeout=30_000,
    )


def shut_down_kernels(url: str, token: str) -> None:
    """Delete every session (and its kernel) through the REST API."""
    req = urllib.request.Request(f"{url}/api/sessions?token={token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        sessions = json.load(r)
    for s in sessions:
        req = urllib.request.Request(f"{url}/api/sessions/{s['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(req, timeout=30).close()


def run_problems(run: Path) -> list[str]:
    """What went wrong in a saved run: error outputs, tracebacks, cells that did not run."""
    nb = json.loads(run.read_text(encoding="utf-8"))
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        if cell.get("execution_count") is None:
            found.append(f"cell {i} did not run")
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"cell {i}: {out.get('ename')}: {out.get('evalue', '')[:200]}")
            elif "Traceback" in "".join(out.get("text", "")):
                found.append(f"cell {i}: a traceback on {out.get('name')}")
    return found
