"""The recorded-observation dataset file: where it lives, its schema (:data:`COLUMNS`), its
format (JSON lines, gzipped) and loading it back.

:func:`load_observations` reads the file into a DataFrame; :func:`load_steps` into
:class:`lrlib.core.step.Step` objects; :func:`read_rows` and :func:`write_rows` read and write
the raw rows. The file is built by :mod:`lrlib.data.importer` (``lrlib import-traces``). The
schema is documented in ``data/README.md``.

>>> default_path().name, SPLITS
('observations.jsonl.gz', ('train', 'validation', 'test'))
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib import paths

if TYPE_CHECKING:
    import pandas as pd

    from lrlib.core.step import Step

DEFAULT_NAME = "observations.jsonl.gz"
SPLITS = ("train", "validation", "test")
COLUMNS = [
    "step_id", "episode", "benchmark", "task", "family", "seed", "step", "split", "goal", "url",
    "axtree_txt", "action", "action_name", "action_bids", "history", "target_lines", "evidence_lines",
    "user_followups", "last_action_error", "episode_reward", "episode_success",
    "episode_error", "has_summary", "duplicate_steps", "source", "n_lines", "n_chars", "n_tokens",
]  # fmt: skip
_NULLABLE_TEXT = ("action", "action_name", "episode_error")


def default_path() -> Path:
    """The shipped dataset file: ``<data_dir>/observations.jsonl.gz``.

    >>> default_path().name
    'observations.jsonl.gz'
    """
    return paths.data_dir() / DEFAULT_NAME


def write_rows(rows: Iterable[dict[str, Any]], out: str | Path) -> Path:
    """Write rows as JSON lines (gzip when ``out`` ends in ``.gz``), atomically.

    The bytes depend only on the rows (gzip header without time or name), so rebuilding
    an unchanged dataset gives an identical file. A temporary file in the same folder is
    renamed over ``out`` at the end: an interrupted write leaves no partial file.

    >>> import tempfile
    >>> p = write_rows([{"a": 1}], Path(tempfile.mkdtemp()) / "x.jsonl.gz")
    >>> gzip.decompress(p.read_bytes())
    b'{"a":1}\\n'
    """
    out = Path(out)
    with paths.atomic_write(out) as raw:
        if out.name.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                _dump(rows, gz)
        else:
            _dump(rows, raw)
    return out


def _dump(rows: Iterable[dict[str, Any]], f: Any) -> None:
    for row in rows:
        line = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
        f.write(line.encode("utf-8") + b"\n")


def read_rows(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The raw rows (dicts) of a dataset file (default: the shipped one).

    >>> rows = read_rows()
    >>> len(rows) > 0 and set(COLUMNS) <= set(rows[0])
    True
    """
    path = Path(path) if path is not None else default_path()
    if not path.is_file():
        raise FileNotFoundError(missing_dataset(path))
    from lrlib.data import store

    if store.is_parquet(path):  # a columnar file (lrlib import-weblinx, large sets)
        return [row for batch in store.iter_row_batches(path) for row in batch]
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def missing_dataset(path: Path) -> str:
    """What to say when there is no dataset at ``path``: how to build that very file (the
    shipped one with ``make data``; a user's with ``lrlib import-traces ... -o path``).

    >>> missing_dataset(Path("/tmp/mine/observations.jsonl.gz"))
    'no dataset at /tmp/mine/observations.jsonl.gz; create it with `lrlib import-traces path/to/agentlab_results -o /tmp/mine/observations.jsonl.gz`'
    """
    if paths.is_shipped(path):
        return f"no dataset at {path}; build the shipped one with `make data`"
    return (
        f"no dataset at {path}; create it with "
        f"`lrlib import-traces path/to/agentlab_results -o {path}`"
    )


def _check_choice(name: str, value: str | None, valid: Iterable[str]) -> None:
    valid = sorted(set(valid))
    if value is not None and value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


def load_observations(
    split: str | None = None, benchmark: str | None = None, path: str | Path | None = None
) -> pd.DataFrame:
    """The dataset as a DataFrame, one row per step (columns: :data:`COLUMNS`).

    ``split`` ("train"/"validation"/"test"; test = held-out task families) and ``benchmark`` filter rows; unknown values raise
    ``ValueError`` listing the valid ones. ``action``, ``action_name`` and
    ``episode_error`` are object columns holding ``str`` or ``None``; list columns hold lists.

    >>> df = load_observations(split="train", benchmark="webarena")
    >>> set(df["split"]), set(df["benchmark"]), df["step_id"].is_unique
    ({'train'}, {'webarena'}, True)
    """
    import pandas as pd

    _check_choice("split", split, SPLITS)
    rows = read_rows(path)
    if benchmark is not None:
        _check_choice("benchmark", benchmark, (r["benchmark"] for r in rows))
    rows = [
        r
        for r in rows
        if (split is None or r["split"] == split)
        and (benchmark is None or r["benchmark"] == benchmark)
    ]
    columns = list(dict.fromkeys(COLUMNS + [k for r in rows[:1] for k in r]))
    df = pd.DataFrame.from_records(rows, columns=columns)
    for col in _NULLABLE_TEXT:
        df[col] = pd.Series([r.get(col) for r in rows], index=df.index, dtype=object)
    return df


def load_steps(
    split: str | None = None,
    benchmark: str | None = None,
    limit: int | None = None,
    path: str | Path | None = None,
) -> list[Step]:
    """The dataset as :class:`lrlib.core.step.Step` objects (via ``Step.from_row``), in file order.

    >>> steps = load_steps(split="validation", limit=5)
    >>> len(steps), steps[0].target_lines == steps[0].meta["target_lines"]
    (5, True)
    """
    from lrlib.core.step import Step

    df = load_observations(split=split, benchmark=benchmark, path=path)
    if limit is not None:
        df = df.head(limit)
    return [Step.from_row(row) for row in df.to_dict("records")]
