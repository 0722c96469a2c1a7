"""A new user's round trip (issue 14): a fresh clone, `make lab`, every notebook opened, run
and saved in a real browser, then the notebook tests and `git status` in that clone.

1. ``git clone`` this repository (its committed HEAD) into a temporary folder;
2. start JupyterLab there with ``make lab`` (the clone's Makefile and ``.jupyter/``
   settings; the Python environment of this checkout, ``-o`` keeps make from reinstalling
   it), headless on 127.0.0.1 with a token, with throw-away Jupyter user settings;
3. in Debian's chromium (playwright), for each notebook 00..06: open it from the file
   browser, clear its outputs, Run All Cells, wait until every cell has run, check the run
   saved to the user area has no error output, save with Ctrl+S, close it, shut its
   kernel down;
4. in the clone: ``pytest tests/test_notebooks.py`` (``--make-test``: ``make test``, lint
   and the whole suite) and ``git status --porcelain``, which must print nothing.

The notebooks run as a user runs them (full mode, offline replay: about ``make figures``'s
time on an idle machine); ``--quick`` sets ``LRLIB_QUICK=1``. Exit status 1 when any step
fails. Prints a markdown table per notebook and the two checks.

    python benchmarks/bench_lab_roundtrip.py
    python benchmarks/bench_lab_roundtrip.py --quick --only 01 --keep
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import labdriver  # noqa: E402  (tests/labdriver.py, shared with tests/test_browser.py)

SHARED_VENV_TEST = "tests/test_layout.py::test_installed_package_imports_from_anywhere"


def _roundtrip(page, url: str, token: str, clone: Path, name: str, timeout: float) -> dict:
    """Open, run all, save, close one notebook; what happened."""
    row = {"notebook": name, "ok": False, "asked for a kernel": False, "problems": []}
    saved = clone / ".lrlib" / "lab" / f"{name}.ipynb"
    start = time.perf_counter()
    try:
        print(f"{name}: opening", flush=True)
        row["asked for a kernel"] = labdriver.open_notebook(page, url, token, f"{name}.ipynb")
        row["open (s)"] = time.perf_counter() - start
        print(f"{name}: running all cells", flush=True)
        labdriver.run_all(page)
        labdriver.wait_all_ran(page, timeout)
        row["run (s)"] = time.perf_counter() - start - row["open (s)"]
        print(f"{name}: saving", flush=True)
        before = saved.stat().st_mtime_ns if saved.is_file() else 0
        labdriver.save(page)
        deadline = time.monotonic() + 30
        while (saved.stat().st_mtime_ns if saved.is_file() else 0) == before:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the run was not saved to {saved}")
            time.sleep(0.2)
        row["problems"] = labdriver.run_problems(saved)
        print(f"{name}: closing", flush=True)
        labdriver.close_current(page)
        row["ok"] = not row["problems"]
    except Exception as exc:  # the table says what failed; the next notebook still runs
        row["problems"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        page.screenshot(path=str(clone / ".lrlib" / f"failure-{name}.png"))
        labdriver.load(page, url, token)
    labdriver.shut_down_kernels(url, token)
    row["total (s)"] = time.perf_counter() - start
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="LRLIB_QUICK=1 in the notebooks")
    parser.add_argument("--only", nargs="*", default=[], help="notebook prefixes, e.g. 01 05")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per notebook run")
    parser.add_argument("--keep", action="store_true", help="keep the clone (path printed)")
    parser.add_argument("--no-tests", action="store_true", help="skip pytest in the clone")
    parser.add_argument(
        "--make-test",
        action="store_true",
        help="`make test` (lint, whole suite), not only the notebook tests",
    )
    args = parser.parse_args()
    reason = labdriver.missing()
    if reason:
        print(f"!!! {reason}")
        return 1
    from playwright.sync_api import sync_playwright

    began = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="lab-roundtrip-"))
    clone = tmp / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    head = subprocess.run(
        ["git", "-C", str(clone), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()
    print(f"clone of {head[:90]} in {clone}")
    names = sorted(p.stem for p in (clone / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    names = [n for n in names if not args.only or n[:2] in args.only]
    port, token = labdriver.free_port(), secrets.token_hex(16)
    venv = Path(sys.prefix)
    extra = {"PYTHONPATH": str(clone)}  # the clone's lrlib, not this checkout's
    if args.quick:
        extra["LRLIB_QUICK"] = "1"
    env = labdriver.lab_env(tmp / "jupyter", **extra)
    lab_args = " ".join(labdriver.server_args(port, token))
    make = ["make", "-C", str(clone), f"VENV={venv}", "-o", f"{venv}/.lrlib-installed"]
    cmd = [*make, "lab"]
    log = tmp / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*cmd, f"LAB_ARGS={lab_args}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make, its shell and jupyter: one process group
        )
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        labdriver.wait_up(url, token, proc, log)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(labdriver.CHROMIUM), args=labdriver.CHROMIUM_ARGS
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name in names:
                rows.append(_roundtrip(page, url, token, clone, name, args.timeout))
                r = rows[-1]
                print(f"{name}: {'ok' if r['ok'] else 'FAILED'} in {r['total (s)']:.0f} s")
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)

    print("\n| notebook | open (s) | run all (s) | asked for a kernel | saved run | problems |")
    print("|---|---:|---:|---|---|---|")
    for r in rows:
        print(
            f"| {r['notebook']} | {r.get('open (s)', float('nan')):.1f} | "
            f"{r.get('run (s)', float('nan')):.1f} | {'YES' if r['asked for a kernel'] else 'no'}"
            f" | {'ok' if r['ok'] else 'FAILED'} | {'; '.join(r['problems']) or '-'} |"
        )
    tests_ok = True
    if not args.no_tests:
        start = time.perf_counter()
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        what = [*make, "test"] if args.make_test else [*pytest, "tests/test_notebooks.py"]
        env = {**os.environ, "PYTHONPATH": str(clone)}
        if args.make_test:  # the clone shares this checkout's venv, installed from here
            env["PYTEST_ADDOPTS"] = f"--deselect {SHARED_VENV_TEST}"
            print(f"(deselected: {SHARED_VENV_TEST}, the venv's lrlib is this checkout's)")
        test = subprocess.run(
            what,
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
        )
        tests_ok = test.returncode == 0
        lines = [line for line in test.stdout.splitlines() if not line.startswith("make")]
        tail = "\n".join(lines[-15 if not tests_ok else -1 :])
        print(f"\n{' '.join(what[-2:])} in the clone ({time.perf_counter() - start:.0f} s):")
        print(tail)
    status = subprocess.run(
        ["git", "-C", str(clone), "status", "--porcelain"], capture_output=True, text=True
    ).stdout
    print(f"\ngit status --porcelain in the clone: {'(empty)' if not status else ''}\n{status}")
    ignored = subprocess.run(
        ["git", "-C", str(clone), "status", "--porcelain", "--ignored"],
        capture_output=True,
        text=True,
    ).stdout
    user = [line[3:] for line in ignored.splitlines() if line.startswith("!! ")]
    print("ignored (the user area):", " ".join(user))
    ok = all(r["ok"] for r in rows) and not status and tests_ok
    took = time.perf_counter() - began
    print(f"\nround trip: {'PASSED' if ok else 'FAILED'} ({len(rows)} notebooks, {took:.0f} s)")
    if args.keep or not ok:
        print(f"clone kept: {clone}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
