"""JupyterLab in a real headless Chromium: the explorer notebook as a user sees it.

The test starts JupyterLab on 127.0.0.1 (a free port, a token, the project's server settings
from ``.jupyter/``, throw-away user settings and runtime folders) on a temporary copy of the
notebooks folder, opens ``01_explore``, runs every cell, changes every control and reads the
DOM: both trees must lie inside the viewport, side by side, at two window sizes, and every
change must show (``tests/explorer_drive.py``). Then it saves the notebook the way a user
does (Ctrl+S) and checks that the files the repository tracks did not change (the run goes
to the user area). How fast each change shows (the 1 s target) is timed by
``benchmarks/bench_explorer_latency.py`` alone on the machine, not here: this test runs
beside the others in ``make test``, and the latencies it prints are under that load.
Screenshots go to ``.lrlib/screenshots/`` (gitignored).

It needs Debian's ``chromium`` (``make browser`` installs it; ``make test`` runs that first)
and the ``playwright`` package (dev extra); without a browser it is skipped, loudly.
"""

from __future__ import annotations

import json
import sys
import time

import explorer_drive
import labdriver
import pytest

from lrlib import paths

SHOTS = paths.REPO_DIR / ".lrlib" / "screenshots"
NOTEBOOK = explorer_drive.NOTEBOOK

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of notebooks/: (url, token, notebooks copy, work dir)."""
    reason = labdriver.missing()
    if reason:
        print(f"\n!!! {reason}", file=sys.stderr)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("lab")
    try:
        with labdriver.serve_copy(root, paths.notebooks_dir(), paths.REPO_DIR) as served:
            yield served
    except RuntimeError as exc:
        pytest.fail(str(exc))


def test_explorer_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    url, token, notebooks, work = lab
    SHOTS.mkdir(parents=True, exist_ok=True)
    original = {s: (notebooks / f"{NOTEBOOK}{s}").read_bytes() for s in (".ipynb", ".py")}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(labdriver.CHROMIUM), args=labdriver.CHROMIUM_ARGS
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            times = explorer_drive.use_the_explorer(page, url, token, SHOTS)
        except Exception:
            page.screenshot(path=str(SHOTS / "failure.png"))
            raise
        print("control latencies (s):", {k: round(v, 3) for k, v in times.items()})
        # save as a user does; the tracked files stay as they were, the run is kept aside
        labdriver.save(page)
        saved = work / "lab" / f"{NOTEBOOK}.ipynb"
        deadline = time.monotonic() + 20
        while not saved.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        browser.close()
    assert saved.is_file(), "the user's run was not saved to the user area"
    assert "widget-view" not in saved.read_text() and "widgets" not in json.loads(
        saved.read_text()
    ).get("metadata", {})
    for suffix, data in original.items():
        assert (notebooks / f"{NOTEBOOK}{suffix}").read_bytes() == data, (
            f"saving in JupyterLab changed {NOTEBOOK}{suffix}"
        )


def _snapshot(*folders) -> dict:
    files = (p for f in folders for p in f.rglob("*") if ".ipynb_checkpoints" not in p.parts)
    return {p: p.read_bytes() for p in files if p.is_file()}  # checkpoints: gitignored


def test_notebooks_that_write_figures_run_and_save_cleanly(lab):
    """Two more notebooks opened, run and saved as a user does: no error output, their
    figures and tables go to the user area, and no file of the notebooks folder or of the
    repository's figures/ changes. (All seven, on a fresh clone with `make lab` and then
    `git status`: benchmarks/bench_lab_roundtrip.py.)"""
    from playwright.sync_api import sync_playwright

    url, token, notebooks, work = lab
    before = _snapshot(notebooks, paths.REPO_DIR / "figures")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(labdriver.CHROMIUM), args=labdriver.CHROMIUM_ARGS
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        labdriver.load(page, url, token)
        try:
            for name in ("00_quickstart", "04_cost_breakeven"):
                labdriver.open_notebook(page, url, token, f"{name}.ipynb")
                labdriver.run_all(page)
                labdriver.wait_all_ran(page, timeout=120)
                labdriver.save(page)
                saved = work / "lab" / f"{name}.ipynb"
                deadline = time.monotonic() + 20
                while not saved.is_file() and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert saved.is_file(), f"{name}: the run was not saved to the user area"
                assert not labdriver.run_problems(saved), labdriver.run_problems(saved)
                labdriver.close_current(page)
                labdriver.shut_down_kernels(url, token)
        except Exception:
            page.screenshot(path=str(SHOTS / "failure-roundtrip.png"))
            raise
        finally:
            browser.close()
    assert sorted(p.name for p in (work / "figures").glob("*.png")), "no figure in the user area"
    after = _snapshot(notebooks, paths.REPO_DIR / "figures")
    changed = sorted(str(p) for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert not changed, f"running and saving changed: {changed}"
