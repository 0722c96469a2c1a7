"""Helpers of the explorer notebook: original and reduced trees side by side, as HTML.

Kept lines are highlighted green, ancestor/placeholder stubs grey, the next action's target
lines framed in red; dropped lines are dimmed. :func:`explorer` wires dropdowns (step,
reducer, prompt variant, pruning strategy) to :func:`side_by_side` with ipywidgets.

>>> from lrlib.step import Step
>>> s = Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", target_bids=("4",))
>>> "kept" in tree_html(s.axtree, kept=[2], targets=s.target_lines)
True
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .axtree import AxTree
from .step import Step

STYLE = """<style>
.lr-pair{display:flex;gap:12px;align-items:flex-start}
.lr-col{flex:1;min-width:0}
.lr-tree{font:11px/1.35 monospace;white-space:pre;overflow:auto;max-height:520px;
 border:1px solid #ccc;padding:4px;background:#fff;color:#222}
.lr-tree .kept{background:#d9f2d9}
.lr-tree .stub{background:#eeeeee;color:#666}
.lr-tree .dropped{color:#aaa}
.lr-tree .target{outline:1px solid #d1495b}
.lr-tree .no{color:#999;user-select:none}
.lr-head{font:12px sans-serif;margin:2px 0 4px 0}
</style>"""


def tree_html(
    tree: AxTree,
    kept: Iterable[int] = (),
    stubs: Iterable[int] = (),
    targets: Iterable[int] = (),
    max_lines: int | None = None,
) -> str:
    """The numbered tree as an HTML ``<div>``, each line classed ``kept``, ``stub`` or
    ``dropped`` (plus ``target`` for the next action's lines); ``max_lines`` cuts long trees.

    >>> from lrlib.axtree import parse
    >>> tree_html(parse("a\\nb"), kept=[1]).count('class="kept')
    1
    """
    kept, stubs, targets = set(kept), set(stubs), set(targets)
    rows = []
    for n, text in enumerate(tree.texts, 1):
        if max_lines is not None and n > max_lines:
            rows.append(f'<span class="no">... {len(tree) - max_lines} more lines</span>')
            break
        cls = "kept" if n in kept else "stub" if n in stubs else "dropped"
        if n in targets:
            cls += " target"
        rows.append(
            f'<span class="{cls}"><span class="no">{n:>4} </span>{html.escape(text)}</span>'
        )
    return '<div class="lr-tree">' + "\n".join(rows) + "</div>"


def side_by_side(step: Step, reduction: Any, title: str = "", max_lines: int | None = 400) -> str:
    """HTML: the original tree with kept lines highlighted, next to the reduced text, with
    token counts and the share of target lines kept. ``reduction`` is a
    :class:`~lrlib.reducers.Reduction` (``kept``, ``stubs``, ``text``, token counts).

    >>> from lrlib.reducers import get_reducer
    >>> s = Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", target_bids=("4",))
    >>> "2 of 2 lines" in side_by_side(s, get_reducer("full").reduce(s))
    True
    """
    tree = step.axtree
    targets = step.target_lines
    kept = set(reduction.kept)
    hit = sum(t in kept for t in targets)
    target_note = f"targets kept: {hit}/{len(targets)}" if targets else "no target line"
    failure = (
        f" - <b>failure: {html.escape(str(reduction.failure))}</b>" if reduction.failure else ""
    )
    left_head = (
        f"original: {len(tree)} lines, {reduction.tokens_before:,} tokens; "
        f"highlighted: {len(kept)} of {len(tree)} lines kept, {target_note}"
    )
    right_head = (
        f"reduced: {reduction.tokens_after:,} tokens ({reduction.reduction:.0%} reduction){failure}"
    )
    reduced = '<div class="lr-tree">' + html.escape(reduction.text) + "</div>"
    head = f"<h4 style='margin:4px 0'>{html.escape(title)}</h4>" if title else ""
    return (
        STYLE
        + head
        + '<div class="lr-pair">'
        + f'<div class="lr-col"><div class="lr-head">{left_head}</div>'
        + tree_html(tree, kept, reduction.stubs, targets, max_lines)
        + "</div>"
        + f'<div class="lr-col"><div class="lr-head">{right_head}</div>{reduced}</div>'
        + "</div>"
    )


def explorer(
    steps: Sequence[Step],
    reduce: Callable[[Step, str, str, str], Any],
    reducers: Sequence[str],
    prompts: Sequence[str],
    strategies: Sequence[str],
    describe: Callable[[str], str] | None = None,
    labels: Mapping[str, str] | None = None,
):
    """An ipywidgets explorer: dropdowns for step, reducer, prompt variant and pruning
    strategy; the view below shows :func:`side_by_side` for the choice.

    ``reduce(step, reducer, prompt, strategy)`` returns a Reduction (the notebook decides
    how; for LineRetriever it replays cached answers). ``describe(reducer)`` gives the title
    (e.g. the retriever model). Returns the widget (display it).
    """
    import ipywidgets as w

    labels = labels or {}
    options = [(labels.get(s.step_id, s.step_id), i) for i, s in enumerate(steps)]
    pick_step = w.Dropdown(options=options, description="step", layout={"width": "60%"})
    pick_reducer = w.Dropdown(options=list(reducers), description="reducer")
    pick_prompt = w.Dropdown(options=list(prompts), description="prompt")
    pick_strategy = w.Dropdown(options=list(strategies), description="pruning")
    view = w.HTML()

    def refresh(*_: Any) -> None:
        step = steps[pick_step.value]
        try:
            red = reduce(step, pick_reducer.value, pick_prompt.value, pick_strategy.value)
        except Exception as exc:  # show the error in the view; the explorer stays usable
            view.value = f"<pre>{html.escape(f'{type(exc).__name__}: {exc}')}</pre>"
            return
        title = describe(pick_reducer.value) if describe else pick_reducer.value
        goal = html.escape(step.goal[:300])
        view.value = f"<div class='lr-head'><b>goal:</b> {goal}</div>" + side_by_side(
            step, red, title
        )

    for widget in (pick_step, pick_reducer, pick_prompt, pick_strategy):
        widget.observe(refresh, names="value")
    refresh()
    return w.VBox([w.HBox([pick_step, pick_reducer]), w.HBox([pick_prompt, pick_strategy]), view])


class Switch:
    """``(step, reducer, prompt, strategy) -> Reduction`` for :func:`explorer`: builds each
    reducer once; ``lineretriever`` through the given factory (prompt and strategy apply to
    it only), the others from the registry. Offline, a LineRetriever step without a cached
    answer comes back as a labelled full-tree fallback (see :func:`lrlib.replay.safe_reduce`).

    >>> s = Step(goal="g", tree="a\\nb\\nc", target_bids=())
    >>> Switch(lineretriever=None)(s, "full", "paper", "remove").tokens_after > 0
    True
    """

    def __init__(self, lineretriever: Callable[..., Any] | None) -> None:
        self._factory = lineretriever
        self._built: dict[tuple, Any] = {}

    def __call__(self, step: Step, reducer: str, prompt: str, strategy: str) -> Any:
        from .reducers import get_reducer
        from .replay import safe_reduce

        key = (reducer, prompt, strategy) if reducer == "lineretriever" else (reducer,)
        if key not in self._built:
            if reducer == "lineretriever":
                if self._factory is None:
                    raise ValueError("no LineRetriever factory given")
                self._built[key] = self._factory(prompt=prompt, strategy=strategy)
            else:
                self._built[key] = get_reducer(reducer)
        return safe_reduce(self._built[key], step)
