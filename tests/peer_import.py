"""Import the peer implementation (AgentLab pull request 302) inside the test process.

The unmodified AgentLab files live in ``../shared/peer/agentlab-pr302`` (next to the
repository, found through ``lrlib.paths.REPO_DIR``). Their pure functions are what lrlib's
AgentLab-faithful modes are compared against. Their modules import heavy packages that
are not installed here (browsergym, bgym, AgentLab's LLM layer, torch, langchain); this
helper puts small stand-ins for those into ``sys.modules`` (only names the peer files
import; nothing of lrlib uses them) and the peer's ``src`` on ``sys.path``.

Two stand-ins carry behaviour, written here from AgentLab's documented semantics because
the peer folder does not hold ``agentlab/llm/llm_utils.py``:

- ``count_tokens(text, model)``: tiktoken's count for the model named after the last
  ``/`` (``openai/gpt-4o`` -> o200k_base), special-token strings counted as text.
- ``parse_html_tags_raise(text, keys, merge_multiple)``: the content of every
  ``<key>...</key>`` (non-greedy, across lines, stripped); several blocks are joined with
  newlines when ``merge_multiple``; a missing key raises ``ParseError``.

Use :func:`peer` (it skips the calling test with a clear reason when the folder is absent).
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from functools import cache, lru_cache

from lrlib import paths
from lrlib.core.tokens import get_encoding

PEER_DIR = paths.REPO_DIR.parent / "shared" / "peer" / "agentlab-pr302"
SKIP_REASON = f"peer implementation (AgentLab PR 302) not found at {PEER_DIR}"


class ParseError(Exception):
    """Stand-in for agentlab.llm.llm_utils.ParseError."""


@lru_cache(maxsize=8)  # fit_tokens re-measures an unchanged prompt in its idle rounds
def count_tokens(text: str, model: str = "openai/gpt-4") -> int:
    """Stand-in for agentlab.llm.llm_utils.count_tokens (tiktoken, by model name)."""
    import tiktoken

    get_encoding("o200k_base")  # lrlib seeds tiktoken's offline cache
    return len(
        tiktoken.encoding_for_model(model.split("/")[-1]).encode(text, disallowed_special=())
    )


def parse_html_tags_raise(text: str, keys=(), optional_keys=(), merge_multiple=False) -> dict:
    """Stand-in for agentlab.llm.llm_utils.parse_html_tags_raise."""
    out, missing = {}, []
    for key in (*keys, *optional_keys):
        found = [m.strip() for m in re.findall(rf"<{key}>(.*?)</{key}>", text, re.DOTALL)]
        if not found:
            if key not in optional_keys:
                missing.append(key)
            continue
        if len(found) > 1 and not merge_multiple:
            raise ParseError(f"Found multiple instances of the key {key}.")
        out[key] = "\n".join(found) if merge_multiple else found[0]
    if missing:
        raise ParseError(f"Missing the key(s) {missing} in the answer.")
    return out


class _Anything:
    """A class that accepts any construction (base classes and flags of the peer files)."""

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs = args, kwargs


@dataclass
class _ArgsBase:
    """Stand-in for GenericAgentArgs (a dataclass the peer's FocusAgentArgs extends)."""


def _module(name: str, **attrs) -> None:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__path__ = []  # importable as a package, so submodules can be stubbed too
    sys.modules.setdefault(name, mod)


def _install_stubs() -> None:
    for name in ("browsergym", "browsergym.core", "browsergym.core.action", "browsergym.utils"):
        _module(name)
    _module("bgym", HighLevelActionSetArgs=_Anything, Benchmark=_Anything)
    _module("browsergym.core.action.base", AbstractActionSet=_Anything)
    _module(
        "browsergym.utils.obs",
        **dict.fromkeys(
            ("flatten_axtree_to_str", "flatten_dom_to_str", "overlay_som", "prune_html"), None
        ),
    )
    _module("browsergym.experiments", Agent=_Anything, AgentInfo=_Anything)
    _module("agentlab.llm")
    _module(
        "agentlab.llm.llm_utils",
        BaseMessage=type("BaseMessage", (), {}),
        ParseError=ParseError,
        count_tokens=count_tokens,
        extract_code_blocks=None,
        image_to_jpg_base64_url=None,
        parse_html_tags_raise=parse_html_tags_raise,
        retry=None,
    )
    _module("agentlab.llm.chat_api", ChatModelArgs=_Anything)
    _module("agentlab.agents.generic_agent")
    _module(
        "agentlab.agents.generic_agent.generic_agent",
        GenericAgent=_Anything,
        GenericAgentArgs=_ArgsBase,
    )
    _module("agentlab.agents.generic_agent.generic_agent_prompt", GenericPromptFlags=_Anything)


@cache
def _load() -> types.SimpleNamespace:
    get_encoding("o200k_base")  # the peer builds tiktoken encoders at import: seed offline files
    get_encoding("cl100k_base")
    src = str(PEER_DIR / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    _install_stubs()
    import importlib

    def load(name: str):
        return importlib.import_module(f"agentlab.agents.{name}")

    return types.SimpleNamespace(
        dp=load("dynamic_prompting"),
        retriever_utils=load("focus_agent.llm_retriever_utils").LlmRetrieverUtils,
        focus_utils=load("focus_agent.utils"),
        focus_agent=load("focus_agent.focus_agent"),
        prompts=load("focus_agent.llm_retriever_prompt"),
        bm25_utils=load("bm25_agent.utils"),
        bm25_retriever=load("bm25_agent.bm25_retriever"),
        embedding_utils=load("embedding_agent.utils"),
    )


def available() -> bool:
    """True when the peer folder is next to the repository."""
    return (PEER_DIR / "src" / "agentlab").is_dir()


def peer() -> types.SimpleNamespace:
    """The peer's modules (``dp``, ``retriever_utils``, ``focus_utils``, ``focus_agent``,
    ``prompts``, ``bm25_utils``, ``bm25_retriever``, ``embedding_utils``); skips the
    calling test when the peer folder is absent."""
    if not available():
        import pytest

        pytest.skip(SKIP_REASON)
    return _load()


@cache
def recorded_steps(every: int = 4) -> tuple:
    """Every ``every``-th recorded step of data/observations.jsonl.gz (112 of 446 steps)."""
    from lrlib.data.dataset import load_steps

    return tuple(load_steps()[::every])


def tree_lines():
    """Hypothesis strategy: AxTree-like lines (tabs, optional bid, role, quoted names,
    odd characters), as lists of non-blank lines without line separators of any kind."""
    from hypothesis import strategies as st

    text = st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Zl", "Zp", "Cc"), blacklist_characters="[]"
        )
        | st.sampled_from(list(" '\",:=[]<>()-0123456789")),
        max_size=12,
    )
    bid = st.one_of(st.none(), st.from_regex(r"[a-z]?[0-9]{1,4}", fullmatch=True))
    role = st.sampled_from(["link", "button", "StaticText", "textbox", "generic", "row", ""])
    line = st.builds(
        lambda depth, b, r, name: (
            "\t" * depth
            + (f"[{b}] " if b is not None else "")
            + (r + (f" '{name}'" if name else "") if r else name or "x")
        ),
        st.integers(0, 4),
        bid,
        role,
        text,
    )
    return st.lists(line, min_size=1, max_size=60).filter(
        lambda ls: all(t.strip() and len(t.splitlines()) == 1 for t in ls)
    )
