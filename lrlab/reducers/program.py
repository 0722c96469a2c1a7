"""A program reducer: rules over role groups, goal terms, history and tree structure.

Extractive like LineRetriever: it chooses lines, keeps them verbatim and renders them with
the structure-preserving filter (ancestors as ``[bid] role`` stubs). Every line gets a score;
lines scoring at least ``threshold`` are kept. The rules read role *groups*
(:func:`~lrlab.reducers.features.role_group`), not one site's role names:

- **form controls** (textbox, combobox, searchbox, spinbutton, ...) and **frames**
  (``Iframe``) are always kept: they are short and most tasks fill them or act inside them;
- **other interactive lines** (buttons, links, choices, menu items, tabs, options, labels)
  and **unknown roles carrying a bid** (``other``: custom widgets) start from a prior per
  kind (``button``, ``link``, ``item``, ``other``) and gain ``goal`` per goal term their
  text *or their children's text* mentions (a clickable container whose name is carried by
  a child ``StaticText``; terms are crudely stemmed and may match inside a word, so
  *best-selling* finds *Bestsellers*), ``history`` when an earlier action used them,
  ``near`` when they sit next to the last element acted on (same parent, or among the
  ``near_lines`` lines after it), ``icon`` when unnamed (an icon button: no text to match,
  so it competes on position and cost), ``cheap`` when the line is short (no URL to pay
  for); they lose ``chrome`` inside navigation, banners, footers and menu bars;
- **containers with a bid** (generic, group, radiogroup, ...) are scored like ``other``
  when their name or their children's text mentions a goal term (a clickable card or row,
  a named choice group), else dropped;
- **text lines** (static text, headings, cells...) are kept when they mention at least
  ``text_terms`` goal terms - or all of them, when the goal has fewer content words.

**No page-controlled lift** (the security issue): focus is not read at all, and the goal
bonus saturates at two terms, so a name repeating the goal verbatim gains no more than one
naming two of its words; a line must also be of a kind whose prior and other bonuses reach
the threshold. The guard (``guard=True``, :mod:`lrlab.reducers.suspect`) drops lines whose text
gives an attack away: control markup, words addressed to an AI, a foreign web address.

The knobs are tuned with grouped cross-validation (leave one task family out, train and
validation splits only; :func:`~lrlab.tuning.program_tuning.tune`, run by
``benchmarks/tune_program.py``) and stored with their provenance in ``program_params.json``
beside this file; ``threshold`` is the knob swept for the coverage-versus-reduction curve.
The learned scorer (:mod:`.learned`) is the recommended reducer; this one is its
transparent baseline.

>>> tree = "\\n".join(["RootWebArea 'Shop'", "\\t[3] link 'Home', url='https://shop.example/home'",
...                    "\\t[4] button 'Add to cart'", "\\t[5] textbox 'Quantity'"])
>>> step = Step(goal="Add 2 mugs to the cart", tree=tree)
>>> kept = [step.axtree.bids[n - 1] for n in Program().select(step).kept]
>>> {"4", "5"} <= set(kept)  # the cart button and the quantity field the goal needs
True
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from lrlab.reducers.budget import step_context
from lrlab.reducers.decision import decision_lines
from lrlab.reducers.features import history_bids, kids_text, line_names, role_group, unfocused
from lrlab.reducers.lexicon import goal_terms, stem, term_matcher
from lrlab.reducers.memo import per_step
from lrlab.reducers.overlay import guarded_output
from lrlab.reducers.suspect import suspect_lines
from lrlib.core.step import Step
from lrlib.reducers.base import Knob, Output, Reducer, register_reducer

__all__ = [
    "PARAMS", "PARAMS_FILE", "Features", "Knobs", "Program", "goal_terms", "keep_lines",
    "line_features", "score_lines", "stem", "term_matcher",
]  # fmt: skip
PARAMS_FILE = Path(__file__).with_name("program_params.json")
# named knob sets shipped beside this file (``program:params=decision``): the shipped tuning
# (evidence constraint, recorded traces) and issue 33's (decision evidence and every minimal
# failure set as the constraint, the MiniWoB tuning half added; benchmarks/tune_program.py)
PARAMS = {"shipped": PARAMS_FILE, "decision": PARAMS_FILE.with_name("program_params_decision.json")}

# role group (features.GROUPS) -> the rule's kind; groups not listed are text or containers
KIND = {
    "form": "form", "frame": "form", "button": "button", "link": "link", "choice": "item",
    "item": "item", "other": "other",
}  # fmt: skip
CHECKS = frozenset({"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"})
_EMPTY_NAME = re.compile(r"^(?:''|'[^\w']*')?\s*(?:,|$)")  # no name, or only glyphs


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
    icon: float = 0.5
    other: float = 0.0
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


def _in_chrome(groups: list[str], parents: list[int]) -> list[bool]:
    out = [False] * len(groups)
    for i, (group, p) in enumerate(zip(groups, parents, strict=True)):
        out[i] = group == "chrome" or (p >= 0 and out[p])
    return out


@dataclass(frozen=True)
class Features:
    """What the rules read from one step, one entry per line (computed once per step, so
    tuning can re-score the same steps under many knob settings cheaply)."""

    kind: list[str]  # "form", "text"/"url" (not interactive, without/with URL), or KIND
    hits: list[int]  # distinct goal terms the line (or its children's text) mentions
    acted: list[bool]  # an earlier action used this bid
    near: list[bool]  # same parent as the element of the last action
    after: list[int]  # lines after the element of the last action (0: before it, or none)
    unnamed: list[bool]  # interactive without a name of its own (an icon)
    length: list[int]  # characters, indentation excluded
    chrome: list[bool]  # inside navigation, banner, footer, menu bar
    n_terms: int = 2  # content words in the goal (text lines need min(text_terms, n_terms))


@per_step
def line_features(step: Step) -> Features:
    """The :class:`Features` of ``step``'s tree."""
    tree = step.axtree
    terms = goal_terms(step.goal)
    match = term_matcher(terms)
    acted, last = history_bids(step.history)
    last_line = tree.line_of(last) if last else None
    last_parent = tree.parents[last_line - 1] if last_line else -2
    n = len(tree)
    groups = [role_group(r) for r in tree.roles]
    names = line_names(tree)
    kids = kids_text(tree, names)
    kind: list[str] = ["text"] * n
    hits, length = [0] * n, [0] * n
    used, near, unnamed = [False] * n, [False] * n, [False] * n
    after = [0] * n
    if last_line:
        after[last_line:] = range(1, n - last_line + 1)
    for i, (name, group, bid) in enumerate(zip(names, groups, tree.bids, strict=True)):
        length[i] = len(unfocused(tree.texts[i])) - tree.indents[i]
        k = KIND.get(group) if bid is not None or group == "form" else None
        if tree.roles[i] in CHECKS:
            k = "form"  # short, and a form's choices are what tasks set
        if k == "form":
            kind[i] = "form"
            continue
        own = len(set(match.findall(name.lower()))) if match else 0
        child = len(set(match.findall(kids[i].lower()))) if match and kids[i] else 0
        if k is None and bid is not None and group == "container" and (own or child):
            k = "other"  # a clickable card, row or group named by its (children's) text
        if k is None:  # text lines are candidates only without a URL (costly, no answer)
            kind[i] = "url" if "url='" in tree.texts[i] else "text"
            hits[i] = own
            continue
        kind[i] = k
        hits[i] = max(own, child)
        used[i] = bid in acted
        near[i] = tree.parents[i] == last_parent
        unnamed[i] = bool(_EMPTY_NAME.match(name))
    return Features(
        kind, hits, used, near, after, unnamed, length, _in_chrome(groups, tree.parents),
        len(terms),
    )  # fmt: skip


def score_lines(features: Features, knobs: Knobs) -> list[float]:
    """The score of every line (``inf``: always kept, ``-inf``: never kept)."""
    inf = float("inf")
    need = max(1, min(knobs.text_terms, features.n_terms))
    cap = max(1, min(2, features.n_terms))  # a one-word goal can still earn the full bonus
    out = []
    for kind, hits, used, near, after, unnamed, length, chrome in zip(
        features.kind,
        features.hits,
        features.acted,
        features.near,
        features.after,
        features.unnamed,
        features.length,
        features.chrome,
        strict=True,
    ):
        if kind == "form":
            out.append(inf)
        elif kind == "text" or kind == "url":
            out.append(inf if kind == "text" and hits >= need else -inf)
        else:
            out.append(
                getattr(knobs, kind)
                + knobs.goal * min(hits, cap) * 2 / cap
                + knobs.history * used
                + knobs.near * (near or 0 < after <= knobs.near_lines)
                + knobs.icon * unnamed
                + knobs.cheap * (length <= knobs.cheap_chars)
                + knobs.chrome * chrome
            )
    return out


def keep_lines(features: Features, knobs: Knobs) -> list[int]:
    """The 1-based lines the program keeps."""
    return [i + 1 for i, s in enumerate(score_lines(features, knobs)) if s >= knobs.threshold]


@register_reducer
class Program(Reducer):
    """The tuned rule-based reducer. Any :class:`Knobs` field can be overridden by name, on
    top of a knob set (``params``: ``shipped``, or ``decision`` for issue 33's tuning; or a
    ``params_file`` of your own);
    ``guard`` (default on) drops the lines :func:`lrlab.reducers.suspect.suspect_lines` flags;
    ``context`` (default on) keeps with each kept line what says what it is for
    (:func:`with_context`); ``decision`` (default off) adds what an agent reads to decide on
    the kept lines (:func:`lrlab.reducers.decision.decision_lines`: a label's value, a
    table row, the question before a field)."""

    name = "program"
    listed = 8
    sweep = Knob("threshold", (-3.0, -2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0))

    def __init__(
        self,
        strategy: str = "structure",
        markers: bool = False,
        params_file: str | Path | None = None,
        params: str = "shipped",
        guard: bool = True,
        context: bool = True,
        decision: bool = False,
        **overrides: Any,
    ) -> None:
        names = {f.name for f in fields(Knobs)}
        encoding = overrides.pop("encoding", None)
        unknown = set(overrides) - names
        if unknown:
            raise TypeError(f"unknown program knobs {sorted(unknown)}; valid: {sorted(names)}")
        if params not in PARAMS:
            raise ValueError(f"unknown program params {params!r}; valid: {sorted(PARAMS)}")
        base = Knobs.load(Path(params_file) if params_file else PARAMS[params])
        self.knobs = replace(base, **overrides)
        self.strategy, self.markers, self.guard = strategy, markers, bool(guard)
        self.context, self.decision = bool(context), bool(decision)
        kwargs = {"encoding": encoding} if encoding else {}
        if self.decision:  # named only when on: the shipped configuration keeps its parameters
            kwargs["decision"] = True
        if params != "shipped":
            kwargs["params"] = params
        super().__init__(
            strategy=strategy, markers=markers, guard=self.guard, context=self.context,
            **asdict(self.knobs), **kwargs,
        )  # fmt: skip

    def select(self, step: Step) -> Output:
        lines = keep_lines(line_features(step), self.knobs)
        if self.context:
            lines = with_context(step, lines)
        if self.decision:
            lines = decision_lines(step, lines)
        if self.guard:
            banned = suspect_lines(step)
            lines = [n for n in lines if n not in banned]
        return guarded_output(step, lines, self.strategy, self.markers, self.guard)


def with_context(step: Step, lines: list[int]) -> list[int]:
    """``lines`` (1-based) and what each says what it is for: a choice's question, an
    unnamed field's label, an unnamed element's text (:func:`lrlib.data.evidence.context_lines`).

    >>> s = Step(goal="g", tree="[1] radiogroup 'Size'\\n\\t[2] radio 'S'\\n[3] link 'Home'")
    >>> with_context(s, [2])
    [1, 2]
    """
    ctx = step_context(step)
    return sorted({*lines, *(m for n in lines for m in ctx[n - 1])})
