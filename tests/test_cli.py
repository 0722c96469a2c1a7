"""The ``lrlib`` command line answers a user's mistake with one line that names the valid
choices and exit status 2, never a traceback (``--debug`` shows it); ``--help`` shows the
defaults; long commands say up front what they will compute."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from lrlib.cli import UsageError, main
from lrlib.core.prompts import list_prompts
from lrlib.core.pruning import list_views
from lrlib.data import dataset as data
from lrlib.reducers import list_reducers, reducer_options


@pytest.fixture(autouse=True)
def _offline_and_unconfigured(monkeypatch, tmp_path):
    """No endpoint from the caller's environment; anything written goes to tmp_path."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LRLIB_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("LRLIB_RESULTS_DIR", str(tmp_path / "results"))


def one_line_error(capsys, argv: list[str]) -> str:
    """Run ``lrlib argv``; assert status 2 and a single stderr line without a traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors exit from inside parse_args
        code = exc.code
    out = capsys.readouterr()
    assert code == 2, (code, out.err[-2000:])
    lines = [line for line in out.err.splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    assert lines == errors, out.err  # one line: no plan line before the error either
    assert "Traceback" not in out.err + out.out
    return errors[0]


def test_unknown_reducer(capsys):
    line = one_line_error(capsys, ["evaluate", "--reducers", "nope", "--limit", "1"])
    assert "'nope'" in line and all(name in line for name in list_reducers())


def test_unknown_reducer_option(capsys):
    line = one_line_error(capsys, ["evaluate", "--reducers", "bm25:bogus=3", "--limit", "1"])
    assert "'bogus'" in line and all(opt in line for opt in reducer_options("bm25"))


def test_unknown_program_knob(capsys):
    line = one_line_error(capsys, ["evaluate", "--reducers", "program:bogus=3", "--limit", "1"])
    assert "bogus" in line and "valid" in line


@pytest.mark.parametrize(
    ("spec", "words"),
    [("learned:budget=2", ("budget", "0-1")), ("truncate:budget=-5", ("budget", ">= 0"))],
)
def test_bad_reducer_value_fails_before_the_plan(capsys, spec, words):
    line = one_line_error(capsys, ["evaluate", "--reducers", spec, "--limit", "1"])
    assert all(w in line for w in words), line


def test_unknown_prompt(capsys):
    line = one_line_error(capsys, ["run", "--prompt", "nope", "--offline"])
    assert "'nope'" in line and all(name in line for name in list_prompts())


def test_unknown_view(capsys):
    line = one_line_error(capsys, ["run", "--view", "nope", "--offline"])
    assert "'nope'" in line and all(name in line for name in list_views())


@pytest.mark.parametrize("command", ["run", "evaluate"])
def test_unknown_split(capsys, command):
    line = one_line_error(capsys, [command, "--split", "valid", "--limit", "1"])
    assert "'valid'" in line and all(split in line for split in data.SPLITS)


def test_missing_dataset(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LRLIB_DATA_DIR", str(tmp_path / "nowhere"))
    line = one_line_error(capsys, ["evaluate", "--reducers", "full", "--limit", "1"])
    assert "no dataset at" in line and "import-traces" in line


def test_endpoint_without_a_model(capsys):
    line = one_line_error(capsys, ["run", "--base-url", "http://127.0.0.1:9/v1", "--limit", "1"])
    assert "LRLIB_MODEL" in line and "--model" in line


def test_bad_argument(capsys):
    line = one_line_error(capsys, ["run", "--answer", "xml"])
    assert "'xml'" in line and all(a in line for a in ("tags", "json", "both"))
    line = one_line_error(capsys, ["run", "--limit", "many"])
    assert "--limit" in line and "'many'" in line


def test_unknown_command(capsys):
    line = one_line_error(capsys, ["evaluat"])
    assert "evaluate" in line and "run" in line


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(KeyError, match="valid reducers"):
        main(["--debug", "evaluate", "--reducers", "nope", "--limit", "1"])


def test_as_a_process_no_traceback():
    """The installed entry point behaves the same (stderr of a real process)."""
    proc = subprocess.run(
        [sys.executable, "-m", "lrlib", "run", "--split", "valid"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert all(split in proc.stderr for split in data.SPLITS)


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: json)" in text and "(default: compact)" in text
    assert "(default: 128)" in text  # --max-tokens


def test_run_says_what_it_will_compute(capsys, tmp_path):
    """Before any work: the number of answers, the model, and that uncached steps fall back."""
    out = tmp_path / "run.csv"
    argv = ["--debug", "run", "--default-steps", "--limit", "2", "--offline", "--no-progress"]
    argv += ["-o", str(out)]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("lrlib run: 2 steps x 1 answer format(s) = 2 answers")
    assert out.is_file()


def test_evaluate_defaults_to_validation_and_the_user_area(capsys, tmp_path):
    assert main(["--debug", "evaluate", "--reducers", "full", "--limit", "2", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "validation" in err.splitlines()[0]
    assert list((tmp_path / "results").glob("evaluation*.csv*"))


def test_evaluate_split_all_takes_every_step(capsys, tmp_path):
    """``--split all`` evaluates the whole dataset (a user's own recorded runs, every split)."""
    out = tmp_path / "all.csv"
    argv = ["--debug", "evaluate", "--split", "all", "--reducers", "full", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "steps of every split" in capsys.readouterr().err.splitlines()[0]
    frame = pd.read_csv(out)
    assert len(frame) == len(data.load_steps())
    assert set(frame["split"]) == set(data.SPLITS)


# ---- --prompts / --plugins: a user's own file, imported before the specs are read ----

PROMPTS = """
import lrlib

lrlib.register_prompt(
    lrlib.get_prompt("neutral").derive("{name}", guidance="Select the goal's own words."),
    overwrite=True,
)
"""

REDUCER = """
from lrlib import Output, Reducer, Step, register_reducer


@register_reducer("{name}", overwrite=True)
class KeepFirst(Reducer):
    name = "{name}"

    def select(self, step: Step) -> Output:
        return Output(text=step.axtree.texts[0], kept=[1])
"""


def write(folder, name: str, text: str):
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("command", ["run", "evaluate", "inject", "live"])
def test_user_files_option_on_every_command_with_reducers_or_a_prompt(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--prompts FILE, --plugins FILE" in text and "lrlib.register_prompt" in text


def test_prompts_file_variant_used_by_evaluate_and_run(capsys, tmp_path):
    mine = write(tmp_path, "cli_prompts_a.py", PROMPTS.format(name="cli-first"))
    spec = "lineretriever:prompt=cli-first"
    argv = ["evaluate", "--reducers", f"{spec};full", "--limit", "2", "--no-progress"]
    line = one_line_error(capsys, argv)  # not known without the file
    assert "unknown prompt 'cli-first'" in line
    out = tmp_path / "e.csv"
    assert main([*argv, "--prompts", str(mine), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    plan = captured.err.splitlines()[0]
    assert f"{spec} replays cached answers" in plan and "(0 of 2 steps cached" in plan
    assert f"{spec}: 0 of 2 steps evaluated, 2 skipped" in captured.out
    assert list(pd.read_csv(out)["reducer"]) == ["full", "full"]
    # `lrlib run --prompt` lists it among its choices once the file is named
    with pytest.raises(SystemExit):
        main(["run", "--prompts", str(mine), "--help"])
    assert "cli-first" in capsys.readouterr().out
    argv = ["--debug", "run", "--prompts", str(mine), "--prompt", "cli-first", "--offline"]
    argv += ["--default-steps", "--limit", "1", "--no-progress", "-o", str(tmp_path / "r.csv")]
    assert main(argv) == 1  # offline, and no answer is cached for a prompt nobody used yet
    err = capsys.readouterr().err
    assert err.startswith("lrlib run: 1 steps x 1 answer format(s)") and "no cached answer" in err


def test_plugins_file_reducer_used_by_evaluate(capsys, tmp_path):
    mine = write(tmp_path, "cli_reducer_a.py", REDUCER.format(name="cli-keep-first"))
    argv = ["evaluate", "--reducers", "cli-keep-first;full", "--limit", "2", "--no-progress"]
    assert "unknown reducer 'cli-keep-first'" in one_line_error(capsys, argv)
    out = tmp_path / "e.csv"
    assert main([*argv, "--plugins", str(mine), "--out", str(out), "--jobs", "2"]) == 0
    plan = capsys.readouterr().err.splitlines()[0]  # the in-memory path: workers would not
    assert plan == "lrlib evaluate: 2 reducers x 2 steps of the validation split"  # know it
    frame = pd.read_csv(out)
    assert list(frame["reducer"]) == ["cli-keep-first"] * 2 + ["full"] * 2
    assert (frame[frame["reducer"] == "cli-keep-first"]["lines_after"] == 1).all()


def test_user_file_errors_are_one_line(capsys, tmp_path):
    line = one_line_error(capsys, ["evaluate", "--prompts", str(tmp_path / "nope.py")])
    assert line.startswith("lrlib evaluate: error: --prompts/--plugins: no such file")
    assert "nope.py" in line
    bad = write(tmp_path, "cli_bad_a.py", "import lrlib\nraise RuntimeError('oops')\n")
    line = one_line_error(capsys, ["evaluate", "--plugins", str(bad), "--limit", "1"])
    assert "cli_bad_a.py raised RuntimeError: oops" in line
    taken = "import lrlib\nlrlib.register_prompt(lrlib.get_prompt('soft'))\n"  # no overwrite
    taken = write(tmp_path, "cli_taken_a.py", taken)
    line = one_line_error(capsys, ["run", "--prompts", str(taken)])
    assert "cli_taken_a.py raised ValueError: prompt 'soft' exists" in line
    line = one_line_error(capsys, ["evaluate", "--prompts"])
    assert "--prompts" in line and "expected one argument" in line
    with pytest.raises(UsageError, match="oops") as raised:  # --debug: the traceback,
        main(["--debug", "evaluate", "--plugins", str(bad)])
    assert isinstance(raised.value.__cause__, RuntimeError)  # the file's own below it


def test_user_files_as_a_process(tmp_path):
    """``python -m lrlib`` with a real file: the reducer it registers runs; errors stay one line."""
    mine = write(tmp_path, "keep_first.py", REDUCER.format(name="keep-first"))
    argv = [sys.executable, "-m", "lrlib", "evaluate", "--plugins", str(mine)]
    argv += ["--reducers", "keep-first", "--limit", "1", "--no-progress"]
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "e.csv")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert list(pd.read_csv(tmp_path / "e.csv")["reducer"]) == ["keep-first"]
    for args, words in [
        (["--prompts", str(tmp_path / "missing.py")], "no such file"),
        (
            ["--prompts", str(write(tmp_path, "boom.py", "1 / 0\n"))],
            "boom.py raised ZeroDivisionError",
        ),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "lrlib", "evaluate", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_a_plugin_command_without_run_is_skipped_on_one_line(capsys, tmp_path, monkeypatch):
    (tmp_path / "half_plugin.py").write_text("def add_arguments(parser):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        "lrlib.plugins.commands", lambda: {"half": ("half_plugin", "a command with no run")}
    )
    with pytest.raises(SystemExit):
        main(["--help"])
    out, err = capsys.readouterr()
    assert err.splitlines() == ["lrlib: half skipped: half_plugin lacks add_arguments/run"]
    assert " half " not in out and "evaluate" in out


@pytest.mark.parametrize("env", ["miniwob", "docs"])
def test_live_out_under_a_file_is_one_line_before_any_browser(capsys, tmp_path, env):
    blocker = tmp_path / "results"
    blocker.write_text("a file where the results folder should go\n")
    argv = ["live", "--reducers", "full", "--out", str(blocker / "run")]
    if env == "docs":
        site = Path(__file__).parent / "fixtures" / "docsite"
        argv += ["--env", "docs", "--site", str(site), "--tasks-per-family", "1"]
    else:
        argv += ["--tasks", "click-checkboxes", "--seeds", "1"]
    line = one_line_error(capsys, argv)
    assert str(blocker) in line
