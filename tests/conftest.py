"""Shared fixtures: real trees from the recorded traces, and the traces folder itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]


def _traces_dir() -> Path:
    return Path(os.environ.get("LRLIB_TRACES", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def real_trees() -> dict[str, dict]:
    """name -> {goal, action_raw, tree, source} for the trees in tests/fixtures/trees.json."""
    return {t["name"]: t for t in json.loads((FIXTURES / "trees.json").read_text())}


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
