"""The repository's shape, its two commands, and a light, offline `import lrlib`."""

from __future__ import annotations

import importlib
import json
import os
import re
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
    core = ("axtree", "selection", "ranges", "pruning", "tokens", "prompts")
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


# ---- the README starts a newcomer; the long reading lives in docs/ ----------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def markdown_pages() -> list[Path]:
    """The README, every docs page and the notebooks' README."""
    return [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        REPO / "notebooks" / "README.md",
    ]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> slug("The agent in the loop (`lrlib live`, `lrlib mfs`)")
    'the-agent-in-the-loop-lrlib-live-lrlib-mfs'
    """
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m) for m in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file (or heading anchor) does not exist."""
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    return broken


def test_readme_is_at_most_12_kb():
    size = len((REPO / "README.md").read_bytes())
    assert size <= 12_000, f"README.md is {size} bytes; move reading matter to docs/"


def test_every_relative_link_resolves():
    pages = markdown_pages()
    assert len(pages) >= 9 and all(p.is_file() for p in pages)
    assert len(LINK.findall((REPO / "README.md").read_text())) >= 10  # the pattern finds links
    broken = {p.relative_to(REPO).as_posix(): broken_links(p) for p in pages}
    assert not {k: v for k, v in broken.items() if v}, broken


def test_the_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading\n")
    page.write_text(
        "[ok](there.md) [ok](there.md#a-heading) [web](https://example.org/x) "
        "[gone](missing.md) [bad anchor](there.md#nope) ![img](figures/none.png)\n"
    )
    assert broken_links(page) == ["missing.md", "there.md#nope", "figures/none.png"]


def test_readme_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    missing = [p.name for p in (REPO / "docs").glob("*.md") if f"](docs/{p.name})" not in readme]
    assert not missing, f"docs pages the README does not link: {missing}"
