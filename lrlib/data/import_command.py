"""``lrlib import-traces``: import BrowserGym/AgentLab experiment folders into a dataset
file (:func:`lrlib.data.importer.import_traces`) and print what was read and skipped.

An import never loses data: it writes to the user's area (``$LRLIB_DATA_DIR`` when set,
else ``.lrlib/data/``, gitignored), refuses to replace an existing file without
``--force``, and refuses to write into the repository's shipped ``data/`` folder without
``--overwrite-shipped`` (what ``make data``, a maintainers' command, passes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lrlib import paths
from lrlib.data.dataset import DEFAULT_NAME, is_parquet
from lrlib.data.importer import VALIDATION_FRACTION, import_traces
from lrlib.data.traces import find_experiments
from lrlib.settings import current


def default_out() -> Path:
    """Where an import goes without ``-o``: ``$LRLIB_DATA_DIR/observations.jsonl.gz`` when
    that is set (the folder the notebooks then read), else ``<work dir>/data/`` (the
    user's gitignored area), never the shipped dataset.

    >>> default_out().parts[-3:]
    ('.lrlib', 'data', 'observations.jsonl.gz')
    """
    if current().data_dir is not None:
        return paths.data_dir() / DEFAULT_NAME
    return paths.work_dir() / "data" / DEFAULT_NAME


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``lrlib import-traces``.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args(["runs", "-o", "x.jsonl.gz"]).out
    PosixPath('x.jsonl.gz')
    """
    parser.add_argument("src", type=Path, help="an experiment folder or a folder of them")
    parser.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        help="output file: .jsonl.gz, .jsonl or .parquet (default: "
        "$LRLIB_DATA_DIR/observations.jsonl.gz when set, else "
        ".lrlib/data/observations.jsonl.gz; never the shipped data/)",
    )
    parser.add_argument(
        "--validation-fraction", type=float, default=VALIDATION_FRACTION,
        help="share of each benchmark's episodes in the validation split (default: 0.3)",
    )  # fmt: skip
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    parser.add_argument(
        "--overwrite-shipped",
        action="store_true",
        help="allow writing into the repository's shipped data/ (maintainers: `make data`)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 if any file was skipped")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def check_out(out: Path, force: bool = False, overwrite_shipped: bool = False) -> None:
    """Refuse (one-line ``FileExistsError``) to write where data would be lost: into the
    shipped ``data/`` folder without ``overwrite_shipped``, over an existing file without
    ``force``.

    >>> check_out(paths.shipped_data_dir() / "observations.jsonl.gz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileExistsError: ... is in the repository's shipped, tracked data/: write elsewhere (-o/--out), or pass --overwrite-shipped (maintainers)
    """
    paths.refuse_shipped(out, overwrite_shipped)
    if out.exists() and not (force or overwrite_shipped):
        raise FileExistsError(f"{out} exists: pass --force to replace it, or choose another -o")


def plan(args: argparse.Namespace) -> str:
    """The first line: what is read and where it goes (checked before any work)."""
    if not args.src.exists():
        raise FileNotFoundError(f"{args.src} does not exist")
    args.out = args.out if args.out is not None else default_out()
    check_out(args.out, args.force, args.overwrite_shipped)
    verb = "replacing" if args.out.exists() else "writing"
    n = len(find_experiments(args.src))
    if not n:
        raise ValueError(f"nothing to import under {args.src}: {_found(args.src)}")
    kind = "Parquet" if is_parquet(args.out) else "JSON lines"
    return (
        f"reading {n} experiment folder{'s' * (n != 1)} under {args.src} episode by episode; "
        f"{verb} {args.out} ({kind})"
    )


def _found(src: Path) -> str:
    """What ``src`` holds instead of experiment folders, in words.

    >>> import tempfile
    >>> _found(Path(tempfile.mkdtemp()))
    'an empty folder (an experiment folder holds step_<n>.pkl.gz files)'
    """
    hint = "(an experiment folder holds step_<n>.pkl.gz files)"
    if src.is_file():
        return f"a file, {src.name}, not an experiment folder {hint}"
    entries = sorted(src.rglob("*"))
    files = [p for p in entries if p.is_file()]
    if not entries:
        return f"an empty folder {hint}"
    names = ", ".join(p.name for p in files[:3]) + (", ..." if len(files) > 3 else "")
    dirs = len(entries) - len(files)
    return f"{len(files)} file(s) ({names or 'none'}) and {dirs} folder(s), no traces {hint}"


def run(args: argparse.Namespace) -> int:
    """Run the import and print its summary; exit 1 when nothing could be imported.

    Exit codes: 0 done, 1 nothing importable (or, with ``--strict``, a file skipped),
    2 no such source or a refused output.

    >>> run(argparse.Namespace(src=Path("/nonexistent")))
    2
    """
    if not args.src.exists():
        print(f"import-traces: {args.src} does not exist", file=sys.stderr)
        return 2
    out = args.out if args.out is not None else default_out()
    try:
        check_out(out, args.force, args.overwrite_shipped)
    except FileExistsError as exc:
        print(f"import-traces: {exc}", file=sys.stderr)
        return 2
    report = import_traces(
        args.src, out, fraction=args.validation_fraction, progress=not args.quiet,
        keep_rows=False,
    )  # fmt: skip
    print(report.text())
    if not report.n_rows:
        print("import-traces: no importable steps found", file=sys.stderr)
        return 1
    if not paths.is_shipped(out) and out.name == DEFAULT_NAME:
        print(
            f"use it: LRLIB_DATA_DIR={out.parent} (notebooks, every command), "
            f"or lrlib evaluate --data {out}"
        )
    elif not paths.is_shipped(out):  # LRLIB_DATA_DIR reads only observations.jsonl.gz
        print(
            f"use it: lrlib evaluate --data {out} (or name it {out.parent / DEFAULT_NAME} "
            "and set LRLIB_DATA_DIR for the notebooks and every command)"
        )
    return 1 if args.strict and report.skipped else 0
