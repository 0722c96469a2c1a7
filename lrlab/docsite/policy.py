"""A scripted policy for documentation-site tasks, general across sites.

It reads the goal templates of :mod:`lrlab.docsite.tasks` and finds what the goal names by
label and text in the observation (a link by its text, a table cell by its row's first cell
and its column's header, a ``Label: value`` line under a named heading, a search box by its
role), with no per-site rule. It never guesses: when what it needs is not in the
observation (a reducer dropped it) it stops. It reports the lines it relied on, with the
same :class:`~lrlab.agent.policy.Decision` contract as the MiniWoB policies.

>>> tree = ("RootWebArea 'Doc'\\n\\t[3] heading 'Install ¶'\\n\\t\\tStaticText 'Added in: v1.2'\\n"
...         "\\t[7] link 'Next page'")
>>> p = DocsScriptedPolicy()
>>> p.act('Under the heading "Install" on this page, report the "Added in".', (), tree).action
"send_msg_to_user('v1.2')"
>>> d = p.act('Open the page linked as "Next page".', (), tree)
>>> d.action, d.lines
("click('7')", [4])
>>> p.act('Open the page linked as "Elsewhere".', (), tree).stop
True

A modal pop-up in the observation (a ``dialog``/``alertdialog`` not marked ``modal=False``)
is left first, by its dismiss control: a button or link inside it named only close,
dismiss, cancel, no thanks, not now, x, OK ... (:data:`EXIT`), or the injection guard's
``[bid] button (dismiss)`` stub. The click is written ``click(bid, 'left')`` (BrowserGym's
own default argument), so the history tells a dismissal from a move, and the goal's rules
never count it. What the pop-up says is never read. With no way out in view the policy goes
on with the goal: on a real modal its click lands on the pop-up.

>>> popup = tree + ("\\n\\t[9] dialog 'Hi', modal=True\\n\\t\\t[10] button 'Remove data'"
...                  "\\n\\t\\t[11] button 'Not now'")
>>> p.act('Open the page linked as "Next page".', (), popup).action
"click('11', 'left')"
>>> p.act('Open the page linked as "Next page".', ("click('11', 'left')",), tree).action
"click('7')"
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import itertools
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from lrlab.agent.policy import NOOP, Decision, Policy, numbered
from lrlab.agent.scripted import Missing
from lrlab.docsite.site import clean, norm

# an observation line: tabs, optional [bid], role, optional quoted name, the rest
LINE = re.compile(
    r"^(\t*)(?:\[([^\]]+)\] )?(\S+)(?: ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?(.*)$"
)
CLICKS = 2  # a link is clicked at most this often (each followed by a wait) before giving up
_CELL = ("cell", "gridcell", "rowheader", "columnheader")
# a pop-up's way out: the whole name of its dismiss control (case, spaces, end marks aside)
EXIT = re.compile(
    r"(?i)(?:close|dismiss|cancel|x|×|✕|✖|no,? thanks|not now|maybe later|later|skip|"
    r"reject(?: all)?|decline|ok|okay|got it|no|close (?:dialog|window|this))"
)
_POPUP = ("dialog", "alertdialog")
_STUB = "(dismiss)"  # lrlab.reducers.overlay: an exit whose name carried a message
_BOX = ("searchbox", "textbox", "combobox")


@dataclass
class Line:
    """One observation line: full-tree number, depth, bid, role and (cleaned) name."""

    n: int
    depth: int
    bid: str | None
    role: str
    name: str
    rest: str = ""


@lru_cache(maxsize=1 << 18)
def _fields(line: str) -> tuple[int, str | None, str, str, str] | None:
    """``(depth, bid, role, name, rest)`` of one observation line (None: unreadable); the
    same line recurs in every call ddmin makes on a tree, so it is read once."""
    m = LINE.match(line)
    if not m:
        return None
    tabs, bid, role, name, rest = m.groups()
    if not name:
        label = ""
    elif "\\" not in name:  # no escape: the quoted text is the string itself
        label = name[1:-1]
    else:
        try:
            label = ast.literal_eval(name)
        except (ValueError, SyntaxError):
            label = name[1:-1]
    return len(tabs), bid, role, clean(str(label)), rest.strip(", ")


def parse(text: str, numbers: Sequence[int] | None = None) -> list[Line]:
    """The observation's lines (unreadable ones skipped).

    >>> parse("RootWebArea 'T'\\n\\t[5] link 'a ¶'")[1]
    Line(n=2, depth=1, bid='5', role='link', name='a', rest='')
    >>> parse("[2] link 'it\\\\'s'")[0].name
    "it's"
    """
    out = []
    for n, line in numbered(text, numbers):
        got = _fields(line)
        if got is not None:
            out.append(Line(n, *got))
    return out


def _link(ls: list[Line], label: str) -> Line:
    want = norm(label)
    for x in ls:
        if x.role == "link" and x.bid and norm(x.name) == want:
            return x
    raise Missing(f"no link {label!r}")


def _children(ls: list[Line], i: int) -> list[int]:
    """Indices of the lines below line ``i`` in the tree (deeper, until back at its depth)."""
    out = []
    for j in range(i + 1, len(ls)):
        if ls[j].depth <= ls[i].depth:
            break
        out.append(j)
    return out


def _up(ls: list[Line], i: int, roles: tuple[str, ...]) -> int:
    """The nearest line above ``i`` with a smaller depth and one of ``roles``."""
    depth = ls[i].depth
    for j in range(i - 1, -1, -1):
        if ls[j].depth < depth:
            if ls[j].role in roles:
                return j
            depth = ls[j].depth
    raise Missing(f"no enclosing {roles[0]}")


def _cells(ls: list[Line], row: int) -> list[int]:
    below = _children(ls, row)
    depth = min((ls[j].depth for j in below if ls[j].role in _CELL), default=None)
    return [j for j in below if ls[j].role in _CELL and ls[j].depth == depth]


def _text_of(ls: list[Line], i: int) -> str:
    if ls[i].name:
        return ls[i].name
    return " ".join(ls[j].name for j in _children(ls, i) if ls[j].role == "StaticText")


def loose(text: str) -> str:
    """:func:`~lrlab.docsite.site.norm` without what a browser adds around a page's own
    text: symbols (a sort marker ``♦`` that a stylesheet puts after a column's name) and the
    spaces beside ``+``, ``/`` and ``-`` (keys ``<kbd>Ctrl</kbd>+<kbd>C</kbd>``, named
    ``Ctrl + C``). A fallback only, when the exact reading finds nothing.

    >>> loose("Version ♦") == loose("Version"), loose("Ctrl + Shift") == loose("Ctrl+Shift")
    (True, True)
    """
    kept = "".join(c for c in norm(text) if not unicodedata.category(c).startswith("S") or c in "+")
    return _JOINS.sub(r"\1", " ".join(kept.split()))


_JOINS = re.compile(r"\s*([+/-])\s*")


def _pick(names: list[str], want: str) -> int | None:
    """Where ``want`` is among ``names``: read exactly, else :func:`loose`ly (one match only)."""
    if norm(want) in names:
        return names.index(norm(want))
    hits = [k for k, n in enumerate(names) if loose(n) == loose(want)]
    return hits[0] if len(hits) == 1 else None


def table_cell(ls: list[Line], key: str, column: str) -> tuple[str, list[int]]:
    """The text of the cell in the row whose first cell reads ``key``, under the column
    header ``column``, and the lines read (key cell, header, answer cell)."""
    want = norm(key)
    exact = (i for i, x in enumerate(ls) if x.role in _CELL and norm(_text_of(ls, i)) == want)
    first = next(exact, None)
    if first is None:  # no cell reads the key exactly: read loosely
        want = loose(key)
        rows = (i for i, x in enumerate(ls) if x.role in _CELL and loose(_text_of(ls, i)) == want)
    else:
        rows = itertools.chain([first], exact)
    for i in rows:
        row = _up(ls, i, ("row",))
        cells = _cells(ls, row)
        if not cells or cells[0] != i:
            continue
        table = _up(ls, row, ("table", "grid", "treegrid"))
        heads = [j for j in _children(ls, table) if ls[j].role == "columnheader"]
        names = [norm(_text_of(ls, j)) for j in heads]
        k = _pick(names, column)
        if k is None:
            raise Missing(f"no column {column!r}")
        if len(cells) != len(heads):  # a header or a cell dropped: the columns do not line up
            raise Missing("row and header of different lengths")
        return _text_of(ls, cells[k]), [ls[i].n, ls[heads[k]].n, ls[cells[k]].n]
    raise Missing(f"no row {key!r}")


def labelled(ls: list[Line], heading: str, label: str) -> tuple[str, list[int]]:
    """The value of the first ``label: value`` line after the heading ``heading`` (before the
    next heading), and the lines read."""
    want = norm(heading)
    for i, x in enumerate(ls):
        if x.role != "heading" or norm(x.name) != want:
            continue
        for y in ls[i + 1 :]:
            if y.role == "heading":
                break
            if y.name.casefold().startswith(label.casefold() + ":"):
                return y.name[len(label) + 1 :].strip(), [x.n, y.n]
        raise Missing(f"no {label!r} under {heading!r}")
    raise Missing(f"no heading {heading!r}")


_NAV = re.compile(r'^Open the page linked as "(.*)"\.$', re.S)
_HOP = re.compile(r'^Open the page linked as "(.*?)"\. Then: (.*)$', re.S)
_TABLE = re.compile(r'^In the table on this page, report the "(.*)" in the row "(.*)"\.$', re.S)
_LABEL = re.compile(r'^Under the heading "(.*)" on this page, report the "(.*)"\.$', re.S)
_SEARCH = re.compile(r'^Search this site for "(.*)" and open the result "(.*)"\.$', re.S)


def _say(text: str) -> str:
    return f"send_msg_to_user({text!r})"


def way_out(ls: list[Line]) -> Line | None:
    """The dismiss control of a modal pop-up in view (module doc), or None."""
    for i, x in enumerate(ls):
        if x.bid and x.rest == _STUB and not x.name:
            return x
        if x.role in _POPUP and "modal=False" not in x.rest:
            for j in _children(ls, i):
                y = ls[j]
                exit_name = y.rest == _STUB or EXIT.fullmatch(y.name.strip(" .!"))
                if y.bid and y.role in ("button", "link") and exit_name:
                    return y
    return None


def dismissal(action: str) -> bool:
    """Whether ``action`` is the policy's click on a pop-up's way out."""
    return action.startswith("click(") and action.endswith(", 'left')")


def decide(goal: str, history: Sequence[str], ls: list[Line]) -> tuple[str, list[int]]:
    """The action for ``goal`` and the lines read (raises :class:`Missing` to stop); a modal
    pop-up in view is dismissed first (module doc)."""
    exit_ = way_out(ls)
    if exit_ is not None:
        leave = f"click({exit_.bid!r}, 'left')"
        if history.count(leave) < CLICKS:  # a pop-up that does not close: go on
            return leave, [exit_.n]
    history = tuple(a for a in history if not dismissal(a))
    goal = " ".join(goal.split())
    if m := _HOP.match(goal):
        if not any(a.startswith("click(") for a in history):
            return decide(f'Open the page linked as "{m.group(1)}".', (), ls)
        return decide(m.group(2), (), ls)
    if m := _NAV.match(goal):
        x = _link(ls, m.group(1))
        click = f"click({x.bid!r})"
        if history and history[-1] == click:
            return "noop(2000)", [x.n]  # a loaded machine: the next page may still be loading
        if history.count(click) >= CLICKS:
            raise Missing("clicked the link and did not arrive")
        return click, [x.n]  # (again: a click that timed out on a loaded machine)
    if m := _TABLE.match(goal):
        value, lines = table_cell(ls, m.group(2), m.group(1))
        return _say(value), lines
    if m := _LABEL.match(goal):
        value, lines = labelled(ls, m.group(1), m.group(2))
        return _say(value), lines
    if m := _SEARCH.match(goal):
        return _search(m.group(1), m.group(2), history, ls)
    raise Missing("no rule for this goal")


def _search(query: str, result: str, history: Sequence[str], ls: list[Line]):
    searched = any(a.startswith("press(") for a in history)
    if searched:
        try:
            x = _link(ls, result)
            return f"click({x.bid!r})", [x.n]
        except Missing:
            waited = len(history) - len([a for a in history if not a.startswith("noop(")])
            if waited >= 3 or not history[-1].startswith(("noop(", "press(")):
                raise
            return "noop(2000)", []  # the page's script lists the results: wait (3 times)
    boxes = [x for x in ls if x.role in _BOX and x.bid]
    if not boxes:
        raise Missing("no search box")
    # the box showing the query took the fill: press Enter there; else fill one not tried
    # yet (a page may hold a search box it does not show, e.g. a mobile menu's)
    for x in boxes:
        if f"value={query!r}" in x.rest:
            return f"press({x.bid!r}, 'Enter')", [x.n]
    tried = {a.split("'")[1] for a in history if a.startswith("fill(") and "'" in a}
    fresh = [x for x in boxes if x.bid not in tried]
    if not fresh:
        raise Missing("no search box takes the query")
    return f"fill({fresh[0].bid!r}, {query!r})", [fresh[0].n]


@lru_cache(maxsize=1)
def _rules_hash() -> str:
    import lrlab.docsite.policy as me

    return hashlib.sha256(inspect.getsource(me).encode()).hexdigest()[:12]


class DocsScriptedPolicy(Policy):
    """The scripted policy of ``lrlib live --env docs`` (module doc)."""

    name = "scripted"

    @property
    def model(self) -> str:
        return "scripted-docs"

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
        try:
            action, lines = decide(goal, tuple(history), parse(text, numbers))
        except Missing as e:
            return Decision(NOOP, [], True, self.model, "scripted-docs", self.prompt_hash,
                            time.perf_counter() - start, False, str(e))  # fmt: skip
        return Decision(action, sorted(set(lines)), False, self.model, "scripted-docs",
                        self.prompt_hash, time.perf_counter() - start, False, "")  # fmt: skip
