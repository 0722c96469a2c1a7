"""The repository's shape, its two commands, and a light, offline `import lrlib`."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import lrlib

REPO = Path(__file__).resolve().parents[1]


def test_top_level_layout():
    for name in ("README.md", "environment.yml", "pyproject.toml", "Makefile", ".ci/run"):
        assert (REPO / name).is_file(), name
    for name in ("notebooks", "lrlib", "data", "figures", "tests"):
        assert (REPO / name).is_dir(), name


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in ci
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make figures" in readme


def test_environment_yml_installs_the_package_itself():
    """environment.yml is a shell around pyproject.toml: it cannot drift from it."""
    lines = [ln.strip() for ln in (REPO / "environment.yml").read_text().splitlines()]
    body = [ln for ln in lines if ln and not ln.startswith("#")]
    assert "- pip:" in body
    pip_items = body[body.index("- pip:") + 1 :]
    assert len(pip_items) == 1 and pip_items[0].startswith("- -e .[")
    extras = pip_items[0].removeprefix("- -e .[").rstrip("]").split(",")
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert set(extras) <= set(declared["optional-dependencies"])
    # no package is pinned in environment.yml besides python and pip themselves
    deps = body[body.index("dependencies:") + 1 : body.index("- pip:")]
    assert {d.split("=")[0] for d in deps} == {"- python", "- pip"}


def test_import_is_light_and_offline():
    code = (
        "import socket, sys, json\n"
        "def no_net(*a, **k): raise OSError('network used at import')\n"
        "socket.socket.connect = no_net\n"
        "import lrlib\n"
        "heavy = [m for m in ('pandas', 'numpy', 'openai', 'tiktoken', 'matplotlib', 'xllamacpp')"
        " if m in sys.modules]\n"
        "print(json.dumps(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_every_public_name_resolves():
    for name in lrlib.__all__:
        assert getattr(lrlib, name) is not None, name
    # the text core the README's layer map names, and the reducers layer
    core = ("axtree", "ranges", "pruning", "tokens", "prompts", "views")
    for module in [f"core.{m}" for m in core] + ["reducers"]:
        importlib.import_module(f"lrlib.{module}")


def test_paths_come_from_the_package_not_the_cwd(tmp_path, monkeypatch):
    from lrlib import paths

    monkeypatch.chdir(tmp_path)
    assert paths.data_dir() == REPO / "data"
    monkeypatch.setenv("LRLIB_DATA_DIR", str(tmp_path))
    assert paths.data_dir() == tmp_path and paths.cache_dir() == tmp_path / "cache"


def test_installed_package_imports_from_anywhere(tmp_path):
    """Jupyter starts kernels in notebooks/, users elsewhere: the installed lrlib must be the
    regular package (its __init__ and public API), not an empty namespace package."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import lrlib; print(lrlib.__file__, lrlib.__version__, len(lrlib.__all__))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == str(Path(lrlib.__file__)), "reinstall: pip install -e ."
