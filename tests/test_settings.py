"""lrlib.settings: one object read from the environment, one table, the only module that
touches ``os.environ``; every result records the settings that change it, never a key."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path

import pytest

import lrlab
import lrlib
from lrlib import paths, runinfo, settings
from lrlib.cli import main
from lrlib.settings import Settings, SettingsError

REPO = Path(lrlib.__file__).resolve().parents[1]
ENV_NAMES = {"environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"}


def env_uses(source: str) -> list[str]:
    """Code (not docstrings or comments) that reads or writes the process environment:
    ``os.environ``/``os.getenv``/... through any alias, ``from os import environ``, or a
    name ``environ`` subscripted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ENV_NAMES:
            found.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"from os import {a.name}" for a in node.names if a.name in ENV_NAMES]
        elif isinstance(node, ast.Name) and node.id in ENV_NAMES:
            found.append(node.id)
    return found


def test_the_checker_fires() -> None:
    """A probe: each way of reaching the environment is caught, prose is not."""
    assert env_uses("import os\nos.environ.get('X')") == ["os.environ"]
    assert env_uses("import os as o\no.getenv('X')") == ["o.getenv"]
    assert env_uses("from os import environ\nenviron['X'] = '1'") == [
        "from os import environ",
        "environ",
    ]
    assert env_uses("import os\nos.environ['X'] = '1'") == ["os.environ"]
    assert env_uses('"""Reads os.environ and os.getenv("X") in prose only."""\nx = 1') == []


def test_no_module_but_settings_touches_the_environment() -> None:
    offenders = {}
    for package in (lrlib, lrlab):
        root = Path(package.__file__).resolve().parent
        for path in sorted(root.rglob("*.py")):
            if path == REPO / "lrlib" / "settings.py":
                continue
            uses = env_uses(path.read_text(encoding="utf-8"))
            if uses:
                offenders[str(path.relative_to(REPO))] = uses
    assert offenders == {}
    assert env_uses((REPO / "lrlib" / "settings.py").read_text()) != []  # the one that does


def test_docs_hold_exactly_the_generated_table() -> None:
    text = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    table = settings.table()
    assert table in text
    documented = [ln for ln in text.splitlines() if ln.startswith("| `")]
    generated = [ln for ln in table.splitlines() if ln.startswith("| `")]
    assert documented[: len(generated)] == generated  # no stale row beside it
    assert "LRLIB_TOKENIZER" not in text
    for f in fields(Settings):
        assert set(f.metadata) >= {"env", "default_doc", "what", "results", "secret"}
        assert f"`{f.metadata['env'][0]}`" in table


def test_environment_changes_are_seen_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LRLIB_QUICK", raising=False)
    first = settings.current()
    assert first is settings.current()  # not rebuilt while nothing changed
    assert first.quick is False
    monkeypatch.setenv("LRLIB_QUICK", "yes")
    assert settings.current().quick is True
    monkeypatch.setenv("LRLIB_DATA_DIR", "/tmp/some data")
    assert paths.data_dir() == Path("/tmp/some data").resolve()
    monkeypatch.setenv("LRLIB_MODEL", "")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-x")
    assert settings.current().model == "gpt-x"


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("LRLIB_QUICK", "maybe", "LRLIB_QUICK='maybe': expected one of 1, true, yes, on, 0,"),
        ("LRLIB_OFFLINE", "2", "LRLIB_OFFLINE='2': expected one of"),
        ("LRLIB_CONTEXT_TOKENS", "big", "LRLIB_CONTEXT_TOKENS='big': expected an integer"),
        ("LRLIB_SERVER_PARALLEL", "x", "LRLIB_SERVER_PARALLEL='x': expected an integer"),
    ],
)
def test_invalid_values_fail_on_one_line(var: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        Settings.from_env({var: value})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_cli_reports_an_invalid_setting_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LRLIB_DEBUG", "sure")
    assert main(["evaluate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lrlib evaluate: error: LRLIB_DEBUG='sure': expected one of")
    assert len(err.splitlines()) == 1


def test_override_nests_restores_and_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LRLIB_QUICK", "0")
    with settings.override(quick=True, figures_dir="~/figs") as s:
        assert s.quick and s.figures_dir == Path("~/figs").expanduser()
        with settings.override(quick="0", context_tokens=None):
            assert settings.current().quick is False
            assert settings.current().figures_dir == Path("~/figs").expanduser()
        assert settings.current().quick is True
    assert settings.current().quick is False
    with (
        pytest.raises(SettingsError, match="no setting 'colour'; valid: base_url"),
        settings.override(colour="red"),
    ):
        pass
    with pytest.raises(SettingsError, match="quick='often'"), settings.override(quick="often"):
        pass
    assert settings.current().quick is False


def test_exported_and_child_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TQDM_NCOLS", "77")
    assert settings.export_env("TQDM_NCOLS", "100", replace=False) == "77"
    monkeypatch.setenv("OPENAI_MODEL", "old")
    with settings.override(model="new", offline=True, data_dir=None):
        env = settings.child_env({"EXTRA": "1"}, prepend={"PYTHONPATH": "/first"})
    assert env["LRLIB_MODEL"] == "new" and "OPENAI_MODEL" not in env
    assert env["LRLIB_OFFLINE"] == "1" and env["EXTRA"] == "1"
    assert "LRLIB_DATA_DIR" not in env  # None: the default, so the child sees it unset
    assert env["PYTHONPATH"].split(":")[0] == "/first"


def test_provenance_records_result_settings_never_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-canary-" + "k" * 24
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("LRLIB_SERVER_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{key}@localhost:9/v1")
    monkeypatch.setenv("LRLIB_MODEL", "m1")
    monkeypatch.setenv("LRLIB_CONTEXT_TOKENS", "4096")
    monkeypatch.setenv("LRLIB_FIGURES_DIR", "/tmp/figs")
    prov = runinfo.provenance(model="reducer-model")
    recorded = json.loads(prov["settings"])
    assert recorded == {
        "base_url": "http://localhost:9/v1",
        "cache_dir": None,
        "context_tokens": 4096,
        "data_dir": None,
        "model": "m1",
        "offline": None,
        "prices": None,
        "quick": False,
    }
    assert prov["model"] == "reducer-model"  # the run's own parameters win
    assert key not in json.dumps(prov) and key not in repr(settings.current())
    marked = {f.name for f in fields(Settings) if f.metadata["results"]}
    secret = {f.name for f in fields(Settings) if f.metadata["secret"]}
    assert set(recorded) == marked - secret and secret == {"api_key", "server_key"}
