"""What the research wing adds to lrlib, declared for :mod:`lrlib.plugins` (entry point
``lrlib.plugins: lab`` in pyproject.toml): its reducers, its subcommands, the embedded
local model (SmolLM2-135M-Instruct behind llama.cpp's server, :mod:`lrlab.server`) and
``lrlib evaluate``'s backend for large files (by episode on every core,
:mod:`lrlab.scale.evaluate_backend`).

>>> "learned" in {m.rsplit(".", 1)[1] for m in REDUCER_MODULES}
True
"""

REDUCER_MODULES = tuple(
    f"lrlab.reducers.{name}" for name in ("anchor", "bm25", "embedding", "learned", "program")
)
LOCAL_SERVER = "lrlab.server:shared_server"
LOCAL_SLOTS = "lrlab.server:shared_parallel"
LOCAL_SPEED = "lrlab.server:measured_speed"
EVALUATE_BACKEND = "lrlab.scale.evaluate_backend"
COMMANDS = {
    "import-weblinx": (
        "lrlab.scale.weblinx_command",
        "import WebLINX's BrowserGym release (CC BY-NC-SA 4.0) into a dataset",
    ),
    "serve": ("lrlab.server", "serve the embedded local model (OpenAI-compatible, 127.0.0.1)"),
    "embeddings": (
        "lrlab.report.packs",
        "compute the notebooks' embeddings and write the vector pack",
    ),
    "inject": ("lrlab.injection.inject_command", "build and score the prompt-injection benchmark"),
    "live": (
        "lrlab.agent.live_command",
        "MiniWoB++ episodes offline in chromium with a reducer in the loop (AgentLab layout)",
    ),
    "mfs": (
        "lrlab.agent.mfs_command",
        "minimal failure sets of recorded steps for a policy (ddmin; cached, resumable)",
    ),
}
