"""The notebooks: they run (quick mode, offline), stay thin, are committed executed, and
their .py and .ipynb halves agree. Policy: notebooks/README.md."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re

import nbformat
import pytest

from lrlib import paths
from lrlib.report import plots

NOTEBOOKS = paths.notebooks_dir()
SOURCES = plots.notebook_sources()
EXPECTED = [
    "00_quickstart",
    "01_explore",
    "02_prompt_ablations",
    "03_reduction_boxplot",
    "04_cost_breakeven",
    "05_baselines",
    "06_injection",
    "07_agent_loop",
    "08_big_pages",
]
MAX_FUNCTION_LINES = 6  # a notebook may define a tiny lambda-like helper, never logic
MAX_STRING_CHARS = 240  # longer literals are prompt texts or templates: they belong in lrlib
PROMPTISH = re.compile(r"you are|<answer>|<think>|line ranges|accessibility tree", re.I)


def _code_cells(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_every_notebook_is_there_as_a_pair():
    assert [s.stem for s in SOURCES] == EXPECTED
    for source in SOURCES:
        assert source.with_suffix(".ipynb").is_file(), f"{source.name} has no paired .ipynb"
    config = (NOTEBOOKS / "jupytext.toml").read_text()
    assert 'formats = "ipynb,py:percent"' in config
    assert "policy" in (NOTEBOOKS / "README.md").read_text().lower()


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_pairing_is_in_sync(source):
    """The .py (what reviewers read) and the .ipynb (what users open) hold the same cells."""
    text_nb = plots.read_source(source)
    ipynb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    assert [(c.cell_type, c.source.strip()) for c in text_nb.cells] == [
        (c.cell_type, c.source.strip()) for c in ipynb.cells
    ], f"{source.stem}: .py and .ipynb differ; run `make figures` (or jupytext --sync)"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_saving_in_jupyter_rewrites_the_py_unchanged(source):
    """What jupytext writes when JupyterLab saves the paired notebook (with the committed
    .ipynb's metadata and notebooks/jupytext.toml) is the committed .py, byte for byte:
    no metadata header appears."""
    import jupytext
    from jupytext.config import load_jupytext_configuration_file

    config = load_jupytext_configuration_file(str(NOTEBOOKS / "jupytext.toml"))
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    nb.metadata.setdefault("jupytext", {}).update(
        {"text_representation": {"jupytext_version": jupytext.__version__}}
    )
    text = jupytext.writes(nb, fmt="py:percent", config=config)
    assert text == source.read_text(encoding="utf-8"), f"{source.stem}: a save would change it"


def test_project_jupyter_config_keeps_committed_runs(tmp_path, monkeypatch):
    """`.jupyter/jupyter_server_config.py` (what `make lab` loads): saving a committed
    notebook whose sources did not change keeps the file and puts the run in the user
    area, without widget state; an edited notebook is saved. Its kernels write figures to
    the user area too (figures/ is what `make figures` made)."""
    import runpy

    class Config(dict):
        def __getattr__(self, name):
            return self.setdefault(name, Config())

    config = Config()
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.delenv("LRLIB_FIGURES_DIR", raising=False)  # the config sets it: undone after
    hook = runpy.run_path(
        str(paths.REPO_DIR / ".jupyter" / "jupyter_server_config.py"),
        init_globals={"get_config": lambda: config},
    )["keep_committed_runs"]
    assert config.ContentsManager.pre_save_hook is hook
    assert os.environ["LRLIB_FIGURES_DIR"] == str(tmp_path / "work" / "figures")
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for suffix in (".py", ".ipynb"):
        (folder / f"01_explore{suffix}").write_bytes(
            (NOTEBOOKS / f"01_explore{suffix}").read_bytes()
        )
    committed = json.loads((folder / "01_explore.ipynb").read_text())
    run = json.loads(json.dumps(committed))
    run["metadata"]["widgets"] = {"state": {}}
    run["cells"][-1]["outputs"] = [
        {"output_type": "display_data", "metadata": {}, "data": {
            "text/plain": "VBox()", "application/vnd.jupyter.widget-view+json": {"model_id": "x"}}}
    ]  # fmt: skip

    class Manager:
        def _get_os_path(self, path):
            return str(folder / path)

    model = {"type": "notebook", "content": run}
    hook(model=model, path="01_explore.ipynb", contents_manager=Manager())
    assert model["content"] == committed  # the committed run is what gets written
    mine = json.loads((tmp_path / "work" / "lab" / "01_explore.ipynb").read_text())
    assert "widgets" not in mine["metadata"] and "widget-view" not in json.dumps(mine)
    edited = json.loads(json.dumps(committed))
    edited["cells"][0]["source"] = "# an edit"
    model = {"type": "notebook", "content": edited}
    hook(model=model, path="01_explore.ipynb", contents_manager=Manager())
    assert model["content"] is edited  # an edit is saved


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebooks_are_thin(source):
    """Logic lives in lrlib: no classes, no long functions, no prompt texts or templates."""
    nb = plots.read_source(source)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{source.stem}: needs exactly one cell tagged 'parameters'"
    assert "QUICK" in params[0].source, f"{source.stem}: the parameters cell must read QUICK"
    for cell in _code_cells(nb):
        tree = ast.parse(
            "\n".join(
                line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))
            )
        )
        for node in ast.walk(tree):
            assert not isinstance(node, ast.ClassDef), f"{source.stem}: class {node.name}"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = node.end_lineno - node.lineno + 1
                assert size <= MAX_FUNCTION_LINES, (
                    f"{source.stem}: function {node.name} has {size} lines; move it to lrlib"
                )
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert len(node.value) <= MAX_STRING_CHARS, (
                    f"{source.stem}: a {len(node.value)}-character string literal; prompt "
                    "texts and templates belong in lrlib"
                )
                assert not PROMPTISH.search(node.value), (
                    f"{source.stem}: prompt text in a notebook: {node.value[:60]!r}"
                )


def _module(name: str):
    """The module ``name``, or None when it is not one."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebooks_use_only_public_names(source):
    """A notebook imports only what lrlib (or a public module of the wing) exports: a module
    is public when it declares ``__all__``, a name when it is in its module's ``__all__``
    (``lrlib.__all__`` for ``lrlib`` itself); so does every ``module.name`` it reads."""
    code = "\n".join(
        line
        for cell in _code_cells(plots.read_source(source))
        for line in cell.splitlines()
        if not line.lstrip().startswith(("%", "!"))
    )
    tree = ast.parse(code)
    bound: dict[str, object] = {}  # a name of the notebook -> the public module it holds
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("lrlib", "lrlab"):
                    mod = _module(alias.name)
                    if alias.name != "lrlib" and not hasattr(mod, "__all__"):
                        wrong.append(f"import {alias.name} (no __all__: not a public module)")
                    bound[alias.asname or alias.name] = mod
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "lrlib",
            "lrlab",
        ):
            parent = _module(node.module)
            for alias in node.names:
                sub = _module(f"{node.module}.{alias.name}")
                if sub is not None and hasattr(sub, "__all__"):
                    bound[alias.asname or alias.name] = sub
                elif alias.name not in getattr(parent, "__all__", ()):
                    wrong.append(f"from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = bound.get(node.value.id)
            if mod is not None and node.attr not in (*mod.__all__, "__version__"):
                wrong.append(f"{node.value.id}.{node.attr} ({mod.__name__}.__all__ lacks it)")
    assert not wrong, f"{source.stem} uses names no public module exports: {sorted(set(wrong))}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_committed_notebooks_are_executed_top_to_bottom(source):
    """Policy: the .ipynb is committed as `make figures` executed it, in order, with no
    error, no absolute path of this machine and no secret in its outputs."""
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{source.stem}: execution counts {counts}; re-run `make figures`"
    )
    blob = json.dumps([c.get("outputs", []) for c in cells])
    # regenerating must not churn: stable cell ids, no saved widget state (random ids)
    assert [c.id for c in nb.cells] == [f"{source.stem[:2]}-{i:02d}" for i in range(len(nb.cells))]
    assert "widgets" not in nb.metadata and "widget-view" not in blob, f"{source.stem}"
    for cell in cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{source.stem}: error output {out}"
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                assert "Traceback" not in out.get("text", ""), f"{source.stem}: traceback"
    for local in (paths.REPO_DIR, paths.REPO_DIR.parent / "shared"):
        assert str(local) not in blob, f"{source.stem}: outputs leak a local path ({local})"
    assert not re.search(r"sk-[A-Za-z0-9_-]{16,}", blob), f"{source.stem}: an API key?"
    assert nb.metadata.get("kernelspec", {}).get("name") == plots.KERNEL


RUNS_WITH = re.compile(r"^\*\*Runs with\*\* .*", re.M)
_BLOCKER = """import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (an extra this notebook "
                                      "does not name)", name=name)

sys.meta_path.insert(0, _Blocked())
"""


def _modules_of_extras(skip: set[str]) -> set[str]:
    """The top-level modules of the distributions the project's extras add (besides
    ``skip``), read from the installed project's metadata."""
    from importlib.metadata import packages_distributions, requires

    core, extra = set(), set()
    for req in requires("lrlib"):
        name = re.match(r"[A-Za-z0-9_.-]+", req).group().lower().replace("_", "-")
        which = re.search(r"extra == ['\"]([\w-]+)['\"]", req)
        if which is None:
            core.add(name)
        elif which.group(1) not in skip:
            extra.add(name)
    return {
        module
        for module, dists in packages_distributions().items()
        if {d.lower().replace("_", "-") for d in dists} & (extra - core)
    }


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_each_notebook_says_what_it_runs_with(source):
    """One line in the introduction names the install it needs (the core, or which extra)."""
    intro = next(c.source for c in plots.read_source(source).cells if c.cell_type == "markdown")
    lines = RUNS_WITH.findall(intro)
    assert len(lines) == 1, f"{source.stem}: its introduction needs one '**Runs with** ...' line"
    assert "pip install -e '." in lines[0], f"{source.stem}: say the install command"


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_runs_in_quick_mode(source, tmp_path, monkeypatch):
    """Each notebook runs top to bottom in quick mode, offline, with no API key, writing its
    figures into a temporary folder (the committed figures stay untouched), with only the
    extras its '**Runs with**' line names importable."""
    intro = next(c.source for c in plots.read_source(source).cells if c.cell_type == "markdown")
    named = set(re.findall(r"\.\[([\w,-]+)\]", RUNS_WITH.search(intro).group()))
    blocked = _modules_of_extras({x for group in named for x in group.split(",")})
    for module in ("sklearn", "xllamacpp", "browsergym"):  # installed extras are blocked
        assert (
            module in blocked or importlib.util.find_spec(module) is None or named - {"notebooks"}
        ), module
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(_BLOCKER.format(blocked=blocked))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "blocker"))
    monkeypatch.setenv("LRLIB_FIGURES_DIR", str(tmp_path))
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LRLIB_MODEL", "OPENAI_MODEL"):
        assert var not in os.environ
    done = plots.execute(source, quick=True, timeout=300)
    assert done.error is None, f"{source.stem} failed in quick mode: {done.error}"
    if source.stem not in ("00_quickstart", "01_explore"):
        assert list(tmp_path.glob("*.png")), f"{source.stem} wrote no figure"
