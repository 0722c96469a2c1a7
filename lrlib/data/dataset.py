"""The recorded-observation dataset file: where it lives, its schema (:data:`COLUMNS`), its
formats, and reading and writing it whole or in pieces.

:func:`load_observations` reads the file into a DataFrame; :func:`load_steps` into
:class:`lrlib.core.step.Step` objects; :func:`read_rows` reads the raw rows. The file is
built by :mod:`lrlib.data.importer` (``lrlib import-traces``). The schema is documented in
``data/README.md``.

A dataset can hold more steps than fit in memory. :func:`write_row_batches` writes batches
of rows (one episode, say) as they come; :func:`iter_row_batches` reads a file back a batch
at a time (the research wing's :mod:`lrlab.scale.episodes` groups them into episodes), so
that peak memory depends on the largest batch or episode, not on the file. Formats: gzipped JSON lines (the shipped
``data/observations.jsonl.gz``), plain JSON lines, and Parquet (via pyarrow) for large
sets: a fixed schema (:data:`_TYPES`), compressed columns, row groups read one by one, and
the provenance (licence included) in the file's own metadata. Any format's provenance is
also written next to it, as ``<file>.provenance.json``.

>>> default_path().name, SPLITS
('observations.jsonl.gz', ('train', 'validation', 'test'))
>>> import tempfile
>>> p = Path(tempfile.mkdtemp()) / "x.parquet"
>>> _ = write_row_batches([[{"step_id": "a", "episode": "e"}], [{"step_id": "b", "episode": "f"}]],
...                       p, provenance={"licence": "CC0"})
>>> [[r["step_id"] for r in b] for b in iter_row_batches(p)], read_provenance(p)["licence"]
([['a', 'b']], 'CC0')
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib import paths

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

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
BATCH_ROWS = 512  # rows per Parquet row group / per batch read (2048: +50 MB to read one)
PARQUET_SUFFIXES = (".parquet", ".pq")
_TYPES = {
    "step_id": "string", "episode": "string", "benchmark": "string", "task": "string",
    "family": "string", "seed": "int64", "step": "int64", "split": "string", "goal": "string",
    "url": "string", "axtree_txt": "string", "action": "string", "action_name": "string",
    "action_bids": "list<string>", "history": "list<string>", "target_lines": "list<int64>",
    "evidence_lines": "list<list<int64>>", "user_followups": "list<string>",
    "last_action_error": "string", "episode_reward": "double", "episode_success": "bool",
    "episode_error": "string", "has_summary": "bool", "duplicate_steps": "list<int64>",
    "source": "string", "n_lines": "int64", "n_chars": "int64", "n_tokens": "int64",
}  # fmt: skip


def default_path() -> Path:
    """The shipped dataset file: ``<data_dir>/observations.jsonl.gz``.

    >>> default_path().name
    'observations.jsonl.gz'
    """
    return paths.data_dir() / DEFAULT_NAME


def missing_dataset(path: Path) -> str:
    """What to say when there is no dataset at ``path``: how to build that very file (the
    shipped one with ``make data``; a user's with ``lrlib import-traces ... -o path``).

    >>> missing_dataset(Path("mine/observations.jsonl.gz"))
    'no dataset at mine/observations.jsonl.gz; create it with `lrlib import-traces path/to/agentlab_results -o mine/observations.jsonl.gz`'
    """
    if paths.is_shipped(path):
        return f"no dataset at {path}; build the shipped one with `make data`"
    return (
        f"no dataset at {path}; create it with "
        f"`lrlib import-traces path/to/agentlab_results -o {path}`"
    )


def is_parquet(path: str | Path) -> bool:
    """True for a ``.parquet`` (or ``.pq``) file name.

    >>> is_parquet("a/observations.parquet"), is_parquet("observations.jsonl.gz")
    (True, False)
    """
    return Path(path).suffix in PARQUET_SUFFIXES


def _arrow_type(name: str) -> pa.DataType:
    import pyarrow as pa

    simple = {"string": pa.string(), "int64": pa.int64(), "double": pa.float64(),
              "bool": pa.bool_()}  # fmt: skip
    if name in simple:
        return simple[name]
    return pa.list_(_arrow_type(name[5:-1]))  # "list<...>"


def schema_for(columns: Iterable[str]) -> pa.Schema:
    """The Parquet schema of these columns: the dataset's own types (:data:`_TYPES`), text
    for any other column (``licence``, ``weblinx_split``...).

    >>> str(schema_for(["step", "licence"]).types)
    '[DataType(int64), DataType(string)]'
    """
    import pyarrow as pa

    return pa.schema([(c, _arrow_type(_TYPES.get(c, "string"))) for c in columns])


def provenance_path(path: str | Path) -> Path:
    """Where a dataset file's provenance is written beside it.

    >>> provenance_path("d/obs.parquet").name
    'obs.parquet.provenance.json'
    """
    path = Path(path)
    return path.with_name(path.name + ".provenance.json")


def read_provenance(path: str | Path) -> dict[str, Any]:
    """The provenance written with a dataset file (empty when there is none)."""
    side = provenance_path(path)
    if side.is_file():
        return json.loads(side.read_text(encoding="utf-8"))
    if is_parquet(path):
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
        raw = meta.get(b"lrlib.provenance")
        return json.loads(raw) if raw else {}
    return {}


def write_row_batches(
    batches: Iterable[list[dict[str, Any]]],
    out: str | Path,
    provenance: dict[str, Any] | None = None,
) -> Path:
    """Write batches of rows to ``out`` as they come (Parquet for ``.parquet``, gzipped JSON
    lines for ``.gz``, JSON lines otherwise). The first batch fixes the Parquet columns
    (later rows must have the same keys; no row: an empty file). ``provenance`` goes into
    the Parquet metadata and ``<out>.provenance.json``.

    JSON lines depend only on the rows (gzip header without time or name), so rebuilding
    an unchanged dataset gives an identical file. The write is atomic: a temporary file in
    the same folder is renamed over ``out`` at the end, so an interrupted write leaves no
    partial file.

    >>> import tempfile
    >>> p = write_row_batches([[{"a": 1}]], Path(tempfile.mkdtemp()) / "x.jsonl.gz")
    >>> gzip.decompress(p.read_bytes())
    b'{"a":1}\\n'
    """
    out = Path(out)
    prov = json.dumps(provenance or {}, sort_keys=True, default=str)
    with paths.atomic_write(out) as raw:
        if is_parquet(out):
            _write_parquet(batches, raw, prov)
        elif out.name.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                _write_json_lines(batches, gz)
        else:
            _write_json_lines(batches, raw)
    if provenance is not None:
        with paths.atomic_write(provenance_path(out)) as f:
            f.write(json.dumps(provenance, indent=1, sort_keys=True, default=str).encode())
    return out


def _write_json_lines(batches: Iterable[list[dict[str, Any]]], f: Any) -> None:
    for batch in batches:
        for row in batch:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")


def _write_parquet(batches: Iterable[list[dict[str, Any]]], raw: Any, prov: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    pending: list[dict[str, Any]] = []
    schema = None
    try:
        for batch in batches:
            if schema is None and batch:
                schema = schema_for(batch[0]).with_metadata({"lrlib.provenance": prov})
                writer = pq.ParquetWriter(raw, schema, compression="zstd")
            pending += batch
            if writer is not None and len(pending) >= BATCH_ROWS:
                writer.write_table(pa.Table.from_pylist(pending, schema=schema))
                pending = []
        if writer is not None and pending:
            writer.write_table(pa.Table.from_pylist(pending, schema=schema))
    finally:
        if writer is not None:
            writer.close()


def iter_row_batches(
    path: str | Path, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS
) -> Iterator[list[dict[str, Any]]]:
    """The rows of a dataset file, ``batch_rows`` (about) at a time, as plain dicts with
    lists (the same values whichever the format). ``columns``: only these (Parquet reads
    only them from disk)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no dataset at {path}")
    if is_parquet(path):
        import pyarrow.parquet as pq

        # row group by row group (``iter_batches`` kept growing pyarrow's allocations:
        # +250 MB over a million steps; this stays flat)
        with pq.ParquetFile(path) as f:
            for i in range(f.num_row_groups):
                table = f.read_row_group(i, columns=columns)
                for start in range(0, table.num_rows, batch_rows):
                    yield table.slice(start, batch_rows).to_pylist()
                del table
        return
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as raw:
        batch: list[dict[str, Any]] = []
        for line in raw:
            if not line.strip():
                continue
            row = json.loads(line)
            batch.append({c: row.get(c) for c in columns} if columns else row)
            if len(batch) >= batch_rows:
                yield batch
                batch = []
        if batch:
            yield batch


def read_rows(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The raw rows (dicts) of a dataset file (default: the shipped one).

    >>> rows = read_rows()
    >>> len(rows) > 0 and set(COLUMNS) <= set(rows[0])
    True
    """
    path = Path(path) if path is not None else default_path()
    if not path.is_file():
        raise FileNotFoundError(missing_dataset(path))
    return [row for batch in iter_row_batches(path) for row in batch]


def _check_choice(name: str, value: str | None, valid: Iterable[str]) -> None:
    valid = sorted(set(valid))
    if value is not None and value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


def load_observations(
    split: str | None = None, benchmark: str | None = None, path: str | Path | None = None
) -> pd.DataFrame:
    """The dataset as a DataFrame, one row per step (columns: :data:`COLUMNS`).

    ``split`` ("train"/"validation"/"test"; test = held-out task families; "all" or None:
    every split) and
    ``benchmark`` filter rows; unknown values raise ``ValueError`` listing the valid ones. ``action``, ``action_name`` and
    ``episode_error`` are object columns holding ``str`` or ``None``; list columns hold lists.

    >>> df = load_observations(split="train", benchmark="webarena")
    >>> set(df["split"]), set(df["benchmark"]), df["step_id"].is_unique
    ({'train'}, {'webarena'}, True)
    """
    import pandas as pd

    split = None if split == "all" else split  # "all": every split, as the CLI's --split all
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
