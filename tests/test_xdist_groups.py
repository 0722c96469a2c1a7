"""`make test` runs on every core (pytest-xdist): the groups of tests/conftest.py keep the
chromium and embedded-model modules on one worker, one after the other, and each module
that builds a module-scoped fixture on one worker (the fixture built once)."""

from __future__ import annotations

import importlib

import conftest
import pytest


@pytest.mark.parametrize("name", sorted(conftest.HEAVY_MODULES))
def test_browser_and_model_modules_share_one_group(name):
    assert conftest._xdist_group(importlib.import_module(name)) == "heavy"


def test_a_module_fixture_keeps_its_module_on_one_worker():
    pruning = importlib.import_module("test_core_pruning")  # a fixture(scope="module")
    ranges = importlib.import_module("test_core_ranges")  # none: spread over the workers
    assert conftest._xdist_group(pruning) == "test_core_pruning"
    assert conftest._xdist_group(ranges) is None


def test_plain_dash_n_distributes_by_group(pytestconfig):
    class Option:
        dist = "load"

    class Config:
        option = Option()

    conftest.pytest_configure(Config)
    assert Config.option.dist == "loadgroup"
    assert pytestconfig.getini("markers") and any(
        m.startswith("xdist_group") for m in pytestconfig.getini("markers")
    )


def test_groups_really_keep_a_module_on_one_worker(tmp_path):
    """The scheduling itself, in a pytest-xdist run of a small project that uses these hooks:
    each module's tests land on one worker (pytest 9.2 silently broke this; the dev extra
    pins pytest below it)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(conftest.__file__)
    (tmp_path / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('repo_conftest', {str(here)!r})\n"
        "repo = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(repo)\n"
        "pytest_configure = repo.pytest_configure\n"
        "pytest_collection_modifyitems = repo.pytest_collection_modifyitems\n"
    )
    for name in ("a", "b", "c"):
        (tmp_path / f"test_{name}.py").write_text(
            "import os\nimport pytest\n\n"
            '@pytest.fixture(scope="module")\ndef built():\n    return 1\n\n'
            '@pytest.mark.parametrize("i", range(6))\n'
            "def test_it(built, i, record_property):\n"
            f"    open({str(tmp_path / name)!r} + os.environ['PYTEST_XDIST_WORKER'], 'w').close()\n"
        )
    # only pytest-xdist among the installed plugins: the scheduling is theirs alone, and three
    # processes skip loading the others (a second or more of imports each)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-q",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    for name in ("a", "b", "c"):
        workers = sorted(p.name[1:] for p in tmp_path.glob(f"{name}gw*"))
        assert len(workers) == 1, f"test_{name}.py ran on {workers}"


def test_an_xdist_worker_runs_numpy_blas_on_one_thread():
    """Two workers on two cores: a BLAS thread per core in each would spin against the other
    worker's (conftest.py). Under `make test` this runs in a worker."""
    import os

    import numpy  # noqa: F401  (loads OpenBLAS)
    from threadpoolctl import threadpool_info

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not in an xdist worker (make test runs one)")
    pools = [p for p in threadpool_info() if p["internal_api"] == "openblas"]
    assert pools and all(p["num_threads"] == 1 for p in pools), pools
