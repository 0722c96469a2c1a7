"""Shared fixtures: real trees from the recorded traces, and the traces folder itself."""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
from pathlib import Path

import pytest

# One BLAS thread per xdist worker: each worker has at most a core, and numpy's OpenBLAS would
# start one thread per core in every worker; two workers' threads spin-waiting on two cores
# made the BLAS-heavy tests several times slower (tests/test_learned.py's nested CV: 169 s of
# wall and 60 s of CPU with 2 threads, 22 s and 13 s with 1, on this loaded machine). It covers
# `make test` and a plain `pytest -n 2` alike (numpy is not imported yet when this runs).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Compiled bytecode is kept (in the git-ignored __pycache__ folders) even where the shell sets
# PYTHONDONTWRITEBYTECODE, as this machine does: else every worker rewrote the test modules'
# assertions and every notebook kernel and command the tests start compiled lrlib and lrlab
# again (13 of 425 CPU s of the suite on a fresh clone, benchmarks/bench_suite.py). Only the
# test processes write; what they write serves the processes they start.
sys.dont_write_bytecode = False

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]


# `make test` runs the suite on every core (pytest-xdist, `-n auto --dist loadgroup`: a worker
# per core and one more, below; a plain `pytest -n 2` gets loadgroup too). Tests of one xdist
# group run on one worker, one after the other:
# - "heavy": the JupyterLab, MiniWoB, embedded llama.cpp and Ray modules; two at once would
#   fight for the same two cores and run into their page and model timeouts (and Ray's own
#   30 s for its local node to start: 8.5 s on an idle machine, 19 s beside two busy
#   processes), and would start two llama servers;
# - a module that builds a fixture of module (or session) scope: its tests share one worker,
#   so the fixture (a live run, a JupyterLab, a trained model...) is built on one worker. A
#   module fixture is still built again when the worker runs another module's test in between
#   (pytest tears it down): the costliest (live episodes) are of session scope.
HEAVY_MODULES = {"test_browser", "test_agent_live", "test_server", "test_sharded"}
_MODULE_FIXTURE = re.compile(r"fixture\(\s*scope=[\"'](module|package|session)[\"']")


@functools.cache
def _xdist_group(module: object) -> str | None:
    name = getattr(module, "__name__", "").rpartition(".")[2]
    if name in HEAVY_MODULES:
        return "heavy"
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return None
    return name if _MODULE_FIXTURE.search(source) else None


def pytest_xdist_auto_num_workers(config) -> int | None:
    """`-n auto` (as `make test`): a worker per core and one more. The live episodes, the
    JupyterLab tests and the retry drills wait for pages and timers a sixth of the time; a
    third worker on two cores fills that wait (224 vs 238 s and 252 vs 265 s, 3 vs 2 workers,
    each pair back to back on one clone; docs/performance.md). xdist's own
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from lrlab.scale.sharded import default_jobs  # the cores this process may use

    return default_jobs() + 1


def pytest_configure(config):
    """`pytest -n N` alone distributes with "load", which ignores the groups: use loadgroup
    (the same for tests in no group)."""
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks into node ids
def pytest_collection_modifyitems(config, items):
    """Put each test in its xdist group (above); without pytest-xdist the marks do nothing.
    Under xdist, the ``slow`` tests of no group go first: xdist hands out the groups (most
    tests first), then single tests in this order, so the long ones start early and short
    ones fill both workers' last seconds (they used to end the run on one worker)."""
    grouped = set()
    for item in items:
        group = _xdist_group(getattr(item, "module", None))
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            grouped.add(item.nodeid)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda i: i.nodeid in grouped or i.get_closest_marker("slow") is None)


def live_missing(packages: list[str]) -> str | None:
    """Why live episodes cannot run here, for a skip: no browser ``lrlib live`` would drive
    (:func:`lrlab.agent.miniwob.chromium_path`, the one place that picks it) or the missing
    ``packages``; None when they can."""
    from lrlab.agent.miniwob import chromium_path

    try:
        chromium_path()
    except FileNotFoundError as err:
        return str(err)
    if packages:
        return f"the live extra is not installed ({', '.join(packages)}): pip install -e '.[live]'"
    return None


def _traces_dir() -> Path:
    return Path(os.environ.get("LRLIB_TRACES", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def real_trees() -> dict[str, dict]:
    """name -> {goal, action_raw, tree, source} for the trees in tests/fixtures/trees.json."""
    return {t["name"]: t for t in json.loads((FIXTURES / "trees.json").read_text())}


@pytest.fixture(scope="session")
def tree_steps(real_trees):
    """The fixture trees as steps (goal, tree, the recorded action's bids as targets)."""
    from lrlib.core.step import Step
    from lrlib.data.actions import action_bids

    return [
        Step(goal=t["goal"], tree=t["tree"], target_bids=tuple(action_bids(t["action_raw"])),
             step_id=name)
        for name, t in real_trees.items()
    ]  # fmt: skip


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """../shared/traces (or $LRLIB_TRACES); the tests that need it skip when it is absent."""
    path = _traces_dir()
    if not path.is_dir():
        pytest.skip(f"recorded traces not found at {path}")
    return path


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch):
    """Tests run offline with no API key, whatever the developer's shell holds."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "LRLIB_MODEL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def threaded_fake():
    """A real local HTTP server that answers requests concurrently (pytest-httpserver's
    default serves one at a time): for slow or parallel model answers."""
    from pytest_httpserver import HTTPServer

    server = HTTPServer(threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()
