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

import math
import re

import numpy as np

from lrlib.core.axtree import AxTree
from lrlib.core.step import Step
from lrlib.data.actions import parse_code
from lrlib.reducers.bm25 import bm25_scores
from lrlib.reducers.chunking import query_of
from lrlib.reducers.lexicon import (
    goal_terms,
    in_goal,
    normalise,
    quoted_phrases,
    switched_off,
    term_matcher,
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
_HEAD = re.compile(r"^(?:\[[^\]\s]*\] ?)?(?:[A-Za-z][\w-]*)?")
_URL = re.compile(r"url='[^']*'")
_PAGE_STATE = re.compile(r", (?:focused|autofocus)(?=,|$)")  # set by the page: never read
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
        action = parse_code(h)
        if action is not None and action.bids:
            seen.update(action.bids)
            last = action.bids[-1]
    return seen, last


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
    return [
        unfocused(_URL.sub("", _HEAD.sub("", text[k:], count=1))).strip()
        for text, k in zip(tree.texts, tree.indents, strict=True)
    ]


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


def _hops(tree: AxTree, last: int) -> np.ndarray:
    """Tree distance (edges) from every line to 0-based line ``last``."""
    n = len(tree)
    up = {last: 0}
    q, d = tree.parents[last], 1
    while q >= 0:
        up[q] = d
        q, d = tree.parents[q], d + 1
    out = np.zeros(n)
    for i in range(n):
        q, d = i, 0
        while q >= 0 and q not in up:
            q, d = tree.parents[q], d + 1
        out[i] = d + up[q] if q >= 0 else d + len(up)
    return out


def _rel(scores: np.ndarray) -> np.ndarray:
    top = float(scores.max()) if len(scores) else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


def line_features(step: Step) -> np.ndarray:
    """The feature matrix of ``step``: one row per line, columns :data:`FEATURES`."""
    tree = step.axtree
    n = len(tree)
    col = {name: k for k, name in enumerate(FEATURES)}
    X = np.zeros((n, len(FEATURES)))
    if n == 0:
        return X
    names = line_names(tree)
    kids = kids_text(tree, names)
    query = query_of(step)
    bm = bm25_scores(names, query)
    bm_kids = bm25_scores([f"{t} {k}" for t, k in zip(names, kids, strict=True)], query)
    goal = terms(step.goal)
    acted, last = history_bids(step.history)
    last_line = tree.line_of(last) if last else None
    groups = [role_group(r) for r in tree.roles]
    n_children = np.bincount([p for p in tree.parents if p >= 0], minlength=n)
    depth = np.asarray(tree.depths, float)
    X[np.arange(n), [col[f"role_{g}"] for g in groups]] = 1.0
    X[:, col["has_bid"]] = [b is not None for b in tree.bids]
    X[:, col["interactive"]] = [g in INTERACTIVE for g in groups]
    X[:, col["no_role"]] = [r is None for r in tree.roles]
    X[:, col["depth"]] = depth / max(1.0, depth.max())
    name_len = np.array([len(_NAME.match(t).group(1) or "") for t in names], float)
    X[:, col["log_len"]] = np.log1p(name_len)
    X[:, col["empty_name"]] = name_len == 0
    X[:, col["has_url"]] = ["url='" in t for t in tree.texts]
    X[:, col["log_children"]] = np.log1p(n_children)
    X[:, col["leaf"]] = n_children == 0
    X[:, col["bm25_rel"]] = _rel(bm)
    X[:, col["kids_bm25_rel"]] = _rel(bm_kids)
    if goal:
        X[:, col["hits"]] = [min(2, len(terms(t) & goal)) / 2 for t in names]
        X[:, col["kids_hits"]] = [min(2, len(terms(k) & goal)) / 2 for k in kids]
    match = term_matcher(goal_terms(step.goal))
    if match is not None:  # goal words found inside words: best-selling ~ Bestsellers
        X[:, col["sub_hits"]] = [min(2, len(set(match.findall(t.lower())))) / 2 for t in names]
        X[:, col["kids_sub_hits"]] = [min(2, len(set(match.findall(k.lower())))) / 2 for k in kids]
    X[:, col["log_cost"]] = [math.log1p(len(unfocused(t)) / 4) for t in tree.texts]
    X[:, col["acted"]] = [b is not None and b in acted for b in tree.bids]
    if last_line is not None:
        i = last_line - 1
        dist = np.arange(n) - i
        X[:, col["has_last"]] = 1.0
        X[:, col["near_after"]] = (dist > 0) & (dist <= NEAR)
        X[:, col["log_hops"]] = np.log1p(_hops(tree, i))
        X[:, col["same_parent"]] = np.asarray(tree.parents) == tree.parents[i]
    else:
        X[:, col["log_hops"]] = math.log1p(depth.max() * 2)
    chrome = np.zeros(n, bool)
    for i, p in enumerate(tree.parents):
        chrome[i] = groups[i] == "chrome" or (p >= 0 and chrome[p])
    X[:, col["in_chrome"]] = chrome
    inter = X[:, col["interactive"]]
    X[:, col["interactive_x_bm25"]] = inter * X[:, col["bm25_rel"]]
    X[:, col["interactive_x_kids"]] = inter * X[:, col["kids_bm25_rel"]]
    X[:, col["unnamed_x_near"]] = (
        X[:, col["empty_name"]]
        * X[:, col["has_bid"]]
        * (X[:, col["same_parent"]] + X[:, col["near_after"]] > 0)
    )
    _name_order_state(step, names, kids, groups, match, acted, last, X)
    return X


def _name_order_state(
    step: Step,
    names: list[str],
    kids: list[str],
    groups: list[str],
    match: re.Pattern[str] | None,
    acted: set[str],
    last: str | None,
    X: np.ndarray,
) -> None:
    """Fill the whole-name, order and state columns of ``X`` (see the module doc)."""
    tree = step.axtree
    col = {name: k for k, name in enumerate(FEATURES)}
    goal = normalise(step.goal)
    quotes = quoted_phrases(step.goal)
    off = switched_off(step.goal)
    kinds = {g: any(f" {w} " in f" {goal} " for w in words) for g, words in ROLE_WORDS.items()}
    first = not step.history
    seen, hit_at = 0, -HIT_WINDOW - 1  # interactive lines so far; last goal-mentioning text
    pending = False  # a form field above that no action has touched yet
    for i, (name, group, bid) in enumerate(zip(names, groups, tree.bids, strict=True)):
        own = normalise(_NAME.match(name).group(1) or "")
        X[i, col["quoted"]] = bool(own) and own in quotes
        X[i, col["name_in_goal"]] = in_goal(own, goal)
        if bid is not None and not own and group in _CARRIES and tree.roles[i] != "LabelText":
            named = (normalise(_NAME.match(k).group(1) or "") for k in kids[i].split("\n"))
            X[i, col["carrier"]] = any(k and (k in quotes or in_goal(k, goal)) for k in named)
        X[i, col["role_in_goal"]] = kinds.get(group, False)
        clickable = bid is not None and group in INTERACTIVE
        if not clickable and match is not None and match.search(name.lower()):
            hit_at = i
        elif clickable and i - hit_at <= HIT_WINDOW:
            X[i, col["hit_before"]] = 1.0 / (i - hit_at)
        X[i, col["inter_order"]] = math.log1p(seen)
        seen += clickable
        X[i, col["field_pending"]] = clickable and group != "form" and pending
        pending = pending or (group == "form" and bid is not None and bid not in acted)
        X[i, col["last_el"]] = last is not None and bid == last
        X[i, col["filled"]] = group == "form" and bool(_FILLED.search(tree.texts[i]))
        # ticked and named by the goal, which does not want it off: done (a ticked box the
        # goal does not name may be one to untick: no signal either way)
        X[i, col["done_choice"]] = (
            bool(_CHECKED.search(tree.texts[i]))
            and (X[i, col["name_in_goal"]] > 0 or X[i, col["hits"]] > 0)
            and own not in off
        )
    X[:, col["first_step"]] = first
    X[:, col["first_x_order"]] = first * X[:, col["inter_order"]]


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
