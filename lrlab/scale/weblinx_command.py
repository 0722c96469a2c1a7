"""``lrlib import-weblinx``: import WebLINX's BrowserGym release (downloaded by you) into a
dataset file (:func:`lrlab.scale.weblinx.import_weblinx`); says first what it will read.

Results on the imported rows are WebLINX-BG results: CC BY-NC-SA 4.0 (non-commercial, share
alike), attributed to WebLINX (see docs/weblinx.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lrlab.scale.weblinx import RESULTS_NAME, check_splits, import_weblinx, read_metadata
from lrlib import paths


def default_out() -> Path:
    """``<repo>/.lrlab/scale/weblinx-bg.parquet`` (gitignored, never the shipped ``data/``).

    >>> default_out().name
    'weblinx-bg.parquet'
    """
    return paths.work_dir() / "data" / "weblinx-bg.parquet"


def _splits(value: str | None) -> list[str] | None:
    return [s.strip() for s in value.split(",") if s.strip()] if value else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``lrlib import-weblinx``.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> a = p.parse_args(["bg_wl_data", "--splits", "valid,test_iid"])
    >>> a.root, a.splits
    (PosixPath('bg_wl_data'), 'valid,test_iid')
    """
    parser.add_argument(
        "root", type=Path, help="the release's folder (holds metadata.json and demonstrations/)"
    )
    parser.add_argument(
        "-o", "--out", type=Path, default=None,
        help=f"output file: .parquet (read in pieces), .jsonl or .jsonl.gz (default: {default_out()})",
    )  # fmt: skip
    parser.add_argument(
        "--splits", default=None,
        help="WebLINX splits to read, comma-separated (train, valid, test_iid, test_geo, "
        "test_web, test_cat, test_vis; default: every split in metadata.json)",
    )  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="at most this many demonstrations")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _out(args: argparse.Namespace) -> Path:
    out = args.out if args.out is not None else default_out()
    shipped = (paths.REPO_DIR / "data").resolve()
    if out.expanduser().resolve().is_relative_to(shipped):
        raise ValueError(
            f"{out} is inside the shipped data/ folder; write elsewhere, e.g. -o {default_out()}"
        )
    return out


def plan(args: argparse.Namespace) -> str:
    """The first line: how many demonstrations of which splits, and where the rows go."""
    out = _out(args)
    metadata = read_metadata(args.root)
    splits = check_splits(metadata, _splits(args.splits))
    n = sum(len(metadata[s]) for s in splits)
    if args.limit is not None:
        n = min(n, args.limit)
    return (
        f"{n} demonstrations of {', '.join(splits)} from {args.root} -> {out} "
        f"({RESULTS_NAME}, CC BY-NC-SA 4.0); about 0.1 s per step"
    )


def run(args: argparse.Namespace) -> int:
    """Import and print the summary; exit 1 when nothing could be imported."""
    out = _out(args)
    report = import_weblinx(
        args.root, out, splits=_splits(args.splits), progress=not args.quiet, limit=args.limit
    )
    print(report.text())
    return 0 if report.n_rows else 1
