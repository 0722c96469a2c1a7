"""Build ``tests/fixtures/weblinx_bg``: two small demonstrations in the on-disk layout of
WebLINX's BrowserGym release (``McGill-NLP/weblinx-browsergym``), from real pages.

Usage (needs the optional builder dependencies: ``pip install -e '.[ood]'``, Debian's
chromium at ``/usr/bin/chromium`` or ``$CHROMIUM``)::

    .venv/bin/python benchmarks/build_weblinx_fixture.py [--out tests/fixtures/weblinx_bg]

The layout is the one ``weblinx_browsergym`` reads (``WeblinxTasks``): a root
``metadata.json`` ``{split: {demo_id: {turn: step}}}`` whose steps carry ``intent``,
``args`` (``uid`` of the element acted on), ``is_task``, ``has_full_snapshot``, ``tab``
(``url``, ``id``) and file paths relative to ``<root>/demonstrations/``; per page
``<demo>/axtrees/page-<turn>-0.json`` (BrowserGym's merged AX tree, ``browsergym_id`` on
nodes), ``<demo>/dom_snapshots/...`` and ``<demo>/extra_element_properties/...``, and the
saved page ``<demo>/pages/page-<turn>-0.html``. Screenshots, bounding boxes and
``replay.json`` are not written (lrlib's importer does not read them; their paths are in
``metadata.json`` as in the release).

How a page becomes a tree, step by step as WebLINX-BG's processing does it: the live page
(a MiniWoB++ task page, started with a fixed seed, in Debian's chromium through Playwright)
gets a ``data-webtasks-id`` uid on every element (WebLINX's recorder does this; our uids
are ``8-4-4`` hex digests of the demo and the element's position), typed values are written
into ``value`` attributes and scripts removed (a saved page keeps what was typed and does
not run), the page is saved, the
saved HTML is loaded with ``set_content``, each uid is moved into a ``bid`` attribute and
the ``aria-roledescription`` / ``aria-description`` markers, and BrowserGym's
``extract_merged_axtree`` / ``extract_dom_snapshot`` / ``extract_dom_extra_properties``
read it; the temporary ``BIDaaaaaaaaxbbbbxcccc`` ids are mapped back to ``aaaaaaaa-bbbb-cccc``.
One deviation: ``InlineTextBox`` nodes are dropped from the saved tree (recent Chromium
exposes them, the Chromium that produced the release did not; the MiniWoB check set's
builder does the same). The dialogue (the instructor's request, the navigator's reply) is
MiniWoB's own utterance; the actions are the ones that solve the task, executed on the live
page between captures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "weblinx_bg"
SEED = 7

_MARK_UIDS = """(demo) => {
  const all = document.querySelectorAll('*');
  let n = 0;
  for (const el of all) {
    if (el.hasAttribute('data-webtasks-id')) continue;
    n += 1;
    el.setAttribute('data-webtasks-id', demo + ':' + n);
  }
  for (const s of document.querySelectorAll('script')) s.remove();
  for (const el of document.querySelectorAll('input, textarea')) el.setAttribute('value', el.value);
}"""

# what WebLINX-BG's processing does to a saved page before reading its AX tree
_TO_BIDS = """() => {
  function push(bid, el, attr) {
    const old = el.hasAttribute(attr) ? el.getAttribute(attr) : '';
    el.setAttribute(attr, `browsergym_id_${bid} ${old}`);
  }
  for (const el of document.querySelectorAll('[data-webtasks-id]')) {
    const bid = 'BID' + el.getAttribute('data-webtasks-id').replace(/-/g, 'x');
    el.setAttribute('bid', bid);
    el.removeAttribute('data-webtasks-id');
    push(bid, el, 'aria-roledescription');
    push(bid, el, 'aria-description');
  }
}"""


def _uid(raw: str) -> str:
    h = hashlib.sha256(raw.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}"


def _from_temp(bid: str) -> str:
    return bid[3:].replace("x", "-") if bid.startswith("BID") else bid


def _hash_uids(page: Any) -> None:
    """Replace the ``demo:n`` placeholders by 8-4-4 hex uids (the release's format)."""
    raws = page.eval_on_selector_all(
        "[data-webtasks-id]", "els => els.map(e => e.getAttribute('data-webtasks-id'))"
    )
    mapping = {r: _uid(r) for r in raws if ":" in r}
    page.evaluate(
        """(m) => { for (const el of document.querySelectorAll('[data-webtasks-id]')) {
             const v = el.getAttribute('data-webtasks-id'); if (m[v]) el.setAttribute('data-webtasks-id', m[v]); } }""",
        mapping,
    )


def _snapshot(browser: Any, html: str) -> tuple[dict, dict, dict]:
    from browsergym.core.observation import (
        extract_dom_extra_properties,
        extract_dom_snapshot,
        extract_merged_axtree,
    )

    page = browser.new_page()
    page.set_content(html, wait_until="load")
    page.evaluate(_TO_BIDS)
    dom = extract_dom_snapshot(page)
    axtree = extract_merged_axtree(page)
    extra = extract_dom_extra_properties(dom, scale_factor=1.0)
    page.close()
    dropped = {n["nodeId"] for n in axtree["nodes"] if n["role"]["value"] == "InlineTextBox"}
    axtree["nodes"] = [n for n in axtree["nodes"] if n["nodeId"] not in dropped]
    for node in axtree["nodes"]:
        node["childIds"] = [c for c in node.get("childIds", []) if c not in dropped]
        if "browsergym_id" in node:
            node["browsergym_id"] = _from_temp(node["browsergym_id"])
    dom["strings"] = [_from_temp(s) if s.startswith("BID") else s for s in dom["strings"]]
    extra = {_from_temp(k): v for k, v in extra.items()}
    return axtree, dom, extra


def _uid_of(page: Any, selector: str) -> str:
    return page.eval_on_selector(selector, "e => e.getAttribute('data-webtasks-id')")


# demo id -> (WebLINX split, MiniWoB task, the navigator's actions: (intent, selector, value))
DEMOS: dict[str, tuple[str, str, list[tuple[str, str | None, str | None]]]] = {
    "mwloginusr": ("valid", "login-user", [
        ("textinput", "#username", "@username"),
        ("textinput", "#password", "@password"),
        ("click", "#subbtn", None),
        ("say", None, "I have logged you in."),
    ]),
    "mwenterpwd": ("train", "enter-password", [
        ("textinput", "#password", "@password"),
        ("textinput", "#verify", "@password"),
        ("click", "#subbtn", None),
    ]),
}  # fmt: skip


def _fields(utterance: str) -> dict[str, str]:
    """``username``/``password`` named in a MiniWoB utterance (login-user, enter-password)."""
    import re

    out = {}
    for key in ("username", "password"):
        m = re.search(rf'{key} "([^"]+)"', utterance)
        if m:
            out[key] = m.group(1)
    return out


def build_demo(browser: Any, out: Path, demo: str, task: str, actions: list) -> dict[str, Any]:
    """Run one demonstration on the live page; write its files; its ``metadata.json`` steps."""
    import miniwob

    html_dir = Path(miniwob.__file__).parent / "html" / "miniwob"
    url = f"file://{html_dir / (task + '.html')}"
    page = browser.new_page()
    page.goto(url)
    page.evaluate(f"Math.seedrandom({SEED}); core.startEpisodeReal();")
    utterance = page.evaluate("core.getUtterance()")
    values = _fields(utterance)
    demo_dir = out / "demonstrations" / demo
    steps: dict[str, Any] = {}
    t0 = 1_700_000_000.0
    tab = {"url": f"http://localhost:8000/miniwob/{task}.html", "id": 1}
    common = {"zoom": 1.0, "focused_element_uid": None, "user_sees_screen": True,
              "uses_ai_output": False, "annotator_id": "lrlib-fixture", "upload_date": "2026-11-25"}  # fmt: skip
    steps["0"] = {"intent": "say", "args": {"speaker": "instructor", "utterance": utterance},
                  "is_task": False, "has_full_snapshot": False, "timestamp": t0, "tab": tab}  # fmt: skip
    for turn, (intent, selector, value) in enumerate(actions, start=1):
        page.evaluate(_MARK_UIDS, demo)
        _hash_uids(page)
        name = f"page-{turn}-0"
        html = page.content()
        axtree, dom, extra = _snapshot(browser, html)
        for sub, data in (("axtrees", axtree), ("dom_snapshots", dom),
                          ("extra_element_properties", extra)):  # fmt: skip
            path = demo_dir / sub / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, sort_keys=True))
        (demo_dir / "pages").mkdir(parents=True, exist_ok=True)
        (demo_dir / "pages" / f"{name}.html").write_text(html)
        step: dict[str, Any] = {
            "intent": intent, "is_task": True, "has_full_snapshot": True,
            "timestamp": t0 + turn, "tab": tab,
            "screenshot_path": f"{demo}/screenshots/screenshot-{turn}-0.png",
            "bbox_path": f"{demo}/bboxes/bboxes-{turn}.json",
            "html_path": f"{demo}/pages/{name}.html",
            "axtree_path": f"{demo}/axtrees/{name}.json",
            "dom_object_path": f"{demo}/dom_snapshots/{name}.json",
            "extra_props_path": f"{demo}/extra_element_properties/{name}.json",
            **common,
        }  # fmt: skip
        if intent == "say":
            step["args"] = {"speaker": "navigator", "utterance": value}
        else:
            uid = _uid_of(page, selector)
            args: dict[str, Any] = {"uid": uid}
            if intent == "textinput":
                args["value"] = values[value[1:]] if value and value.startswith("@") else value
                page.fill(selector, args["value"])
            else:
                page.click(selector)
            step["args"] = args
        steps[str(turn)] = step
    page.close()
    for s in steps.values():
        s["num_actions"] = len(actions)
    return steps


def main(argv: list[str] | None = None) -> int:
    """Build the fixture (replaces ``--out``'s demonstrations and metadata)."""
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    out: Path = args.out
    shutil.rmtree(out / "demonstrations", ignore_errors=True)  # README.md stays
    (out / "demonstrations").mkdir(parents=True)
    metadata: dict[str, dict[str, Any]] = {}
    exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True)
        for demo, (split, task, actions) in DEMOS.items():
            metadata.setdefault(split, {})[demo] = build_demo(browser, out, demo, task, actions)
        browser.close()
    (out / "metadata.json").write_text(json.dumps(metadata, indent=1, sort_keys=True))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
