"""Goal-anchored retrieval with the page structure around each anchor (``anchor``).

BM25 keeps the lines that share words with the goal, but on a long reference page the line
an agent needs is often one that shares none: the value in a table row (the goal names the
row and the column, not the value), the ``Label: value`` line under a named heading, or a
link among hundreds that all share the goal's words. This reducer finds *anchors* and keeps
the structure an answer lives in around them:

- anchors: every line whose accessible name is a phrase the goal quotes (``"..."``), or
  begins with one and a colon (a ``Label: value`` line; at most ``max_phrase_lines`` of
  each kind), the ``top_k`` lines by BM25 (:func:`lrlab.reducers.bm25.bm25_scores`,
  goal and past actions as the query), the lines of past actions' bids and, with
  ``controls``, the page's text inputs (search boxes);
- around an anchor: its first ``below`` descendants (a cell's or link's text); the whole
  table row it sits in and its table's header row(s) (the cells naming the columns); and,
  when it is or sits in a heading, the ``after`` lines that follow the heading's subtree
  (the section's lead: version notes, ``Default:`` lines);
- rendered with the structure-preserving filter (ancestors as ``[bid] role`` stubs);
- ``guard=True`` (off by default; issue 35): the injection guard of ``program`` and
  ``learned`` (:mod:`lrlab.reducers.suspect`): flagged lines are dropped, a pop-up the
  task did not ask for is shown as its dismiss control only.

The rules read roles and the goal's wording only: no site, page or task-family rule.
A goal that quotes nothing leaves BM25 and the structure around its lines.

>>> tree = "\\n".join(["RootWebArea 'Doc'", "\\ttable ''", "\\t\\trow ''",
...     "\\t\\t\\tcolumnheader 'Name'", "\\t\\t\\tcolumnheader 'Default'", "\\t\\trow ''",
...     "\\t\\t\\tcell 'port'", "\\t\\t\\tcell '80'", "\\t\\trow ''", "\\t\\t\\tcell 'host'",
...     "\\t\\t\\tcell 'x'"])
>>> out = Anchor(top_k=1).reduce(Step(goal='Report the "Default" in the row "port".', tree=tree))
>>> [t.strip() for t in out.text.split("\\n")][-3:]
["row ''", "cell 'port'", "cell '80'"]
"""

from __future__ import annotations

import re

import numpy as np

from lrlab.reducers.bm25 import bm25_scores
from lrlab.reducers.chunking import query_of
from lrlab.reducers.overlay import guarded_output
from lrlab.reducers.suspect import suspect_lines
from lrlib.core.step import Step
from lrlib.reducers.base import Knob, Output, Reducer, register_reducer

_QUOTED = re.compile(r'"([^"\n]{1,120})"')
_ROWS = ("row",)
_TABLES = ("table", "grid", "treegrid")
_HEADS = ("columnheader",)
_INPUTS = ("searchbox", "textbox", "combobox")
_BID = re.compile(r"'([^'\s]+)'")
_ROLE = re.compile(r"\s*(?:\[[^\]]*\]\s+)?([A-Za-z]+)")
_MARKS = "¶#§🔗"
_SPACE = r"(?:\s|\\xa0|\\u[0-9a-f]{4})+"


def goal_phrases(goal: str) -> list[str]:
    """The phrases the goal quotes, in order, each once.

    >>> goal_phrases('Open "A b". Then report the "Default" of "A b".')
    ['A b', 'Default']
    """
    return list(dict.fromkeys(p.strip() for p in _QUOTED.findall(goal) if p.strip()))


def role_of(text: str) -> str:
    """The role of a tree line (its first word after the bid).

    >>> role_of("\\t[12] columnheader 'Name'"), role_of("row ''")
    ('columnheader', 'row')
    """
    m = _ROLE.match(text)
    return m.group(1) if m else ""


def joined(texts: list[str]) -> tuple[str, np.ndarray]:
    """The lines joined by ``\\n`` and the offset where each starts.

    >>> body, starts = joined(["ab", "c"])
    >>> body, starts.tolist()
    ('ab\\nc', [0, 3])
    """
    lengths = np.fromiter(map(len, texts), np.int64, len(texts)) + 1
    starts = np.zeros(len(texts), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return "\n".join(texts), starts


def phrase_lines(
    texts: list[str],
    phrases: list[str],
    cap: int,
    label: bool = False,
    index: tuple[str, np.ndarray] | None = None,
) -> list[int]:
    """0-based lines whose quoted name is one of ``phrases`` (case ignored, a trailing
    permalink mark allowed) or, with ``label``, begins with one and a colon (``'Default:
    80'``), at most ``cap``, in page order.

    >>> phrase_lines(["link 'Next ¶'", "StaticText 'Default: 80'"], ["next", "Default"], 5)
    [0]
    >>> phrase_lines(["link 'Next ¶'", "StaticText 'Default: 80'"], ["Default"], 5, label=True)
    [1]
    >>> phrase_lines(["link 'Section\\\\xa028.2'", "link 'Section  28.2'"], ["Section 28.2"], 5)
    [0, 1]
    >>> bs = chr(92)  # a backslash: the goal quotes \\n as the page has it, the tree escapes it
    >>> phrase_lines([f"cell '{bs}{bs}n'", "cell 'n'"], [f"{bs}n"], 5)
    [0]
    """
    return named_lines(texts, phrases, cap, index)[1 if label else 0]


def named_lines(
    texts: list[str], phrases: list[str], cap: int, index: tuple[str, np.ndarray] | None = None
) -> tuple[list[int], list[int]]:
    """:func:`phrase_lines` of both kinds (names, labels) from one scan of the text."""
    if not phrases or not texts or cap <= 0:
        return [], []
    body, starts = index if index is not None else joined(texts)  # (the caller's, if at hand)
    # any run of whitespace in a phrase matches any run in a name, a non-breaking or other
    # Unicode space included, which the tree shows escaped (PostgreSQL's 'Section\\xa028.2'):
    # the policy reads the name unescaped and normalises its whitespace
    # and as the tree writes it: a backslash or control character escaped ('\\n' for \n)
    forms = {f for p in phrases for f in (p, repr(p)[1:-1].replace("\\'", "'"))}
    alts = "|".join(_SPACE.join(map(re.escape, p.split()))
                    for p in sorted(forms, key=len, reverse=True))  # fmt: skip
    pattern = re.compile(rf"""(['"])\s*(?:{alts})(?:(\s*[{_MARKS}]?\1)|:)""", re.IGNORECASE)
    found: tuple[list[int], list[int]] = ([], [])
    for m in pattern.finditer(body):
        out = found[0] if m.group(2) is not None else found[1]
        if len(out) >= cap:
            if all(len(f) >= cap for f in found):
                break
            continue
        i = int(np.searchsorted(starts, m.start(), "right")) - 1
        if not out or out[-1] != i:
            out.append(i)
    return found


def _subtree_end(depths: list[int], i: int, limit: int | None = None) -> int:
    """The 0-based index after the last descendant of line ``i`` (at most ``limit``)."""
    stop = len(depths) if limit is None else min(len(depths), limit)
    j = i + 1
    while j < stop and depths[j] > depths[i]:
        j += 1
    return j


@register_reducer
class Anchor(Reducer):
    """Goal-anchored lines with their table row, header and section lead (module doc)."""

    name = "anchor"
    listed = None  # a research reducer of issue 34 (documentation sites); not in the default tables
    sweep = Knob("top_k", (5, 10, 20, 40))

    def __init__(
        self,
        top_k: int = 5,
        after: int = 8,
        below: int = 6,
        controls: bool = True,
        max_phrase_lines: int = 40,
        guard: bool = False,
        **kwargs,
    ) -> None:
        if top_k < 0 or after < 0 or below < 0 or max_phrase_lines < 0:
            raise ValueError("top_k, after, below and max_phrase_lines must be >= 0")
        self.top_k, self.after, self.below = top_k, after, below
        self.controls, self.max_phrase_lines = controls, max_phrase_lines
        self.guard = bool(guard)
        if self.guard:  # named only when on: the default keeps its parameters
            kwargs["guard"] = True
        super().__init__(top_k=top_k, after=after, below=below, controls=controls,
                         max_phrase_lines=max_phrase_lines, **kwargs)  # fmt: skip

    def anchors(self, step: Step) -> list[int]:
        """0-based anchor lines (module doc), in page order."""
        tree = step.axtree
        index = joined(tree.texts)
        phrases = goal_phrases(step.goal)
        names, labels = named_lines(tree.texts, phrases, self.max_phrase_lines, index)
        found = set(names) | set(labels)
        if self.top_k:
            scores = bm25_scores([t.strip() for t in tree.texts], query_of(step))
            best = np.argsort(-scores, kind="stable")[: self.top_k]
            found.update(int(i) for i in best if scores[i] > 0)
        for action in step.history:
            for bid in _BID.findall(action):
                if (n := tree.line_of(bid)) is not None:
                    found.add(n - 1)
        if self.controls:  # the roles' names found in the text, not every line's role read
            body, starts = index
            for role in _INPUTS:
                at = body.find(role)
                while at >= 0:
                    i = int(np.searchsorted(starts, at, "right")) - 1
                    if role_of(tree.texts[i]) == role:
                        found.add(i)
                    at = body.find(role, starts[i + 1] if i + 1 < len(starts) else len(body))
        return sorted(found)

    def select(self, step: Step) -> Output:
        tree = step.axtree
        texts, depths, parents = tree.texts, tree.depths, tree.parents
        keep: set[int] = set()
        tables: set[int] = set()
        n = len(depths)
        for a in self.anchors(step):
            keep.update(range(a, _subtree_end(depths, a, a + 1 + self.below)))
            p = a
            while p >= 0:
                role = role_of(texts[p])
                if role in _ROWS:
                    keep.update(range(p, _subtree_end(depths, p)))
                elif role in _TABLES:
                    if p not in tables:
                        tables.add(p)
                        self._headers(p, keep, texts, depths)
                    break
                elif role == "heading":
                    end = _subtree_end(depths, p)
                    keep.update(range(p, min(end, p + 1 + self.below)))  # its own text
                    keep.update(range(end, min(n, end + self.after)))
                p = parents[p]
        lines = [i + 1 for i in sorted(keep)]
        if self.guard:  # as program's guard: flagged lines out, every pop-up's exit in
            banned = suspect_lines(step)
            lines = [n for n in lines if n not in banned]
        return guarded_output(step, lines, "structure", guard=self.guard)

    @staticmethod
    def _headers(table: int, keep: set[int], texts: list[str], depths: list[int]) -> None:
        """Keep the rows of ``table`` that hold column headers (whole)."""
        end = _subtree_end(depths, table)
        row = -1
        for j in range(table + 1, end):
            role = role_of(texts[j])
            if role in _ROWS:
                row = j
            elif role in _HEADS and row >= 0:
                keep.update(range(row, _subtree_end(depths, row)))
                row = -1
