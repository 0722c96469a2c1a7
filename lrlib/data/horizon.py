"""Planning horizon: the elements the recorded agent acts on in the next steps that are
already on the current page.

Target coverage asks whether the element of the *next* action survives a reduction. A
retriever that plans should also keep what the agent will act on a little later, when it
is already on the page (the field to fill after picking an option, the button that
submits the form). :func:`horizon_lines` reads this from the recorded trajectory: for a
step and a horizon k, the lines of the current tree that carry the targets of this step
and of the next k - 1 recorded steps of its episode (ordered by step number).

A later target counts only when the current tree has its bid *and* the line there has the
same role and name as in the later step's own tree (a bid reused by another page is not
the same element). Horizon k = 1 is the step's own targets, i.e. target coverage.

What it can say: a reducer that drops these lines hides, on this page, what the recorded
agent went on to use. What it cannot say: that the agent needs them (the recorded path is
one of many; another agent may succeed without them), nor anything about elements that
appear only on later pages. Steps dropped by the importer as exact repeats (mostly
scrolls) are not in the dataset, so "the next step" is the next *recorded* one.

>>> from lrlib.core.step import Step
>>> page = "RootWebArea 'Form'\\n\\t[3] combobox 'Size'\\n\\t[4] button 'Save'"
>>> a = Step(goal="g", tree=page, target_bids=("3",), episode="e", meta={"step": 0})
>>> b = Step(goal="g", tree=page, target_bids=("4",), episode="e", meta={"step": 1})
>>> horizon_lines([a, b], k_max=2)
[[[2], [2, 3]], [[3], [3]]]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from lrlib.core.step import Step
from lrlib.data.evidence import line_name

K_MAX = 3


def _signature(step: Step, bid: str) -> tuple[str, str] | None:
    n = step.axtree.line_of(bid)
    if n is None:
        return None
    return step.axtree.roles[n - 1], line_name(step.axtree.texts[n - 1])


def _order(step: Step, index: int) -> tuple[int, int]:
    raw = (step.meta or {}).get("step")
    return (int(raw) if isinstance(raw, int | float) and raw == raw else index, index)


def horizon_lines(steps: Sequence[Step], k_max: int = K_MAX) -> list[list[list[int]] | None]:
    """For each step, the sorted target lines of horizons k = 1..``k_max`` (a list of
    ``k_max`` lists, each containing the previous one), or None when the step's own
    target is missing from its tree (excluded, as for target coverage). Episodes are
    ``step.episode`` (a step without one is its own episode); order is ``meta["step"]``.

    >>> from lrlib.core.step import Step
    >>> p1 = "[1] link 'Next'\\n[2] button 'Buy'"
    >>> p2 = "[1] link 'Home'\\n[2] button 'Buy'"  # bid 1 names another element here
    >>> steps = [Step(goal="g", tree=p1, target_bids=(), episode="e", meta={"step": 0}),
    ...          Step(goal="g", tree=p2, target_bids=("1",), episode="e", meta={"step": 1}),
    ...          Step(goal="g", tree=p2, target_bids=("2",), episode="e", meta={"step": 2})]
    >>> horizon_lines(steps)
    [[[], [], [2]], [[1], [1, 2], [1, 2]], [[2], [2], [2]]]
    """
    if k_max < 1:
        raise ValueError(f"k_max must be at least 1, not {k_max}")
    episodes: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(steps):
        episodes[s.episode or f"\0{i}"].append(i)
    out: list[list[list[int]] | None] = [None] * len(steps)
    for members in episodes.values():
        members.sort(key=lambda i: _order(steps[i], i))
        for pos, i in enumerate(members):
            step = steps[i]
            if any(step.axtree.line_of(b) is None for b in step.target_bids):
                continue  # a missing target: excluded
            lines = set(step.target_lines)
            horizons = [sorted(lines)]
            for j in members[pos + 1 : pos + k_max]:
                later = steps[j]
                for bid in later.target_bids:
                    n = step.axtree.line_of(bid)
                    if n is not None and _signature(step, bid) == _signature(later, bid):
                        lines.add(n)
                horizons.append(sorted(lines))
            while len(horizons) < k_max:  # the episode ends: nothing more to act on
                horizons.append(sorted(lines))
            out[i] = horizons
    return out
