"""One source of truth (issue 36): one LineRetriever default reached by every entry point,
one offline switch honoured by the client itself (checked with a socket guard), and no
absolute machine path in any tracked file."""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
from pathlib import Path

import pytest

import lrlib
from lrlib import plugins
from lrlib.cli import main
from lrlib.eval.evaluation import parse_reducers
from lrlib.llm.errors import CacheMissError
from lrlib.paths import REPO_DIR
from lrlib.report import evaluate_command, replay, run

NOTEBOOK_ANSWER = re.compile(r'^ANSWER = "(\w+)"', re.M)


@pytest.fixture
def no_network(monkeypatch):
    """Any TCP/IP connection, or a start of the embedded server, fails the test."""
    real = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"a connection was opened to {address}")
        return real(self, address)

    def server(*a, **k):
        raise AssertionError("the embedded server was started")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    monkeypatch.setattr(plugins, "local_server", server)


# ---- 1. one LineRetriever configuration ------------------------------------------------


def test_every_entry_point_reaches_the_shipped_default(monkeypatch):
    """lrlib.get_reducer, `lrlib evaluate`, `lrlib run` and the notebooks build the same
    retriever: same prompt hash, same request keys, every shipped answer replayed."""
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(REPO_DIR / "data" / "cache"))
    api = lrlib.get_reducer("lineretriever")
    evaluate = evaluate_command.build_reducers(parse_reducers("lineretriever"))["lineretriever"]
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    cli = run._reducers(parser.parse_args(["--default-steps"]))[0]
    answers = {NOTEBOOK_ANSWER.search(p.read_text())[1] for p in notebook_sources()}
    assert answers == {"json"}  # the notebooks that name one use the default's
    notebook = replay.lineretriever(answer=answers.pop())
    steps = run.default_steps(4)
    keys = [[r.client.key(q) for s in steps for q in r.requests(s)] for r in (api, cli, notebook)]
    keys.append([evaluate.client.key(q) for s in steps for q in evaluate.requests(s)])
    assert all(k == keys[0] for k in keys), "the entry points send different requests"
    hashes = {r.params["prompt_hash"] for r in (api, evaluate, cli, notebook)}
    assert hashes == {"ee6436cf6118"}  # the JSON default whose answers ship (as before issue 36)
    for r in (api, evaluate, cli, notebook):
        assert r.cached_steps(steps) == [True] * len(steps)  # the shipped answers replay


def notebook_sources():
    return [
        p for p in (REPO_DIR / "notebooks").glob("0*.py") if NOTEBOOK_ANSWER.search(p.read_text())
    ]


def test_one_definition_of_the_default():
    """`git grep` finds the shipped LineRetriever default defined once: RetrieverConfig."""
    found = subprocess.run(
        ["git", "grep", "-nE", r"(DEFAULT_CONFIG|DEFAULT_ANSWER)\b *=|RetrieverConfig\(\s*$"],
        cwd=REPO_DIR, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert found == "", found


def git_grep(pattern: str) -> list[str]:
    out = subprocess.run(
        ["git", "grep", "-nE", pattern, "--", "lrlib", "lrlab"],
        cwd=REPO_DIR, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return [ln for ln in out.splitlines() if ">>>" not in ln]


def test_one_definition_each_for_numbering_and_prompt_tokens():
    """Line numbering: one format (axtree.NUMBER_FORMAT, applied by axtree.number_lines);
    prompt tokens: one formula (completions.chat_tokens), the rest derived from it."""
    assert [ln.split(":")[0] for ln in git_grep(r'"\{n\}: "|\{[nik]\}: ')] == [
        "lrlib/core/axtree.py"
    ]
    assert len(git_grep(r"^def chat_tokens|^TOKENS_PER_(REPLY|MESSAGE) =")) == 3
    assert {ln.split(":")[0] for ln in git_grep(r"TOKENS_PER_(REPLY|MESSAGE)")} == {
        "lrlib/llm/completions.py"
    }


# ---- 2. one offline switch, honoured by the client -------------------------------------


UNCACHED = lrlib.Step(goal="Open the never-asked page", tree="RootWebArea 'Never'\n\t[3] link 'x'")


@pytest.mark.parametrize(
    "env, reason",
    [
        ({"LRLIB_OFFLINE": "1", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "LRLIB_MODEL": "m"},
         "LRLIB_OFFLINE=1"),
        ({}, "no endpoint set"),
    ],
)  # fmt: skip
def test_python_api_offline_fails_in_one_typed_line(no_network, monkeypatch, env, reason):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    r = lrlib.get_reducer("lineretriever")
    assert r.client.offline
    with pytest.raises(CacheMissError) as err:
        r.reduce(UNCACHED)
    message = str(err.value)
    assert "\n" not in message and reason in message
    assert "OPENAI_BASE_URL" in message and "LRLIB_OFFLINE=0" in message


def test_explicit_offline_false_loses_to_lrlib_offline(no_network, monkeypatch):
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    client = lrlib.LLMClient("m", base_url="http://127.0.0.1:9/v1", offline=False)
    with pytest.raises(CacheMissError, match="LRLIB_OFFLINE=1"):
        client.complete([{"role": "user", "content": "never asked"}])


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1, err
    return lines[0]


def test_cli_run_refresh_offline_sends_nothing(no_network, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LRLIB_MODEL", "m")
    argv = ["run", "--default-steps", "--limit", "1", "--refresh", "--no-progress"]
    assert main([*argv, "-o", str(tmp_path / "r.csv")]) == 1
    err = capsys.readouterr().err
    assert "cache only" in err.splitlines()[0]
    line = one_error_line(err)
    assert "LRLIB_OFFLINE=1" in line and "LRLIB_OFFLINE=0" in line


def test_cli_run_new_prompt_without_endpoint_asks_no_model(no_network, tmp_path, capsys):
    """The README: a new prompt asks a model only with an endpoint or LRLIB_OFFLINE=0."""
    new = lrlib.get_prompt("neutral").derive("never-asked", guidance="Select what matters.")
    lrlib.register_prompt(new, overwrite=True)
    argv = ["run", "--prompt", "never-asked", "--default-steps", "--limit", "1", "--no-progress"]
    assert main([*argv, "-o", str(tmp_path / "r.csv")]) == 1
    err = capsys.readouterr().err
    assert "no model may be asked (no endpoint set)" in err.splitlines()[0]
    assert "no endpoint set" in one_error_line(err)


def test_cli_evaluate_offline_skips_and_counts(no_network, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LRLIB_MODEL", "m")
    argv = ["evaluate", "--reducers", "full;lineretriever:prompt=neutral", "--limit", "2"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "e.csv")]) == 0
    out = capsys.readouterr().out
    assert "lineretriever:prompt=neutral: 0 of 2 steps evaluated, 2 skipped" in out


@pytest.mark.parametrize("command", ["live", "live-docs", "mfs"])
def test_cli_llm_policy_offline_fails_in_one_line(no_network, tmp_path, capsys, command):
    from lrlab.agent.live import TASKS

    argv = [command.removesuffix("-docs"), "--policy", "llm", "--out", str(tmp_path / "out")]
    if command == "live":
        argv += ["--tasks", TASKS[0], "--seeds", "1", "--reducers", "full"]
    elif command == "live-docs":
        site = Path(__file__).parent / "fixtures" / "docsite"
        argv += ["--env", "docs", "--site", str(site), "--reducers", "full"]
    else:
        argv += ["--limit", "1"]
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no endpoint set" in line and "LRLIB_OFFLINE=0" in line, line


# ---- 7. portable provenance --------------------------------------------------------------


MACHINE_PATH = re.compile(r"(?<![\w.])(/(?:work|tmp|home|root|Users|var/folders|private)/[\w.-]+)")
ALLOWED = re.compile(r"^/(tmp|work)/$")


def test_no_absolute_machine_path_in_tracked_data():
    """Committed records, provenance, notebooks and fixtures name paths relative to the
    repository (or a dataset by its hash): no folder of the machine that wrote them. (Code
    and docs hold example paths such as /tmp/figs in doctests; they are not records.)"""
    import gzip

    files = subprocess.run(
        ["git", "ls-files", "data", "figures", "notebooks", "tests/fixtures", "lrlab", "lrlib"],
        cwd=REPO_DIR, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    offenders = {}
    for name in files:
        path = REPO_DIR / name
        if path.suffix in (".py", ".png", ".pdf", ".npz", ".npy") or not path.is_file():
            continue
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        found = [m for m in MACHINE_PATH.findall(text) if not ALLOWED.match(m)]
        if found:
            offenders[name] = sorted(set(found))[:3]
    assert offenders == {}, offenders


# ---- 9. the README, the CLI and the figures say the same thing -----------------------------


def one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    return err


def test_import_traces_without_traces_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    line = one_line(
        capsys, ["import-traces", str(tmp_path / "empty"), "-o", str(tmp_path / "o.gz")]
    )
    assert "nothing to import" in line and "an empty folder" in line
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("x")
    line = one_line(capsys, ["import-traces", str(tmp_path / "junk"), "-o", str(tmp_path / "o.gz")])
    assert "1 file(s) (notes.txt)" in line and "no traces" in line


def test_reducer_lists_say_how_specs_are_separated(capsys):
    assert "separated by ';'" in one_line(capsys, ["evaluate", "--reducers", "full,random"])
    line = one_line(capsys, ["evaluate", "--reducers", ""])
    assert "no reducer in --reducers ''" in line and not line.rstrip(")").endswith(":")


def test_out_with_an_unknown_suffix_is_refused(capsys, tmp_path):
    line = one_line(capsys, ["evaluate", "--reducers", "full", "--out", str(tmp_path / "x.txt")])
    assert ".csv, .csv.gz or .parquet" in line


def test_help_and_split_all(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out
    assert len(lrlib.load_steps(split="all")) == len(lrlib.load_steps())


def test_evaluate_default_listing_includes_lineretriever():
    """The README: `lrlib evaluate` scores LineRetriever on the cached steps by default."""
    from lrlib.eval.evaluation import specs_of

    names = [s.name for s in specs_of(argparse.Namespace(reducers=None))]
    assert "lineretriever" in names and names[0] == "full"
