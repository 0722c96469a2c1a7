"""A program reducer: rules over roles, goal terms, history and tree structure.

Extractive like LineRetriever: it chooses lines, keeps them verbatim and renders them with
the structure-preserving filter (ancestors as ``[bid] role`` stubs). Every line gets a score;
lines scoring at least ``threshold`` are kept. The rules:

- **form controls** (textbox, combobox, checkbox, radio, searchbox, ...) are always kept:
  they are short and most tasks fill them;
- **other interactive lines** (buttons, links, menu items, tabs, options, labels) start
  from a prior per kind (``button``, ``link``, ``item``) and gain ``goal`` per goal term
  their text mentions (terms are crudely stemmed and may match inside a word, so
  *best-selling* finds *Bestsellers*), ``history`` when an earlier action used them,
  ``near`` when they sit next to the last element acted on (same parent, or among the
  ``near_lines`` lines after it), ``focus`` when focused, ``cheap`` when the line is short
  (no URL to pay for); they lose ``chrome`` inside navigation, banners, footers and menu
  bars (site chrome);
- **text lines** (static text, headings, cells...) are kept when they mention at least
  ``text_terms`` goal terms, so an answer the goal asks about tends to stay visible.

The knobs are tuned on the ``train`` split only (:func:`tune`, run by
``benchmarks/tune_program.py``) and stored with their provenance in
``program_params.json`` beside this file; ``threshold`` is the knob swept for the
coverage-versus-reduction curve.

>>> tree = "\\n".join(["RootWebArea 'Shop'", "\\t[3] link 'Home', url='https://shop.example/home'",
...                    "\\t[4] button 'Add to cart'", "\\t[5] textbox 'Quantity'"])
>>> step = Step(goal="Add 2 mugs to the cart", tree=tree)
>>> [step.axtree.bids[n - 1] for n in Program().select(step).kept]  # not the Home link
['4', '5']
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..actions import parse_code
from ..axtree import AxTree
from ..step import Step
from .base import Output, Reducer, register_reducer
from .chunking import lines_output

PARAMS_FILE = Path(__file__).with_name("program_params.json")

FORM = frozenset({
    "textbox", "searchbox", "combobox", "checkbox", "radio", "switch", "slider", "spinbutton",
    "listbox", "textarea", "menuitemcheckbox", "menuitemradio",
})  # fmt: skip
KIND = {
    "button": "button", "link": "link", "menuitem": "item", "tab": "item", "option": "item",
    "treeitem": "item", "LabelText": "item", "gridcell": "item",
}  # fmt: skip
CHROME = frozenset({"navigation", "banner", "contentinfo", "menubar", "complementary"})
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "go",
    "how", "i", "in", "into", "is", "it", "me", "my", "of", "on", "or", "our", "please", "show",
    "tell", "that", "the", "their", "them", "then", "there", "this", "to", "us", "was", "we",
    "what", "when", "where", "which", "who", "will", "with", "you", "your",
))  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_URL = re.compile(r"url='[^']*'")
_SUFFIX = re.compile(r"(?:ies|ings?|es|ed|s)$")


@dataclass(frozen=True)
class Knobs:
    """The tunable weights (see the module doc)."""

    button: float = 1.0
    link: float = -1.0
    item: float = 0.0
    goal: float = 1.0
    history: float = 1.0
    near: float = 1.0
    near_lines: int = 0
    focus: float = 2.0
    cheap: float = 1.0
    chrome: float = -1.0
    cheap_chars: int = 40
    text_terms: int = 2
    threshold: float = 0.5

    @classmethod
    def load(cls, path: Path = PARAMS_FILE) -> Knobs:
        """The tuned knobs from ``path`` (the defaults above when it does not exist)."""
        if not path.is_file():
            return cls()
        stored = json.loads(path.read_text())["knobs"]
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in stored.items() if k in names})


def stem(word: str) -> str:
    """A crude stem: common English suffixes off, at least 3 letters left.

    >>> stem("selling"), stem("customers"), stem("categories"), stem("is")
    ('sell', 'customer', 'categor', 'is')
    """
    cut = _SUFFIX.sub("", word)
    return cut if len(cut) >= 3 else word


def goal_terms(text: str) -> list[str]:
    """Stemmed content words of ``text`` (stop words and one-letter words dropped).

    >>> goal_terms("Go to the hardware store and order 3 'iPad pro' (Silver)")
    ['hardware', 'store', 'order', 'ipad', 'pro', 'silver']
    """
    words = (stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)
    return list(dict.fromkeys(words))


def term_matcher(terms: list[str]) -> re.Pattern[str] | None:
    """A regex finding the terms in lower-cased text: numbers as whole tokens, words of four
    letters or more anywhere in a word, shorter words at the start of a word."""
    parts = []
    for t in terms:
        if t.isdigit():
            parts.append(rf"(?<![0-9]){t}(?![0-9])")
        elif len(t) >= 4:
            parts.append(re.escape(t))
        else:
            parts.append(rf"\b{re.escape(t)}")
    return re.compile("|".join(parts)) if parts else None


def _history_bids(history: tuple[str, ...]) -> tuple[set[str], str | None]:
    """Bids named by past actions, and the last one."""
    seen, last = set(), None
    for h in history:
        action = parse_code(h)
        if action is not None:
            seen.update(action.bids)
            if action.bids:
                last = action.bids[-1]
    return seen, last


def _in_chrome(tree: AxTree) -> list[bool]:
    out = [False] * len(tree)
    for i, (role, p) in enumerate(zip(tree.roles, tree.parents, strict=True)):
        out[i] = role in CHROME or (p >= 0 and out[p])
    return out


@dataclass(frozen=True)
class Features:
    """What the rules read from one step, one entry per line (computed once per step, so
    tuning can re-score the same steps under many knob settings cheaply)."""

    kind: list[str]  # "form", "text"/"url" (not interactive, without/with URL), or KIND
    hits: list[int]  # distinct goal terms the line mentions (URLs ignored)
    acted: list[bool]  # an earlier action used this bid
    near: list[bool]  # same parent as the element of the last action
    after: list[int]  # lines after the element of the last action (0: before it, or none)
    focus: list[bool]
    length: list[int]  # characters, indentation excluded
    chrome: list[bool]  # inside navigation, banner, footer, menu bar


def line_features(step: Step) -> Features:
    """The :class:`Features` of ``step``'s tree."""
    tree = step.axtree
    match = term_matcher(goal_terms(step.goal))
    acted, last = _history_bids(step.history)
    last_line = tree.line_of(last) if last else None
    last_parent = tree.parents[last_line - 1] if last_line else -2
    n = len(tree)
    kind: list[str] = ["text"] * n
    hits, length = [0] * n, [0] * n
    used, near, focus = [False] * n, [False] * n, [False] * n
    after = [0] * n
    if last_line:
        after[last_line:] = range(1, n - last_line + 1)
    for i, (text, role, bid) in enumerate(zip(tree.texts, tree.roles, tree.bids, strict=True)):
        body = text[tree.indents[i] :]
        length[i] = len(body)
        if role in FORM:
            kind[i] = "form"
            continue
        has_url = "url=" in body
        low = _URL.sub("", body).lower() if has_url else body.lower()
        hits[i] = len(set(match.findall(low))) if match else 0
        # text lines are candidates only without a URL (page roots, images: costly, no answer)
        kind[i] = KIND.get(role or "", "url" if has_url else "text")
        used[i] = bid in acted
        near[i] = tree.parents[i] == last_parent
        focus[i] = "focused" in low
    return Features(kind, hits, used, near, after, focus, length, _in_chrome(tree))


def score_lines(features: Features, knobs: Knobs) -> list[float]:
    """The score of every line (``inf``: always kept, ``-inf``: never kept)."""
    inf = float("inf")
    out = []
    for kind, hits, used, near, after, focus, length, chrome in zip(
        features.kind,
        features.hits,
        features.acted,
        features.near,
        features.after,
        features.focus,
        features.length,
        features.chrome,
        strict=True,
    ):
        if kind == "form":
            out.append(inf)
        elif kind == "text" or kind == "url":
            out.append(inf if kind == "text" and hits >= knobs.text_terms else -inf)
        else:
            out.append(
                getattr(knobs, kind)
                + knobs.goal * min(hits, 2)
                + knobs.history * used
                + knobs.near * (near or 0 < after <= knobs.near_lines)
                + knobs.focus * focus
                + knobs.cheap * (length <= knobs.cheap_chars)
                + knobs.chrome * chrome
            )
    return out


def keep_lines(features: Features, knobs: Knobs) -> list[int]:
    """The 1-based lines the program keeps."""
    return [i + 1 for i, s in enumerate(score_lines(features, knobs)) if s >= knobs.threshold]


@register_reducer("program")
class Program(Reducer):
    """The tuned rule-based reducer. Any :class:`Knobs` field can be overridden by name."""

    name = "program"

    def __init__(
        self,
        strategy: str = "structure",
        markers: bool = False,
        params_file: str | Path | None = None,
        **overrides: Any,
    ) -> None:
        names = {f.name for f in fields(Knobs)}
        encoding = overrides.pop("encoding", None)
        unknown = set(overrides) - names
        if unknown:
            raise TypeError(f"unknown program knobs {sorted(unknown)}; valid: {sorted(names)}")
        base = Knobs.load(Path(params_file)) if params_file else Knobs.load()
        self.knobs = replace(base, **overrides)
        self.strategy, self.markers = strategy, markers
        kwargs = {"encoding": encoding} if encoding else {}
        super().__init__(strategy=strategy, markers=markers, **asdict(self.knobs), **kwargs)

    def select(self, step: Step) -> Output:
        lines = keep_lines(line_features(step), self.knobs)
        return lines_output(step.axtree, lines, self.strategy, self.markers)
