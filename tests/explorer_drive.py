"""The explorer notebook (``01_explore``) used as a user uses it, in JupyterLab in headless
Chromium: shared by tests/test_browser.py, which checks what the user sees, and
benchmarks/bench_explorer_latency.py, which times each control's change against
:data:`UPDATE_S` (alone on the machine: a timing is a benchmark's job, not a test's).
"""

from __future__ import annotations

import time
from pathlib import Path

from labdriver import open_notebook, run_all

NOTEBOOK = "01_explore"
UPDATE_S = 1.0  # the target: a control's change shows within this


def panes_in_view(page, label: str) -> None:
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


def use_the_explorer(page, url: str, token: str, shots: Path) -> dict[str, float]:
    """Run the notebook; change every control; check the panes and tooltips. Returns the
    seconds each change took to show (the benchmark compares them with :data:`UPDATE_S`)."""
    open_notebook(page, url, token, f"{NOTEBOOK}.ipynb")
    run_all(page)
    page.locator(".lr-explorer-view [data-pane='reduced']").wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "explorer-1280.png"))
    panes_in_view(page, "1280 px, first view")

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
    panes_in_view(page, "after the LineRetriever menus")
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
        panes_in_view(page, f"reducer {reducer}")
    _menu(page, "reducer").select_option("lineretriever")
    page.wait_for_function("() => !document.querySelector('.lr-menu-prompt select').disabled")
    assert prompt.get_attribute("title") is None, "the tooltip stays on an enabled menu"

    page.set_viewport_size({"width": 760, "height": 900})
    page.wait_for_timeout(300)
    page.screenshot(path=str(shots / "explorer-760.png"))
    panes_in_view(page, "760 px window")
    return times
