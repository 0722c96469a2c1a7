"""lrlib: LineRetriever and its baselines over recorded BrowserGym observations.

The public API is the names below; each is imported on first use, so ``import lrlib`` is
instant and touches no network. Submodules (``lrlib.report.plots``, ``lrlib.eval.costs``...) load the same way.

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
    "AxTree": "core.axtree",
    "Line": "core.axtree",
    "parse": "core.axtree",
    "Selection": "core.ranges",
    "AnswerParseError": "core.ranges",
    "parse_answer": "core.ranges",
    "prune": "core.pruning",
    "Pruned": "core.pruning",
    "count_tokens": "core.tokens",
    "truncate_bottom": "core.tokens",
    "PromptVariant": "core.prompts",
    "PromptOptions": "core.prompts",
    "get_prompt": "core.prompts",
    "register_prompt": "core.prompts",
    "list_prompts": "core.prompts",
    "render": "core.views",
    "register_view": "core.views",
    "list_views": "core.views",
    "neutralise": "core.sanitize",
    "sanitize_tree": "core.sanitize",
    "sanitize_reduction": "core.sanitize",
    # steps and reducers
    "Step": "core.step",
    "Reducer": "reducers",
    "Reduction": "reducers",
    "get_reducer": "reducers",
    "register_reducer": "reducers",
    "list_reducers": "reducers",
    # recorded observations
    "load_observations": "data.dataset",
    "load_steps": "data.dataset",
    "import_traces": "data.importer",
    # the LLM layer
    "LLMClient": "llm.client",
    "ResponseCache": "llm.cache",
    "EmbeddedServer": "llm.server",
    # evaluation and provenance
    "evaluate": "eval.evaluation",
    "cross_validate": "data.crossval",
    "provenance": "runinfo",
}
# the layers, and every module under its old flat name (importable lazily as lrlib.<name>)
_SUBMODULES: dict[str, str] = {
    "core": "core",
    "data": "data",
    "llm": "llm",
    "eval": "eval",
    "report": "report",
    "actions": "data.actions",
    "axtree": "core.axtree",
    "cache": "llm.cache",
    "cli": "cli",
    "completions": "llm.completions",
    "costs": "eval.costs",
    "crossval": "data.crossval",
    "echo": "core.echo",
    "embeddings": "reducers.embeddings",
    "evaluation": "eval.evaluation",
    "evidence": "data.evidence",
    "explore": "report.explore",
    "figures": "report.figures",
    "forest": "report.forest",
    "importer": "data.importer",
    "inject": "eval.inject",
    "injection_eval": "report.injection_eval",
    "intervals": "eval.intervals",
    "llmerrors": "llm.errors",
    "metrics": "eval.metrics",
    "packs": "report.packs",
    "paths": "paths",
    "plots": "report.plots",
    "prompts": "core.prompts",
    "pruning": "core.pruning",
    "ranges": "core.ranges",
    "reducers": "reducers",
    "replay": "report.replay",
    "run": "report.run",
    "runinfo": "runinfo",
    "safepickle": "data.safepickle",
    "sanitize": "core.sanitize",
    "server": "llm.server",
    "step": "core.step",
    "tables": "report.tables",
    "tokens": "core.tokens",
    "traces": "data.traces",
    "views": "core.views",
}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name in _API:
        value = getattr(importlib.import_module(f".{_API[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    raise AttributeError(f"module 'lrlib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(_SUBMODULES) | {"__version__"})
