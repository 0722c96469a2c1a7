"""A greedy policy: a second agent that decides differently from the scripted one.

It takes the things the goal names (its quoted strings, else the comma-separated items of
"Select A, B ... and click Submit" / "from the list"), in the goal's order, and acts on the
first page element for the next one not yet used: a click on the first element labelled
with it (a ``select_option`` on the list holding it), else a fill of the next text field in
page order with it. When every name is used, it clicks the first submit-like button. It
never reads a control's state (checked, selected, expanded, a field's value), never checks
that the other named elements exist, and never reads a field's label: it reports only the
line it acts on. So a reducer can keep what the scripted policy needs and still fail it (a
field order it fills blindly), or the reverse: comparing the two tells whether what one
agent needs predicts another's success (issue 33).

>>> tree = "RootWebArea 'T'\\n\\t[4] checkbox 'ab', checked='true'\\n\\t[6] checkbox 'cd', checked='false'\\n\\t[8] button 'Submit'"
>>> g = GreedyPolicy()
>>> g.act("Select ab, cd and click Submit.", (), tree).action   # ab is already ticked: it clicks anyway
"click('4')"
>>> g.act("Select ab, cd and click Submit.", ("click('4')", "click('6')"), tree).action
"click('8')"
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from lrlab.agent.policy import NOOP, Decision, Policy
from lrlab.agent.scripted import Node, nodes

SUBMIT = ("submit", "login", "search", "ok", "next")
_LISTS = (r"^Select (.*?) (?:from the (?:scroll )?list )?and click Submit\.?$",)


def goal_names(goal: str) -> list[str]:
    """The names a goal gives, in its order: quoted strings, else a "Select ..." list.

    >>> goal_names('Enter the username "ann" and the password "x1" into the text fields')
    ['ann', 'x1']
    >>> goal_names("Select Ertha, Aurel from the scroll list and click Submit.")
    ['Ertha', 'Aurel']
    """
    quoted = re.findall(r'"([^"]*)"', goal)
    if quoted:
        return quoted
    for pattern in _LISTS:
        m = re.match(pattern, goal.strip())
        if m and m.group(1) != "nothing":
            return [w.strip() for w in m.group(1).split(",") if w.strip()]
    return []


def _used(name: str, ns: list[Node], history: Sequence[str]) -> bool:
    bids = {x.bid for x in ns if x.bid and x.name == name}
    for a in history:
        m = re.match(r"(\w+)\('([^']*)'(?:, (.*))?\)$", a)
        if not m:
            continue
        if m.group(2) in bids or (m.group(3) and name in m.group(3)):
            return True
    return False


class GreedyPolicy(Policy):
    """First matching element, no state read (module doc); ``stop`` when nothing matches."""

    name = "greedy"

    @property
    def prompt_hash(self) -> str:
        import sys
        from hashlib import sha256
        from inspect import getsource

        return sha256(getsource(sys.modules[__name__]).encode()).hexdigest()[:12]

    def act(
        self,
        goal: str,
        history: Sequence[str],
        text: str,
        numbers: Sequence[int] | None = None,
    ) -> Decision:
        start = time.perf_counter()
        ns = nodes(text, numbers)
        action, line = self._choose(goal, tuple(history), ns)
        return Decision(action, [line] if line else [], action == NOOP, self.model, "greedy",
                        self.prompt_hash, time.perf_counter() - start, False,
                        "" if line else "nothing the goal names")  # fmt: skip

    def _choose(self, goal: str, history: Sequence[str], ns: list[Node]) -> tuple[str, int]:
        fields = [x for x in ns if x.bid and x.role == "textbox"]
        filled = sum(a.startswith("fill(") for a in history)
        for name in goal_names(goal):
            if _used(name, ns, history):
                continue
            for x in ns:
                if x.bid and x.name == name and x.role != "textbox":
                    if x.role == "option":
                        box = next(
                            (y for y in ns if y.bid and y.role in ("combobox", "listbox")), None
                        )
                        if box is not None:
                            return f"select_option({box.bid!r}, {name!r})", x.n
                        continue
                    return f"click({x.bid!r})", x.n
            if filled < len(fields):
                return f"fill({fields[filled].bid!r}, {name!r})", fields[filled].n
        for x in ns:
            if x.bid and x.role == "button" and x.name.strip().lower() in SUBMIT:
                return f"click({x.bid!r})", x.n
        return NOOP, 0
