"""A frozen copy of the learned scorer's feature extraction and ranking as of commit
200098a (per-line Python, ``bm25s`` for BM25), the reference the vectorised
:mod:`lrlab.reducers.features` must reproduce (``tests/test_features_fast.py``). Do not edit:
it is the old behaviour, kept verbatim (lexicon, features, bm25 and ``Learned.ranking``)."""

# ruff: noqa
from __future__ import annotations

import math
from collections.abc import Sequence
import re

import numpy as np

from lrlib.core.axtree import AxTree
from lrlib.core.step import Step
from lrlib.data.actions import parse_code
from lrlab.reducers.chunking import query_of

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
# "double", “curly” or 'single' quotes (a single quote only between non-letters: not it's)
_QUOTE = re.compile(r'"([^"]{1,80})"|“([^”]{1,80})”|(?<![A-Za-z])\'([^\']{1,80})\'(?![A-Za-z])')
_NOT_NAME = re.compile(r"[^\w#@$%&+./:-]+")
# a name the goal wants off: {'Eclipse IDE': False}, "uncheck 'Eclipse IDE'"
_OFF = re.compile(
    r"""(?:["'“]([^"'”]{1,80})["'”]\s*:\s*(?:false|no|off)\b)"""
    r"""|(?:\b(?:un-?check|untick|deselect|unselect|clear)\s+(?:the\s+)?["'“]([^"'”]{1,80})["'”])""",
    re.IGNORECASE,
)
MAX_NAME = 80  # characters: longer names are sentences, not labels the goal could repeat


def content(word: str) -> bool:
    """A content word: not a stop word, and two characters or more unless a number.

    >>> content("the"), content("x"), content("7"), content("ipad")
    (False, False, True, True)
    """
    return word not in _STOP and (len(word) > 1 or word.isdigit())


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
    words = (stem(w) for w in _WORD.findall(text.lower()) if content(w))
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
    return {w[:5] for w in _WORD.findall(text.lower()) if content(w)}


def normalise(text: str) -> str:
    """Case-folded words of ``text`` separated by single spaces (punctuation other than
    ``# @ $ % & + . / : -`` is a separator), for whole-name comparisons.

    >>> normalise("  Tab #2 ("), normalise("Choose the colour:")
    ('tab #2', 'choose the colour:')
    """
    return " ".join(_NOT_NAME.sub(" ", text.casefold()).split())


def quoted_phrases(goal: str) -> set[str]:
    """The :func:`normalise`\\ d phrases the goal puts in quotes.

    >>> sorted(quoted_phrases("order 2 \\"iPad pro\\" with {'Choose the colour': 'Silver'}"))
    ['choose the colour', 'ipad pro', 'silver']
    >>> quoted_phrases("it's the user's page")
    set()
    """
    found = (next(g for g in m.groups() if g is not None) for m in _QUOTE.finditer(goal))
    return {p for p in map(normalise, found) if p}


def switched_off(goal: str) -> set[str]:
    """The :func:`normalise`\\ d names the goal wants unticked: a ``'name': False`` entry of a
    configuration, or a quoted name after "uncheck", "untick", "deselect", "unselect", "clear".

    >>> sorted(switched_off("order it with {'Adobe Acrobat': True, 'Eclipse IDE': False}"))
    ['eclipse ide']
    >>> switched_off('Uncheck "Newsletter" and submit')
    {'newsletter'}
    """
    return {normalise(a or b) for a, b in _OFF.findall(goal)}


def in_goal(name: str, goal: str) -> bool:
    """True when a :func:`normalise`\\ d line name occurs in the normalised ``goal`` as whole
    words, and is a plausible label: at most :data:`MAX_NAME` characters, with a content
    word or a number (so "to" or "a" never match).

    >>> g = normalise("Click on the Tab #2, then the 'no' button")
    >>> in_goal("tab #2", g), in_goal("no", g), in_goal("ta", g), in_goal("the", g)
    (True, True, False, False)
    """
    if not name or len(name) > MAX_NAME or not any(content(w) for w in _WORD.findall(name)):
        return False
    return f" {name} " in f" {goal} "


def bm25_scores(documents: Sequence[str], query: str) -> np.ndarray:
    """BM25 score of every document for ``query`` (English stop words removed).

    >>> (bm25_scores(["add to cart", "home page", "cart total"], "cart") > 0).tolist()
    [True, False, True]
    """
    import bm25s

    if not documents:
        return np.zeros(0, dtype=np.float32)
    corpus = bm25s.tokenize(list(documents), stopwords="en", show_progress=False)
    words = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    words = [w for w in words if w in corpus.vocab]
    if not words:
        return np.zeros(len(documents), dtype=np.float32)
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    return np.asarray(index.get_scores(words), dtype=np.float32)


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
    "goal_choice", "chosen", "goal_field", "pair_field",
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
    _decision_state(step, names, groups, X)


def _decision_state(step: Step, names: list[str], groups: list[str], X: np.ndarray) -> None:
    """The decision-state columns (issue 33), line by line: a named choice the goal names,
    a ticked choice, a field the goal refers to, a field sharing a label word with another."""
    tree = step.axtree
    col = {name: k for k, name in enumerate(FEATURES)}
    own = [normalise(_NAME.match(name).group(1) or "") for name in names]
    labels = {}
    for i, (group, bid) in enumerate(zip(groups, tree.bids, strict=True)):
        if bid is None:
            continue
        named = X[i, col["name_in_goal"]] > 0 or X[i, col["quoted"]] > 0
        if group == "choice":
            X[i, col["goal_choice"]] = named
            X[i, col["chosen"]] = bool(_CHECKED.search(tree.texts[i]))
        if group == "form":
            said = X[i, col["hits"]] > 0 or X[i, col["kids_hits"]] > 0 or named
            X[i, col["goal_field"]] = said or X[i, col["hit_before"]] >= 1 / 3
            label = own[i]
            for m in range(i - 1, max(-1, i - 4), -1):
                if label:
                    break
                if own[m] and tree.bids[m] is None:
                    label = own[m]
            labels[i] = {w for w in label.split() if len(w) >= 4}
    for i, words in labels.items():
        X[i, col["pair_field"]] = any(words & other for m, other in labels.items() if m != i)


def carriers(X: np.ndarray, p: np.ndarray, k: int) -> list[int]:
    """The ``k`` likeliest (by ``p``) unnamed elements with a bid whose child text is a
    name the goal mentions (``carrier``: a clickable card, tree item or custom widget named
    by its child). The recorded pages hardly have such targets, so no model can weigh them
    from them; :class:`~lrlab.reducers.learned.Learned` takes these lines first, a prior
    for other sites (MiniWoB-style pages), not a fitted weight. 0-based.

    >>> X = np.zeros((3, len(FEATURES))); X[1:, FEATURES.index("carrier")] = 1
    >>> carriers(X, np.array([0.9, 0.2, 0.4]), 1)
    [2]
    """
    idx = np.flatnonzero(X[:, FEATURES.index("carrier")] > 0)
    return sorted(int(i) for i in idx[np.argsort(-p[idx], kind="stable")[:k]])


def ranking(reducer, step: Step, X: np.ndarray | None = None):
    """``Learned.ranking`` of commit 200098a, on these features (``X``: this module's
    :func:`line_features` of ``step``, when already computed)."""
    from lrlab.reducers.suspect import suspect_lines
    from lrlab.reducers.budget import companion_lines, page_costs, rank_lines, whole_lines

    X = line_features(step) if X is None else X
    p = reducer.model.predict(X)
    tokens, stubs = page_costs(step, reducer.encoding)
    banned = [n - 1 for n in suspect_lines(step)] if reducer.guard else []
    first = [i for i in carriers(X, p, reducer.rescue) if i not in banned]
    parents = step.axtree.parents
    companions = companion_lines(step) if reducer.context else None
    return rank_lines(p, tokens, stubs, parents, whole_lines(step), first, banned, companions)


def keep(
    reducer, step: Step, budget: float | None = None, X: np.ndarray | None = None
) -> list[int]:
    """``Learned.keep`` of commit 200098a (``X``: as for :func:`ranking`)."""
    from lrlab.reducers.budget import kept_lines, n_kept

    r = ranking(reducer, step, X)
    k = n_kept(r, reducer.budget if budget is None else budget, reducer.overhead, reducer.floor)
    return kept_lines(r, k)
