"""A policy: goal, action history and observation text in; a BrowserGym action out, with the
lines of the observation it says it relied on (the seeds' "self-reported relevant elements").

Observations are tree texts, possibly reduced; ``numbers`` gives each text line's number in
the full tree (default ``1..n``), so the lines a policy names are always full-tree lines,
whatever reducer ran before it.

- :class:`LLMPolicy` asks any OpenAI-compatible endpoint through :class:`~lrlib.llm.client.LLMClient`
  (the embedded SmolLM2-135M-Instruct by default; every answer cached like any model call).
- :class:`~lrlab.agent.scripted.ScriptedPolicy` reads labels and page text by hand-written
  rules (tests, and the loop's check: it must succeed on the full observation).

Policies are in a registry: :func:`lrlab.agent.policies.get_policy` (its error lists the
valid names).

>>> from lrlab.agent.scripted import ScriptedPolicy
>>> p = ScriptedPolicy()
>>> d = p.act('Click on the "Ok" button.', (), "RootWebArea 'T'\\n\\t[13] button 'no'\\n\\t[15] button 'Ok'")
>>> d.action, d.lines
("click('15')", [3])
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from hashlib import sha256
from typing import Any

from lrlib.core.axtree import NUMBER_FORMAT

NOOP = "noop()"


@dataclass
class Decision:
    """What a policy decided: the action, the full-tree lines it relied on, and its record."""

    action: str
    lines: list[int] = field(default_factory=list)
    stop: bool = False  # the policy cannot go on (the loop ends the episode as failed)
    model: str = ""
    prompt_name: str = ""
    prompt_hash: str = ""
    latency_s: float = 0.0
    from_cache: bool = False
    raw: str = ""

    def record(self) -> dict[str, Any]:
        """As a plain dict (for agent_info and result tables)."""
        return asdict(self)


def numbered(text: str, numbers: Sequence[int] | None = None) -> list[tuple[int, str]]:
    """``(full-tree line number, line)`` pairs of an observation text.

    >>> numbered("a\\nb", [4, 9])
    [(4, 'a'), (9, 'b')]
    """
    lines = text.split("\n") if text else []
    nums = list(numbers) if numbers is not None else list(range(1, len(lines) + 1))
    if len(nums) != len(lines):
        raise ValueError(f"{len(nums)} line numbers for {len(lines)} lines")
    return list(zip(nums, lines, strict=True))


class Policy(ABC):
    """Base class: subclasses set ``name`` and implement :meth:`act`."""

    name = "policy"

    @property
    def model(self) -> str:
        """The model behind the policy (recorded with every result)."""
        return self.name

    @property
    def prompt_hash(self) -> str:
        """A hash of what defines the policy's choices (its prompt, or its rules)."""
        return ""

    @abstractmethod
    def act(
        self,
        goal: str,
        history: Sequence[str],
        text: str,
        numbers: Sequence[int] | None = None,
    ) -> Decision:
        """The next action for ``goal`` after ``history`` on the observation ``text``."""

    def provenance(self) -> dict[str, Any]:
        """Policy name, model and prompt hash."""
        return {"policy": self.name, "policy_model": self.model, "prompt_hash": self.prompt_hash}


# --- a model as the policy ------------------------------------------------------------------

SYSTEM = """You are a web agent. You see a task goal, the actions taken so far and the page's \
accessibility tree; each tree line starts with its line number, and elements you can act on \
carry a [bid]. Choose the ONE next action, written as one of:
click('bid')
fill('bid', 'text')
select_option('bid', 'option text')
noop()
Answer with JSON only: {"action": "the action", "lines": [the line numbers you relied on]}."""

ACTION = re.compile(
    r"^\s*(click|fill|select_option|noop|hover|press|focus|clear|check|uncheck)\(.*\)\s*$", re.S
)

SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "next_action",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "maxLength": 200},
                "lines": {"type": "array", "items": {"type": "integer"}, "maxItems": 12},
            },
            "required": ["action", "lines"],
            "additionalProperties": False,
        },
    },
}


def response_format(text: str, numbers: Sequence[int] | None = None) -> dict[str, Any]:
    """:data:`SCHEMA` narrowed to this observation: the action is a click on one of its
    bids, a fill of one, ``select_option`` on one, or ``noop()``; the lines are among its
    line numbers. (A small model then cannot answer outside the page.)

    >>> f = response_format("[13] button 'no'\\n[15] button 'Ok'")
    >>> f["json_schema"]["schema"]["properties"]["action"]["anyOf"][0]["enum"]
    ["click('13')", "click('15')", 'noop()']
    """
    bids = re.findall(r"^\s*\[([^\]\s']+)\]", text, re.M)
    nums = [n for n, _ in numbered(text, numbers)]
    alt = "|".join(re.escape(b) for b in bids) or "none"
    action = {"anyOf": [
        {"type": "string", "enum": [f"click('{b}')" for b in bids] + [NOOP]},
        {"type": "string", "pattern": f"^(fill|select_option)\\('({alt})', '[^'\\n]{{0,80}}'\\)$"},
    ]}  # fmt: skip
    lines = {"type": "array", "items": {"type": "integer", "enum": nums[:2000]}, "maxItems": 12}
    fmt = json.loads(json.dumps(SCHEMA))
    fmt["json_schema"]["schema"]["properties"] = {"action": action, "lines": lines}
    return dict(fmt)


def messages(
    goal: str, history: Sequence[str], text: str, numbers: Sequence[int] | None = None
) -> list[dict[str, str]]:
    """The chat messages :class:`LLMPolicy` sends (tree lines prefixed with their numbers).

    >>> messages("Click Ok", [], "[15] button 'Ok'")[1]["content"].splitlines()[-1]
    "1: [15] button 'Ok'"
    """
    done = "\n".join(history) if history else "(none)"
    tree = "\n".join(NUMBER_FORMAT.format(n=n) + line for n, line in numbered(text, numbers))
    user = f"# Goal\n{goal}\n\n# Actions so far\n{done}\n\n# Page\n{tree}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_decision(answer: str, shown: set[int] | None = None) -> tuple[str, list[int]]:
    """``(action, lines)`` from a model's answer: JSON ``{"lines", "action"}``, or the first
    line that reads as an action; unreadable answers are ``noop()``. Lines the observation
    did not show are dropped.

    >>> parse_decision('{"lines": [3, 99], "action": "click(\\'15\\')"}', shown={3})
    ("click('15')", [3])
    >>> parse_decision("I think: click('4')")
    ("click('4')", [])
    """
    action, lines = NOOP, []
    m = re.search(r"\{.*\}", answer, re.S)
    if m:
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            if isinstance(obj.get("action"), str) and ACTION.match(obj["action"]):
                action = obj["action"].strip()
            raw = obj.get("lines")
            if isinstance(raw, list):
                lines = [x for x in raw if isinstance(x, int) and not isinstance(x, bool)]
    if action == NOOP:
        found = re.search(r"\b(click|fill|select_option)\([^()\n]*\)", answer)
        action = found.group(0) if found else NOOP
    if shown is not None:
        lines = [x for x in lines if x in shown]
    return action, sorted(set(lines))


class LLMPolicy(Policy):
    """A chat model as the policy, through :class:`~lrlib.llm.client.LLMClient` (cached).

    ``client`` (or ``model``/``base_url``/``offline``, passed to a new client): the embedded
    SmolLM2-135M-Instruct when no endpoint is configured, as everywhere in lrlib.

    >>> from lrlib.llm.client import LLMClient
    >>> p = LLMPolicy(client=LLMClient("m", base_url="http://localhost:8000/v1", cache=False))
    >>> p.model, len(p.prompt_hash)
    ('m', 12)
    """

    name = "llm"

    def __init__(self, client: Any = None, json_mode: bool = True, **client_kw: Any) -> None:
        if client is None:
            from lrlib.llm.client import LLMClient

            client = LLMClient(max_tokens=client_kw.pop("max_tokens", 160), **client_kw)
        self.client = client
        self.json_mode = json_mode

    @property
    def model(self) -> str:
        return str(self.client.model)

    @property
    def prompt_hash(self) -> str:
        fmt = response_format("[b] x") if self.json_mode else None  # the schema's shape
        blob = json.dumps([SYSTEM, fmt], sort_keys=True)
        return sha256(blob.encode()).hexdigest()[:12]

    def act(
        self,
        goal: str,
        history: Sequence[str],
        text: str,
        numbers: Sequence[int] | None = None,
    ) -> Decision:
        msgs = messages(goal, history, text, numbers)
        start = time.perf_counter()
        completion = self.client.complete(
            msgs,
            response_format=response_format(text, numbers) if self.json_mode else None,
            prompt_name="policy",
            prompt_hash=self.prompt_hash,
        )
        shown = {n for n, _ in numbered(text, numbers)}
        action, lines = parse_decision(completion.text, shown)
        return Decision(
            action=action,
            lines=lines,
            model=self.model,
            prompt_name="policy",
            prompt_hash=self.prompt_hash,
            latency_s=time.perf_counter() - start,
            from_cache=completion.from_cache,
            raw=completion.text,
        )
