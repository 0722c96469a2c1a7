"""The BrowserGym action in an agent's raw text: extract, canonicalise, list its bids.

Agents answer with prose that ends with the action in a fenced code block; AgentLab's
agents store the bare action instead. :func:`extract_code` takes the last closed fenced
block (dropping a language tag such as ``python``), or the whole text when it has no
fence. :func:`parse_action` reads that code with :mod:`ast` (never ``eval``): it must be
one or more plain calls ``name(arg, ..., key=arg)`` whose arguments are literals. The
canonical form writes every argument with ``repr``, the way BrowserGym itself rebuilds
calls, so quoting is uniform: ``click("207")`` becomes ``click('207')``.

The bids an action names come from BrowserGym's signatures (:data:`BID_PARAMS`): one for
``click``, ``fill``, ``select_option``, ``press``, ``hover``..., two for ``drag_and_drop``,
none for coordinate (``mouse_*``, ``keyboard_*``), navigation, tab, chat, ``scroll`` and
``noop`` actions.

>>> a = parse_action('I will search.\\n```python\\nfill("a12", "ipad")\\n```')
>>> a.canonical, a.names, a.bids
("fill('a12', 'ipad')", ('fill',), ('a12',))
>>> parse_action("```drag_and_drop('56', to_bid='498')```").bids
('56', '498')
>>> parse_action("Let me find the field first.") is None
True
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# BrowserGym action function -> names of its bid parameters, in signature order.
BID_PARAMS: dict[str, tuple[str, ...]] = {
    "click": ("bid",),
    "dblclick": ("bid",),
    "hover": ("bid",),
    "fill": ("bid",),
    "select_option": ("bid",),
    "press": ("bid",),
    "focus": ("bid",),
    "clear": ("bid",),
    "check": ("bid",),
    "uncheck": ("bid",),
    "upload_file": ("bid",),
    "get_element_html": ("bid",),
    "drag_and_drop": ("from_bid", "to_bid"),
}
# Every other BrowserGym action names no element.
NO_BID_ACTIONS: frozenset[str] = frozenset(
    {
        "noop", "scroll", "send_msg_to_user", "report_infeasible",
        "goto", "go_back", "go_forward", "new_tab", "tab_close", "tab_focus",
        "mouse_move", "mouse_up", "mouse_down", "mouse_click", "mouse_dblclick",
        "mouse_drag_and_drop", "mouse_upload_file",
        "keyboard_press", "keyboard_up", "keyboard_down", "keyboard_type",
        "keyboard_insert_text",
    }
)  # fmt: skip
KNOWN_ACTIONS: frozenset[str] = frozenset(BID_PARAMS) | NO_BID_ACTIONS

_FENCE = "```"
_LANG_TAG = re.compile(r"[A-Za-z0-9_+.-]*[ \t]*")
_MAX_CODE = 20_000  # characters; longer "actions" are not BrowserGym calls


@dataclass(frozen=True)
class Action:
    """A parsed action: canonical text, function names and named bids (in call order)."""

    canonical: str
    names: tuple[str, ...]
    bids: tuple[str, ...]

    @property
    def name(self) -> str:
        """The first (usually only) function called."""
        return self.names[0]

    @property
    def known(self) -> bool:
        """True when every call is a BrowserGym action function."""
        return all(n in KNOWN_ACTIONS for n in self.names)


def extract_code(raw: str | None) -> str | None:
    """The code of the last closed fenced block, else the whole text (stripped).

    >>> extract_code("think...\\n```\\nclick('a1')\\n```\\n")
    "click('a1')"
    >>> extract_code("```py\\nnoop()```")
    'noop()'
    >>> extract_code("click('5')")
    "click('5')"
    >>> extract_code("") is None
    True
    """
    if not raw or not raw.strip():
        return None
    parts = raw.split(_FENCE)
    if len(parts) < 3:
        return raw.strip()
    # blocks sit between fence pairs: parts[1], parts[3]...; an unclosed last fence is ignored
    block = parts[len(parts) - 2] if len(parts) % 2 == 1 else parts[len(parts) - 3]
    first, newline, rest = block.partition("\n")
    if newline and _LANG_TAG.fullmatch(first):
        block = rest
    code = block.strip()
    return code or None


def _call(node: ast.stmt) -> tuple[str, str, tuple[str, ...]]:
    """(name, canonical text, bids) of one statement ``name(literal, ..., k=literal)``."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        raise ValueError("not a call")
    call = node.value
    if not isinstance(call.func, ast.Name):
        raise ValueError("not a plain function call")
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        raise ValueError("starred arguments")
    name = call.func.id
    args = [ast.literal_eval(a) for a in call.args]  # ValueError/TypeError...: not a literal
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    text = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    bids = []
    for i, param in enumerate(BID_PARAMS.get(name, ())):
        value = args[i] if i < len(args) else kwargs.get(param)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            bids.append(str(value))
    return name, f"{name}({text})", tuple(bids)


def parse_code(code: str | None) -> Action | None:
    """Parse bare action code (no fences); None unless it is only literal-argument calls.

    >>> parse_code("scroll(0, -200.5)\\nclick( \\"12\\" , button='right')").canonical
    "scroll(0, -200.5)\\nclick('12', button='right')"
    >>> parse_code("import os") is None
    True
    """
    if not code or len(code) > _MAX_CODE:
        return None
    try:
        body = ast.parse(code, mode="exec").body
        calls = [_call(stmt) for stmt in body]
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    if not calls:
        return None
    return Action(
        canonical="\n".join(c[1] for c in calls),
        names=tuple(c[0] for c in calls),
        bids=tuple(b for c in calls for b in c[2]),
    )


def parse_action(raw: str | None) -> Action | None:
    """The action in an agent's raw text (see the module doc); None when there is none.

    >>> parse_action("Done.\\n```send_msg_to_user(\\"It's 42\\")```").canonical
    'send_msg_to_user("It\\'s 42")'
    """
    return parse_code(extract_code(raw))


def canonical_action(raw: str | None) -> str | None:
    """Just the canonical text of :func:`parse_action` (None when there is no action).

    >>> canonical_action('```click("a51")```')
    "click('a51')"
    """
    action = parse_action(raw)
    return action.canonical if action else None


def action_bids(raw: str | None) -> list[str]:
    """The bids the action in ``raw`` names, in call order (empty when none).

    >>> action_bids("```select_option('a271', '2')```"), action_bids("```scroll(0, 300)```")
    (['a271'], [])
    """
    action = parse_action(raw)
    return list(action.bids) if action else []
