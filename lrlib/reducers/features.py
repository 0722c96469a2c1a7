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
from itertools import compress, repeat

import numpy as np

from lrlib.core.axtree import AxTree
from lrlib.core.step import Step
from lrlib.data.actions import parse_code
from lrlib.reducers.bm25 import (
    counts_from_kinds,
    query_terms,
    scores_from_counts,
    token_kinds,
    word_tokens,
)
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


def _kinds_and_hits(
    found: list[bytes], line: np.ndarray, kind: dict[bytes, int], goal: set[str], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The kind of each of ``found`` (:func:`.bm25.word_tokens`, kinds :func:`.bm25.token_kinds`)
    and which of ``n`` lines hold which of ``goal`` (:func:`.lexicon.terms`), as a (lines x
    terms) boolean matrix, from one look-up per token: a goal word is a run of ``[a-z0-9]``
    (of a token, cut at ``_`` and other characters than ASCII) whose first five characters
    are a term, if the run is a content word."""
    column = {t.encode(): k for k, t in enumerate(goal)}
    get = column.get
    out = np.zeros((n, len(column)), bool)
    if not column:
        return np.fromiter(map(kind.get, found, repeat(0)), np.int64, len(found)), out
    top = max(kind.values(), default=0) + 1  # a token's code: kind + top * (its term + 1)
    code, several = dict(kind), {}
    for w in set(found):
        if w.isalnum():  # one run (ASCII letters and digits)
            k = get(w[:5])
            if k is not None and content(w.decode()):
                code[w] = kind.get(w, 0) + top * (k + 1)
            continue
        runs = w.translate(_ALNUM_BYTES).split()
        ks = {k for r in runs if (k := get(r[:5])) is not None and content(r.decode())}
        if len(ks) == 1:
            code[w] = kind.get(w, 0) + top * (ks.pop() + 1)
        elif ks:
            several[w] = sorted(ks)
    codes = np.fromiter(map(code.get, found, repeat(0)), np.int64, len(found))
    term = codes // top - 1
    at = np.flatnonzero(term >= 0)
    out[line[at], term[at]] = True
    if several:  # a token holding runs of several terms
        for i in compress(range(len(found)), map(several.__contains__, found)):
            out[line[i], several[found[i]]] = True
    return codes % top, out


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


def _line_starts(text: str, n: int) -> np.ndarray:
    """The offset in ``text`` (``n`` lines joined by newlines) of each line."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    return np.concatenate(([0], np.flatnonzero(codes == 10) + 1))[:n]


def line_features(step: Step) -> np.ndarray:
    """The feature matrix of ``step``: one row per line, columns :data:`FEATURES` (one pass
    of numpy over the lines; ``tests/test_features_fast.py`` holds it to the per-line
    definitions, kept in ``tests/legacy_features.py``)."""
    tree = step.axtree
    n = len(tree)
    X = np.zeros((n, len(FEATURES)))
    if n == 0:
        return X
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
    goal = terms(step.goal)
    tokens, line = word_tokens(text)  # one pass for BM25 and for goal terms
    kind, found = _kinds_and_hits(tokens, line, token_kinds(words), goal, n)
    lengths, tf = counts_from_kinds(kind, line, text, n, words)
    sub = _found(term_finds(goal_terms(step.goal), text), _line_starts(text, n), n)
    q, g = tf.shape[1], found.shape[1]
    kid = kids.sum(np.concatenate((lengths[:, None], tf, found, sub), axis=1, dtype=np.int64))
    scores = scores_from_counts(  # of each line, and of each line with its kids
        np.stack([lengths, lengths + kid[:, 0]]), np.stack([tf, tf + kid[:, 1 : 1 + q]]), order
    )
    X[:, _C["bm25_rel"]] = bm25 = _rel(scores[0])
    X[:, _C["kids_bm25_rel"]] = kids_bm25 = _rel(scores[1])
    # hits, kids_hits, sub_hits, kids_sub_hits (side by side): distinct terms a line (its
    # kids) holds, at most two, halved; each block of columns closed by a column of zeros
    pad = np.zeros((n, 1), bool)
    kids_found, kids_sub = kid[:, 1 + q : 1 + q + g] > 0, kid[:, 1 + q + g :] > 0
    present = np.concatenate((found, pad, kids_found, pad, sub, pad, kids_sub, pad), axis=1)
    edges = [0, g + 1, 2 * g + 2, 2 * g + sub.shape[1] + 3]
    distinct = np.add.reduceat(present, edges, axis=1, dtype=np.int64)
    X[:, _C["hits"] : _C["hits"] + 4] = np.minimum(2, distinct) / 2
    hits = X[:, _C["hits"]]
    acted, last = history_bids(step.history)
    last_line = tree.line_of(last) if last else None
    n_children = np.bincount(parents[parents >= 0], minlength=n)
    depth = np.asarray(tree.depths, float)
    X[np.arange(n), gid] = 1.0  # role_* are the first columns, in group order
    X[:, _C["has_bid"]] = has_bid
    inter = _INTERACTIVE[gid]
    X[:, _C["interactive"]] = inter
    X[:, _C["no_role"]] = role == 0
    X[:, _C["depth"]] = depth / max(1.0, depth.max())
    own_names = _OWN_NAME.findall(joined)  # _NAME of each line, in one pass
    name_len = np.fromiter(map(len, own_names), np.int64, n)
    X[:, _C["log_len"]] = np.log1p(name_len.astype(float))
    X[:, _C["empty_name"]] = empty = name_len == 0
    X[:, _C["has_url"]] = np.fromiter(map(operator.contains, texts, repeat("url='")), bool, n)
    X[:, _C["log_children"]] = np.log1p(n_children)
    X[:, _C["leaf"]] = n_children == 0
    chars = np.fromiter(map(len, texts), np.int64, n)
    for i in compress(range(n), map(operator.contains, texts, repeat("focus"))):
        chars[i] = len(unfocused(texts[i]))
    X[:, _C["log_cost"]] = _log1p_of(chars, _LOG_QUARTERS, 4)
    state = dict.fromkeys(acted, 1)  # 2: the last one (among the acted)
    if last is not None:
        state[last] = 2
    acted_code = np.fromiter(map(state.get, bids, repeat(0)), np.int64, n)
    X[:, _C["acted"]] = bid_acted = acted_code > 0
    i = last_line - 1 if last_line is not None else None
    chrome, hops = _ancestry(tree.parents, (gid == _CHROME).tolist(), i)
    near_after = same_parent = None
    if i is not None:
        dist = np.arange(n) - i
        X[:, _C["has_last"]] = 1.0
        X[:, _C["near_after"]] = near_after = (dist > 0) & (dist <= NEAR)
        X[:, _C["log_hops"]] = np.log1p(hops)
        X[:, _C["same_parent"]] = same_parent = parents == parents[i]
    else:
        X[:, _C["log_hops"]] = math.log1p(depth.max() * 2)
    X[:, _C["in_chrome"]] = np.fromiter(chrome, bool, n)
    X[:, _C["interactive_x_bm25"]] = inter * bm25
    X[:, _C["interactive_x_kids"]] = inter * kids_bm25
    if i is not None:
        X[:, _C["unnamed_x_near"]] = empty & has_bid & (same_parent | near_after)
    clickable = has_bid & inter
    form = gid == _FORM
    # whole names against the goal
    goal_n = normalise(step.goal)
    padded = f" {goal_n} "
    quotes = quoted_phrases(step.goal)
    own = normalise_lines(own_names)
    named = np.zeros(n, bool)
    # a plain substring first (a name, not empty: "" is in every text), then whole words
    substring = map(operator.and_, map(bool, own), map(goal_n.__contains__, own))
    maybe = list(compress(range(n), substring))
    words_of = map(padded.__contains__, map(" {} ".format, map(own.__getitem__, maybe)))
    for k in compress(maybe, words_of):
        named[k] = in_goal(own[k], goal_n)
    if quotes:
        quoted = np.fromiter(map(quotes.__contains__, own), bool, n)  # never "": not quoted
        X[:, _C["quoted"]] = quoted
    else:
        quoted = np.zeros(n, bool)
    X[:, _C["name_in_goal"]] = named
    # an unnamed element whose kids' text is a name the goal mentions
    carries = has_bid & _CARRIER[gid] & np.fromiter(map(operator.not_, own), bool, n)
    carries &= role != _LABEL_TEXT
    carries &= kids.sum(quoted | named)
    X[:, _C["carrier"]] = carries
    kinds = [any(map(padded.__contains__, pads)) for pads in _ROLE_PADS]
    X[:, _C["role_in_goal"]] = np.array(kinds, bool)[gid]
    # order: goal-mentioning text lines above a clickable one, interactive lines so far
    mentions = ~clickable & (distinct[:, 2] > 0)  # a line holding a goal term
    idx = np.arange(n)
    hit_at = np.maximum.accumulate(np.where(mentions, idx, -HIT_WINDOW - 1))
    gap = idx - hit_at
    near = clickable & (gap <= HIT_WINDOW) & (gap > 0)
    X[near, _C["hit_before"]] = 1.0 / gap[near]
    seen = np.cumsum(clickable) - clickable
    X[:, _C["inter_order"]] = order_x = _log1p_of(seen, _LOG_WHOLE, 1)
    # state
    untouched = form & has_bid & ~bid_acted
    X[:, _C["field_pending"]] = clickable & ~form & ((np.cumsum(untouched) - untouched) > 0)
    X[:, _C["last_el"]] = acted_code == 2
    for k in np.flatnonzero(form).tolist():
        if _FILLED.search(texts[k]):
            X[k, _C["filled"]] = 1.0
    off = switched_off(step.goal)
    for k in np.flatnonzero(named | (hits > 0)).tolist():
        x = texts[k]  # each _CHECKED state holds "rue"
        if "rue" in x and _CHECKED.search(x) and own[k] not in off:
            X[k, _C["done_choice"]] = 1.0
    if not step.history:
        X[:, _C["first_step"]] = True
        X[:, _C["first_x_order"]] = order_x
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
