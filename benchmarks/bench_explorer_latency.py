"""How fast the explorer answers a control (target: every change shows within 1 s).

Starts JupyterLab on a temporary copy of ``notebooks/`` (quick mode, offline, the project's
server settings), opens ``01_explore`` in Debian's chromium and uses every control as
``tests/test_browser.py`` does (``tests/explorer_drive.py``), ``--repeats`` times, each in a
fresh page that runs the notebook again. Prints, per control, the median and the slowest
seconds until the view changed, how busy the cores were before the run, the browser build and
the provenance; exit status 1 when a change took longer than the target.

Run it alone on an idle machine: it measures what a user waits for, and a busy core makes
the figures say nothing about the explorer (`make test` runs the browser test beside the
others, so it checks that every change shows, not how fast).

    python benchmarks/bench_explorer_latency.py               # 3 sessions
    python benchmarks/bench_explorer_latency.py --repeats 5 --out latency.json

No model is asked; it writes only into a temporary folder, ``.lrlib/screenshots/`` and the
``--out`` file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import explorer_drive  # noqa: E402  (tests/explorer_drive.py, shared with tests/test_browser.py)
import labdriver  # noqa: E402
from bench_suite import busy_share  # noqa: E402  (this folder: the script's own)

SHOTS = REPO / ".lrlib" / "screenshots"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="explorer sessions (default 3)")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats: at least 1")
    reason = labdriver.missing()
    if reason:
        print(f"!!! {reason}")
        return 1
    from playwright.sync_api import sync_playwright

    from lrlab.agent.miniwob import chromium_build
    from lrlib.runinfo import provenance

    load, busy = os.getloadavg()[0], busy_share()
    prov = provenance(
        benchmark="explorer_latency",
        repeats=args.repeats,
        target_s=explorer_drive.UPDATE_S,
        browser=chromium_build(str(labdriver.CHROMIUM)),
        load_before=round(load, 2),
        busy_before=round(busy, 2),
    )
    print(f"cores {busy:.0%} busy before the run ({os.cpu_count()} cores; load average "
          f"{load:.2f})" + ("  - busy: the figures overstate the wait" if busy > 0.1 else ""))  # fmt: skip
    SHOTS.mkdir(parents=True, exist_ok=True)
    sessions: list[dict[str, float]] = []
    with (
        tempfile.TemporaryDirectory(prefix="explorer-latency-") as tmp,
        labdriver.serve_copy(Path(tmp), REPO / "notebooks", REPO) as (url, token, *_),
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(
            executable_path=str(labdriver.CHROMIUM), args=labdriver.CHROMIUM_ARGS
        )
        for k in range(args.repeats):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            sessions.append(explorer_drive.use_the_explorer(page, url, token, SHOTS))
            labdriver.shut_down_kernels(url, token)
            page.close()
            print(f"session {k + 1}/{args.repeats}: slowest change "
                  f"{max(sessions[-1].values()):.2f} s", flush=True)  # fmt: skip
        browser.close()
    controls = list(sessions[0])
    rows = {c: [s[c] for s in sessions] for c in controls}
    target = explorer_drive.UPDATE_S
    print(f"\n| control | median (s) | slowest (s) | within {target:g} s |\n|---|---|---|---|")
    for c, times in rows.items():
        ok = "yes" if max(times) <= target else "**no**"
        print(f"| {c} | {statistics.median(times):.3f} | {max(times):.3f} | {ok} |")
    slow = sorted(c for c, times in rows.items() if max(times) > target)
    print(f"\n{prov['browser']}, lrlib {prov['lrlib_version']} at {prov['git_commit']}; "
          f"{len(sessions)} sessions; "
          + (f"slower than {target:g} s: {', '.join(slow)}" if slow else "every change within target"))  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"provenance": prov, "seconds": rows}, indent=1) + "\n")
        print(f"written: {args.out}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
