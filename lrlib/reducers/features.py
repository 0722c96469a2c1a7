"""Per-line features of a step's tree, for the learned line scorer (:mod:`.learned`).

Every feature is meant to transfer across sites: role *groups* rather than one site's role
names (an unknown role falls in ``other``), lexical relevance to the goal and history (BM25,
goal-term hits) of the line and of the text its children carry (a clickable container
whose name is in a child ``StaticText``), tree geometry (depth, position, children) and
proximity to the element the last action used (lines and tree hops).

**No page-controlled lift.** The page's author sets ``focused``, ``autofocus``, modal roles
and names; none of them is a feature on its own: focus is not read at all, ``dialog``/
``alert`` fall in the generic ``container`` group, and lexical match saturates (relative
BM25 in [0, 1], at most two goal terms counted), so a name that repeats the goal verbatim
scores no higher than one naming two of its words.

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
)  # fmt: skip
_NAME = re.compile(r"^(?:'((?:[^'\\]|\\.)*)')?")
_HEAD = re.compile(r"^(?:\[[^\]\s]*\] ?)?(?:[A-Za-z][\w-]*)?")
_URL = re.compile(r"url='[^']*'")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "go",
    "how", "i", "in", "into", "is", "it", "me", "my", "of", "on", "or", "our", "please", "show",
    "tell", "that", "the", "their", "them", "then", "there", "this", "to", "us", "was", "we",
    "what", "when", "where", "which", "who", "will", "with", "you", "your",
    # instructions to the agent, not content of the page
    "click", "press", "enter", "type", "find", "navigate",
))  # fmt: skip
_SUFFIX = re.compile(r"(?:ies|ings?|es|ed|s)$")
_PAGE_STATE = re.compile(r", (?:focused|autofocus)(?=,|$)")  # set by the page: never read
KIDS = 4  # child lines (without a bid) whose text counts as the parent's
NEAR = 10  # lines after the last acted element that count as "near_after"


def _content(word: str) -> bool:
    """A content word: not a stop word, and two characters or more unless a number."""
    return word not in _STOP and (len(word) > 1 or word.isdigit())


def role_group(role: str | None) -> str:
    """The group of a role name (``other`` when unknown).

    >>> role_group("button"), role_group("x-fancy-widget"), role_group(None)
    ('button', 'other', 'other')
    """
    return ROLE_OF.get(role or "", "other")


def stem(word: str) -> str:
    """A crude stem: common English suffixes off, at least 3 letters left.

    >>> stem("selling"), stem("customers"), stem("categories"), stem("is")
    ('sell', 'customer', 'categor', 'is')
    """
    cut = _SUFFIX.sub("", word)
    return cut if len(cut) >= 3 else word


def goal_terms(text: str) -> list[str]:
    """Stemmed content words of ``text`` (stop words and one-letter words dropped; numbers,
    even one digit, kept: "Select 5", "order 3" name an option or a quantity).

    >>> goal_terms("Go to the hardware store and order 3 'iPad pro' (Silver)")
    ['hardware', 'store', 'order', '3', 'ipad', 'pro', 'silver']
    """
    words = (stem(w) for w in _WORD.findall(text.lower()) if _content(w))
    return list(dict.fromkeys(words))


def term_matcher(terms: list[str]) -> re.Pattern[str] | None:
    """A regex finding the terms in lower-cased text: numbers as whole tokens, words of four
    letters or more anywhere in a word, shorter words at the start of a word.

    >>> bool(term_matcher(["best"]).search("bestsellers")), term_matcher([])
    (True, None)
    """
    parts = []
    for t in terms:
        if t.isdigit():
            parts.append(rf"(?<![0-9]){t}(?![0-9])")
        elif len(t) >= 4:
            parts.append(re.escape(t))
        else:
            parts.append(rf"\b{re.escape(t)}")
    return re.compile("|".join(parts)) if parts else None


def terms(text: str) -> set[str]:
    """Content words of ``text`` (as :func:`goal_terms` keeps them), cut to five letters.

    >>> sorted(terms("Order the best-selling laptops, 2 of them"))
    ['2', 'best', 'lapto', 'order', 'selli']
    """
    return {w[:5] for w in _WORD.findall(text.lower()) if _content(w)}


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
    return X


def rescued_lines(X: np.ndarray, k: int) -> list[int]:
    """The ``k`` unnamed containers (or unknown roles) with a bid whose children's text best
    matches the goal (BM25 > 0): a clickable card or custom widget named by a child text
    line. The recorded data has almost no such targets, so no model can learn them from it;
    this rule is a prior for other sites (MiniWoB-style pages), not fitted.

    >>> X = np.zeros((3, len(FEATURES)))
    >>> for c in ("has_bid", "empty_name", "role_container"): X[1:, FEATURES.index(c)] = 1
    >>> X[1:, FEATURES.index("kids_bm25_rel")] = [0.4, 1.0]
    >>> rescued_lines(X, 1)
    [3]
    """
    col = FEATURES.index
    cand = (
        (X[:, col("has_bid")] > 0)
        & (X[:, col("empty_name")] > 0)
        & ((X[:, col("role_container")] + X[:, col("role_other")]) > 0)
        & (X[:, col("kids_bm25_rel")] > 0)
    )
    idx = np.flatnonzero(cand)
    best = idx[np.argsort(-X[idx, col("kids_bm25_rel")], kind="stable")[:k]]
    return sorted(int(i) + 1 for i in best)


SHORT = 40  # characters (indentation excluded): a line this short costs ~10 tokens or fewer


def short_lines(step: Step) -> np.ndarray:
    """1 for the lines of at most :data:`SHORT` characters (the ``cheap`` knob's lines)."""
    tree = step.axtree
    return np.array(
        [len(unfocused(t)) - k <= SHORT for t, k in zip(tree.texts, tree.indents, strict=True)]
    )
