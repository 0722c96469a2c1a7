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
