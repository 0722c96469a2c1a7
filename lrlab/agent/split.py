"""The fixed split of MiniWoB++ task types and seeds (``data/live/task_split.json``).

Every registered task type is in exactly one half: ``tuning`` (reducers' labels, knobs and
the policy's rules may be fitted on it) or ``heldout`` (only ever scored). The file was
committed before any retuning; its order is sha256 of ``"<seed>:<task type>"``, the first
ceil(n/2) types being the tuning half. Seeds likewise: rules and knobs are developed on
``development_seeds``; ``heldout_seeds`` are kept for the generalisation check.

>>> half_of("click-test")
'tuning'
>>> split = task_split()
>>> sorted(set(map(half_of, split["tuning"] + split["heldout"])))
['heldout', 'tuning']
>>> half_of("no-such-task")
Traceback (most recent call last):
...
KeyError: "unknown MiniWoB++ task type 'no-such-task'; the split lists 125 task types"
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from lrlib.paths import shipped_data_dir


@cache
def task_split() -> dict[str, Any]:
    """The committed split: ``seed``, ``tuning``, ``heldout``, ``development_seeds``,
    ``heldout_seeds``."""
    return json.loads((shipped_data_dir() / "live" / "task_split.json").read_text())


def half_of(task: str) -> str:
    """``'tuning'`` or ``'heldout'``: the half ``task`` belongs to."""
    split = task_split()
    for half in ("tuning", "heldout"):
        if task in split[half]:
            return half
    n = len(split["tuning"]) + len(split["heldout"])
    raise KeyError(f"unknown MiniWoB++ task type {task!r}; the split lists {n} task types")
