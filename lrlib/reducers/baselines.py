"""The simple baselines: the reference points ``full``, ``random`` and ``oracle``, then
bottom truncation, ``truncate`` and ``truncate-agentlab``.

Reference points: ``full`` (the whole tree), ``random`` (a seeded share of the lines) and
``oracle`` (the next action's target lines and their ancestors). ``oracle`` reads the answer
off the recorded step, so it is the upper bound of what the target-coverage metric can
reward at the smallest possible observation; it is not a reducer an agent could use.

>>> s = Step(goal="g", tree="RootWebArea 'r'\\n\\t[1] form\\n\\t\\t[2] button 'A'", target_bids=("2",))
>>> Oracle().reduce(s).text
"RootWebArea\\n\\t[1] form\\n\\t\\t[2] button 'A'"

Bottom truncation: the baseline web agents fall back on when a page is too long.

- ``truncate``: the longest prefix of whole lines whose tokens fit ``budget`` (exact; a
  budget below the first line keeps nothing, a budget above the tree keeps everything).
- ``truncate-agentlab``: exactly what AgentLab's GenericAgent does (``fit_tokens`` with a
  ``Trunkater`` prompt element, ``dynamic_prompting.py``; checked against that code by
  ``tests/test_peer_truncation.py``). The instructions are an additional prompt of
  ``overhead_tokens`` tokens, so the budget left is ``max_prompt_tokens - overhead - 1``.
  The agent measures its prompt (goal, history, observation block) up to ``max_rounds``
  times; after each measurement over budget it calls a shrink. The block ignores the first
  ``patience`` shrinks; each later one keeps ``int(len(lines) * (1 - cut))`` of the
  block's *current* lines - header lines and the previous notice included - and appends
  ``... Deleted N lines to reduce prompt size.`` (N counts every line removed so far, old
  notices included). The last shrink is never measured: when the rounds run out, the
  result is the last measured block, over budget (``extra["prompt_fits"]`` False).
  ``element="tree"`` shrinks the tree text alone; ``element="axtree"`` shrinks
  GenericAgent's ``AXTree`` element, whose four header lines count in the 30%.

>>> tree = "\\n".join(f"[{i}] link 'page {i}'" for i in range(100))
>>> r = Truncate(budget=50).reduce(Step(goal="g", tree=tree))
>>> r.tokens_after <= 50 < r.tokens_before
True
"""

from __future__ import annotations

import hashlib
import random
from bisect import bisect_right
from itertools import accumulate

from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens, get_encoding, truncate_bottom
from lrlib.reducers.base import Knob, Output, Reducer, lines_output, register_reducer


@register_reducer
class Full(Reducer):
    """No reduction: the whole tree, every line kept.

    >>> Full().reduce(Step(goal="g", tree="a\\nb")).reduction
    0.0
    """

    name = "full"
    listed = 0

    def select(self, step: Step) -> Output:
        tree = step.axtree
        return Output(text=tree.text, kept=list(range(1, len(tree) + 1)))


def step_seed(seed: int, step: Step) -> int:
    """A seed that depends on ``seed`` and the step (its id, else its tree), stable
    across processes and Python versions (unlike ``hash``).

    >>> step_seed(0, Step(goal="g", tree="a", step_id="x")) == step_seed(0, Step(goal="h", tree="b", step_id="x"))
    True
    """
    key = step.step_id or step.tree
    return int.from_bytes(hashlib.sha256(f"{seed}\0{key}".encode()).digest()[:8], "big")


@register_reducer
class RandomLines(Reducer):
    """Keep ``round(keep_ratio * n)`` lines drawn uniformly at random (seeded per step).

    >>> tree = "\\n".join(f"[{i}] link 'x{i}'" for i in range(10))
    >>> out = RandomLines(keep_ratio=0.3, seed=1, strategy="remove").select(Step(goal="g", tree=tree))
    >>> len(out.kept)
    3
    """

    name = "random"
    listed = 3
    sweep = Knob("keep_ratio", (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9))

    def __init__(
        self,
        keep_ratio: float = 0.3,
        seed: int = 0,
        strategy: str = "structure",
        markers: bool = False,
        **kwargs,
    ) -> None:
        if not 0.0 <= keep_ratio <= 1.0:
            raise ValueError(f"keep_ratio must be in [0, 1], got {keep_ratio}")
        self.keep_ratio, self.seed, self.strategy, self.markers = (
            keep_ratio,
            seed,
            strategy,
            markers,
        )
        super().__init__(
            keep_ratio=keep_ratio, seed=seed, strategy=strategy, markers=markers, **kwargs
        )

    def select(self, step: Step) -> Output:
        n = len(step.axtree)
        k = round(self.keep_ratio * n)
        lines = random.Random(step_seed(self.seed, step)).sample(range(1, n + 1), k)
        return lines_output(step.axtree, lines, self.strategy, self.markers)


@register_reducer
class Oracle(Reducer):
    """The target lines of the recorded next action, with their ancestors as stubs
    (``strategy="structure"``: the paper's structure-preserving rendering). A step whose
    action names no element in the tree keeps nothing."""

    name = "oracle"
    listed = 4
    uses_target = True

    def __init__(self, strategy: str = "structure", markers: bool = False, **kwargs) -> None:
        self.strategy, self.markers = strategy, markers
        super().__init__(strategy=strategy, markers=markers, **kwargs)

    def select(self, step: Step) -> Output:
        return lines_output(step.axtree, step.target_lines, self.strategy, self.markers)


# --- bottom truncation ------------------------------------------------------------------

DELETED_NOTE = "... Deleted {n} lines to reduce prompt size."  # AgentLab's Trunkater notice
# GenericAgent's AXTree prompt element (visible-only, coordinates and visible-tag notes off)
AXTREE_HEAD = (
    "\n## AXTree:\nNote: [bid] is the unique alpha-numeric identifier at the beginning of lines"
    " for each element in the AXTree. Always use bid to refer to elements in your actions.\n\n"
)
ELEMENTS = {"tree": ("", ""), "axtree": (AXTREE_HEAD, "\n")}
# a stand-in for the agent's fixed instructions (role, action space, answer format); its
# length is the knob ``overhead_tokens``, this text only pads the prompt to that length
_FILLER = "Follow the instructions and answer with one action. "


@register_reducer
class Truncate(Reducer):
    """Keep the longest prefix of whole lines within ``budget`` tokens."""

    name = "truncate"
    listed = 1
    sweep = Knob("budget", (250, 500, 1000, 2000, 3000, 4000, 6000, 8000, 16000))

    def __init__(self, budget: int = 2000, **kwargs) -> None:
        if budget < 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        self.budget = budget
        super().__init__(budget=budget, **kwargs)

    def select(self, step: Step) -> Output:
        tree = step.axtree
        text = truncate_bottom(tree.text, self.budget, self.encoding)
        n = text.count("\n") + 1 if text else 0
        return Output(text=text, kept=list(range(1, n + 1)))


@register_reducer
class AgentLabTruncate(Reducer):
    """AgentLab's ``fit_tokens`` + ``Trunkater``, reproduced exactly (see the module doc).

    >>> tree = "\\n".join(f"[{i}] link 'page {i}'" for i in range(1000))
    >>> r = AgentLabTruncate(max_prompt_tokens=270, overhead_tokens=0)
    >>> out = r.select(Step(goal="g", tree=tree))
    >>> len(out.kept), out.extra["prompt_fits"], out.text.splitlines()[-1]
    (41, False, '... Deleted 967 lines to reduce prompt size.')
    """

    name = "truncate-agentlab"
    listed = 2
    sweep = Knob("max_prompt_tokens", (1500, 2000, 3000, 4000, 5000, 7000, 9000, 17000))

    def __init__(
        self,
        max_prompt_tokens: int = 4000,
        overhead_tokens: int = 1000,
        cut: float = 0.3,
        patience: int = 10,
        max_rounds: int = 20,
        element: str = "tree",
        **kwargs,
    ) -> None:
        if not 0 < cut < 1 or max_prompt_tokens < 0 or overhead_tokens < 0:
            raise ValueError("need 0 < cut < 1, max_prompt_tokens >= 0, overhead_tokens >= 0")
        if element not in ELEMENTS:
            raise ValueError(f"unknown element {element!r}; valid: {', '.join(ELEMENTS)}")
        self.max_prompt_tokens, self.overhead_tokens = max_prompt_tokens, overhead_tokens
        self.cut, self.patience, self.max_rounds = cut, patience, max_rounds
        self.element = element
        self._filler: str | None = None
        params = dict(max_prompt_tokens=max_prompt_tokens, overhead_tokens=overhead_tokens)
        params.update(cut=cut, patience=patience, max_rounds=max_rounds)
        if element != "tree":
            params["element"] = element
        super().__init__(**params, **kwargs)

    def instructions(self) -> str:
        """The stand-in for the agent's instructions: ``overhead_tokens`` tokens of text."""
        if self._filler is None:
            enc = get_encoding(self.encoding)
            reps = self.overhead_tokens // 4 + 1  # the filler is more than 4 tokens long
            self._filler = enc.decode(enc.encode_ordinary(_FILLER * reps)[: self.overhead_tokens])
        return self._filler

    @staticmethod
    def prompt(step: Step, block: str) -> str:
        """The shrinkable prompt: goal, history and the observation block."""
        past = "\n".join(step.history) or "(none)"
        return f"# Goal\n{step.goal}\n# History\n{past}\n# Observation\n{block}\n"

    def select(self, step: Step) -> Output:
        head, tail = ELEMENTS[self.element]
        tree = step.axtree
        block = head + tree.text + tail
        lines = block.splitlines()
        n_head = len(head.splitlines())
        # lines of the block each tree line spans (several if it holds e.g. "\x0c" or "\u2028")
        ends = list(accumulate(len(t.splitlines()) or 1 for t in tree.texts))
        budget = self.max_prompt_tokens - count_tokens(self.instructions(), self.encoding) - 1
        content, m = lines, len(lines)  # the block's lines; its first m are original lines
        deleted, shrinks, fits, size = 0, 0, False, 0
        for measure in range(self.max_rounds):
            size = count_tokens(self.prompt(step, block), self.encoding)
            if size <= budget:
                fits = True
                break
            if measure == self.max_rounds - 1:
                shrinks += 1  # AgentLab shrinks once more, then returns the block it measured
                break
            if shrinks >= self.patience:
                # the block re-split: the notice is a line, and an emptied block is one "" line
                now = [*(content or [""]), DELETED_NOTE.format(n=deleted)] if deleted else content
                new = int(len(now) * (1 - self.cut))
                deleted += len(now) - new
                content, m = now[:new], min(m, new)
                block = "\n".join([*content, DELETED_NOTE.format(n=deleted)])
                if not content:
                    block = "\n" + block
            shrinks += 1
        n_kept = bisect_right(ends, m - n_head) if m > n_head else 0
        if deleted:  # the observation: the block's lines after the header (or the notice)
            shown = [*(content or [""]), DELETED_NOTE.format(n=deleted)]
            text = "\n".join(shown[n_head:] if len(shown) > n_head else shown[-1:])
        else:
            text = tree.text
        extra = {"rounds": shrinks, "prompt_fits": fits, "prompt_tokens": size}
        return Output(text=text, kept=list(range(1, n_kept + 1)), extra=extra)
