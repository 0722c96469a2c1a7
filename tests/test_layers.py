"""lrlib's layers: every import (top-level, in a function, or for type checking) goes to
the same or an earlier layer, and no modules import each other in a circle.

The order, earliest first (README, "Layout"): ``settings`` < ``paths``/``runinfo``/``plugins``
< ``core`` < ``data`` < ``llm`` < ``reducers`` < ``eval`` < ``report``
< ``cli``/``__main__``/``__init__``.
The research wing, ``lrlab``, sits beside lrlib: it may import lrlib, never the reverse.
The core (:data:`CORE`, what a newcomer reads first) is at most 25 modules and 6,000 lines
and imports nothing of lrlib outside itself.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

import lrlab
import lrlib

ROOT = Path(lrlib.__file__).resolve().parent
LAYERS = [
    "settings",
    "paths",
    "runinfo",
    "plugins",
    "core",
    "data",
    "llm",
    "reducers",
    "eval",
    "report",
    "cli",
]
TOP = {"lrlib", "lrlib.__main__", "lrlib.cli"}  # the package's front door: may import anything


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        name = ".".join(("lrlib", *p.with_suffix("").relative_to(ROOT).parts))
        out[name.removesuffix(".__init__")] = p
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the lrlib modules it imports anywhere in its code (docstrings excluded)."""
    deps: dict[str, set[str]] = {}
    for name, p in mods.items():
        pkg = name if p.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
                found |= set(subs) or ({mod} if mod in mods else set())
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in mods}
        deps[name] = found - {name}
    return deps


def layer(name: str) -> int:
    part = name.split(".")[1] if name.count(".") else "cli"
    return LAYERS.index(part if part in LAYERS else "cli")


def cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in deps[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                out.append(sorted([v, *comp]))

    for v in deps:
        if v not in index:
            visit(v)
    return out


def test_every_module_sits_in_a_layer() -> None:
    mods = modules()
    stray = [m for m in mods if m.count(".") and m.split(".")[1] not in LAYERS + ["__main__"]]
    assert not stray, f"modules outside the layers: {stray}"


def test_imports_follow_the_layer_order() -> None:
    deps = imports(modules())
    against = [
        f"{m} (layer {LAYERS[layer(m)]}) imports {d} (layer {LAYERS[layer(d)]})"
        for m, ds in sorted(deps.items())
        if m not in TOP
        for d in sorted(ds)
        if layer(d) > layer(m)
    ]
    assert not against, "imports against the layer order:\n" + "\n".join(against)
    print(f"{len(deps)} modules, {sum(map(len, deps.values()))} imports, 0 against the order")


def test_no_import_cycles() -> None:
    found = cycles(imports(modules()))
    assert not found, f"import cycles: {found}"


def wing_imports(path: Path) -> list[str]:
    """Every import of ``lrlab`` in ``path``'s code: statements anywhere, and module names
    handed to importlib as string constants."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        found += [
            f"{path.name}:{node.lineno} {n}" for n in names if str(n).split(".")[0] == "lrlab"
        ]
    return found


def test_lrlib_never_imports_the_research_wing() -> None:
    found = [hit for p in modules().values() for hit in wing_imports(p)]
    assert not found, "lrlib imports lrlab:\n" + "\n".join(found)
    wing = Path(lrlab.__file__).resolve().parent
    assert sum(len(wing_imports(p)) for p in wing.rglob("*.py")) > 20  # the checker sees them


def private_imports(path: Path) -> list[str]:
    """``from lrlib.x import _name`` in ``path``, or ``y._name`` on a name ``y`` bound by an
    import from lrlib or lrlab (another module's private name)."""
    tree = ast.parse(path.read_text())
    ours = ("lrlib.", "lrlab.")

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    found, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(ours):
            for a in node.names:
                if private(a.name):
                    found.append(f"{path.name}:{node.lineno} {node.module}.{a.name}")
                bound[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(ours) and a.asname:
                    bound[a.asname] = a.name
    found += [
        f"{path.name}:{node.lineno} {bound[node.value.id]}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and private(node.attr)
        and isinstance(node.value, ast.Name) and node.value.id in bound
    ]  # fmt: skip
    return found


def test_no_private_names_cross_modules(tmp_path: Path) -> None:
    """A module (of lrlib or lrlab) uses another's public names only (its job, documented)."""
    wing = sorted(Path(lrlab.__file__).resolve().parent.rglob("*.py"))
    found = [hit for p in [*modules().values(), *wing] for hit in private_imports(p)]
    assert not found, "private names imported across modules:\n" + "\n".join(found)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from lrlib.report import plots\ndef f():\n    from lrlib.core.axtree import LINE_HEAD, _x\n"
        "    return plots._CI, plots.CI_COLUMNS\n"
    )
    assert private_imports(probe) == [  # the checker sees both kinds
        "probe.py:3 lrlib.core.axtree._x", "probe.py:4 lrlib.report.plots._CI"
    ]  # fmt: skip


def test_the_checker_sees_a_violation_and_a_cycle() -> None:
    deps = {"lrlib.core.a": {"lrlib.report.b"}, "lrlib.report.b": {"lrlib.core.a"}}
    assert layer("lrlib.report.b") > layer("lrlib.core.a")
    assert cycles(deps) == [["lrlib.core.a", "lrlib.report.b"]]


README = ROOT.parent / "README.md"


def recipe(name: str) -> str:
    """The code block under ``<!-- recipe: name ... -->`` in the README."""
    m = re.search(rf"<!-- recipe: {name}\b[^>]*-->\n```python\n(.*?)```", README.read_text(), re.S)
    assert m, f"README has no '{name}' recipe"
    return m.group(1)


def public_only(source: str) -> None:
    """A recipe reaches lrlib through its public API only: ``lrlib.NAME`` or ``from lrlib
    import NAME`` with NAME in ``lrlib.__all__``, no submodule, no private name."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lrlib"):
            assert node.module == "lrlib", f"a submodule: {node.module}"
            assert {a.name for a in node.names} <= set(lrlib.__all__), ast.unparse(node)
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "lrlib":
            assert node.attr in lrlib.__all__, f"lrlib.{node.attr}"
    private = re.search(r"\._(?!_\w+__\b)|import _", source)  # dunders (__init__) are fine
    assert private is None, f"a private name: {private and private.group()}"


def run_python(folder: Path, *argv: str) -> subprocess.CompletedProcess:
    """``python argv`` in ``folder`` (where the user's files are) with this checkout's lrlib,
    no endpoint, anything written under ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LRLIB_"))}
    env.update(
        PYTHONPATH=str(ROOT.parent),
        LRLIB_DATA_DIR=str(ROOT.parent / "data"),
        LRLIB_WORK_DIR=str(folder / "work"),
        LRLIB_RESULTS_DIR=str(folder / "results"),
        LRLIB_OFFLINE="1",
    )
    return subprocess.run(
        [sys.executable, *argv], cwd=folder, env=env, capture_output=True, text=True
    )


def python_out(folder: Path, code: str) -> str:
    done = run_python(folder, "-c", code)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_recipe_add_a_prompt_variant_in_your_own_file(tmp_path: Path) -> None:
    """The recipe is the user's ``my_prompts.py`` (public names only, the library is not
    edited), used from Python and by ``lrlib evaluate --prompts``; offline, no model asked."""
    source = recipe("prompt")
    public_only(source)
    (tmp_path / "my_prompts.py").write_text(source)
    out = python_out(
        tmp_path,
        "import importlib, lrlib, my_prompts\n"
        f"assert lrlib.__file__.startswith({str(ROOT)!r}), lrlib.__file__\n"
        "importlib.reload(my_prompts)  # a notebook cell run again is fine\n"
        "msgs = lrlib.get_prompt('goal-first').build('Buy milk', \"RootWebArea 'Shop'\")\n"
        "r = lrlib.get_reducer('lineretriever', prompt='goal-first', offline=True)\n"
        "print('goal-first' in lrlib.list_prompts(), 'what the goal mentions' in msgs[-1]['content'],"
        " r.params['prompt'])",
    )
    assert out == "True True goal-first"
    spec = "lineretriever:prompt=goal-first"
    argv = ["-m", "lrlib", "evaluate", "--reducers", f"{spec};full", "--limit", "2"]
    argv += ["--no-progress", "--out", "e.csv"]
    done = run_python(tmp_path, *argv)  # without the file the variant is unknown
    assert done.returncode == 2 and "unknown prompt 'goal-first'" in done.stderr, done.stderr
    done = run_python(tmp_path, *argv, "--prompts", "my_prompts.py")
    assert done.returncode == 0, done.stderr
    plan = done.stderr.splitlines()[0]
    # a new prompt has no cached answers: offline, its steps are skipped and counted
    assert f"{spec} replays cached answers" in plan and "(0 of 2 steps cached" in plan, plan
    assert f"{spec}: 0 of 2 steps evaluated, 2 skipped" in done.stdout, done.stdout
    done = run_python(tmp_path, "-m", "lrlib", "run", "--prompts", "my_prompts.py", "--help")
    assert "goal-first" in done.stdout, done.stderr  # `lrlib run --prompt goal-first`


def test_recipe_add_a_reducer_in_your_own_file(tmp_path: Path) -> None:
    """The recipe is the user's ``keep_links.py`` (public names only, the library is not
    edited), used from Python and by ``lrlib evaluate --plugins``."""
    source = recipe("reducer")
    public_only(source)
    (tmp_path / "keep_links.py").write_text(source)
    out = python_out(
        tmp_path,
        "import keep_links, lrlib\n"
        "step = lrlib.Step(goal='g', tree=\"RootWebArea 'x'\\n\\t[2] link 'Home'\\n\\t[3] button 'Go'\")\n"
        "frame = lrlib.evaluate(['keep-links'], [step], progress=False)\n"
        "print('keep-links' in lrlib.list_reducers(), lrlib.get_reducer('keep-links').reduce(step).kept,"
        " list(frame.reducer))",
    )
    assert out == "True [1, 2] ['keep-links']"
    argv = ["-m", "lrlib", "evaluate", "--reducers", "keep-links;full", "--limit", "3"]
    argv += ["--no-progress", "--out", "e.csv"]
    done = run_python(tmp_path, *argv)  # without the file the reducer is unknown
    assert done.returncode == 2 and "unknown reducer 'keep-links'" in done.stderr, done.stderr
    done = run_python(tmp_path, *argv, "--plugins", "keep_links.py")
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "e.csv")
    assert list(frame["reducer"]) == ["keep-links"] * 3 + ["full"] * 3
    mine, full = frame[frame["reducer"] == "keep-links"], frame[frame["reducer"] == "full"]
    assert (mine["lines_after"].to_numpy() < full["lines_after"].to_numpy()).all()
    # listed and swept like a shipped reducer, from its own class (the library not edited)
    out = python_out(
        tmp_path,
        "import keep_links\n"
        "from lrlib.eval.evaluation import all_reducers\n"
        "from lrlib.reducers import knobs, listed_reducers\n"
        "print(listed_reducers(False)[-1], 'keep-links' in all_reducers(), knobs()['keep-links'])",
    )
    assert out == ("keep-links True Knob(option='max_links', values=(1, 5, 20, 80), variant='')"), (
        out
    )
    argv = ["-m", "lrlib", "evaluate", "--plugins", "keep_links.py", "--reducers", "keep-links"]
    done = run_python(
        tmp_path, *argv, "--limit", "3", "--curves", "--no-progress", "--out", "e.csv"
    )
    assert done.returncode == 0, done.stderr
    curve = pd.read_csv(tmp_path / "curves-e.csv")
    assert list(curve["value"]) == [1, 5, 20, 80] and set(curve["knob"]) == {"max_links"}


# The core: what a newcomer reads first - the design's three jobs (prompts, answer ranges
# with the echo check, pruning with the views), the Step, the reducer interface and
# registry, the simple baselines, LineRetriever and the LLM client it asks - with the
# settings, paths, provenance and plugin hooks they rest on (README, "Layout"). The rest of
# lrlib (data/, eval/, report/, cli.py) is evaluation and reporting built around it; lrlab
# is the research wing beside it. Paths relative to lrlib/; the folders core/, reducers/
# and llm/ are core as a whole (a file added there joins the count).
CORE = (
    "__init__.py",
    "__main__.py",
    "settings.py",
    "paths.py",
    "runinfo.py",
    "plugins.py",
    "core/__init__.py",
    "core/axtree.py",
    "core/prompts.py",
    "core/pruning.py",
    "core/ranges.py",
    "core/sanitize.py",
    "core/selection.py",
    "core/step.py",
    "core/tokens.py",
    "reducers/__init__.py",
    "reducers/base.py",
    "reducers/baselines.py",
    "reducers/lineretriever.py",
    "llm/__init__.py",
    "llm/cache.py",
    "llm/client.py",
    "llm/completions.py",
    "llm/errors.py",
)
CORE_FOLDERS = ("core", "reducers", "llm")
CORE_MAX_MODULES, CORE_MAX_LINES = 25, 6_000
# the front doors' ways out of the core, the only ones: ``python -m lrlib`` runs the CLI,
# and the public API serves these names from around the core, imported on first use by
# lrlib.__getattr__ (PEP 562), never when lrlib is imported (checked below)
FRONT_DOOR = {"__main__.py": {"lrlib.cli"}}
PUBLIC_AROUND_CORE = {"load_observations", "load_steps", "import_traces", "evaluate"}


def dotted(relative: str) -> str:
    """``core/ranges.py`` -> ``lrlib.core.ranges``; ``core/__init__.py`` -> ``lrlib.core``."""
    parts = ("lrlib", *Path(relative).with_suffix("").parts)
    return ".".join(parts).removesuffix(".__init__")


def lrlib_imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, target) for every lrlib module or public name ``path``'s code imports: import
    statements anywhere (top level, in functions, under TYPE_CHECKING; relative ones
    resolved against ``package``), ``importlib.import_module``/``__import__`` of a string
    constant, and ``lrlib.NAME`` of a public name. Docstrings are text, not imports."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([mod] if mod else []))
            names = [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Call) and (
            getattr(node.func, "attr", None) == "import_module"
            or getattr(node.func, "id", None) == "__import__"
        ):
            names = [a.value for a in node.args[:1] if isinstance(a, ast.Constant)]
        elif isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "lrlib":
            names = [f"lrlib.{node.attr}"]
        found += [(node.lineno, str(n)) for n in names if str(n).split(".")[0] == "lrlib"]
    return found


def home(target: str, known: set[str]) -> str:
    """The lrlib module an import ``target`` reaches: the module itself, the module a name is
    imported from, or, for a public name of ``lrlib``, the module that defines it."""
    if target in known:
        return target
    parent, _, name = target.rpartition(".")
    if parent == "lrlib" and name in lrlib.__all__:  # from lrlib import NAME, lrlib.NAME
        return getattr(lrlib, name).__module__
    return parent if parent in known else target  # an unknown module stays itself


def outside_core(files: dict[str, Path], core: set[str]) -> list[str]:
    """``file:line target`` for each import in ``files`` (lrlib-relative name -> path) that
    reaches an lrlib module outside ``core`` (dotted names), front doors excepted."""
    known = set(modules())
    out = []
    for rel, path in files.items():
        package = dotted(rel) if rel.endswith("__init__.py") else dotted(rel).rsplit(".", 1)[0]
        for line, target in sorted(lrlib_imports(path, package)):
            module = home(target, known)
            if module not in core and module not in FRONT_DOOR.get(rel, ()):
                out.append(f"{rel}:{line} {target}")
    return out


def test_the_core_is_small() -> None:
    """At most 25 modules and 6,000 lines (``wc -l``: every line counts), every listed file
    there, and every file of the core folders listed."""
    for folder in CORE_FOLDERS:
        for p in sorted((ROOT / folder).rglob("*.py")):
            assert p.relative_to(ROOT).as_posix() in CORE, f"{p} is in a core folder, not in CORE"
    lines = {rel: (ROOT / rel).read_bytes().count(b"\n") for rel in CORE}
    assert len(set(CORE)) == len(CORE) <= CORE_MAX_MODULES, f"{len(CORE)} core modules"
    assert sum(lines.values()) <= CORE_MAX_LINES, f"the core is {sum(lines.values())} lines"
    print(f"core: {len(CORE)} modules, {sum(lines.values())} lines")


def test_the_core_imports_only_the_core(tmp_path: Path) -> None:
    """No core module imports anything of lrlib outside the core (lazy imports and
    import_module strings included); the front doors' exits are the documented ones."""
    core = {dotted(rel) for rel in CORE}
    found = outside_core({rel: ROOT / rel for rel in CORE}, core)
    assert not found, "core modules importing outside the core:\n" + "\n".join(found)
    # the public names served from around the core: exactly the documented ones, lazily
    around = {n for n in lrlib.__all__ if getattr(lrlib, n).__module__ not in core}
    assert around == PUBLIC_AROUND_CORE, around
    code = "import json, sys, lrlib; print(json.dumps([m for m in sys.modules if 'lrlib.' in m]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(json.loads(out.stdout)) <= core, out.stdout  # import lrlib: the core at most
    # the checker sees each kind of import out of the core, and passes docstrings
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""A docstring may say: >>> from lrlib.report import plots"""\n'
        "import importlib\n"
        "from lrlib.core.pruning import prune\n"
        "from lrlib import evaluate, paths\n"
        "def f():\n"
        "    from lrlib.data.dataset import load_steps\n"
        "    return importlib.import_module('lrlib.report.plots')\n"
        "def g():\n"
        "    import lrlib\n"
        "    return lrlib.import_traces, lrlib.prune\n"
    )
    assert outside_core({"core/probe.py": probe}, core) == [
        "core/probe.py:4 lrlib.evaluate",
        "core/probe.py:6 lrlib.data.dataset.load_steps",
        "core/probe.py:7 lrlib.report.plots",
        "core/probe.py:10 lrlib.import_traces",
    ]
    assert outside_core({"__main__.py": ROOT / "__main__.py"}, core) == []  # its door
    assert outside_core({"cli.py": ROOT / "__main__.py"}, core) == ["cli.py:1 lrlib.cli.main"]
