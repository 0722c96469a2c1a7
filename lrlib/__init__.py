"""lrlib: LineRetriever and its baselines over recorded BrowserGym observations.

The public API is :data:`__all__`: each name is imported from the module that defines it
on first use, so ``import lrlib`` is instant and touches no network. Everything else lives
in the layers' modules (``from lrlib.report import plots``, ``lrlib.eval.costs``...).

>>> import lrlib
>>> tree = lrlib.parse("RootWebArea 'Shop'\\n\\t[4] button 'Buy'")
>>> sel = lrlib.parse_answer("<answer>[(2, 2)]</answer>", n_lines=len(tree))
>>> lrlib.prune(tree, sel, "structure").text
"RootWebArea\\n\\t[4] button 'Buy'"
"""

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = [
    # the text core: parse a tree, read a model's answer, prune, count tokens
    "AxTree",
    "parse",
    "Selection",
    "AnswerParseError",
    "parse_answer",
    "prune",
    "count_tokens",
    # prompt variants
    "PromptVariant",
    "get_prompt",
    "register_prompt",
    "list_prompts",
    # steps and reducers
    "Step",
    "Reducer",
    "Output",
    "Reduction",
    "Knob",
    "get_reducer",
    "register_reducer",
    "list_reducers",
    "LineRetriever",
    "RetrieverConfig",
    "LLMClient",
    # recorded observations
    "load_observations",
    "load_steps",
    "import_traces",
    # evaluation and provenance
    "evaluate",
    "provenance",
]

# the module defining each public name (read by __getattr__ on first use)
_HOME = {
    "AxTree": "core.axtree",
    "parse": "core.axtree",
    "Selection": "core.ranges",
    "AnswerParseError": "core.ranges",
    "parse_answer": "core.ranges",
    "prune": "core.pruning",
    "count_tokens": "core.tokens",
    "PromptVariant": "core.prompts",
    "get_prompt": "core.prompts",
    "register_prompt": "core.prompts",
    "list_prompts": "core.prompts",
    "Step": "core.step",
    "Reducer": "reducers.base",
    "Output": "reducers.base",
    "Reduction": "reducers.base",
    "Knob": "reducers.base",
    "get_reducer": "reducers.base",
    "register_reducer": "reducers.base",
    "list_reducers": "reducers.base",
    "LineRetriever": "reducers.lineretriever",
    "RetrieverConfig": "reducers.lineretriever",
    "LLMClient": "llm.client",
    "load_observations": "data.dataset",
    "load_steps": "data.dataset",
    "import_traces": "data.importer",
    "evaluate": "eval.evaluation",
    "provenance": "runinfo",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use and kept."""
    if name not in _HOME:
        raise AttributeError(f"module 'lrlib' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lrlib.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, ``__version__`` and the submodules imported so far."""
    loaded = [k for k, v in globals().items() if getattr(v, "__name__", None) == f"lrlib.{k}"]
    return sorted({*__all__, "__version__", *loaded})
