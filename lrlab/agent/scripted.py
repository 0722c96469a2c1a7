"""A scripted policy: hand-written rules that read the goal, the history and the page's labels.

It knows the goal phrasings of 46 MiniWoB++ task types (:data:`lrlab.agent.live.TASKS`):
here, click a named button, tab or option, tick the named checkboxes, type given text into
fields, log in, pick from a list; in :mod:`lrlab.agent.scripted_forms` and
:mod:`lrlab.agent.scripted_reading`, forms and widgets and answers computed from page text.
One rule per phrasing family, none per seed. It finds the element its goal names *by its
label in the observation* and reports the lines it read. It
never guesses: when what it needs is not in the observation (a reducer dropped it), it stops.
So on the full observation it must succeed (the loop's check), and under a reducer it
succeeds exactly when the reducer kept what it reads.

>>> tree = "RootWebArea 'T'\\n\\t[4] checkbox 'ab', checked='false'\\n\\t[6] checkbox 'cd', checked='false'\\n\\t[8] button 'Submit'"
>>> p = ScriptedPolicy()
>>> p.act("Select cd and click Submit.", (), tree).action
"click('6')"
>>> p.act("Select cd and click Submit.", ("click('6')",), tree.replace("'cd', checked='false'", "'cd', checked='true'")).action
"click('8')"
>>> d = p.act('Click on the "Ok" button.', (), tree)
>>> d.action, d.stop
('noop()', True)
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from lrlab.agent.policy import NOOP, Decision, Policy, numbered

_LINE = re.compile(
    r"^(\t*)(?:\[([^\]]+)\] )?(\S+)(?: ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?(.*)$"
)


@dataclass
class Node:
    """One observation line: full-tree number, bid, role, name and the rest."""

    n: int
    bid: str | None
    role: str
    name: str
    rest: str
    depth: int = 0  # tabs of indentation (the tree's nesting)

    def prop(self, key: str) -> str | None:
        m = re.search(rf"\b{key}=('(?:[^'\\]|\\.)*'|\S+?)(?:,|$)", self.rest)
        if not m:
            return None
        raw = m.group(1)
        return str(ast.literal_eval(raw)) if raw.startswith("'") else raw


def nodes(text: str, numbers: Sequence[int] | None = None) -> list[Node]:
    """The lines of an observation as :class:`Node` objects (unreadable lines skipped)."""
    out = []
    for n, line in numbered(text, numbers):
        m = _LINE.match(line)
        if not m:
            continue
        tabs, bid, role, name, rest = m.groups()
        try:
            label = ast.literal_eval(name) if name else ""
        except (ValueError, SyntaxError):
            label = name[1:-1]
        out.append(Node(n, bid, role, str(label), rest, len(tabs)))
    return out


class Missing(Exception):
    """What the rule needs is not in the observation."""


def find_all(ns: list[Node], role: str | tuple[str, ...], name: str | None = None) -> list[Node]:
    roles = (role,) if isinstance(role, str) else role
    return [x for x in ns if x.role in roles and x.bid and (name is None or x.name == name)]


def find_one(ns: list[Node], role: str | tuple[str, ...], name: str | None = None) -> Node:
    found = find_all(ns, role, name)
    if not found:
        raise Missing(f"no {role} {name!r}")
    return found[0]


def _quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def click_on(x: Node) -> tuple[str, list[int]]:
    return f"click({x.bid!r})", [x.n]


def submit_on(ns: list[Node], name: str = "Submit") -> tuple[str, list[int]]:
    found = [x for x in find_all(ns, "button") if x.name.lower() == name.lower()]
    if not found:
        raise Missing(f"no {name} button")
    return click_on(found[0])


def fill_count(history: Sequence[str]) -> int:
    return sum(a.startswith("fill(") for a in history)


Rule = Callable[[re.Match, list[Node], Sequence[str]], tuple[str, list[int]]]
RULES: list[tuple[re.Pattern, Rule]] = []


def rule(pattern: str, first: bool = False) -> Callable[[Rule], Rule]:
    """Register a rule for goals matching ``pattern`` (first match wins; ``first`` puts it
    before the rules registered so far, for a phrasing narrower than theirs)."""

    def deco(fn: Rule) -> Rule:
        entry = (re.compile(pattern, re.S), fn)
        RULES.insert(0, entry) if first else RULES.append(entry)
        return fn

    return deco


@rule(r'^Click on the "(.*)" button\.?$')
def click_named_button(m, ns, history):
    return click_on(find_one(ns, "button", m.group(1)))


@rule(r"^Click button (ONE|TWO)\.?$")
def click_button_word(m, ns, history):
    return click_on(find_one(ns, "button", m.group(1)))


@rule(r"^Click button ONE, then click button TWO\.?$")
def click_sequence(m, ns, history):
    return click_on(find_one(ns, "button", "TWO" if history else "ONE"))


@rule(r"^Click the button\.?$")
def click_the_button(m, ns, history):
    return click_on(find_one(ns, "button", "Click Me!"))


@rule(r'^Close the dialog box by clicking the "x"\.?$')
@rule(r'^Click the button in the dialog box labeled "x"\.?$')
def close_dialog(m, ns, history):
    return click_on(find_one(ns, "button", "Close"))


@rule(r'^Click the button in the dialog box labeled "(.*)"\.?$')
def dialog_button(m, ns, history):
    return click_on(find_one(ns, "button", m.group(1)))


@rule(r"^Click on (Tab #\d+)\.?$")
def click_tab(m, ns, history):
    return click_on(find_one(ns, "tab", m.group(1)))


@rule(r"^Select (.*) from the list and click Submit\.?$")
def choose_from_list(m, ns, history):
    if any(a.startswith("select_option(") for a in history):
        return submit_on(ns)
    box = find_one(ns, "combobox")
    option = next((x for x in ns if x.role == "option" and x.name == m.group(1)), None)
    if option is None:
        raise Missing(f"no option {m.group(1)!r}")
    return f"select_option({box.bid!r}, {m.group(1)!r})", [box.n, option.n]


@rule(r"^Select (.*) and click Submit\.?$")
def tick_boxes(m, ns, history):
    boxes = find_all(ns, ("checkbox", "radio"))
    if not boxes:
        raise Missing("no checkbox or radio")
    wanted = set() if m.group(1) == "nothing" else {w.strip() for w in m.group(1).split(",")}
    if boxes[0].role == "radio":  # its checked state decides: it is read at every step
        radio = find_one(ns, "radio", m.group(1))
        if radio.prop("checked") != "true":
            return click_on(radio)
        action, lines = submit_on(ns)
        return action, lines + [radio.n]
    if not wanted <= {b.name for b in boxes}:
        raise Missing(f"no checkbox for {sorted(wanted - {b.name for b in boxes})}")
    read = [b.n for b in boxes]  # every box's name and state is read (all present? which next?)
    for b in boxes:
        if (b.name in wanted) != (b.prop("checked") == "true"):
            return click_on(b)[0], read
    action, lines = submit_on(ns)
    return action, lines + read


@rule(r'^(?:Enter|Type) "(.*)" (?:into|in) the text ?(?:field|box)(?: and press Submit)?\.?$')
def enter_text(m, ns, history):
    box = find_one(ns, "textbox")
    if not fill_count(history):
        return f"fill({box.bid!r}, {m.group(1)!r})", [box.n]
    return submit_on(ns)


@rule(r'^Type "(.*)" in all (upper|lower) case letters in the text input and press Submit\.?$')
def enter_text_case(m, ns, history):
    box = find_one(ns, "textbox")
    text = m.group(1).upper() if m.group(2) == "upper" else m.group(1).lower()
    if not fill_count(history):
        return f"fill({box.bid!r}, {text!r})", [box.n]
    return submit_on(ns)


@rule(r"^Focus into the (?:(\d+)(?:st|nd|rd|th) input )?textbox\.?$")
def focus_text(m, ns, history):
    boxes = find_all(ns, "textbox")
    k = int(m.group(1) or 1)
    if len(boxes) < k:
        raise Missing(f"fewer than {k} text boxes")
    action, _ = click_on(boxes[k - 1])
    return action, [b.n for b in boxes[:k]]


@rule(r'^Enter the password "(.*)" into both text fields and press submit\.?$')
def enter_password(m, ns, history):
    boxes = find_all(ns, "textbox")
    k = fill_count(history)
    if k < 2:
        if len(boxes) < 2:
            raise Missing("fewer than two text fields")
        return f"fill({boxes[k].bid!r}, {m.group(1)!r})", [b.n for b in boxes[:2]]
    return submit_on(ns)


@rule(
    r'^Enter the username "(.*)" and the password "(.*)" into the text fields and press login\.?$'
)
def login(m, ns, history):
    k = fill_count(history)
    if k < 2:
        label = ("Username", "Password")[k]
        # the field follows its label's text line
        for i, x in enumerate(ns[:-1]):
            nxt = ns[i + 1]
            if (
                x.role in ("StaticText", "LabelText")
                and x.name.startswith(label)
                and nxt.role == "textbox"
            ):
                return f"fill({nxt.bid!r}, {m.group(k + 1)!r})", [x.n, nxt.n]
        raise Missing(f"no {label} field")
    return submit_on(ns, "Login")


@lru_cache(maxsize=1)
def _rules_hash() -> str:
    source = "".join(inspect.getsource(fn) + p.pattern for p, fn in RULES)
    return hashlib.sha256(source.encode()).hexdigest()[:12]


class ScriptedPolicy(Policy):
    """Hand-written rules (module doc); ``stop`` when the goal is unknown or a label is missing."""

    name = "scripted"

    def __init__(self) -> None:
        _load_rules()

    @property
    def prompt_hash(self) -> str:
        return _rules_hash()

    def act(
        self,
        goal: str,
        history: Sequence[str],
        text: str,
        numbers: Sequence[int] | None = None,
    ) -> Decision:
        start = time.perf_counter()
        ns = nodes(text, numbers)
        for pattern, fn in RULES:
            m = pattern.match(goal.strip())
            if not m:
                continue
            try:
                action, lines = fn(m, ns, tuple(history))
            except Missing as e:
                return self._decision(NOOP, [], start, stop=True, raw=str(e))
            return self._decision(action, sorted(set(lines)), start)
        return self._decision(NOOP, [], start, stop=True, raw="no rule for this goal")

    def _decision(
        self, action: str, lines: list[int], start: float, stop: bool = False, raw: str = ""
    ) -> Decision:
        return Decision(action, lines, stop, self.model, "scripted", self.prompt_hash,
                        time.perf_counter() - start, False, raw)  # fmt: skip


def _load_rules() -> None:
    """Register the rules of :mod:`lrlab.agent.scripted_forms` and
    :mod:`lrlab.agent.scripted_reading` (imported here: they import this module)."""
    import lrlab.agent.scripted_forms  # noqa: F401
    import lrlab.agent.scripted_reading  # noqa: F401
