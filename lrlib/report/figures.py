"""``lrlib figures``: execute every notebook headlessly, in order, and rewrite ``figures/``.

The jupytext percent files ``notebooks/NN_name.py`` are the source of the code; each is
executed with nbclient (in the notebooks folder, on the shipped data and cached answers)
and written back as its paired ``.ipynb`` with fresh outputs. ``LRLIB_QUICK=1`` (or
``--quick``) makes the notebooks use a few steps; a quick run does not rewrite the committed
notebooks unless asked to (a notebook reads it as ``settings.current().quick``). Nothing here
calls a model: the notebooks decide, through :mod:`lrlib.report.replay`, whether an endpoint
is configured.

>>> [p.stem for p in notebook_sources()][:1]
['00_quickstart']
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lrlib import paths, settings

QUICK_ENV = "LRLIB_QUICK"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
KERNEL = "python3"


def notebook_sources(folder: Path | None = None) -> list[Path]:
    """The percent-format sources ``NN_*.py`` of the notebooks, in execution order."""
    folder = folder or paths.notebooks_dir()
    return sorted(p for p in folder.glob("[0-9][0-9]_*.py") if p.is_file())


@dataclass
class Executed:
    """One executed notebook: its name, wall time and error (None when it ran through)."""

    name: str
    seconds: float
    error: str | None = None
    written: Path | None = None


def read_source(source: Path):
    """The notebook of a percent-format ``.py`` (code and prose, no outputs), paired with
    its ``.ipynb`` and bound to the ``python3`` kernel."""
    import jupytext

    nb = jupytext.read(source, fmt="py:percent")
    for i, cell in enumerate(nb.cells):  # stable ids: regenerating changes only real outputs
        cell["id"] = f"{source.stem[:2]}-{i:02d}"
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    return nb


def execute(
    source: Path, quick: bool = False, write: Path | None = None, timeout: int = 1200
) -> Executed:
    """Execute one notebook source; write the executed ``.ipynb`` to ``write`` if given."""
    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = read_source(source)
    env = {
        QUICK_ENV: "1" if quick else "0",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        record_timing=False,
        resources={"metadata": {"path": str(source.parent)}},
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no TCP-encryption warning
    )
    start = time.perf_counter()
    error = None
    try:
        # the kernel's environment, ours untouched; it imports the lrlib of this checkout,
        # whatever the install looks like
        client.execute(env=settings.child_env(env, prepend={"PYTHONPATH": str(paths.REPO_DIR)}))
    except CellExecutionError as exc:
        lines = _ANSI.sub("", str(exc)).strip().splitlines()
        error = lines[-1] if lines else repr(exc)
    except Exception as exc:  # a dead kernel or a timeout: report, go on with the next
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    if write is not None:
        _drop_widget_state(nb)
        jupytext.write(nb, write, fmt="ipynb")
    return Executed(source.stem, seconds, error, write)


def _drop_widget_state(nb: Any) -> None:
    """Live widgets need a kernel: keep their text fallback, drop their saved state (random
    model ids that would change on every run and show nothing in a static viewer)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data and "text/plain" in data:
                del data["application/vnd.jupyter.widget-view+json"]


def run_all(
    quick: bool = False,
    only: Sequence[str] = (),
    write: bool = True,
    timeout: int = 1200,
    folder: Path | None = None,
) -> list[Executed]:
    """Execute the notebooks in order (those whose name starts with one of ``only``, if
    given); with ``write`` rewrite each paired ``.ipynb``. Prints one line per notebook."""
    results = []
    for source in notebook_sources(folder):
        if only and not any(source.stem.startswith(o) for o in only):
            continue
        target = source.with_suffix(".ipynb") if write else None
        print(f"executing {source.name}{' (quick)' if quick else ''} ...", flush=True)
        done = execute(source, quick=quick, write=target, timeout=timeout)
        status = "ok" if done.error is None else f"FAILED: {done.error}"
        print(f"  {done.name}: {done.seconds:.1f} s, {status}", flush=True)
        results.append(done)
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lrlib figures``."""
    parser.add_argument(
        "--quick", action="store_true", help=f"few steps per notebook (same as {QUICK_ENV}=1)"
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        metavar="NN",
        help="run only the notebooks whose name starts with these prefixes",
    )
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="do not rewrite the .ipynb files (a quick run never does unless --write is given)",
    )
    parser.add_argument(
        "--write", action="store_true", help="rewrite the .ipynb files even in quick mode"
    )
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per cell")


def run(args: argparse.Namespace) -> int:
    """Execute the notebooks; a table of wall times; non-zero exit if one failed."""
    quick = args.quick or settings.current().quick
    write = args.write or not (args.no_write or quick)
    start = time.perf_counter()
    results = run_all(quick=quick, only=args.only, write=write, timeout=args.timeout)
    total = time.perf_counter() - start
    print("\n| notebook | seconds | status |\n|---|---:|---|")
    for r in results:
        print(f"| {r.name} | {r.seconds:.1f} | {'ok' if r.error is None else 'failed'} |")
    print(f"| total | {total:.1f} | {'quick' if quick else 'full'} |")
    print(f"figures in {paths.figures_dir()}")
    failed = [r.name for r in results if r.error]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed or not results else 0
