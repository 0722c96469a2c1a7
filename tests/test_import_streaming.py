"""`lrlib import-traces` episode by episode (lrlib.data.importer): the shipped dataset's bytes
unchanged, Parquet with the same rows, the plan line and progress first, no rows held."""

from __future__ import annotations

from pathlib import Path

import pytest

from lrlib.cli import main
from lrlib.data import dataset, importer


@pytest.fixture(scope="module")
def streamed(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("import") / "observations.jsonl.gz"
    assert main(["import-traces", str(traces_dir), "-o", str(out), "-q"]) == 0
    return out


def test_streamed_jsonl_is_the_shipped_dataset_byte_for_byte(streamed: Path) -> None:
    """What `make data` writes (data/observations.jsonl.gz, from ../shared/traces)."""
    assert streamed.read_bytes() == dataset.default_path().read_bytes()
    assert [p.name for p in streamed.parent.iterdir()] == [streamed.name]  # no spill left


def test_streamed_rows_are_the_in_memory_rows(traces_dir: Path, streamed: Path, tmp_path) -> None:
    report = importer.import_traces(traces_dir)  # the library call keeps its rows
    assert report.rows == dataset.read_rows(streamed)
    assert report.n_rows == len(report.rows) and len(report.episodes) > 1
    lean = importer.import_traces(traces_dir, tmp_path / "x.jsonl.gz", keep_rows=False)
    assert lean.rows == [] and lean.n_rows == report.n_rows
    assert lean.text().splitlines()[1:3] == report.text().splitlines()[1:3]  # per benchmark, split


def test_parquet_output_holds_the_same_rows_and_provenance(
    traces_dir: Path, streamed: Path, tmp_path: Path
) -> None:
    out = tmp_path / "obs.parquet"
    assert main(["import-traces", str(traces_dir), "-o", str(out), "-q"]) == 0
    rows = [r for batch in dataset.iter_row_batches(out) for r in batch]
    assert rows == dataset.read_rows(streamed)
    assert dataset.read_provenance(out)["source"] == str(traces_dir)
    assert dataset.load_steps(path=out, split="validation")  # readable as steps


def test_plan_line_then_progress_bar(
    traces_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "obs.jsonl.gz"
    assert main(["import-traces", str(traces_dir), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    n = len(importer.find_experiments(traces_dir))
    assert err.startswith(f"lrlib import-traces: reading {n} experiment folders under")
    assert "import: episodes: 100%" in err and f"{n}/{n}" in err
