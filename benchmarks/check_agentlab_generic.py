"""Runs the AgentLab example of ``lrlab.agent.preprocess`` exactly as documented: the code
block of its docstring is executed, and the ``ReducedGenericAgent`` it defines plays MiniWoB++
episodes in Debian's chromium the way BrowserGym's loop drives an agent
(``obs_preprocessor`` -> ``get_action`` -> ``env.step``), with AgentLab's own prompt and the
embedded SmolLM2-135M-Instruct behind AgentLab's vLLM chat model.

Needs AgentLab beside lrlib's ``live`` extra (not a dependency of lrlib). AgentLab 0.4.2's
full dependency set does not resolve on Python 3.11 here; what this check imports installs
with ``pip install --no-deps agentlab`` and then ``pip install --only-binary :all: ipython
'openai<2' anthropic litellm tiktoken python-dotenv python-slugify gitpython pyyaml pillow
contexttimer`` (measured on 2026-11-25).

Usage: ``python benchmarks/check_agentlab_generic.py [tasks] [seeds]``. It starts the embedded
model (SmolLM2-135M-Instruct, local CPU) and says so first.
"""

from __future__ import annotations

import os
import re
import sys
import time

INSTALL = (
    "AgentLab is not installed (not a dependency of lrlib): pip install --no-deps agentlab, "
    "then pip install --only-binary :all: ipython anthropic litellm python-dotenv "
    "python-slugify gitpython pyyaml pillow contexttimer (with lrlib's live extra: pip install "
    "-e '.[live]')"
)


def documented_code() -> str:
    """The code block of ``lrlab.agent.preprocess``'s docstring: the indented lines after
    its ``::`` (the literal block ends at the first line back at the margin)."""
    import lrlab.agent.preprocess as pre

    after = pre.__doc__.split("::\n", 1)[1].splitlines()
    block = []
    for line in after:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip("\n") + "\n"


def documented_example() -> dict:
    """Execute the code block of ``lrlab.agent.preprocess``'s docstring; its names."""
    names: dict = {}
    exec(compile(documented_code(), "preprocess-docstring-example", "exec"), names)  # noqa: S102
    return names


def main(tasks: list[str], seeds: int) -> int:
    try:
        from agentlab.agents.generic_agent.agent_configs import FLAGS_8B
        from agentlab.llm.chat_api import SelfHostedModelArgs
    except ModuleNotFoundError as exc:
        print(f"check_agentlab_generic: {INSTALL} ({exc})", file=sys.stderr)
        return 2

    from lrlab.agent.miniwob import MiniWoB
    from lrlab.server import MODEL_LABEL, shared_server

    print(f"check: starts the embedded model {MODEL_LABEL} (local CPU) for AgentLab's GenericAgent")
    server = shared_server()
    os.environ["VLLM_API_URL"], os.environ["VLLM_API_KEY"] = server.base_url, server.api_key
    example = documented_example()
    chat = SelfHostedModelArgs(
        model_name=MODEL_LABEL, backend="vllm", max_total_tokens=8192, max_input_tokens=7000,
        max_new_tokens=256, temperature=0.0,
    )  # fmt: skip
    agent_args = example["ReducedGenericAgentArgs"](chat_model_args=chat, flags=FLAGS_8B)
    results = []
    with MiniWoB() as mw:
        for task in tasks:
            for seed in range(seeds):
                agent = agent_args.make_agent()
                env = mw.env(task)
                obs, _ = env.reset(seed=seed)
                reward, steps, infos = 0.0, 0, []
                for steps in range(1, 6):  # noqa: B007
                    obs = agent.obs_preprocessor(obs)
                    infos.append(obs["lrlib"])
                    t = time.perf_counter()
                    action, _ = agent.get_action(obs)
                    llm_s = time.perf_counter() - t
                    obs, reward, terminated, truncated, _ = env.step(action)
                    if terminated or truncated:
                        break
                kept = [f"{len(i['kept'])}/{i['n_lines']}" for i in infos]
                ms = [round(i["latency_s"] * 1000, 1) for i in infos]
                print(f"{task} seed {seed}: reward {reward}, {steps} steps, lines kept {kept}, "
                      f"lrlib ms {ms}, last answer {llm_s:.0f} s, action {action!r}")  # fmt: skip
                results.append(reward)
                mw.close_env(task)
    print(f"{sum(r > 0 for r in results)}/{len(results)} episodes rewarded")
    return 0


if __name__ == "__main__":
    names = sys.argv[1] if len(sys.argv) > 1 else "click-test,click-button,focus-text"
    sys.exit(main(re.split(r"[,\s]+", names.strip()), int(sys.argv[2]) if len(sys.argv) > 2 else 1))
