"""Minimal failure sets (MFS): the smallest sets of tree lines whose removal changes what a
policy does on a recorded step, found by delta debugging as in the seeds' study.

For a recorded step (goal, history, full tree, recorded action) and a policy:

1. *usable*: the policy reproduces the recorded action on the full tree;
2. phase 1: the candidate set C is the lines the policy says it relied on, plus the step's
   target and evidence lines; removing C must make the policy fail (act otherwise than
   recorded); if it does not, C is every line (``candidates="all"``);
3. phase 2: ddmin over C (Zeller's delta debugging), where a subset S "fails" when the
   policy, shown the tree without S, does not take the recorded action. The result is
   1-minimal: removing it fails, and removing any smaller part of it does not.

MFS coverage of a reducer is the share of usable steps whose whole MFS it keeps: then the
policy, shown the reduced tree, could still not be pushed off its action by losing those
lines.

One ddmin run finds *one* minimal failure set. A policy that reads several lines
independently (every checkbox the goal names, the radio it ticked, both password fields)
has several: losing any one of them changes its action. With ``max_sets > 1`` the search
goes on (:func:`build_mfs`): with the sets found so far kept, if removing every other line
still changes the action, ddmin over those lines finds the next, disjoint set; ``sets``
lists them all, and a reducer covers the step when it keeps every one (``mfs`` stays the
first, the seeds' study's). Every policy call goes through the policy (an :class:`~lrlab.agent.policy.LLMPolicy`
caches its answers like every model call) and is memoised per step.

>>> calls = []
>>> def fails(s):
...     calls.append(s)
...     return {3, 7} <= set(s)
>>> sorted(ddmin(list(range(1, 17)), fails))
[3, 7]
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lrlab.agent.policy import Policy
from lrlib.core.step import Step
from lrlib.data.actions import canonical_action
from lrlib.eval.metrics import evidence_status


def ddmin(items: Sequence[int], fails: Callable[[list[int]], bool]) -> list[int]:
    """A 1-minimal failing subset of ``items`` (``fails(items)`` must be True).

    >>> ddmin([1, 2, 3, 4], lambda s: 2 in s)
    [2]
    """
    c = list(items)
    n = 2
    while len(c) >= 2:
        size = math.ceil(len(c) / n)
        chunks = [c[i : i + size] for i in range(0, len(c), size)]
        for chunk in chunks:
            if fails(chunk):
                c, n = chunk, 2
                break
        else:
            for chunk in chunks:
                comp = [x for x in c if x not in chunk]
                if len(chunks) > 2 and fails(comp):
                    c, n = comp, max(n - 1, 2)
                    break
            else:
                if n >= len(c):
                    break
                n = min(len(c), 2 * n)
    return c


def same_action(a: str | None, b: str | None) -> bool:
    """Equal BrowserGym actions (canonical form: quotes and spacing do not matter).

    >>> same_action("click('12')", 'click("12")'), same_action("click('1')", "click('2')")
    (True, False)
    """
    ca, cb = canonical_action(a), canonical_action(b)
    return ca is not None and ca == cb


@dataclass
class MFSResult:
    """One step's minimal failure set and how it was found."""

    step_id: str
    usable: bool
    mfs: list[int] = field(default_factory=list)
    sets: list[list[int]] = field(default_factory=list)  # every disjoint set found (mfs first)
    labels: list[int] | None = None  # lines of the sets a stub ("[bid] role") cannot replace
    candidates: str = ""  # "relied+evidence", "all", or "" when not usable
    n_candidates: int = 0
    n_lines: int = 0
    calls: int = 0  # distinct policy calls (each cached)
    policy_action: str = ""
    recorded_action: str = ""
    relied_lines: list[int] = field(default_factory=list)
    seconds: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """As a plain dict (one JSON line of an MFS file)."""
        return asdict(self)


def step_action(step: Step) -> str | None:
    """The recorded action of ``step`` (``meta["action"]``)."""
    return (step.meta or {}).get("action")


def build_mfs(step: Step, policy: Policy, max_sets: int = 1, stubs: bool = False) -> MFSResult:
    """The MFS of ``step`` for ``policy`` (module doc), and up to ``max_sets`` disjoint ones.

    With ``stubs``, ``labels`` lists the lines of the sets whose stub (``[bid] role``, the
    shortened line bm25's chunks and the learned scorer show) changes the action: the policy
    needs their text, not only the element (one more call per line of the sets).

    >>> from lrlab.agent.scripted import ScriptedPolicy
    >>> tree = "RootWebArea 'T'\\n\\t[4] checkbox 'ab', checked='false'\\n\\t[6] checkbox 'cd', checked='false'\\n\\t[8] button 'Submit'"
    >>> s = Step(goal="Select ab, cd and click Submit.", tree=tree, target_bids=("4",),
    ...          meta={"action": "click('4')"})
    >>> r = build_mfs(s, ScriptedPolicy(), max_sets=10)
    >>> r.mfs, r.sets
    ([2], [[2], [3]])
    """
    start = time.perf_counter()
    lines = step.axtree.texts
    n = len(lines)
    recorded = step_action(step) or ""
    memo: dict[frozenset[int], str] = {}

    def act(removed: frozenset[int]) -> str:
        if removed not in memo:
            keep = [i for i in range(1, n + 1) if i not in removed]
            text = "\n".join(lines[i - 1] for i in keep)
            memo[removed] = policy.act(step.goal, step.history, text, keep).action
        return memo[removed]

    first = policy.act(step.goal, step.history, "\n".join(lines))
    memo[frozenset()] = first.action
    result = MFSResult(step.step_id, same_action(first.action, recorded), n_lines=n,
                       policy_action=first.action, recorded_action=recorded,
                       relied_lines=list(first.lines))  # fmt: skip
    if result.usable:
        _, groups = evidence_status(step)
        cand = sorted(set(first.lines) | set(step.target_lines) | {x for g in groups for x in g})
        result.candidates = "relied+evidence"
        if not cand or same_action(act(frozenset(cand)), recorded):
            cand, result.candidates = list(range(1, n + 1)), "all"
        result.n_candidates = len(cand)
        if not same_action(act(frozenset(cand)), recorded):
            result.mfs = sorted(ddmin(cand, lambda s: not same_action(act(frozenset(s)), recorded)))
            result.sets = [result.mfs]
        else:
            result.candidates = "none"  # no removal changes the action
        found = set(result.mfs)
        while result.sets and len(result.sets) < max_sets:
            rest = [i for i in range(1, n + 1) if i not in found]  # the sets found stay shown
            if not rest or same_action(act(frozenset(rest)), recorded):
                break
            nxt = sorted(ddmin(rest, lambda s: not same_action(act(frozenset(s)), recorded)))
            result.sets.append(nxt)
            found |= set(nxt)
        if stubs:
            result.labels = []
            for i in sorted(found):
                texts = list(lines)
                texts[i - 1] = step.axtree.stub(i - 1)
                action = policy.act(step.goal, step.history, "\n".join(texts)).action
                result.calls += 1
                if not same_action(action, recorded):
                    result.labels.append(i)
    result.calls += len(memo)
    result.seconds = time.perf_counter() - start
    return result


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """step_id -> result of an MFS file (JSON lines; later lines win; torn lines skipped)."""
    out: dict[str, dict[str, Any]] = {}
    if not Path(path).is_file():
        return out
    for line in Path(path).read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "step_id" in row:
            out[row["step_id"]] = row
    return out


def build_all(
    steps: Sequence[Step],
    policy: Policy,
    out: Path,
    provenance: dict[str, Any] | None = None,
    progress: bool = True,
    max_sets: int = 1,
) -> list[dict[str, Any]]:
    """MFS of every step not yet in ``out`` (resumable; one JSON line per step, appended);
    ``max_sets``: disjoint sets per step (:func:`build_mfs`)."""
    from tqdm.auto import tqdm

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = read_results(out)
    todo = [s for s in steps if s.step_id not in done]
    with out.open("a") as f:
        for s in tqdm(todo, desc="mfs", unit="step", disable=not progress):
            r = build_mfs(s, policy, max_sets=max_sets)
            r.provenance = {**(provenance or {}), "max_sets": max_sets}
            done[s.step_id] = r.record()
            f.write(json.dumps(done[s.step_id], default=str) + "\n")
            f.flush()
    return [done[s.step_id] for s in steps if s.step_id in done]


def estimate_calls(steps: Sequence[Step]) -> tuple[int, int]:
    """A rough (typical, worst) number of policy calls: per step 2 + 2 log2 n typical,
    2 + n**2 worst (ddmin over every line).

    >>> estimate_calls([Step(goal="g", tree="a\\nb\\nc\\nd")])
    (6, 18)
    """
    typical = sum(2 + 2 * math.ceil(math.log2(max(2, len(s.axtree)))) for s in steps)
    worst = sum(2 + len(s.axtree) ** 2 for s in steps)
    return typical, worst
