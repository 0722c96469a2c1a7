"""What an agent reads to decide, brought along with the lines a reducer keeps (issue 33).

A reducer that keeps the element the agent acts on can still make it fail: the agent reads
other lines first, to choose *which* element and *what* to type. Read from the minimal
failure sets of the MiniWoB tuning half (``lrlib mfs``; the held-out half was not read),
the lines most often missing were text, not controls: the value beside a label the goal
names, the other cells of a table row, the question printed before an answer box, and the
text an unnamed control carries. :func:`decision_lines` adds them by structure and the goal's
wording only (no site, page or task rule):

- **carried text**: a kept line with a bid and no name of its own (not a field: what a
  field holds is its value) brings the short named lines just under it (its children and grandchildren without a bid): a ``LabelText ''``
  kept for its child's words brings those words;
- **label and value**: a short text line ending with ``:`` that names a goal term, or the
  label of a kept field, or is kept, brings the short text line that follows it
  (``Duration:`` then ``6h 5m``);
- **rows**: a line in a table row naming a goal term or a kept field's label brings the
  row's short named lines (the record the form asks to copy);
- **labels of kept fields**: a short text line whose whole text is the label of a kept
  field (``Year of Birth`` in a table, for a field labelled ``Year of Birth:``);
- **the question before a field**: a kept form field brings up to two text lines just
  before it, stopping at another control (``2 + x = 43`` before ``x =`` and its box).

:func:`named_lines` is the part a budgeted scorer can use alone (``learned:decision=True``):
what a policy checks before it acts, whatever its budget kept - every choice whose whole name
the goal says (its line shows whether it is ticked), every field the goal refers to by its
name or label (the whole of it, or one of its content words of :data:`WORD_MIN` letters or
more: a "password" and its "verify password" partner) with its label line, and the option
already selected inside such a field or beside such a choice.

Lines longer than :data:`SHORT` characters are never brought (a label or a value is short;
a long text beside a field may be an injected note), except the question before a field,
up to :data:`QUESTION` characters. The guard runs after these rules, so what it flags stays
out.

>>> from lrlib.core.step import Step
>>> tree = "\\n".join(["RootWebArea 'Task'", "\\t[2] LabelText ''", "\\t\\tStaticText 'Duration:'",
...     "\\tStaticText '6h 5m'", "\\t[5] button 'Book for $112'"])
>>> decision_lines(Step(goal="Buy the ticket with the shortest duration.", tree=tree), [2, 5])
[2, 3, 4, 5]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lrlab.reducers.budget import step_context
from lrlab.reducers.features import line_names, role_group
from lrlab.reducers.lexicon import content, goal_terms, term_matcher
from lrlib.core.step import Step
from lrlib.data.evidence import line_name

__all__ = ["QUESTION", "SHORT", "TEXT_ROLES", "WORD_MIN", "decision_lines", "named_lines"]

SHORT = 60  # characters: the longest label, value or cell these rules bring
QUESTION = 300  # characters: the longest question text brought before a field
WORD_MIN = 4  # letters: a shorter word shared by a field's label and the goal does not refer
CHOICES = frozenset({"checkbox", "radio", "switch", "option", "menuitemcheckbox", "menuitemradio"})
_CHOSEN = re.compile(r"selected=True|checked='true'|checked=True|pressed='true'")
_WORDS = re.compile(r"\w+")
TEXT_ROLES = frozenset({
    "StaticText", "LabelText", "cell", "gridcell", "columnheader", "rowheader", "heading",
    "paragraph", "strong", "emphasis", "time", "term", "definition",
})  # fmt: skip


_UNNAMED = re.compile(r"^\s*(?:\[[^\]]*\]\s+)?[A-Za-z]+(?:\s+''|\s*$)")


def _clean(name: str) -> str:
    return name.strip().rstrip(",").strip().strip("'\"").strip()


def _subtree_ends(parents: list[int]) -> list[int]:
    """For each line (0-based), the first line after its subtree."""
    ends = list(range(1, len(parents) + 1))
    for i in range(len(parents) - 1, -1, -1):
        p = parents[i]
        if p >= 0 and ends[i] > ends[p]:
            ends[p] = ends[i]
    return ends


def decision_lines(step: Step, lines: Iterable[int]) -> list[int]:
    """``lines`` (1-based) and what the agent reads to decide on them (module doc).

    >>> from lrlib.core.step import Step
    >>> s = Step(goal="Solve for x.", tree="RootWebArea 'T'\\n\\tStaticText '2 + x = 4'\\n\\t[3] textbox ''")
    >>> decision_lines(s, [3])
    [2, 3]
    """
    t = step.axtree
    n = len(t)
    kept = set(lines)
    names = [_clean(x) for x in line_names(t)]
    roles, bids, parents = t.roles, t.bids, t.parents
    ends = _subtree_ends(parents)
    kids: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parents):
        if p >= 0:
            kids[p].append(i)
    add: set[int] = set()

    def short(i: int) -> bool:
        return bool(names[i]) and len(names[i]) <= SHORT

    # carried text
    for k in kept:
        i = k - 1
        if bids[i] is not None and not names[i] and role_group(roles[i]) != "form":
            for c in kids[i][:3]:
                for j in (c, *kids[c][:3]):
                    if bids[j] is None and short(j):
                        add.add(j + 1)
    # the labels of kept fields, and their words
    ctx = step_context(step)
    labels: set[str] = set()
    fields = [k - 1 for k in kept if role_group(roles[k - 1]) == "form"]
    for i in fields:
        for m in ctx[i]:
            for j in (m - 1, *kids[m - 1][:2]):
                labels.add(names[j].rstrip(":").strip().lower())
    labels.discard("")
    match = term_matcher(sorted(set(goal_terms(step.goal))))
    for i in range(n):
        if roles[i] not in TEXT_ROLES or not short(i):
            continue
        low = names[i].lower().rstrip(":").strip()
        hit = bool(match and match.search(low))
        label = low in labels
        if label:
            add.add(i + 1)
        if names[i].endswith(":") and (hit or label or i + 1 in kept or i + 1 in add):
            p = parents[i]
            j = ends[p] if p >= 0 and roles[p] == "LabelText" else ends[i]
            if j < n and roles[j] in TEXT_ROLES and short(j):
                add.update((i + 1, j + 1))
        p = parents[i]
        if (hit or label) and p >= 0 and roles[p] == "row":
            add.update(c + 1 for c in range(p, ends[p]) if short(c))
    # the question before a field that has no name of its own
    for i in fields:
        if not _UNNAMED.search(t.texts[i]):
            continue
        got = 0
        for j in range(i - 1, max(-1, i - 5), -1):
            inside = parents[j] >= 0 and role_group(roles[parents[j]]) == "form"
            if (
                inside
                or role_group(roles[j]) == "form"
                or (bids[j] is not None and roles[j] not in TEXT_ROLES)
            ):
                break
            if bids[j] is None and names[j] and roles[j] in TEXT_ROLES:
                if len(names[j]) <= QUESTION:
                    add.add(j + 1)
                    if parents[j] >= 0 and roles[parents[j]] == "paragraph":
                        add.add(parents[j] + 1)
                got += 1
                if got == 2:
                    break
    return sorted(kept | add)


def _phrase(text: str) -> str:
    return " " + " ".join(_WORDS.findall(text.casefold())) + " "


def named_lines(step: Step) -> list[int]:
    """The lines (1-based) of the choices and fields ``step``'s goal names, their labels and
    the options already chosen in them (module doc).

    >>> from lrlib.core.step import Step
    >>> tree = "\\n".join(["RootWebArea 'T'", "\\t[2] checkbox 'Nb', checked='true'",
    ...     "\\t[3] checkbox 'Other'", "\\t[4] LabelText ''", "\\t\\tStaticText 'Verify password'",
    ...     "\\t[6] textbox ''", "\\t[7] button 'Submit'"])
    >>> named_lines(Step(goal="Tick Nb, type the password and submit.", tree=tree))
    [2, 5, 6]
    """
    t = step.axtree
    goal = _phrase(step.goal)
    words = {w for w in goal.split() if len(w) >= WORD_MIN and content(w)}
    ctx = step_context(step)
    out: set[int] = set()
    groups: set[int] = set()
    for i, role in enumerate(t.roles):
        if t.bids[i] is None or not (role in CHOICES or role_group(role) == "form"):
            continue
        own = line_name(t.texts[i])
        if role in CHOICES:
            said = _phrase(own)
            if said.strip() and said in goal:
                out.add(i + 1)
                groups.update(a - 1 for a in t.ancestors(i + 1)[:2])
            continue
        label = [] if own.strip() else ctx[i]
        said = _phrase(own if own.strip() else " ".join(line_name(t.texts[n - 1]) for n in label))
        if said.strip() and (said in goal or words & set(said.split())):
            out.update((i + 1, *label))
            groups.add(i)
    for i, role in enumerate(t.roles):
        chosen = role == "option" and _CHOSEN.search(t.texts[i])
        if chosen and any(a - 1 in groups for a in t.ancestors(i + 1)[:4]):
            out.add(i + 1)
    return sorted(out)
