"""What a new user meets in the first hour on a fresh clone (issue 21): an import never
replaces shipped or existing data, no command asks a model without saying so first, a live
run shows progress, bad input gets one line, intervals say why they are missing, the
explorer offers the recommended reducer, and `make browser` says what really happened."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import Script, serve
from test_cli import one_line_error

from lrlib import paths, plugins
from lrlib.cli import main
from lrlib.core.step import Step
from lrlib.data import dataset as data
from lrlib.eval.evaluation import parse_reducers
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMClient
from lrlib.reducers import get_reducer, list_reducers
from lrlib.report import evaluate_command, run

REPO = Path(__file__).resolve().parents[1]
EPISODE = "2024-11-06_13-49-20_DemoAgentArgs_on_webarena.4_11"


@pytest.fixture(autouse=True)
def _user_area(monkeypatch, tmp_path):
    """No endpoint; the user's area and results in tmp_path; the model may not start."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LRLIB_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    for var in ("LRLIB_DATA_DIR", "LRLIB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("LRLIB_RESULTS_DIR", str(tmp_path / "results"))

    def no_model(*args, **kwargs):
        raise AssertionError("the embedded model was started")

    monkeypatch.setattr(plugins, "local_server", no_model)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- 1. an import never replaces data -------------------------------------------------------


def test_import_without_out_goes_to_the_user_area(traces_dir, tmp_path, capsys):
    shipped = data.default_path()
    before = digest(shipped)
    assert main(["import-traces", str(traces_dir / EPISODE), "-q"]) == 0
    written = tmp_path / "work" / "data" / "observations.jsonl.gz"
    assert written.is_file() and digest(shipped) == before
    assert len(data.read_rows(written)) >= 1
    assert f"--data {written}" in capsys.readouterr().out  # says how to use it
    # a second import does not replace it without --force ...
    line = one_line_error(capsys, ["import-traces", str(traces_dir / EPISODE), "-q"])
    assert "exists" in line and "--force" in line
    # ... and does with it
    assert main(["import-traces", str(traces_dir / EPISODE), "-q", "--force"]) == 0


def test_import_refuses_the_shipped_dataset(traces_dir, capsys):
    shipped = data.default_path()
    before = digest(shipped)
    for out in (shipped, paths.shipped_data_dir() / "other.jsonl.gz"):
        argv = ["import-traces", str(traces_dir / EPISODE), "-o", str(out), "--force"]
        line = one_line_error(capsys, argv)
        assert "shipped" in line and "--overwrite-shipped" in line
    assert digest(shipped) == before
    assert not (paths.shipped_data_dir() / "other.jsonl.gz").exists()


def test_import_follows_lrlib_data_dir(traces_dir, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    monkeypatch.setenv("LRLIB_DATA_DIR", str(mine))
    assert main(["import-traces", str(traces_dir / EPISODE), "-q"]) == 0
    assert (mine / "observations.jsonl.gz").is_file()


def test_make_data_says_it_overwrites_shipped_data():
    recipe = (REPO / "Makefile").read_text().split("\ndata:")[1].split("\n\n")[0]
    assert "--overwrite-shipped" in recipe and "SHIPPED" in recipe


# ---- 2. evaluate never asks a model unasked -------------------------------------------------


def test_evaluate_lineretriever_replays_and_counts(capsys, tmp_path):
    out = tmp_path / "e.csv"
    argv = ["evaluate", "--reducers", "lineretriever;full", "--limit", "3", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    plan = captured.err.splitlines()[0]
    assert "replays cached answers" in plan and "no model is asked" in plan
    import pandas as pd

    frame = pd.read_csv(out)
    retriever = frame[frame["reducer"] == "lineretriever"]
    assert 0 < len(retriever) <= 3 and (frame["reducer"] == "full").sum() == 3
    # the answers that ship: the notebooks' configuration, not tag mode with 512 tokens
    assert set(retriever["prompt_hash"]) <= {
        evaluate_command.build_reducers(parse_reducers("lineretriever"))["lineretriever"].params[
            "prompt_hash"
        ]
    }


def test_evaluate_says_first_when_it_would_ask_the_model(monkeypatch):
    monkeypatch.setenv("LRLIB_OFFLINE", "0")
    parser = argparse.ArgumentParser()
    evaluate_command.add_arguments(parser)
    args = parser.parse_args(["--reducers", "lineretriever", "--split", "test", "--limit", "20"])
    plan = evaluate_command.plan(args)
    new = int(re.search(r"live for (\d+) uncached steps", plan).group(1))
    assert "asks the model SmolLM2" in plan and 0 < new <= 20, plan


# ---- 3. a live run shows progress, its plan counts what is cached ---------------------------


def test_a_slow_answer_shows_a_ticking_bar(threaded_fake, tmp_path, real_trees, capsys):
    tree = real_trees["webarena_magento"]
    step = Step(goal=tree["goal"], tree=tree["tree"], step_id="slow")
    script = Script(lambda body, n: "<answer>[(1, 20)]</answer>", delay=2.5)
    client = LLMClient("fake-model", base_url=serve(threaded_fake, script),
                       cache=ResponseCache(tmp_path / "llm"))  # fmt: skip
    reducer = get_reducer("lineretriever", answer="tags", client=client)
    rows = run.run_steps([step], [reducer], progress=True)
    assert rows[0]["failure"] is None
    err = capsys.readouterr().err
    # redrawn while waiting: the elapsed time moves before the answer arrives
    waits = re.findall(r"0/1 \[00:0(\d)<\?, \?answer/s, waiting on 1\]", err)
    assert len({int(s) for s in waits if int(s) >= 1}) >= 1, err[-600:]


def test_run_plan_counts_cached_and_new_answers(monkeypatch):
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    cached = run.plan(parser.parse_args(["--default-steps", "--limit", "2"]))
    assert "all 2 cached" in cached and "no model is asked" in cached
    refused = run.plan(parser.parse_args(["--default-steps", "--limit", "2", "--refresh"]))
    assert "no model may be asked (no endpoint set)" in refused and "LRLIB_OFFLINE=0" in refused
    monkeypatch.setenv("LRLIB_OFFLINE", "0")  # now the embedded model may be asked
    asked = run.plan(parser.parse_args(["--default-steps", "--limit", "2", "--refresh"]))
    assert "2 to ask the model" in asked and "min" in asked


def test_readme_live_example_really_asks():
    text = " ".join((REPO / "README.md").read_text().split())
    assert "`LRLIB_OFFLINE=0 lrlib run --default-steps --limit 2 --refresh`" in text


# ---- 4. bad input: one line -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["evaluate", "--reducers", "truncate:budget=abc"], ("budget", "integer", "'abc'")),
        (["evaluate", "--reducers", "truncate", "--limit", "0"], ("--limit", "'0'")),
        (["evaluate", "--limit", "-3"], ("--limit", "'-3'")),
        (["run", "--limit", "0", "--offline"], ("--limit", "'0'")),
        (["evaluate", "--benchmark", "webarena", "--split", "validation", "--limit", "1",
          "--reducers", "lineretriever:offline=True,budget=abc"], ("budget", "integer")),
        (["run", "--default-steps", "--benchmark", "webarena"], ("--benchmark",)),
    ],
)  # fmt: skip
def test_bad_input_gets_one_line(capsys, argv, words):
    line = one_line_error(capsys, argv)
    assert all(w in line for w in words), line


def test_no_matching_steps_is_one_line(capsys, tmp_path, traces_dir):
    out = tmp_path / "one.jsonl.gz"
    assert main(["import-traces", str(traces_dir / EPISODE), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    split = data.read_rows(out)[0]["split"]
    other = next(s for s in data.SPLITS if s != split)
    line = one_line_error(capsys, ["evaluate", "--data", str(out), "--split", other])
    assert "no steps" in line and "--split all" in line


def test_default_steps_honour_the_split():
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    args = parser.parse_args(["--default-steps", "--split", "test", "--limit", "2", "--offline"])
    run.plan(args)
    assert len(args.steps) == 2 and {s.meta["split"] for s in args.steps} == {"test"}
    pinned = parser.parse_args(["--default-steps", "--limit", "2", "--offline"])
    run.plan(pinned)
    assert [s.step_id for s in pinned.steps] == [s.step_id for s in run.default_steps(2)]


def test_debug_after_the_subcommand():
    with pytest.raises(KeyError, match="valid reducers"):
        main(["evaluate", "--reducers", "nope", "--debug"])


# ---- 5. your own data folder ----------------------------------------------------------------


def test_missing_dataset_names_the_users_folder(capsys, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    monkeypatch.setenv("LRLIB_DATA_DIR", str(mine))
    line = one_line_error(capsys, ["evaluate", "--reducers", "full"])
    expected = mine / "observations.jsonl.gz"
    assert f"no dataset at {expected}" in line and f"-o {expected}" in line
    assert "make data" not in line


def test_evaluate_reads_a_dataset_file(tmp_path, traces_dir, capsys):
    out = tmp_path / "one.jsonl.gz"
    assert main(["import-traces", str(traces_dir / EPISODE), "-o", str(out), "-q"]) == 0
    n = len(data.read_rows(out))
    result = tmp_path / "e.csv"
    argv = ["evaluate", "--data", str(out), "--split", "all", "--reducers", "full;learned"]
    assert main([*argv, "--no-progress", "--out", str(result)]) == 0
    assert f"x {n} steps of every split" in capsys.readouterr().err
    import pandas as pd

    assert len(pd.read_csv(result)) == 2 * n


# ---- 6. intervals say why they are missing --------------------------------------------------


def test_one_episode_intervals_say_why(tmp_path, traces_dir, capsys):
    out = tmp_path / "one.jsonl.gz"
    assert main(["import-traces", str(traces_dir / EPISODE), "-o", str(out), "-q"]) == 0
    argv = ["evaluate", "--data", str(out), "--split", "all", "--reducers", "full"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "e.csv")]) == 0
    table = capsys.readouterr().out
    assert "nan" not in table and "no interval: 1 episode" in table, table


# ---- 7. the explorer and --on-failure offer what the README documents -----------------------


def test_explorer_offers_the_recommended_reducer():
    source = (REPO / "notebooks" / "01_explore.py").read_text()
    offered = re.findall(r'"([a-z0-9-]+)"', source.split("REDUCERS = [")[1].split("]")[0])
    assert "learned" in offered and set(offered) <= set(list_reducers())
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "learned" in readme


@pytest.mark.parametrize("policy", ["closed", "fallback:program", "truncate"])
def test_run_takes_every_documented_failure_policy(tmp_path, policy):
    argv = ["--debug", "run", "--default-steps", "--limit", "1", "--offline", "--no-progress"]
    argv += ["--on-failure", policy, "--budget", "500", "-o", str(tmp_path / "r.csv")]
    assert main(argv) == 0


def test_run_lists_the_failure_policies(capsys):
    line = one_line_error(capsys, ["run", "--default-steps", "--on-failure", "nope"])
    assert all(p in line for p in ("full", "truncate", "closed", "fallback:program"))


# ---- 8. `make browser` says what really happened --------------------------------------------


FAKE_APT = """#!/bin/sh
# a stand-in for apt-get: the lock is held; with PROVIDE set, another install provides chromium
case " $* " in *" install "*)
  echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
  if [ -n "$PROVIDE" ]; then printf '#!/bin/sh\\n' > "$PROVIDE"; chmod +x "$PROVIDE"; fi
  exit 100;;
esac
exit 0
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("make"), reason="the recipe installs as root only"
)
@pytest.mark.parametrize("case", ["provided", "missing", "shell only"])
def test_make_browser_reports_what_happened(tmp_path, case):
    apt = tmp_path / "apt-get"
    apt.write_text(FAKE_APT)
    apt.chmod(0o755)
    chromium = tmp_path / "chromium"
    if case == "shell only":  # chromium is there; only its headless shell is missing
        chromium.write_text("#!/bin/sh\n")
        chromium.chmod(0o755)
    env = {**os.environ, "PROVIDE": str(chromium) if case == "provided" else ""}
    proc = subprocess.run(
        ["make", "-s", "-C", str(REPO), "browser", f"CHROMIUM={chromium}", f"APT_GET={apt}",
         f"HEADLESS_SHELL={tmp_path / 'chromium-headless-shell'}"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "lock" in text, text  # the real reason is named
    assert "live episodes run in chromium (about twice the CPU)" in text, text
    if case == "missing":
        assert "will SKIP" in text, text
        return
    assert "will run" in text and "SKIP" not in text, text
    installing = text.splitlines()[0]
    if case == "shell only":
        assert installing == "installing chromium-headless-shell for the browser tests (apt-get)"
        assert "another install" not in text, text
    else:
        assert (
            installing
            == "installing chromium chromium-headless-shell for the browser tests (apt-get)"
        )
        assert "another install provided it" in text, text


def test_inject_says_first_when_it_would_ask_the_model(capsys, monkeypatch):
    from lrlab.injection import inject_command

    monkeypatch.setenv("LRLIB_OFFLINE", "0")  # the embedded model may be asked
    parser = argparse.ArgumentParser()
    inject_command.add_arguments(parser)
    live = inject_command.plan(
        parser.parse_args(["--reducers", "full;lineretriever", "--steps", "3"])
    )
    assert "lineretriever asks the model SmolLM2" in live and "--cached" in live, live
    cached = parser.parse_args(["--reducers", "lineretriever", "--steps", "3", "--cached"])
    assert "replays cached answers only" in inject_command.plan(cached)


@pytest.mark.skipif(not shutil.which("script"), reason="util-linux `script` is not installed")
def test_bars_show_on_a_zero_size_pseudo_terminal(tmp_path):
    """`script` without a terminal above it makes a 0 x 0 pty, as some runners do; tqdm drew
    nothing there (the live `lrlib run` looked hung)."""
    log = tmp_path / "pty.log"
    command = (
        f"{sys.executable} -m lrlib evaluate --reducers full --limit 3 --out {tmp_path / 'e.csv'}"
    )
    proc = subprocess.run(
        ["script", "-qfec", command, str(log)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=300,
        env={**os.environ, "LRLIB_RESULTS_DIR": str(tmp_path)},
    )  # fmt: skip
    text = log.read_text(errors="replace")
    assert proc.returncode == 0, text[-1000:]
    assert re.search(r"evaluate: +100%\|.*\| 3/3", text), text[-1000:]


@pytest.mark.parametrize("command", ["mfs", "live"])
def test_agent_commands_refuse_the_shipped_data(capsys, command):
    """`lrlib mfs` / `lrlib live` add to their --out: never into data/ unless told to."""
    target = paths.shipped_data_dir() / command / "mine"
    line = one_line_error(capsys, [command, "--out", str(target)])
    assert "shipped" in line and "--overwrite-shipped" in line
    assert not target.exists()
