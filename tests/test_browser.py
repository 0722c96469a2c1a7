"""JupyterLab in a real headless Chromium: the explorer notebook as a user sees it.

The test starts JupyterLab on 127.0.0.1 (a free port, a token, the project's server settings
from ``.jupyter/``, throw-away user settings and runtime folders) on a temporary copy of the
notebooks folder, opens ``01_explore``, runs every cell, changes every control and reads the
DOM: both trees must lie inside the viewport, side by side, at two window sizes, and every
change must show within 1 s. Then it saves the notebook the way a user does (Ctrl+S) and
checks that the files the repository tracks did not change (the run goes to the user area).
Screenshots go to ``.lrlib/screenshots/`` (gitignored).

It needs Debian's ``chromium`` (``make browser`` installs it; ``make test`` runs that first)
and the ``playwright`` package (dev extra); without a browser it is skipped, loudly.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time

import labdriver
import pytest

from lrlib import paths

SHOTS = paths.REPO_DIR / ".lrlib" / "screenshots"
NOTEBOOK = "01_explore"
UPDATE_S = 1.0  # a control's change must show within this

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of notebooks/: (url, token, notebooks copy, work dir)."""
    reason = labdriver.missing()
    if reason:
        print(f"\n!!! {reason}", file=sys.stderr)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("lab")
    notebooks = root / "notebooks"
    shutil.copytree(paths.notebooks_dir(), notebooks, ignore=shutil.ignore_patterns(".ipynb*"))
    port, token = labdriver.free_port(), secrets.token_hex(16)
    env = labdriver.lab_env(
        root,
        JUPYTER_CONFIG_PATH=str(paths.REPO_DIR / ".jupyter"),  # what `make lab` adds
        LRLIB_WORK_DIR=str(root / "work"),
        LRLIB_OFFLINE="1",
        LRLIB_QUICK="1",
        PYTHONPATH=str(paths.REPO_DIR),
    )
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={notebooks}"]
    log = root / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd + labdriver.server_args(port, token), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        labdriver.wait_up(url, token, proc, log)
    except RuntimeError as exc:
        proc.kill()
        pytest.fail(str(exc))
    yield url, token, notebooks, root / "work"
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _panes_in_view(page, label: str) -> None:
    """Both trees visible, side by side, inside the viewport horizontally."""
    page.locator(".lr-explorer").scroll_into_view_if_needed()
    width = page.viewport_size["width"]
    left = page.locator('.lr-explorer-view [data-pane="original"]').bounding_box()
    right = page.locator('.lr-explorer-view [data-pane="reduced"]').bounding_box()
    assert left and right, f"{label}: a pane is missing"
    for name, box in (("original", left), ("reduced", right)):
        assert box["width"] > 100 and box["height"] > 20, f"{label}: {name} pane is {box}"
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (
            f"{label}: {name} pane at x={box['x']:.0f}..{box['x'] + box['width']:.0f} "
            f"leaves the {width} px viewport"
        )
    assert right["x"] >= left["x"] + left["width"] - 1, f"{label}: panes overlap"
    assert abs(right["y"] - left["y"]) < 40, f"{label}: panes are not side by side"
    spans = [f"{b['x']:.0f}..{b['x'] + b['width']:.0f}" for b in (left, right)]
    print(f"{label}: original x={spans[0]}, reduced x={spans[1]} in {width} px")


def _change(page, label: str, action) -> float:
    """Do ``action``; seconds until the explorer's view shows something new."""
    view = page.locator(".lr-explorer-view")
    before = view.inner_html()
    start = time.perf_counter()
    action()
    page.wait_for_function(
        "old => document.querySelector('.lr-explorer-view').innerHTML !== old",
        arg=before,
        timeout=15_000,
    )
    return time.perf_counter() - start


def _menu(page, name: str):
    return page.locator(".lr-explorer .widget-dropdown", has_text=name).locator("select")


def _use_the_explorer(page, url: str, token: str) -> None:
    """Run the notebook; change every control; check the panes, tooltips and timings."""
    labdriver.open_notebook(page, url, token, f"{NOTEBOOK}.ipynb")
    labdriver.run_all(page)
    page.locator(".lr-explorer-view [data-pane='reduced']").wait_for(timeout=60_000)
    page.screenshot(path=str(SHOTS / "explorer-1280.png"))
    _panes_in_view(page, "1280 px, first view")

    # the initial state is the notebook's START: lineretriever, paper, structure
    prompt, pruning = (
        page.locator(".lr-menu-prompt select"),
        page.locator(".lr-menu-pruning select"),
    )
    assert _menu(page, "reducer").input_value() == "lineretriever"
    assert prompt.input_value() == "paper" and pruning.input_value() == "structure"
    assert prompt.get_attribute("title") is None and pruning.get_attribute("title") is None

    times = {}
    step = _menu(page, "step")
    times["step menu"] = _change(page, "step", lambda: step.select_option(index=1))
    nxt = page.locator(".lr-explorer button", has_text="next")
    prev = page.locator(".lr-explorer button", has_text="previous")
    times["next button"] = _change(page, "next", nxt.click)
    times["previous button"] = _change(page, "previous", prev.click)
    assert step.input_value().startswith("2. ")
    # the keyboard: the arrow keys on the step slider's focused handle
    page.locator(".lr-explorer-keys .noUi-handle").focus()
    times["right arrow"] = _change(page, "right arrow", lambda: page.keyboard.press("ArrowRight"))
    assert step.input_value().startswith("3. "), "ArrowRight did not go to the next step"
    times["left arrow"] = _change(page, "left arrow", lambda: page.keyboard.press("ArrowLeft"))
    assert step.input_value().startswith("2. "), "ArrowLeft did not go to the previous step"
    nxt.focus()  # and a focused button with the space bar
    times["next key"] = _change(page, "next key", lambda: page.keyboard.press(" "))
    assert step.input_value().startswith("3. ")
    times["pruning"] = _change(page, "pruning", lambda: pruning.select_option("remove"))
    times["prompt"] = _change(page, "prompt", lambda: prompt.select_option("defender"))
    _panes_in_view(page, "after the LineRetriever menus")
    # every reducer the notebook offers is in the menu, the README's recommended one included
    offered = _menu(page, "reducer").locator("option").all_inner_texts()
    assert "learned" in offered, f"the recommended reducer is not in the menu: {offered}"
    for reducer in ("learned", "bm25", "truncate", "program", "embedding", "random", "oracle"):
        times[reducer] = _change(
            page, reducer, lambda r=reducer: _menu(page, "reducer").select_option(r)
        )
        assert prompt.is_disabled(), f"the prompt menu acts on {reducer}?"
        tip = prompt.get_attribute("title") or ""
        assert f"does not apply to {reducer}" in tip, f"prompt menu tooltip: {tip!r}"
        note = page.locator(".lr-explorer-note").inner_text()
        assert f"does not apply to {reducer}" in note and "prompt" in note, note
        off = reducer in ("truncate", "embedding")
        assert pruning.is_disabled() == off, reducer
        tip = pruning.get_attribute("title")
        assert (f"does not apply to {reducer}" in (tip or "")) if off else tip is None, (
            reducer,
            tip,
        )
        _panes_in_view(page, f"reducer {reducer}")
    _menu(page, "reducer").select_option("lineretriever")
    page.wait_for_function("() => !document.querySelector('.lr-menu-prompt select').disabled")
    assert prompt.get_attribute("title") is None, "the tooltip stays on an enabled menu"
    slow = {k: round(v, 2) for k, v in times.items() if v > UPDATE_S}
    print("control latencies (s):", {k: round(v, 3) for k, v in times.items()})
    assert not slow, f"changes slower than {UPDATE_S} s: {slow} (all: {times})"

    page.set_viewport_size({"width": 760, "height": 900})
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / "explorer-760.png"))
    _panes_in_view(page, "760 px window")


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
            _use_the_explorer(page, url, token)
        except Exception:
            page.screenshot(path=str(SHOTS / "failure.png"))
            raise
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
