"""Helpers of the explorer notebook: original and reduced trees side by side, as HTML.

The HTML carries inline styles only (no ``<style>`` block), so a committed notebook output
renders the same before the notebook is trusted. The two trees sit in a two-column grid
that never grows wider than the notebook (``minmax(0, 1fr)`` columns); each column scrolls
on its own and long lines wrap inside it. Kept lines are green, ancestor/placeholder stubs
grey and italic, dropped lines dimmed, the next action's target lines marked by a red bar.
A diff-like summary (tokens, lines, targets, evidence) heads the view. :func:`explorer`
wires step / reducer / prompt / pruning menus to :func:`side_by_side` with ipywidgets.

>>> from lrlib.core.step import Step
>>> s = Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", target_bids=("4",))
>>> 'data-kind="kept"' in tree_html(s.axtree, kept=[2], targets=s.target_lines)
True
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lrlib.core.axtree import AxTree
from lrlib.core.step import Step

__all__ = [
    "TREE",
    "LINE",
    "TARGET",
    "NUMBER",
    "PAIR",
    "HEAD",
    "COLUMN",
    "LINEAR",
    "tree_html",
    "reduced_html",
    "summary",
    "side_by_side",
    "applies",
    "explorer",
    "natural",
    "Switch",
]

# inline styles (a notebook's CSS is dropped until it is trusted)
TREE = (
    "font:11px/1.35 monospace;white-space:pre-wrap;overflow-wrap:anywhere;overflow:auto;"
    "max-height:520px;border:1px solid #ccc;padding:4px;margin:0;background:#fff;color:#222;"
    "box-sizing:border-box;min-height:3em"
)
LINE = {
    "kept": "background:#d9f2d9",
    "stub": "background:#eeeeee;color:#666;font-style:italic",
    "dropped": "color:#aaa",
    "shown": "",  # a line of the reduced text
}
TARGET = ";box-shadow:inset 3px 0 0 #d1495b;font-weight:bold"
NUMBER = "color:#999;user-select:none"
PAIR = (
    "display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:10px;"
    "width:100%;max-width:100%;box-sizing:border-box"
)
HEAD = "font:12px sans-serif;margin:2px 0 4px 0"
COLUMN = "min-width:0;overflow:hidden"
LINEAR = ("full", "truncate", "truncate-agentlab", "embedding")  # no pruning choice


def _line(kind: str, target: bool, body: str) -> str:
    style = LINE[kind] + (TARGET if target else "")
    return f'<div class="lr-line {kind}" data-kind="{kind}" style="{style}">{body}</div>'


def tree_html(
    tree: AxTree,
    kept: Iterable[int] = (),
    stubs: Iterable[int] = (),
    targets: Iterable[int] = (),
    max_lines: int | None = None,
) -> str:
    """The numbered tree as HTML, each line marked ``kept``, ``stub`` or ``dropped`` (its
    ``data-kind``) with a red bar on the next action's lines; ``max_lines`` cuts long trees.

    >>> from lrlib.core.axtree import parse
    >>> tree_html(parse("a\\nb"), kept=[1]).count('data-kind="kept"')
    1
    """
    kept, stubs, targets = set(kept), set(stubs), set(targets)
    rows = []
    for n, text in enumerate(tree.texts, 1):
        if max_lines is not None and n > max_lines:
            more = f"... {len(tree) - max_lines} more lines"
            rows.append(f'<div style="{NUMBER}">{more}</div>')
            break
        kind = "kept" if n in kept else "stub" if n in stubs else "dropped"
        number = f'<span style="{NUMBER}">{n:>4} </span>'
        rows.append(_line(kind, n in targets, number + html.escape(text)))
    return f'<div class="lr-tree" data-pane="original" style="{TREE}">' + "".join(rows) + "</div>"


def reduced_html(text: str, target_bids: Iterable[str] = ()) -> str:
    """The reduced text, one line per row; lines holding a target's ``[bid]`` get the red bar.

    >>> "box-shadow" in reduced_html("[4] button 'Buy'", ["4"])
    True
    """
    marks = tuple(f"[{b}]" for b in target_bids)
    rows = [_line("shown", any(m in t for m in marks), html.escape(t)) for t in text.splitlines()]
    return f'<div class="lr-tree" data-pane="reduced" style="{TREE}">' + "".join(rows) + "</div>"


def summary(step: Step, reduction: Any) -> str:
    """One diff-like line: tokens and lines before -> after, targets and evidence kept.

    >>> from lrlib.reducers import get_reducer
    >>> s = Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", target_bids=("4",))
    >>> summary(s, get_reducer("full").reduce(s))
    'tokens 14 → 14 (+0%) · lines 2 → 2 kept, 0 stubs, 0 dropped · targets kept 1/1 · evidence kept'
    """
    from lrlib.eval.metrics import covers_evidence

    n, kept, stubs = (
        len(step.axtree),
        set(reduction.kept),
        set(reduction.stubs) - set(reduction.kept),
    )
    targets = step.target_lines
    hit = sum(t in kept for t in targets)
    evidence = covers_evidence(step, kept)
    parts = [
        f"tokens {reduction.tokens_before:,} → {reduction.tokens_after:,} "
        f"({0.0 - reduction.reduction:+.0%})",
        f"lines {n:,} → {len(kept):,} kept, {len(stubs):,} stubs, "
        f"{n - len(kept) - len(stubs):,} dropped",
        f"targets kept {hit}/{len(targets)}" if targets else "no target line",
        "no evidence" if evidence is None else f"evidence {'kept' if evidence else 'LOST'}",
    ]
    return " · ".join(parts)


def side_by_side(step: Step, reduction: Any, title: str = "", max_lines: int | None = 400) -> str:
    """HTML: the summary, then the original tree (kept lines highlighted) beside the reduced
    text. ``reduction`` is a :class:`~lrlib.reducers.Reduction`.

    >>> from lrlib.reducers import get_reducer
    >>> s = Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", target_bids=("4",))
    >>> "lines 2 → 2 kept" in side_by_side(s, get_reducer("full").reduce(s))
    True
    """
    failure = (
        f' · <b style="color:#b00">fallback: {html.escape(str(reduction.failure))}</b>'
        if reduction.failure
        else ""
    )
    head = f'<div style="{HEAD}"><b>{html.escape(title)}</b></div>' if title else ""
    goal = html.escape(step.goal[:300])
    top = (
        f'<div class="lr-summary" style="{HEAD}"><b>{html.escape(summary(step, reduction))}</b>'
        f'{failure}</div><div style="{HEAD}"><b>goal:</b> {goal}</div>'
    )
    legend = (
        f'original, {len(step.axtree):,} lines: <span style="{LINE["kept"]}">kept</span> '
        f'<span style="{LINE["stub"]}">stub</span> <span style="{LINE["dropped"]}">dropped'
        f'</span> <span style="{TARGET}">target</span>'
    )
    left = tree_html(step.axtree, reduction.kept, reduction.stubs, step.target_lines, max_lines)
    right = reduced_html(reduction.text, step.target_bids)
    return (
        f'<div class="lr-view" style="width:100%;max-width:100%;min-width:0">{head}{top}'
        f'<div class="lr-pair" style="{PAIR}">'
        f'<div class="lr-col" style="{COLUMN}"><div style="{HEAD}">{legend}</div>{left}</div>'
        f'<div class="lr-col" style="{COLUMN}"><div style="{HEAD}">reduced, '
        f"{reduction.tokens_after:,} tokens</div>{right}</div></div></div>"
    )


def applies(reducer: str) -> dict[str, bool]:
    """Which menus act on ``reducer``: the prompt on LineRetriever only, the pruning strategy
    on the reducers that take one.

    >>> applies("bm25"), applies("truncate")
    ({'prompt': False, 'strategy': True}, {'prompt': False, 'strategy': False})
    """
    from lrlib.reducers import reducer_options

    options = reducer_options(reducer)
    takes = reducer == "lineretriever" or (options is not None and "strategy" in options)
    return {"prompt": reducer == "lineretriever", "strategy": takes or reducer == "program"}


def explorer(
    steps: Sequence[Step],
    reduce: Callable[[Step, str, str, str], Any],
    reducers: Sequence[str],
    prompts: Sequence[str],
    strategies: Sequence[str],
    describe: Callable[[str], str] | None = None,
    labels: Mapping[str, str] | None = None,
    start: Sequence[str] | None = None,
):
    """An ipywidgets explorer: menus for step, reducer, prompt variant and pruning strategy
    (starting at ``start = (reducer, prompt, strategy)``), previous/next buttons, a step
    slider (from the keyboard: click or Tab to its handle, then the arrow keys; JupyterLab
    keeps them for cells elsewhere), and :func:`side_by_side` for the choice below. A menu
    that does not act on the chosen reducer is disabled, with a tooltip and a note saying why.

    ``reduce(step, reducer, prompt, strategy)`` returns a Reduction; ``describe(reducer)``
    gives the title (e.g. the retriever model). Returns the widget (display it).
    """
    import ipywidgets as w

    labels = labels or {}
    reducer0, prompt0, strategy0 = start or (reducers[0], prompts[0], strategies[0])
    steps = sorted(steps, key=lambda s: natural(s.step_id))  # the menu: step 2 before 10
    options = [(f"{i + 1}. " + labels.get(s.step_id, s.step_id), i) for i, s in enumerate(steps)]
    full = w.Layout(width="auto", min_width="0")
    pick_step = w.Dropdown(options=options, value=0, description="step", layout=full)
    pick_reducer = w.Dropdown(options=list(reducers), value=reducer0, description="reducer")
    # no description: ipywidgets puts a tooltip (title) on the <select> only then
    pick_prompt = w.Dropdown(options=list(prompts), value=prompt0, layout=w.Layout(width="150px"))
    pick_strategy = w.Dropdown(options=list(strategies), value=strategy0, layout=pick_prompt.layout)
    menus = [(pick_prompt, "prompt", "prompt"), (pick_strategy, "strategy", "pruning")]
    names = {key: w.HTML(name, layout=w.Layout(margin="0 4px 0 12px")) for _, key, name in menus}
    for menu, _, name in menus:
        menu.add_class(f"lr-menu-{name}")
    prev, nxt = w.Button(description="◀ previous"), w.Button(description="next ▶")
    for b in (prev, nxt):
        b.layout = w.Layout(width="110px")
    # the arrow keys on its focused handle move a step (the slider takes them from JupyterLab)
    slider = w.IntSlider(value=1, min=1, max=max(len(steps), 2), description="step #", readout=True)
    slider.layout, slider.tooltip = w.Layout(width="300px"), "focus the handle, then ← / →"
    slider.disabled = len(steps) < 2
    slider.add_class("lr-explorer-keys")
    note = w.HTML(layout=w.Layout(margin="0 0 0 8px"))  # why a menu is greyed out
    note.add_class("lr-explorer-note")
    view = w.HTML(layout=w.Layout(width="100%", min_width="0", overflow="hidden"))
    view.add_class("lr-explorer-view")

    def refresh(*_: Any) -> None:
        act = applies(pick_reducer.value)
        off = []
        for menu, key, name in menus:
            tip = f"the {name} menu does not apply to {pick_reducer.value}"
            menu.disabled, menu.tooltip = not act[key], None if act[key] else tip
            names[key].value = (
                name if act[key] else f'<span title="{html.escape(tip)}">{name}</span>'
            )
            off += [] if act[key] else [name]
        note.value = (
            f"<i style='color:#666'>{' and '.join(off)} menu does not apply to "
            f"{html.escape(pick_reducer.value)}</i>"
            if off
            else ""
        )
        prev.disabled, nxt.disabled = pick_step.value == 0, pick_step.value == len(steps) - 1
        slider.value = pick_step.value + 1
        step = steps[pick_step.value]
        try:
            red = reduce(step, pick_reducer.value, pick_prompt.value, pick_strategy.value)
        except Exception as exc:  # show the error in the view; the explorer stays usable
            view.value = f"<pre>{html.escape(f'{type(exc).__name__}: {exc}')}</pre>"
            return
        title = describe(pick_reducer.value) if describe else pick_reducer.value
        chosen = [
            f"{k} {m.value}" for m, k in ((pick_prompt, "prompt"), (pick_strategy, "pruning"))
        ]
        shown = [c for c, on in zip(chosen, (act["prompt"], act["strategy"]), strict=True) if on]
        view.value = side_by_side(step, red, " · ".join([title, *shown]))

    def move(delta: int) -> Callable[[Any], None]:
        def go(_: Any) -> None:
            pick_step.value = min(max(pick_step.value + delta, 0), len(steps) - 1)

        return go

    slider.observe(lambda change: setattr(pick_step, "value", change["new"] - 1), names="value")
    prev.on_click(move(-1))
    nxt.on_click(move(+1))
    for widget in (pick_step, pick_reducer, pick_prompt, pick_strategy):
        widget.observe(refresh, names="value")
    refresh()
    wrap = w.Layout(flex_flow="row wrap", width="100%")
    grow = w.Layout(flex="1 1 0", min_width="260px")  # the step menu; wraps below when narrow
    labelled = [w.HBox([names[key], menu]) for menu, key, _ in menus]  # wrap together
    controls = w.VBox(
        [
            w.HBox([prev, nxt, slider, w.Box([pick_step], layout=grow)], layout=wrap),
            w.HBox([pick_reducer, *labelled, note], layout=wrap),
        ],
        layout=w.Layout(width="100%"),
    )
    box = w.VBox([controls, view], layout=w.Layout(width="100%", min_width="0"))
    box.add_class("lr-explorer")
    return box


def natural(text: str) -> list:
    """A sort key that orders the numbers in ``text`` by value: step 2 before step 10.

    >>> sorted(["ep/10", "ep/2", "ep/1"], key=natural)
    ['ep/1', 'ep/2', 'ep/10']
    """
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


class Switch:
    """``(step, reducer, prompt, strategy) -> Reduction`` for :func:`explorer`: builds each
    reducer once; ``lineretriever`` through the given factory, the others from the registry
    (with the pruning strategy when they take one, see :func:`applies`). Offline, a
    LineRetriever step without a cached answer comes back as a labelled full-tree fallback
    (see :func:`lrlib.report.replay.safe_reduce`).

    >>> s = Step(goal="g", tree="a\\nb\\nc", target_bids=())
    >>> Switch(lineretriever=None)(s, "full", "paper", "remove").tokens_after > 0
    True
    """

    def __init__(self, lineretriever: Callable[..., Any] | None) -> None:
        self._factory = lineretriever
        self._built: dict[tuple, Any] = {}

    def __call__(self, step: Step, reducer: str, prompt: str, strategy: str) -> Any:
        from lrlib.reducers import get_reducer
        from lrlib.report.replay import safe_reduce

        act = applies(reducer)
        key = (
            reducer,
            prompt if act["prompt"] else None,
            strategy if act["strategy"] else None,
        )
        if key not in self._built:
            if reducer == "lineretriever":
                if self._factory is None:
                    raise ValueError("no LineRetriever factory given")
                self._built[key] = self._factory(prompt=prompt, strategy=strategy)
            elif act["strategy"]:
                self._built[key] = get_reducer(reducer, strategy=strategy)
            else:
                self._built[key] = get_reducer(reducer)
        return safe_reduce(self._built[key], step)
