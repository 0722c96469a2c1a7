"""Every name the benchmark scripts import from lrlib or lrlab exists, including imports
inside functions, which run only when that part of a script does (a renamed
constant once broke ``bench_llm.py --embedded`` without any test noticing)."""

from __future__ import annotations

import ast
import importlib

import pytest
from conftest import REPO

SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))


def _imports(path) -> list[tuple[str, str, int]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in ("lrlib", "lrlab"):
                out += [(node.module, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [
                (a.name, "", node.lineno)
                for a in node.names
                if a.name.split(".")[0] in ("lrlib", "lrlab")
            ]
    return out


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_imports_resolve(path):
    missing = []
    for module, name, line in _imports(path):
        mod = importlib.import_module(module)
        if name and name != "*" and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{path.name}:{line}: {module}.{name}")
    assert not missing, missing


def test_the_check_finds_a_missing_name(tmp_path):
    bad = tmp_path / "bench_bad.py"
    bad.write_text("def f():\n    from lrlib.report.run import NO_SUCH_NAME\n")
    assert _imports(bad) == [("lrlib.report.run", "NO_SUCH_NAME", 2)]
    with pytest.raises(AssertionError, match="NO_SUCH_NAME"):
        test_benchmark_imports_resolve(bad)
