"""``lrlib import-traces``: import BrowserGym/AgentLab experiment folders into a dataset
file (:func:`lrlib.data.importer.import_traces`) and print what was read and skipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lrlib.data.dataset import default_path
from lrlib.data.importer import VALIDATION_FRACTION, import_traces


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``lrlib import-traces``.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args(["runs", "-o", "x.jsonl.gz"]).out
    PosixPath('x.jsonl.gz')
    """
    parser.add_argument("src", type=Path, help="an experiment folder or a folder of them")
    parser.add_argument(
        "-o", "--out", type=Path, default=None, help=f"output file (default: {default_path()})"
    )
    parser.add_argument(
        "--validation-fraction", type=float, default=VALIDATION_FRACTION,
        help="share of each benchmark's episodes in the validation split (default: 0.3)",
    )  # fmt: skip
    parser.add_argument("--strict", action="store_true", help="exit 1 if any file was skipped")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line")


def run(args: argparse.Namespace) -> int:
    """Run the import and print its summary; exit 1 when nothing could be imported.

    Exit codes: 0 done, 1 nothing importable (or, with ``--strict``, a file skipped),
    2 no such source.

    >>> run(argparse.Namespace(src=Path("/nonexistent")))
    2
    """
    if not args.src.exists():
        print(f"import-traces: {args.src} does not exist", file=sys.stderr)
        return 2
    out = args.out if args.out is not None else default_path()
    report = import_traces(
        args.src, out, fraction=args.validation_fraction, progress=not args.quiet
    )
    print(report.text())
    if not report.rows:
        print("import-traces: no importable steps found", file=sys.stderr)
        return 1
    return 1 if args.strict and report.skipped else 0
