"""lrlib: LineRetriever and its baselines over recorded BrowserGym observations.

The public API is the names below; each is imported on first use, so ``import lrlib`` is
instant and touches no network. Submodules (``lrlib.plots``, ``lrlib.costs``...) load the same way.

>>> import lrlib
>>> tree = lrlib.parse("RootWebArea 'Shop'\\n\\t[4] button 'Buy'")
>>> sel = lrlib.parse_answer("<answer>[(2, 2)]</answer>", n_lines=len(tree))
>>> lrlib.prune(tree, sel, "structure").text
"RootWebArea\\n\\t[4] button 'Buy'"
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API: dict[str, str] = {
    # tree, answers, pruning, tokens: the pure-text core
    "AxTree": "axtree",
    "Line": "axtree",
    "parse": "axtree",
    "Selection": "ranges",
    "AnswerParseError": "ranges",
    "parse_answer": "ranges",
    "prune": "pruning",
    "Pruned": "pruning",
    "count_tokens": "tokens",
    "truncate_bottom": "tokens",
    "PromptVariant": "prompts",
    "PromptOptions": "prompts",
    "get_prompt": "prompts",
    "register_prompt": "prompts",
    "list_prompts": "prompts",
    "render": "views",
    "register_view": "views",
    "list_views": "views",
    "neutralise": "sanitize",
    "sanitize_tree": "sanitize",
    "sanitize_reduction": "sanitize",
    # steps and reducers
    "Step": "step",
    "Reducer": "reducers",
    "Reduction": "reducers",
    "get_reducer": "reducers",
    "register_reducer": "reducers",
    "list_reducers": "reducers",
    # recorded observations
    "load_observations": "data",
    "load_steps": "data",
    "import_traces": "importer",
    # the LLM layer
    "LLMClient": "llm",
    "ResponseCache": "cache",
    "EmbeddedServer": "server",
    # evaluation and provenance
    "evaluate": "evaluation",
    "cross_validate": "crossval",
    "provenance": "runinfo",
}
_SUBMODULES = {  # every module, importable lazily as lrlib.<name>
    "actions",
    "axtree",
    "cache",
    "cli",
    "completions",
    "costs",
    "crossval",
    "data",
    "echo",
    "embeddings",
    "evaluation",
    "evidence",
    "explore",
    "figures",
    "forest",
    "importer",
    "inject",
    "injection_eval",
    "intervals",
    "llm",
    "llmerrors",
    "metrics",
    "packs",
    "paths",
    "plots",
    "prompts",
    "pruning",
    "ranges",
    "reducers",
    "replay",
    "run",
    "runinfo",
    "safepickle",
    "sanitize",
    "server",
    "step",
    "tables",
    "tokens",
    "traces",
    "views",
    "windows",
}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name in _API:
        value = getattr(importlib.import_module(f".{_API[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'lrlib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | _SUBMODULES | {"__version__"})
