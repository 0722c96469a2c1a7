"""Bottom truncation: the baseline web agents fall back on when a page is too long.

- ``truncate``: the longest prefix of whole lines whose tokens fit ``budget`` (exact; a
  budget below the first line keeps nothing, a budget above the tree keeps everything).
- ``truncate-agentlab``: the loop of AgentLab's GenericAgent, re-described here. The agent
  measures its *whole prompt* (instructions, goal, history, tree) in tokens; while it is
  over ``max_prompt_tokens`` it calls a shrink round, up to ``max_rounds`` times. The tree
  ignores the first ``patience`` rounds (AgentLab spends them shrinking other prompt
  parts; here those parts are fixed, so those rounds change nothing); every later round
  drops the bottom ``cut`` share of the tree's *remaining* lines and appends a note saying
  how many lines are gone. When the rounds run out the prompt is left over budget.

>>> tree = "\\n".join(f"[{i}] link 'page {i}'" for i in range(100))
>>> r = Truncate(budget=50).reduce(Step(goal="g", tree=tree))
>>> r.tokens_after <= 50 < r.tokens_before
True
"""

from __future__ import annotations

from ..step import Step
from ..tokens import count_tokens, get_encoding, truncate_bottom
from .base import Output, Reducer, register_reducer

DELETED_NOTE = "... {n} lines deleted to fit the prompt ..."
# a stand-in for the agent's fixed instructions (role, action space, answer format); its
# length is the knob ``overhead_tokens``, this text only pads the prompt to that length
_FILLER = "Follow the instructions and answer with one action. "


@register_reducer("truncate")
class Truncate(Reducer):
    """Keep the longest prefix of whole lines within ``budget`` tokens."""

    name = "truncate"

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


@register_reducer("truncate-agentlab")
class AgentLabTruncate(Reducer):
    """GenericAgent-style shrinking: whole prompt measured, trees cut by a share per round.

    >>> tree = "\\n".join(f"[{i}] link 'page {i}'" for i in range(100))
    >>> r = AgentLabTruncate(max_prompt_tokens=400, overhead_tokens=0)
    >>> out = r.select(Step(goal="g", tree=tree))
    >>> len(out.kept), out.extra["rounds"], out.text.endswith("lines deleted to fit the prompt ...")
    (34, 13, True)
    """

    name = "truncate-agentlab"

    def __init__(
        self,
        max_prompt_tokens: int = 4000,
        overhead_tokens: int = 1000,
        cut: float = 0.3,
        patience: int = 10,
        max_rounds: int = 20,
        **kwargs,
    ) -> None:
        if not 0 < cut < 1 or max_prompt_tokens < 0 or overhead_tokens < 0:
            raise ValueError("need 0 < cut < 1, max_prompt_tokens >= 0, overhead_tokens >= 0")
        self.max_prompt_tokens, self.overhead_tokens = max_prompt_tokens, overhead_tokens
        self.cut, self.patience, self.max_rounds = cut, patience, max_rounds
        self._filler: str | None = None
        super().__init__(
            max_prompt_tokens=max_prompt_tokens,
            overhead_tokens=overhead_tokens,
            cut=cut,
            patience=patience,
            max_rounds=max_rounds,
            **kwargs,
        )

    def _instructions(self) -> str:
        if self._filler is None:
            enc = get_encoding(self.encoding)
            reps = self.overhead_tokens // 4 + 1  # the filler is more than 4 tokens long
            self._filler = enc.decode(enc.encode_ordinary(_FILLER * reps)[: self.overhead_tokens])
        return self._filler

    def _prompt(self, step: Step, tree_text: str) -> str:
        past = "\n".join(step.history) or "(none)"
        return (
            f"{self._instructions()}\n# Goal\n{step.goal}\n# History\n{past}\n"
            f"# Observation\n{tree_text}\n"
        )

    def select(self, step: Step) -> Output:
        lines = list(step.axtree.texts)
        keep, deleted, rounds = len(lines), 0, 0
        text = "\n".join(lines)
        size = count_tokens(self._prompt(step, text), self.encoding)
        while rounds < self.max_rounds and size > self.max_prompt_tokens:
            if rounds >= self.patience:
                new_keep = int(keep * (1 - self.cut))
                deleted += keep - new_keep
                keep = new_keep
                text = "\n".join([*lines[:keep], DELETED_NOTE.format(n=deleted)])
                size = count_tokens(self._prompt(step, text), self.encoding)
            rounds += 1  # an idle round re-measures the same prompt: its size is known
        fits = size <= self.max_prompt_tokens
        return Output(
            text=text, kept=list(range(1, keep + 1)), extra={"rounds": rounds, "prompt_fits": fits}
        )
