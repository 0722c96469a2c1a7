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
(:func:`lrlab.tuning.learned_fit.fit_model`).

**What a policy checks before acting** (:data:`DECISION`, issue 33) may raise a score: a
choice the goal names, a choice already ticked or selected, a field the goal refers to, a
field paired with another by a shared label word (a password and its confirmation). Labels
from decision evidence and minimal failure sets (:func:`lrlab.tuning.learned_fit.labels`)
make these lines positives; a demote-only feature could never rank them back. They read
page state only on choices and fields, never focus, and the guard still drops an attack's
text whatever its score.

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
from itertools import chain, compress, filterfalse, repeat

import numpy as np

from lrlab.reducers.bm25 import (
    counts_from_kinds,
    query_terms,
    scores_from_counts,
    token_kinds,
    word_tokens,
)
from lrlab.reducers.chunking import query_of
from lrlab.reducers.lexicon import (
    content,
    in_goal,
    normalise,
    normalise_lines,
    quoted_phrases,
    switched_off,
    terms_of_goal,
    utf8_term_finds,
)
from lrlib.core.axtree import AxTree
from lrlib.core.step import Step
from lrlib.data.actions import parse_code

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
# what a policy checks before acting, free to *raise* a score (issue 33): a choice the goal
# names, a choice already ticked or selected, a field the goal refers to (by its name or the
# label just above it), a field paired with another by a shared label word (a password and
# its confirmation)
DECISION = ("goal_choice", "chosen", "goal_field", "pair_field")
PAIR_WORD_MIN = 4  # label words shorter than this do not pair two fields
LABEL_BACK = 3  # lines searched back for an unnamed field's label text
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
_CHOICE = _GROUP_NAMES.index("choice")
_INTERACTIVE = np.array([g in INTERACTIVE for g in _GROUP_NAMES])
_CARRIER = np.array([g in _CARRIES for g in _GROUP_NAMES])
# a code for each known role (0: none; an unknown role: the last), to read a line's group,
# and whether it has no role or is a LabelText, from one look-up
_ROLES = (None, *ROLE_OF)
_ROLE_CODE = {role: k for k, role in enumerate(_ROLES)}
_CODE_GROUP = np.array([_GROUP_ID.get(role or "", _OTHER) for role in _ROLES] + [_OTHER])
_LABEL_TEXT = _ROLE_CODE["LabelText"]
# the words of ROLE_WORDS of each group, padded as whole words
_ROLE_PADS = [tuple(f" {w} " for w in ROLE_WORDS.get(g, ())) for g in _GROUP_NAMES]


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
    return _pairs(parents, np.fromiter(map(operator.is_, tree.bids, repeat(None)), bool, n))


def _pairs(parents: np.ndarray, bidless: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`kid_pairs` from the tree's parents and which lines have no bid, as arrays."""
    n = len(parents)
    child = np.flatnonzero(bidless & (parents >= 0))
    up = parents[child]
    far = bidless[up] & (parents[up] >= 0)
    line = np.concatenate([up, parents[up[far]]])
    kid = np.concatenate([child, child[far]])
    order = np.argsort(line * n + kid, kind="stable")
    line, kid = line[order], kid[order]
    keep = np.arange(len(line)) - np.searchsorted(line, line) < KIDS  # rank among the kids
    return line[keep], kid[keep]


def _edge_depths(parents: list[int], depths: np.ndarray) -> np.ndarray:
    """The number of edges from each line to its root: ``depths`` when the first line is at
    depth 0 and no line is more than one level deeper than the line before it (every tree
    BrowserGym writes; a line's parent is then the last line one level up), else counted
    line by line."""
    if depths[0] == 0 and (np.diff(depths) <= 1).all():
        return depths
    edges = [0] * len(parents)
    for i, p in enumerate(parents):
        if p >= 0:
            edges[i] = edges[p] + 1
    return np.asarray(edges, np.int64)


def _ancestry(
    parents: list[int], depths: np.ndarray, chrome: np.ndarray, last: int | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Whether each line is inside chrome (a ``chrome`` line or below one), and its tree
    distance (edges) to 0-based line ``last`` (to a line under another root: both depths
    plus two). ``depths``: the tree's indentation depths; a line's parent is the nearest
    earlier line of a smaller depth, so the subtree of a line is the run of deeper lines
    after it.

    >>> inside, hops = _ancestry(
    ...     [-1, 0, 1, 0, -1], np.array([0, 1, 2, 1, 0]),
    ...     np.array([False, True, False, False, False]), 2)
    >>> inside.tolist(), hops.tolist()
    ([False, True, True, False, False], [2.0, 1.0, 0.0, 3.0, 4.0])
    """
    n = len(parents)
    inside = np.zeros(n, bool)
    levels, end = depths.tolist(), 0
    for c in np.flatnonzero(chrome).tolist():
        if c >= end:  # not in the subtree of a chrome line already marked
            end = c + 1
            while end < n and levels[end] > levels[c]:
                end += 1
            inside[c:end] = True
    if last is None:
        return inside, None
    path = [last]  # last and its ancestors, the root first after the reversal
    while (p := parents[path[-1]]) >= 0:
        path.append(p)
    path.reverse()
    # how many lines of the path hold each line in their subtree (0: under another root):
    # up to last, the path's lines at or before it; after last, the path's lines shallower
    # than every line since last. The deepest of them, at edge depth (count - 1), is where
    # the line's way to last turns: hops = d - at + to_last - at (d + 1 + to_last + 1
    # under another root, which is the same sum at count 0)
    on_path = np.zeros(n, np.int64)
    on_path[path] = 1
    count = np.cumsum(on_path)
    count[last + 1 :] = np.searchsorted(depths[path], np.minimum.accumulate(depths[last + 1 :]))
    to_last = len(path) - 1
    return inside, (_edge_depths(parents, depths) + (to_last + 2) - 2 * count).astype(float)


def _rel(scores: np.ndarray) -> np.ndarray:
    top = float(scores.max()) if len(scores) else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


_FIVE = slice(5)
_ALNUM_BYTES = bytes(
    c if c == 10 or chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256)
)  # fmt: skip  (UTF-8: other characters to spaces)


def _token_columns(
    distinct: list[bytes], goal: set[str], ranked: list[str]
) -> dict[bytes, list[int]]:
    """The columns of :func:`_kinds_and_hits`'s matrix that each of the ``distinct`` tokens
    marks (only the tokens that mark some): ``goal``'s terms a run of the token starts with
    (its position in ``goal``'s order), and the matches of :func:`.lexicon.term_matcher`
    ``(ranked)`` in the token (``len(goal)`` plus the term's rank). A match never crosses
    a token's edge (a term is ASCII letters and digits; a token, every run of them), and
    what the matcher's look-arounds see there (a separator, never a digit or a word
    character) is what they would see in the text: the tokens joined by newlines give the
    text's matches, each distinct token once."""
    column = {t.encode(): k for k, t in enumerate(goal)}
    get = column.get
    out: dict[bytes, list[int]] = {}
    if column:  # only a token whose first five characters are a term, or of several runs
        heads = map(operator.getitem, distinct, repeat(_FIVE))
        maybe = {*compress(distinct, map(column.__contains__, heads))}
        for w in maybe.union(filterfalse(bytes.isalnum, distinct)):
            if w.isalnum():  # one run (ASCII letters and digits)
                k = get(w[:5])
                if k is not None and content(w.decode()):
                    out[w] = [k]
                continue
            runs = w.translate(_ALNUM_BYTES).split()
            ks = {k for r in runs if (k := get(r[:5])) is not None and content(r.decode())}
            if ks:
                out[w] = sorted(ks)
    if ranked:
        finds = utf8_term_finds(ranked, b"\n".join(distinct))
        if finds:
            ends = np.cumsum(np.fromiter(map(len, distinct), np.int64, len(distinct)) + 1)
            at = np.searchsorted(ends, [p for p, _ in finds], side="right")
            g = len(column)
            for token, (_, rank) in zip(at.tolist(), finds, strict=True):
                out.setdefault(distinct[token], []).append(g + rank)
    return out


def _kinds_and_hits(
    found: list[bytes],
    line: np.ndarray,
    kind: dict[bytes, int],
    goal: set[str],
    ranked: list[str],
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kind of each of ``found`` (:func:`.bm25.word_tokens`, kinds :func:`.bm25.token_kinds`),
    which of ``n`` lines hold which of ``goal`` (:func:`.lexicon.terms`) and which hold
    matches of which of ``ranked`` (:func:`.lexicon.goal_terms`, found as
    :func:`.lexicon.term_matcher` finds them), as (lines x terms) boolean matrices, from
    one look-up per token: a goal word is a run of ``[a-z0-9]`` (of a token, cut at ``_``
    and other characters than ASCII) whose first five characters are a term, if the run is
    a content word.

    >>> kind, found, sub = _kinds_and_hits(
    ...     [b"the", b"best_cart", b"x"], np.array([0, 1, 1]), {b"the": 1, b"x": 1},
    ...     {"cart"}, ["best"], 2)
    >>> kind.tolist(), found.tolist(), sub.tolist()
    ([1, 0, 1], [[False], [True]], [[False], [True]])
    """
    g = len(goal)
    columns = _token_columns(list(set(found)), goal, ranked)
    if not columns:
        kinds = np.fromiter(map(kind.get, found, repeat(0)), np.int64, len(found))
        return kinds, np.zeros((n, g), bool), np.zeros((n, len(ranked)), bool)
    # a token's code: its kind + top * (1 + its row in the table of columns)
    top = max(kind.values(), default=0) + 1
    code = dict(kind)
    rows: list[int] = []
    for j, (w, cols) in enumerate(columns.items(), 1):
        code[w] = kind.get(w, 0) + top * j
        rows += repeat(j, len(cols))
    table = np.zeros((len(columns) + 1, g + len(ranked)), bool)
    table[rows, list(chain.from_iterable(columns.values()))] = True
    codes = np.fromiter(map(code.get, found, repeat(0)), np.int64, len(found))
    at = np.flatnonzero(codes >= top)
    hit, col = np.nonzero(table[codes[at] // top])
    out = np.zeros((n, g + len(ranked)), bool)
    out[line[at[hit]], col] = True
    return codes % top, out[:, :g], out[:, g:]


class _Kids:
    """:func:`kid_pairs` grouped by line, to add up the columns of a matrix over each line's
    kids (``parents``, ``bidless``: the tree's columns as arrays)."""

    def __init__(self, parents: np.ndarray, bidless: np.ndarray) -> None:
        self.line, self.kid = _pairs(parents, bidless)
        self.first = _firsts(self.line)
        self.at = self.line[self.first]

    def sum(self, own: np.ndarray) -> np.ndarray:
        out = np.zeros_like(own)
        if len(self.first):
            out[self.at] = np.add.reduceat(own[self.kid], self.first, axis=0)
        return out


_LOG_TABLE = 4096  # math.log1p (numpy's differs in the last bit) of small numbers, tabled
_LOG_QUARTERS = np.array([math.log1p(k / 4) for k in range(_LOG_TABLE)])
_LOG_WHOLE = np.array([math.log1p(k) for k in range(_LOG_TABLE)])


def _log1p_of(k: np.ndarray, table: np.ndarray, scale: float) -> np.ndarray:
    """``math.log1p(k / scale)`` for each of the integers ``k``: from ``table`` (which holds
    it for ``k`` below its length), the others one by one."""
    if not len(k) or k.max() < len(table):
        return table[k]
    return np.fromiter(map(math.log1p, (k / scale).tolist()), float, len(k))


def line_features(step: Step) -> np.ndarray:
    """The feature matrix of ``step``: one row per line, columns :data:`FEATURES` (one pass
    of numpy over the lines; ``tests/test_features_fast.py`` holds it to the per-line
    definitions, kept in ``tests/legacy_features.py``)."""
    tree = step.axtree
    n = len(tree)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    Xt = np.zeros((len(FEATURES), n))  # one feature a row while filling: contiguous writes
    texts, bids, roles = tree.texts, tree.bids, tree.roles
    names = line_names(tree)
    joined = "\n" + "\n".join(names)  # a tree's lines hold no newline
    text = joined[1:].lower()
    role = np.fromiter(map(_ROLE_CODE.get, roles, repeat(len(_ROLES))), np.int64, n)
    gid = _CODE_GROUP[role]
    parents = np.asarray(tree.parents, np.int64)
    has_bid = np.fromiter(map(operator.is_not, bids, repeat(None)), bool, n)
    kids = _Kids(parents, ~has_bid)
    # per line: BM25 counts of the names, goal-term hits, goal-term finds; and the same
    # added over each line's kids (one pass for all the columns)
    words, order = query_terms(query_of(step))
    goal, ranked = terms_of_goal(step.goal)
    tokens, line = word_tokens(text)  # one pass for BM25 and for goal terms
    kinds = token_kinds(words)
    kind, found, sub = _kinds_and_hits(tokens, line, kinds, goal, ranked, n)
    lengths, tf = counts_from_kinds(kind, line, text, n, words, kinds)
    q, g = tf.shape[1], found.shape[1]
    kid = kids.sum(np.concatenate((lengths[:, None], tf, found, sub), axis=1, dtype=np.int64))
    scores = scores_from_counts(  # of each line, and of each line with its kids
        np.stack([lengths, lengths + kid[:, 0]]), np.stack([tf, tf + kid[:, 1 : 1 + q]]), order
    )
    Xt[_C["bm25_rel"]] = bm25 = _rel(scores[0])
    Xt[_C["kids_bm25_rel"]] = kids_bm25 = _rel(scores[1])
    # hits, kids_hits, sub_hits, kids_sub_hits (side by side): distinct terms a line (its
    # kids) holds, at most two, halved; each block of columns closed by a column of zeros
    pad = np.zeros((n, 1), bool)
    kids_found, kids_sub = kid[:, 1 + q : 1 + q + g] > 0, kid[:, 1 + q + g :] > 0
    present = np.concatenate((found, pad, kids_found, pad, sub, pad, kids_sub, pad), axis=1)
    edges = [0, g + 1, 2 * g + 2, 2 * g + sub.shape[1] + 3]
    distinct = np.add.reduceat(present, edges, axis=1, dtype=np.int64)
    Xt[_C["hits"] : _C["hits"] + 4] = (np.minimum(2, distinct) / 2).T
    hits = Xt[_C["hits"]]
    acted, last = history_bids(step.history)
    last_line = bids.index(last) + 1 if last and last in bids else None  # as tree.line_of
    n_children = np.bincount(parents[parents >= 0], minlength=n)
    levels = np.asarray(tree.depths, np.int64)
    depth = levels.astype(float)
    Xt[gid, np.arange(n)] = 1.0  # role_* are the first columns, in group order
    Xt[_C["has_bid"]] = has_bid
    inter = _INTERACTIVE[gid]
    Xt[_C["interactive"]] = inter
    Xt[_C["no_role"]] = role == 0
    Xt[_C["depth"]] = depth / max(1.0, depth.max())
    own_names = _OWN_NAME.findall(joined)  # _NAME of each line, in one pass
    name_len = np.fromiter(map(len, own_names), np.int64, n)
    Xt[_C["log_len"]] = np.log1p(name_len.astype(float))
    Xt[_C["empty_name"]] = empty = name_len == 0
    Xt[_C["has_url"]] = np.fromiter(map(operator.contains, texts, repeat("url='")), bool, n)
    Xt[_C["log_children"]] = np.log1p(n_children)
    Xt[_C["leaf"]] = n_children == 0
    chars = np.fromiter(map(len, texts), np.int64, n)
    for i in compress(range(n), map(operator.contains, texts, repeat("focus"))):
        chars[i] = len(unfocused(texts[i]))
    Xt[_C["log_cost"]] = _log1p_of(chars, _LOG_QUARTERS, 4)
    state = dict.fromkeys(acted, 1)  # 2: the last one (among the acted)
    if last is not None:
        state[last] = 2
    acted_code = np.fromiter(map(state.get, bids, repeat(0)), np.int64, n)
    Xt[_C["acted"]] = bid_acted = acted_code > 0
    i = last_line - 1 if last_line is not None else None
    chrome, hops = _ancestry(tree.parents, levels, gid == _CHROME, i)
    near_after = same_parent = None
    if i is not None:
        dist = np.arange(n) - i
        Xt[_C["has_last"]] = 1.0
        Xt[_C["near_after"]] = near_after = (dist > 0) & (dist <= NEAR)
        Xt[_C["log_hops"]] = np.log1p(hops)
        Xt[_C["same_parent"]] = same_parent = parents == parents[i]
    else:
        Xt[_C["log_hops"]] = math.log1p(depth.max() * 2)
    Xt[_C["in_chrome"]] = chrome
    Xt[_C["interactive_x_bm25"]] = inter * bm25
    Xt[_C["interactive_x_kids"]] = inter * kids_bm25
    if i is not None:
        Xt[_C["unnamed_x_near"]] = empty & has_bid & (same_parent | near_after)
    clickable = has_bid & inter
    form = gid == _FORM
    # whole names against the goal
    goal_n = normalise(step.goal)
    padded = f" {goal_n} "
    quotes = quoted_phrases(step.goal)
    own = normalise_lines(own_names)
    # each distinct name once: a plain substring first (a name, not empty: "" is in every
    # text), then whole words
    whole = set(own)
    whole.discard("")
    maybe = compress(whole, map(goal_n.__contains__, whole))
    words_of = [w for w in maybe if f" {w} " in padded and in_goal(w, goal_n)]
    named = (
        np.fromiter(map(set(words_of).__contains__, own), bool, n)
        if words_of
        else np.zeros(n, bool)
    )
    if quotes:
        quoted = np.fromiter(map(quotes.__contains__, own), bool, n)  # never "": not quoted
        Xt[_C["quoted"]] = quoted
    else:
        quoted = np.zeros(n, bool)
    Xt[_C["name_in_goal"]] = named
    # an unnamed element whose kids' text is a name the goal mentions
    carries = has_bid & _CARRIER[gid] & np.fromiter(map(operator.not_, own), bool, n)
    carries &= role != _LABEL_TEXT
    carries &= kids.sum(quoted | named)
    Xt[_C["carrier"]] = carries
    kinds = [any(map(padded.__contains__, pads)) for pads in _ROLE_PADS]
    Xt[_C["role_in_goal"]] = np.array(kinds, bool)[gid]
    # order: goal-mentioning text lines above a clickable one, interactive lines so far
    mentions = ~clickable & (distinct[:, 2] > 0)  # a line holding a goal term
    idx = np.arange(n)
    hit_at = np.maximum.accumulate(np.where(mentions, idx, -HIT_WINDOW - 1))
    gap = idx - hit_at
    near = clickable & (gap <= HIT_WINDOW) & (gap > 0)
    Xt[_C["hit_before"], near] = 1.0 / gap[near]
    seen = np.cumsum(clickable) - clickable
    Xt[_C["inter_order"]] = order_x = _log1p_of(seen, _LOG_WHOLE, 1)
    # state
    untouched = form & has_bid & ~bid_acted
    Xt[_C["field_pending"]] = clickable & ~form & ((np.cumsum(untouched) - untouched) > 0)
    Xt[_C["last_el"]] = acted_code == 2
    for k in np.flatnonzero(form).tolist():
        if _FILLED.search(texts[k]):
            Xt[_C["filled"], k] = 1.0
    # each _CHECKED state holds "rue"
    ticked = [
        k
        for k in np.flatnonzero(named | (hits > 0)).tolist()
        if "rue" in texts[k] and _CHECKED.search(texts[k])
    ]
    if ticked:  # the names the goal wants off, read for a ticked line only
        off = switched_off(step.goal)
        for k in ticked:
            if own[k] not in off:
                Xt[_C["done_choice"], k] = 1.0
    if not step.history:
        Xt[_C["first_step"]] = True
        Xt[_C["first_x_order"]] = order_x
    _decision_state(Xt, texts, own, gid == _CHOICE, form & has_bid, has_bid, named | quoted)
    return np.ascontiguousarray(Xt.T)


def field_labels(own: list[str], fields: list[int], has_bid: np.ndarray) -> dict[int, str]:
    """Each field's label: its own (normalised) name, else the nearest named line without a
    bid at most :data:`LABEL_BACK` lines above it (0-based lines; '' when none).

    >>> field_labels(["", "password", "", "verify password", ""], [2, 4],
    ...              np.array([False, False, True, False, True]))
    {2: 'password', 4: 'verify password'}
    """
    out = {}
    for k in fields:
        label = own[k]
        if not label:
            for m in range(k - 1, max(-1, k - 1 - LABEL_BACK), -1):
                if own[m] and not has_bid[m]:
                    label = own[m]
                    break
        out[k] = label
    return out


def _decision_state(
    Xt: np.ndarray,
    texts: list[str],
    own: list[str],
    choice: np.ndarray,
    field: np.ndarray,
    has_bid: np.ndarray,
    named: np.ndarray,
) -> None:
    """Fill the :data:`DECISION` rows of ``Xt`` (features x lines)."""
    Xt[_C["goal_choice"]] = choice & has_bid & named
    for k in np.flatnonzero(choice & has_bid).tolist():
        if "rue" in texts[k] and _CHECKED.search(texts[k]):
            Xt[_C["chosen"], k] = 1.0
    near = Xt[_C["hit_before"]] >= 1.0 / LABEL_BACK  # a goal-mentioning label just above
    Xt[_C["goal_field"]] = field & ((Xt[_C["hits"]] > 0) | (Xt[_C["kids_hits"]] > 0) | near | named)
    fields = np.flatnonzero(field).tolist()
    if len(fields) < 2:
        return
    words = {
        k: {w for w in label.split() if len(w) >= PAIR_WORD_MIN}
        for k, label in field_labels(own, fields, has_bid).items()
    }
    for k in fields:
        if words[k] and any(words[k] & words[m] for m in fields if m != k):
            Xt[_C["pair_field"], k] = 1.0


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
