"""Every script a document cites runs (issue 36, item 8): the AgentLab example of
``lrlab.agent.preprocess`` that ``benchmarks/check_agentlab_generic.py`` executes, and the
docs/live.md recipe for a reducer in your own BrowserGym loop, with Debian's chromium."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import live_missing

from lrlab.agent.miniwob import missing_packages

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "check_agentlab_generic.py"
_LIVE_WHY = live_missing(missing_packages())  # the docs/live.md recipe needs both


def _check_module():
    spec = importlib.util.spec_from_file_location("check_agentlab_generic", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _agentlab_missing() -> str | None:
    try:
        import agentlab.agents.generic_agent.generic_agent  # noqa: F401
        import agentlab.llm.chat_api  # noqa: F401
    except Exception as exc:  # noqa: BLE001  (missing, or a dependency of it missing)
        return f"AgentLab not importable ({type(exc).__name__}: {exc}); see the script's docstring"
    return None


def test_the_documented_block_is_code():
    """The block the script executes is the docstring's code, not its prose."""
    code = _check_module().documented_code()
    compile(code, "preprocess-docstring-example", "exec")
    assert "class ReducedGenericAgentArgs" in code and "(``benchmarks" not in code


@pytest.mark.skipif(_agentlab_missing() is None, reason="AgentLab is installed")
def test_without_agentlab_the_script_says_how_to_install():
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "pip install --no-deps agentlab" in line, line


@pytest.mark.skipif(_agentlab_missing() is not None, reason=str(_agentlab_missing()))
def test_the_documented_agentlab_example_runs():
    """The docstring's code runs with AgentLab: a GenericAgent whose preprocessor reduces."""
    from agentlab.agents.generic_agent.generic_agent import GenericAgent

    names = _check_module().documented_example()
    agent = names["ReducedGenericAgent"]
    assert issubclass(agent, GenericAgent)
    obs = {"goal": "Click Ok", "axtree_txt": "RootWebArea 'T'\n\t[15] button 'Ok'\n\t[17] link 'x'"}
    out = agent.reduce(obs, [])
    assert out.info["reducer"] == "learned" and out.text.startswith("RootWebArea")


# ---- the docs/live.md recipe: a reducer in your own BrowserGym loop -----------------------


def recipe() -> str:
    text = (REPO / "docs" / "live.md").read_text()
    m = re.search(r"<!-- recipe: browsergym-loop\b[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert m, "docs/live.md has no browsergym-loop recipe"
    return m.group(1)


@pytest.mark.skipif(_LIVE_WHY is not None, reason=str(_LIVE_WHY))
def test_browsergym_loop_recipe_runs_as_written(tmp_path):
    from lrlab.agent.miniwob import MiniWoB

    (tmp_path / "my_loop.py").write_text(recipe())
    with MiniWoB() as mw:  # only its local server of the miniwob pages: the recipe's own loop
        env = {**os.environ, "MINIWOB_URL": mw.base + "miniwob/", "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "my_loop.py"], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^learned kept \d+ of \d+ lines$", done.stdout, re.M), done.stdout
    assert "reward 1" in done.stdout, done.stdout
