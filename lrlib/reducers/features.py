"""Per-line features of a step's tree, for the learned line scorer (:mod:`.learned`).

Every feature is meant to transfer across sites: role *groups* rather than one site's role
names (an unknown role falls in ``other``), lexical relevance to the goal and history (BM25,
goal-term hits) of the line and of the text its children carry (a clickable container
whose name is in a child ``StaticText``), the line's whole name against the goal (a quoted
phrase, a name the goal repeats: :mod:`.lexicon`; for an unnamed element, its child's:
``carrier``), tree geometry (depth, children, the
order of interactive lines, which matters on a first step), proximity to the element the
last action used (lines and tree hops) and to a text line that mentions the goal (an
unnamed icon after the user name it belongs to).

**No page-controlled lift.** The page's author sets ``focused``, ``autofocus``, modal roles,
names and widget state; none of them lifts a line on its own: focus is not read at all,
``dialog``/``alert`` fall in the generic ``container`` group, lexical match saturates
(relative BM25 in [0, 1], at most two goal terms counted, a whole-name match is one bit),
and the state features (:data:`DEMOTE_ONLY`: a filled field, a ticked box, the element
just acted on) may only lower a score: training refuses a positive weight for them
(:func:`lrlib.eval.learned_fit.fit_model`).

>>> from lrlib.core.step import Step
>>> tree = "RootWebArea 'Shop'\\n\\t[3] link 'Home'\\n\\t[4] button 'Add to cart'"
>>> X = line_features(Step(goal="Add a mug to the cart", tree=tree))
>>> X.shape == (3, len(FEATURES)), bool(X[2, FEATURES.index("bm25_rel")] == 1.0)
(True, True)
"""

from __future__ import annotations

import functools
import math
import operator
import re
from itertools import accumulate, compress, repeat

import numpy as np

from lrlib.core.axtree import AxTree
from lrlib.core.step import Step
from lrlib.data.actions import parse_code
from lrlib.reducers.bm25 import joined_term_counts, query_terms, scores_from_counts, token_lines
from lrlib.reducers.chunking import query_of
from lrlib.reducers.lexicon import (
    content,
    goal_terms,
    in_goal,
    normalise,
    normalise_lines,
    quoted_phrases,
    switched_off,
    term_finds,
    terms,
)

# role groups: names seen on several sites (ARIA roles and Chromium's internal ones)
GROUPS: dict[str, frozenset[str]] = {
    "form": frozenset({
        "textbox", "searchbox", "combobox", "spinbutton", "slider", "textarea", "listbox",
    }),
    "choice": frozenset({
        "checkbox", "radio", "switch", "option", "menuitemcheckbox", "menuitemradio",
    }),
    "button": frozenset({"button", "menubutton", "togglebutton"}),
    "link": frozenset({"link"}),
    "item": frozenset({"menuitem", "tab", "treeitem", "LabelText", "gridcell", "listitem"}),
    "text": frozenset({
        "StaticText", "paragraph", "strong", "emphasis", "mark", "time", "term", "definition",
        "note", "status", "log", "caption", "Legend", "tooltip", "code", "label",
    }),
    "heading": frozenset({"heading", "sectionheader", "columnheader", "rowheader"}),
    "cell": frozenset({"cell", "row", "LayoutTableCell", "LayoutTableRow", "table", "grid",
                       "rowgroup", "LayoutTable", "DescriptionList"}),
    "container": frozenset({
        "generic", "group", "region", "section", "list", "main", "form", "article", "search",
        "radiogroup", "tablist", "tabpanel", "menu", "dialog", "alertdialog", "alert",
        "figure", "document", "toolbar", "RootWebArea", "WebArea",
    }),
    "chrome": frozenset({"navigation", "banner", "contentinfo", "menubar", "complementary"}),
    "frame": frozenset({"Iframe", "iframe", "frame"}),
    "image": frozenset({"image", "img", "graphics-symbol", "svg", "ListMarker", "separator"}),
}  # fmt: skip
ROLE_OF = {role: g for g, roles in GROUPS.items() for role in roles}
INTERACTIVE = ("form", "choice", "button", "link", "item")
_GROUP_NAMES = (*GROUPS, "other")
FEATURES: tuple[str, ...] = (
    *(f"role_{g}" for g in _GROUP_NAMES),
    "has_bid", "interactive", "no_role", "depth", "log_len", "empty_name", "has_url",
    "log_children", "leaf", "bm25_rel", "kids_bm25_rel", "hits", "kids_hits", "sub_hits",
    "kids_sub_hits", "acted", "has_last", "near_after", "log_hops", "same_parent", "in_chrome",
    "interactive_x_bm25", "interactive_x_kids", "unnamed_x_near", "log_cost",
    "quoted", "name_in_goal", "role_in_goal", "hit_before", "first_step", "inter_order",
    "first_x_order", "carrier", "field_pending", "last_el", "filled", "done_choice",
)  # fmt: skip
# page or agent state: may only lower a score
DEMOTE_ONLY = ("field_pending", "last_el", "filled", "done_choice")
_NAME = re.compile(r"^(?:'((?:[^'\\]|\\.)*)')?")
# _NAME on each line of the joined names, each after its newline (the rest of a line
# consumed: one match per line)
_OWN_NAME = re.compile(r"\n(?:'((?:[^'\\\n]++|\\.)*+)')?[^\n]*+")
_HEAD = re.compile(r"^(?:\[[^\]\s]*\] ?)?(?:[A-Za-z][\w-]*)?")
_URL = re.compile(r"url='[^']*'")
_PAGE_STATE = re.compile(r", (?:focused|autofocus)(?=,|$)")  # set by the page: never read
# the same three on lines joined by newlines, each line's head after its newline (a literal
# to scan for, where a multi-line "^" is tried at every character); each match in one line
_HEAD_LINES = re.compile("\n" + _HEAD.pattern[1:])
_URL_LINES = re.compile(r"url='[^'\n]*'")
_STATE_LINES = re.compile(_PAGE_STATE.pattern, re.MULTILINE)
KIDS = 4  # child lines (without a bid) whose text counts as the parent's
NEAR = 10  # lines after the last acted element that count as "near_after"
_CARRIES = ("container", "item", "other")  # groups an unnamed clickable shows up as
HIT_WINDOW = 12  # lines after a goal-mentioning text line that count for "hit_before"
_FILLED = re.compile(r"\bvalue=(?!''|\"\")\S")
_CHECKED = re.compile(r"checked='true'|selected=True|pressed='true'")
# words a goal uses for a kind of control ("the text field", "the Submit button")
ROLE_WORDS: dict[str, tuple[str, ...]] = {
    "form": ("textbox", "text field", "field", "input", "box"),
    "choice": ("checkbox", "radio", "option", "check"),
    "button": ("button",),
    "link": ("link",),
    "item": ("tab", "menu", "item"),
}


_C = {name: k for k, name in enumerate(FEATURES)}
_GROUP_ID = {role: _GROUP_NAMES.index(g) for role, g in ROLE_OF.items()}
_OTHER, _CHROME, _FORM = (_GROUP_NAMES.index(g) for g in ("other", "chrome", "form"))
_INTERACTIVE = np.array([g in INTERACTIVE for g in _GROUP_NAMES])
_CARRIER = np.array([g in _CARRIES for g in _GROUP_NAMES])


def role_group(role: str | None) -> str:
    """The group of a role name (``other`` when unknown).

    >>> role_group("button"), role_group("x-fancy-widget"), role_group(None)
    ('button', 'other', 'other')
    """
    return ROLE_OF.get(role or "", "other")


def history_bids(history: tuple[str, ...]) -> tuple[set[str], str | None]:
    """Bids named by past actions, and the last one.

    >>> seen, last = history_bids(("click('12')", "fill('7', 'x')"))
    >>> sorted(seen), last
    (['12', '7'], '7')
    """
    seen, last = set(), None
    for h in history:
        bids = action_bids(h)
        if bids:
            seen.update(bids)
            last = bids[-1]
    return seen, last


@functools.lru_cache(maxsize=8192)
def action_bids(code: str) -> tuple[str, ...]:
    """The bids one action's code names, memoised: an episode's later steps repeat its
    history (:func:`history_bids` would parse every past action again at every step).

    >>> action_bids("click('12')"), action_bids("not code (")
    (('12',), ())
    """
    action = parse_code(code)
    return action.bids if action is not None else ()


def unfocused(text: str) -> str:
    """``text`` without the ``focused`` state, which the page controls (so it can decide
    nothing: no feature, length or match reads it).

    >>> unfocused("[5] button 'Go', focused")
    "[5] button 'Go'"
    """
    return _PAGE_STATE.sub("", text)


def line_names(tree: AxTree) -> list[str]:
    """Each line's name and attributes: no indentation, bid, role, URL or focus (so a goal
    saying "click the button" does not match every button by its role).

    >>> from lrlib.core.axtree import parse
    >>> line_names(parse("[3] link 'Home', url='https://x.example/', focused"))
    ["'Home',"]
    """
    texts = tree.texts
    # the three substitutions on all lines joined (each pattern stays within a line: the
    # same result as line by line); a line holding a newline of its own: line by line
    body = "\n" + "\n".join(map(operator.getitem, texts, map(slice, tree.indents, repeat(None))))
    body = _HEAD_LINES.sub("\n", body)[1:]
    names = _STATE_LINES.sub("", _URL_LINES.sub("", body)).split("\n")
    if len(names) != len(texts):
        return [
            unfocused(_URL.sub("", _HEAD.sub("", text[k:], count=1))).strip()
            for text, k in zip(texts, tree.indents, strict=True)
        ]
    return list(map(str.strip, names))


def kids_text(tree: AxTree, names: list[str]) -> list[str]:
    """Text of the first :data:`KIDS` bid-less children and grandchildren of each line (the
    visible label of a container whose own name is empty).

    >>> from lrlib.core.axtree import parse
    >>> t = parse("[1] generic\\n\\tStaticText 'Submit'")
    >>> kids_text(t, line_names(t))[0]
    "'Submit'\\n"
    """
    out = [""] * len(tree)
    for i, p in enumerate(tree.parents):
        if tree.bids[i] is not None:
            continue
        q, hops = p, 0
        while q >= 0 and hops < 2:  # parent and grandparent
            if out[q].count("\n") < KIDS:
                out[q] += names[i] + "\n"
            if tree.bids[q] is not None:
                break
            q, hops = tree.parents[q], hops + 1
    return out


def _firsts(line: np.ndarray) -> np.ndarray:
    """Where each run of equal values in ``line`` starts."""
    return np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1]))) if len(line) else line


def kid_pairs(tree: AxTree) -> tuple[np.ndarray, np.ndarray]:
    """The (line, child line) pairs of :func:`kids_text`, 0-based, each line's children in
    page order: the first :data:`KIDS` bid-less children, and grandchildren under a
    bid-less child.

    >>> from lrlib.core.axtree import parse
    >>> [a.tolist() for a in kid_pairs(parse("[1] generic\\n\\tgroup\\n\\t\\tStaticText 'Go'"))]
    [[0, 0, 1], [1, 2, 2]]
    """
    n = len(tree)
    parents = np.asarray(tree.parents, np.int64).reshape(n)
    bidless = np.fromiter(map(operator.is_, tree.bids, repeat(None)), bool, n)
    child = np.flatnonzero(bidless & (parents >= 0))
    up = parents[child]
    far = bidless[up] & (parents[up] >= 0)
    line = np.concatenate([up, parents[up[far]]])
    kid = np.concatenate([child, child[far]])
    order = np.argsort(line * n + kid, kind="stable")
    line, kid = line[order], kid[order]
    start = _firsts(line)
    rank = np.arange(len(line)) - np.repeat(start, np.diff(start, append=len(line)))
    keep = rank < KIDS
    return line[keep], kid[keep]


def _ancestry(
    parents: list[int], chrome: list[bool], last: int | None
) -> tuple[list[bool], np.ndarray | None]:
    """Whether each line is inside chrome, and its tree distance (edges) to 0-based line
    ``last`` (to a line under another root: both depths plus two). One pass in page order,
    where a parent comes before its children: a recurrence over the lines, which for trees
    of a few hundred lines costs less than any level-by-level numpy walk."""
    n = len(parents)
    inside = list(chrome)
    depth = [0] * n
    path = set()
    q = last if last is not None else -1
    while q >= 0:
        path.add(q)
        q = parents[q]
    meet = [-1] * n  # the nearest ancestor (or the line itself) on last's path to its root
    for i, p in enumerate(parents):
        if p >= 0:
            depth[i] = depth[p] + 1
            if inside[p]:
                inside[i] = True
            meet[i] = i if i in path else meet[p]
        elif i in path:
            meet[i] = i
    if last is None:
        return inside, None
    d, a = np.asarray(depth), np.asarray(meet)
    to_last = d[last]
    at = d[np.maximum(a, 0)]
    return inside, np.where(a >= 0, d - at + to_last - at, d + 1 + to_last + 1).astype(float)


def _rel(scores: np.ndarray) -> np.ndarray:
    top = float(scores.max()) if len(scores) else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


_ALNUM_BYTES = bytes(
    c if c == 10 or chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256)
)  # fmt: skip  (UTF-8: other characters to spaces)


def _goal_hits(text: str, n: int, goal: set[str]) -> np.ndarray:
    """Which of ``n`` lines (``text``: their lower-cased text joined by newlines) hold which
    of ``goal`` (:func:`.lexicon.terms`), as a (lines x terms) boolean matrix: a run of
    ``[a-z0-9]`` whose first five characters are a term, if the run is a content word."""
    data = text.encode("utf-8", "surrogatepass").translate(_ALNUM_BYTES)
    words = data.split()
    column = {t.encode(): k for k, t in enumerate(goal)}
    get = column.get  # each distinct word looked up once
    term = {w: k for w in set(words) if (k := get(w[:5])) is not None and content(w.decode())}
    out = np.zeros((n, len(column)), bool)
    if term:
        ids = np.fromiter(map(term.get, words, repeat(-1)), np.int64, len(words))
        at = np.flatnonzero(ids >= 0)
        out[token_lines(data)[at], ids[at]] = True
    return out


def _found(hits: list[tuple[int, str]], starts: np.ndarray, n: int) -> np.ndarray:
    """Which lines (``starts``: offsets of each line in the text) hold which of ``hits``
    (start, match): a (lines x distinct matches) boolean matrix."""
    seen = {w: k for k, w in enumerate(dict.fromkeys(w for _, w in hits))}
    out = np.zeros((n, len(seen)), bool)
    if hits:
        at = np.searchsorted(starts, [a for a, _ in hits], side="right") - 1
        out[at, [seen[w] for _, w in hits]] = True
    return out


class _Kids:
    """:func:`kid_pairs` grouped by line, to add up a column (or a row block) over each
    line's kids: a sum for counts, an any for booleans."""

    def __init__(self, tree: AxTree) -> None:
        self.line, self.kid = kid_pairs(tree)
        line = self.line
        self.first = _firsts(line)

    def sum(self, own: np.ndarray) -> np.ndarray:
        out = np.zeros_like(own)
        if len(self.first):
            out[self.line[self.first]] = np.add.reduceat(own[self.kid], self.first, axis=0)
        return out


def _capped(matrix: np.ndarray) -> np.ndarray:
    """Distinct columns present per row, at most two, halved."""
    return np.minimum(2, np.count_nonzero(matrix, axis=1)) / 2


def line_features(step: Step) -> np.ndarray:
    """The feature matrix of ``step``: one row per line, columns :data:`FEATURES` (one pass
    of numpy over the lines; ``tests/test_features_fast.py`` holds it to the per-line
    definitions, kept in ``tests/legacy_features.py``)."""
    tree = step.axtree
    n = len(tree)
    X = np.zeros((n, len(FEATURES)))
    if n == 0:
        return X
    names = line_names(tree)
    joined = "\n" + "\n".join(names)  # a tree's lines hold no newline
    text = joined[1:].lower()
    kids = _Kids(tree)
    gid = np.fromiter(map(_GROUP_ID.get, tree.roles, repeat(_OTHER)), np.int64, n)
    parents = np.asarray(tree.parents, np.int64)
    has_bid = np.fromiter(map(operator.is_not, tree.bids, repeat(None)), bool, n)
    # BM25 of the names, and of each name with its kids' text (counted from the names)
    words, order = query_terms(query_of(step))
    lengths, tf = joined_term_counts(text, n, words)
    both = scores_from_counts(
        np.stack([lengths, lengths + kids.sum(lengths)]), np.stack([tf, tf + kids.sum(tf)]), order
    )
    X[:, _C["bm25_rel"]] = _rel(both[0])
    X[:, _C["kids_bm25_rel"]] = _rel(both[1])
    goal = terms(step.goal)
    acted, last = history_bids(step.history)
    last_line = tree.line_of(last) if last else None
    n_children = np.bincount(parents[parents >= 0], minlength=n)
    depth = np.asarray(tree.depths, float)
    X[np.arange(n), gid] = 1.0  # role_* are the first columns, in group order
    X[:, _C["has_bid"]] = has_bid
    inter = _INTERACTIVE[gid]
    X[:, _C["interactive"]] = inter
    X[:, _C["no_role"]] = np.fromiter(map(operator.is_, tree.roles, repeat(None)), bool, n)
    X[:, _C["depth"]] = depth / max(1.0, depth.max())
    own_names = _OWN_NAME.findall(joined)  # _NAME of each line, in one pass
    name_len = np.fromiter(map(len, own_names), float, n)
    X[:, _C["log_len"]] = np.log1p(name_len)
    X[:, _C["empty_name"]] = name_len == 0
    X[:, _C["has_url"]] = np.fromiter(map(operator.contains, tree.texts, repeat("url='")), bool, n)
    X[:, _C["log_children"]] = np.log1p(n_children)
    X[:, _C["leaf"]] = n_children == 0
    ends = accumulate(map(len, text.split("\n")), initial=0)  # of each line, without newlines
    starts = np.fromiter(ends, np.int64, n + 1)[:-1] + np.arange(n)  # offset of each line
    if goal:
        found = _goal_hits(text, n, goal)
        X[:, _C["hits"]] = _capped(found)
        X[:, _C["kids_hits"]] = _capped(kids.sum(found))
    sub = _found(term_finds(goal_terms(step.goal), text), starts, n)
    X[:, _C["sub_hits"]] = _capped(sub)
    X[:, _C["kids_sub_hits"]] = _capped(kids.sum(sub))
    chars = np.fromiter(map(len, tree.texts), float, n)
    for i in compress(range(n), map(operator.contains, tree.texts, repeat("focus"))):
        chars[i] = len(unfocused(tree.texts[i]))
    X[:, _C["log_cost"]] = np.fromiter(map(math.log1p, (chars / 4).tolist()), float, n)
    bid_acted = np.fromiter(map(acted.__contains__, tree.bids), bool, n)
    X[:, _C["acted"]] = bid_acted
    i = last_line - 1 if last_line is not None else None
    chrome, hops = _ancestry(tree.parents, (gid == _CHROME).tolist(), i)
    if i is not None:
        dist = np.arange(n) - i
        X[:, _C["has_last"]] = 1.0
        X[:, _C["near_after"]] = (dist > 0) & (dist <= NEAR)
        X[:, _C["log_hops"]] = np.log1p(hops)
        X[:, _C["same_parent"]] = parents == parents[i]
    else:
        X[:, _C["log_hops"]] = math.log1p(depth.max() * 2)
    X[:, _C["in_chrome"]] = chrome
    X[:, _C["interactive_x_bm25"]] = inter * X[:, _C["bm25_rel"]]
    X[:, _C["interactive_x_kids"]] = inter * X[:, _C["kids_bm25_rel"]]
    X[:, _C["unnamed_x_near"]] = (
        X[:, _C["empty_name"]]
        * X[:, _C["has_bid"]]
        * (X[:, _C["same_parent"]] + X[:, _C["near_after"]] > 0)
    )
    clickable = has_bid & inter
    form = gid == _FORM
    # whole names against the goal
    goal_n = normalise(step.goal)
    padded = f" {goal_n} "
    quotes = quoted_phrases(step.goal)
    own = normalise_lines(own_names)
    quoted = np.fromiter((bool(o) and o in quotes for o in own), bool, n)
    named = np.zeros(n, bool)
    for k in compress(range(n), map(goal_n.__contains__, own)):  # first a plain substring
        o = own[k]
        named[k] = bool(o) and f" {o} " in padded and in_goal(o, goal_n)
    X[:, _C["quoted"]] = quoted
    X[:, _C["name_in_goal"]] = named
    # an unnamed element whose kids' text is a name the goal mentions
    carries = has_bid & _CARRIER[gid] & np.fromiter(map(operator.not_, own), bool, n)
    carries &= np.fromiter(map(operator.ne, tree.roles, repeat("LabelText")), bool, n)
    carries &= kids.sum(quoted | named)
    X[:, _C["carrier"]] = carries
    kinds = [any(f" {w} " in padded for w in ROLE_WORDS.get(g, ())) for g in _GROUP_NAMES]
    X[:, _C["role_in_goal"]] = np.array(kinds, bool)[gid]
    # order: goal-mentioning text lines above a clickable one, interactive lines so far
    mentions = ~clickable & sub.any(axis=1)
    idx = np.arange(n)
    hit_at = np.maximum.accumulate(np.where(mentions, idx, -HIT_WINDOW - 1))
    gap = idx - hit_at
    near = clickable & (gap <= HIT_WINDOW) & (gap > 0)
    X[near, _C["hit_before"]] = 1.0 / gap[near]
    seen = np.cumsum(clickable) - clickable
    X[:, _C["inter_order"]] = np.fromiter(map(math.log1p, seen.tolist()), float, n)
    # state
    untouched = form & has_bid & ~bid_acted
    X[:, _C["field_pending"]] = clickable & ~form & ((np.cumsum(untouched) - untouched) > 0)
    X[:, _C["last_el"]] = np.fromiter(map(operator.eq, tree.bids, repeat(last)), bool, n) & (
        last is not None
    )
    for k in np.flatnonzero(form):
        X[k, _C["filled"]] = bool(_FILLED.search(tree.texts[k]))
    off = switched_off(step.goal)
    for k in np.flatnonzero(named | (X[:, _C["hits"]] > 0)).tolist():
        x = tree.texts[k]  # each _CHECKED state holds "rue"
        X[k, _C["done_choice"]] = "rue" in x and bool(_CHECKED.search(x)) and own[k] not in off
    first = not step.history
    X[:, _C["first_step"]] = first
    X[:, _C["first_x_order"]] = first * X[:, _C["inter_order"]]
    return X


def carriers(X: np.ndarray, p: np.ndarray, k: int) -> list[int]:
    """The ``k`` likeliest (by ``p``) unnamed elements with a bid whose child text is a
    name the goal mentions (``carrier``: a clickable card, tree item or custom widget named
    by its child). The recorded pages hardly have such targets, so no model can weigh them
    from them; :class:`~lrlib.reducers.learned.Learned` takes these lines first, a prior
    for other sites (MiniWoB-style pages), not a fitted weight. 0-based.

    >>> X = np.zeros((3, len(FEATURES))); X[1:, FEATURES.index("carrier")] = 1
    >>> carriers(X, np.array([0.9, 0.2, 0.4]), 1)
    [2]
    """
    idx = np.flatnonzero(X[:, FEATURES.index("carrier")] > 0)
    return sorted(int(i) for i in idx[np.argsort(-p[idx], kind="stable")[:k]])
