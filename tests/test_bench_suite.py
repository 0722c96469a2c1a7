"""benchmarks/bench_suite.py reads a real pytest JUnit report: counts and slowest tests."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from conftest import REPO


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_suite", REPO / "benchmarks" / "bench_suite.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_junit_counts_and_slowest_from_a_real_run(tmp_path):
    (tmp_path / "test_small.py").write_text(
        "import time, pytest\n"
        "@pytest.fixture\n"
        "def slow_setup():\n"
        "    time.sleep(0.3)\n"
        "def test_ok(slow_setup): pass\n"
        "def test_fast(): pass\n"
        "def test_skip(): pytest.skip('no')\n"
        "def test_bad(): assert False\n"
    )
    xml = tmp_path / "r.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--junitxml={xml}", str(tmp_path / "test_small.py")]  # fmt: skip
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # pytest alone: JUnit is its own
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, check=False, env=env)
    counts, times = _bench().junit_tests(xml)
    assert counts == {"passed": 2, "failed": 1, "skipped": 1}
    assert times[0][1].endswith("test_ok") and times[0][0] >= 0.3  # setup time counts
    assert [s for s, _ in times] == sorted((s for s, _ in times), reverse=True)


def test_a_phase_measures_its_child_process_cpu():
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    row = _bench().phase("burn", [sys.executable, "-c", burn])
    assert row["status"] == 0 and row["cpu_s"] >= 0.3 and row["wall_s"] >= row["cpu_s"] - 0.05
    assert row["machine_cpu_s"] >= 0.25  # every core's busy time holds the child's too


def test_busy_share_sees_a_busy_core():
    """The idle check reads the cores, not the load average: one spinning child shows."""
    burn = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        share = _bench().busy_share(0.5)
    finally:
        burn.kill()
        burn.wait()
    assert 0.9 / os.cpu_count() <= share <= 1.0
