"""`lrlib evaluate` on a file read episode by episode, in worker processes, with the plan
line first (lrlab.scale.evaluate_backend, the research wing's plugin of `lrlib evaluate`), and the WebLINX-BG fixture end to end."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lrlab.scale import weblinx
from lrlib.cli import main
from lrlib.eval import metrics

FIXTURE = Path(__file__).parent / "fixtures" / "weblinx_bg"


def test_weblinx_fixture_imports_and_evaluates_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "wl.parquet"
    assert main(["import-weblinx", str(FIXTURE), "-o", str(data), "-q"]) == 0
    out = tmp_path / "rows.csv.gz"
    argv = ["evaluate", "--data", str(data), "--split", "all", "--reducers",
            "full;program;learned;bm25", "--out", str(out), "--no-progress", "--jobs", "2"]  # fmt: skip
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert (
        "lrlib evaluate: 4 reducers x 7 steps of every split of wl.parquet, in 2 processes"
        in cap.err
    )
    rows = pd.read_csv(out)
    assert len(rows) == 28 and set(rows["benchmark"]) == {"weblinx"}
    assert "| program |" in cap.out and "7 steps; per-step rows written to" in cap.out


def test_small_selection_runs_in_process_and_bad_backend_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.csv.gz"
    argv = ["evaluate", "--reducers", "full;bm25", "--limit", "20", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0  # below PARALLEL_FROM: the in-memory path, as before
    assert "of observations.jsonl.gz" not in capsys.readouterr().err
    assert main([*argv, "--jobs", "1"]) == 0
    assert "x 20 steps of the validation split of observations.jsonl.gz, in this process" in (
        capsys.readouterr().err
    )
    assert len(pd.read_csv(out)) == 40
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--backend", "dask"])
    assert exit_.value.code == 2
    assert "invalid choice: 'dask'" in capsys.readouterr().err


def test_in_memory_path_writes_parquet_when_asked(tmp_path: Path) -> None:
    """--out x.parquet is Parquet on both paths (the in-memory one wrote CSV into it)."""
    out = tmp_path / "rows.parquet"
    argv = ["evaluate", "--reducers", "full;bm25", "--limit", "20", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    rows = pd.read_parquet(out)
    assert len(rows) == 40 and set(rows["reducer"]) == {"full", "bm25"}


def test_lineretriever_keeps_the_replay_path(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from lrlab.scale import evaluate_backend

    ns = argparse.Namespace(reducers="full;lineretriever", curves=False, jobs=2)
    assert not evaluate_backend.applies(ns)
    assert not evaluate_backend.applies(argparse.Namespace(reducers="full", curves=True, jobs=2))


def test_weblinx_rows_are_scored_on_real_targets(tmp_path: Path) -> None:
    from lrlab.scale.sharded import evaluate_file

    data = tmp_path / "wl.parquet"
    weblinx.import_weblinx(FIXTURE, data)
    stats = evaluate_file(["full", "truncate:budget=50"], data, tmp_path / "r.parquet",
                          jobs=1, progress=False)  # fmt: skip
    rows = pd.read_parquet(tmp_path / "r.parquet")
    full = rows[rows.reducer == "full"]
    assert full["covered"].dropna().astype(bool).all() and len(full) == 7
    cut = rows[rows.reducer == "truncate:budget=50"]
    assert not cut["covered"].dropna().astype(bool).all()  # targets past the budget are lost
    point = metrics.summarize(stats).set_index("reducer")["coverage"]
    assert point["full"] == 1.0 and point["truncate:budget=50"] < 1.0


def test_the_research_wing_provides_the_backend() -> None:
    from lrlab.scale import evaluate_backend
    from lrlib import plugins

    assert plugins.evaluate_backend() is evaluate_backend


def test_without_a_backend_plugin_evaluation_runs_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No plugin declares EVALUATE_BACKEND: the in-memory path as before; --jobs and
    --backend are not offered, and asking for them fails on one line."""
    from lrlib import plugins

    monkeypatch.setattr(plugins, "plugins", lambda: ())
    assert plugins.evaluate_backend() is None
    out = tmp_path / "rows.csv"
    argv = ["evaluate", "--reducers", "full;truncate", "--limit", "20", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert len(pd.read_csv(out)) == 40
    assert "| truncate |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "--jobs" not in capsys.readouterr().out  # not offered where nothing provides it
    for extra in (["--jobs", "2"], ["--backend", "ray"]):
        with pytest.raises(SystemExit, match="2"):
            main([*argv, *extra])
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and f"unrecognized arguments: {' '.join(extra)}" in err[0]
