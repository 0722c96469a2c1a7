"""How the retriever sees a tree: numbered renderings that keep the global line numbers.

A view maps each line of an :class:`~lrlib.axtree.AxTree` to the text shown to the
retriever (possibly shortened, or ``None`` to hide it) while the number in front of it stays
the line's number in the original tree, so a selection always maps back to original lines.

>>> from lrlib.axtree import parse
>>> render(parse("RootWebArea 'x'\\n\\t[3] link 'a'"), "full")
"1: RootWebArea 'x'\\n2: \\t[3] link 'a'"
"""

from __future__ import annotations

from collections.abc import Callable

from .axtree import NUMBER_FORMAT, AxTree

# a view returns one entry per line: the text to show, or None to hide the line
View = Callable[[AxTree], list[str | None]]
_VIEWS: dict[str, View] = {}


def register_view(name: str, view: View, *, overwrite: bool = False) -> None:
    """Add a named view (``overwrite=True`` to replace one)."""
    if name in _VIEWS and not overwrite:
        raise ValueError(f"view {name!r} exists; pass overwrite=True to replace it")
    _VIEWS[name] = view


def get_view(name: str) -> View:
    """The view called ``name``; the error lists the valid names."""
    try:
        return _VIEWS[name]
    except KeyError:
        raise KeyError(f"unknown view {name!r}; valid views: {', '.join(sorted(_VIEWS))}") from None


def list_views() -> list[str]:
    """Names of the registered views."""
    return sorted(_VIEWS)


def render(tree: AxTree, view: str = "full", fmt: str = NUMBER_FORMAT) -> str:
    """The numbered text of ``tree`` under ``view``; hidden lines keep their numbers unused."""
    texts = get_view(view)(tree)
    if len(texts) != len(tree):
        raise ValueError(f"view {view!r} returned {len(texts)} entries for {len(tree)} lines")
    if all(t is not None for t in texts):
        return tree.numbered(fmt, texts)  # type: ignore[arg-type]
    return "\n".join(fmt.format(n=n) + t for n, t in enumerate(texts, 1) if t is not None)


def _full(tree: AxTree) -> list[str | None]:
    """The paper's view: every line verbatim."""
    return tree.texts  # type: ignore[return-value]


register_view("full", _full)
