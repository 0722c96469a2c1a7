"""The compact retriever view: less noise, the same line numbers, selections map back."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lrlib.core.axtree import parse
from lrlib.core.prompts import get_prompt
from lrlib.core.pruning import (
    LAYOUT_ROLES,
    LEAF_NAME_CHARS,
    attach_hidden,
    compact_lines,
    list_views,
    prune,
    render,
)
from lrlib.core.ranges import Selection, parse_answer
from lrlib.core.tokens import count_tokens

INTERACTIVE = {
    "button",
    "link",
    "textbox",
    "combobox",
    "checkbox",
    "radio",
    "option",
    "menuitem",
    "tab",
    "searchbox",
    "spinbutton",
    "slider",
    "switch",
}
NUMBERED = re.compile(r"^(\d+): ", re.MULTILINE)


def test_compact_is_registered():
    assert {"full", "compact"} <= set(list_views())


def test_compact_keeps_numbers_and_order_on_real_trees(real_trees):
    for t in real_trees.values():
        tree = parse(t["tree"])
        numbers = [int(n) for n in NUMBERED.findall(render(tree, "compact"))]
        assert numbers == sorted(set(numbers)) and set(numbers) <= set(range(1, len(tree) + 1))
        shown = compact_lines(tree)
        assert len(shown) == len(tree)
        assert numbers == [n for n, s in enumerate(shown, 1) if s is not None]


def test_compact_drops_noise_but_keeps_what_selects(real_trees):
    for t in real_trees.values():
        tree = parse(t["tree"])
        shown = compact_lines(tree)
        text = "\n".join(s for s in shown if s is not None)
        assert "url=" not in text and "\t" not in text and "relevant=" not in text
        for i, s in enumerate(shown):
            role, bid = tree.roles[i], tree.bids[i]
            if role in INTERACTIVE:  # every control stays visible, with its bid
                assert s is not None and f"[{bid}] {role}" in s, tree.texts[i]
            if s is not None and role is not None:
                assert s.startswith(" " * tree.depths[i] + (f"[{bid}]" if bid else role))
        assert count_tokens(render(tree, "compact")) < 0.8 * count_tokens(render(tree, "full"))


def test_compact_details():
    tree = parse(
        "RootWebArea 'Shop', focused, url='https://x.test/a?b=c'\n"
        "\t[2] row ''\n"
        "\t\t[3] link 'Go', url='/go', describedby='tip'\n"
        "\t\t\tStaticText 'Go'\n"
        "\t\t[4] textbox 'Name' value='Ann', required\n"
        '\t\tStaticText "It\'s \\\\u00e9 here"\n'
        "\t\tStaticText '\\uf132'\n"
        "\t\t[5] cell '" + "word " * 40 + "'\n"
        "\t\t\tStaticText '" + "word " * 40 + "'\n"
        "\t\t[6] checkbox 'Agree', checked='false'\n"
        "some line the parser cannot read"
    )
    shown = compact_lines(tree)
    assert shown[0] == "RootWebArea 'Shop', focused"
    assert shown[1] is None  # a nameless row: layout only
    assert shown[2] == "  [3] link 'Go'"
    assert shown[3] is None  # repeats the link's name
    assert shown[4] == "  [4] textbox 'Name', value='Ann', required"
    assert shown[5] == '  StaticText "It\'s \\\\u00e9 here"'
    assert shown[6] is None  # an icon glyph
    assert shown[7].endswith("…'") and len(shown[7]) < 100  # the children carry the text
    assert shown[8] is not None and "word" in shown[8]  # so the child stays
    assert shown[9] == "  [6] checkbox 'Agree', checked='false'"  # states stay
    assert shown[10] == "some line the parser cannot read"


def test_layout_roles_with_a_name_or_state_stay_visible():
    tree = parse("[1] list 'Results'\n\t[2] listitem\n\t\t[3] group, expanded=True")
    assert compact_lines(tree) == ["[1] list 'Results'", None, "  [3] group, expanded=True"]
    assert {"row", "cell", "listitem"} <= LAYOUT_ROLES


def test_selection_made_on_the_compact_view_maps_to_original_lines(real_trees):
    t = real_trees["workarena_ipad"]
    tree = parse(t["tree"])
    msgs = get_prompt("paper").build(t["goal"], tree, view="compact")
    numbers = [int(n) for n in NUMBERED.findall(msgs[1]["content"])]
    pick = numbers[len(numbers) // 2 : len(numbers) // 2 + 5]  # what a retriever might answer
    sel = parse_answer(f"<answer>[({pick[0]}, {pick[-1]})]</answer>", n_lines=len(tree))
    pruned = prune(tree, attach_hidden(sel, compact_lines(tree)), "remove", markers=False)
    assert set(range(pick[0], pick[-1] + 1)) <= set(pruned.kept)
    assert pruned.lines == [tree.texts[n - 1] for n in pruned.kept]  # original, verbatim


@given(st.lists(st.booleans(), min_size=1, max_size=60), st.data())
def test_attach_hidden_only_adds_hidden_neighbours(hidden, data):
    n = len(hidden)
    shown = [None if h else f"line {i}" for i, h in enumerate(hidden, 1)]
    picked = data.draw(st.lists(st.integers(1, n), max_size=n))
    sel = Selection.from_lines(picked, n)
    out = attach_hidden(sel, shown)
    assert set(sel) <= set(out)
    for line in set(out) - set(sel):
        assert shown[line - 1] is None
        # it touches the selection through hidden lines only
        lo, hi = line, line
        while lo - 1 >= 1 and shown[lo - 2] is None and lo - 1 not in sel:
            lo -= 1
        while hi + 1 <= n and shown[hi] is None and hi + 1 not in sel:
            hi += 1
        assert (lo - 1 in sel) or (hi + 1 in sel)


BROWSERGYM_LINE = st.builds(
    lambda ind, bid, role, name, attrs: (
        "\t" * ind
        + (f"[{bid}] " if bid else "")
        + role
        + (f" {name!r}" if name is not None else "")
        + "".join(attrs)
    ),
    st.integers(0, 6),
    st.one_of(st.none(), st.from_regex(r"a?[0-9]{1,4}", fullmatch=True)),
    st.sampled_from(["button", "StaticText", "row", "link", "generic", "cell"]),
    st.one_of(st.none(), st.text(max_size=120)),
    st.lists(
        st.sampled_from(
            [", url='http://x'", ", focused", ", expanded=False", " value='v'", ", live='polite'"]
        ),
        max_size=3,
    ),
)
ANY_LINE = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)


@given(st.lists(st.one_of(BROWSERGYM_LINE, ANY_LINE), max_size=30))
def test_compact_never_fails_and_keeps_one_entry_per_line(lines):
    tree = parse("\n".join(lines))
    shown = compact_lines(tree)
    assert len(shown) == len(tree)
    assert all(s is None or "\n" not in s for s in shown)
    render(tree, "compact")


@given(st.lists(BROWSERGYM_LINE, min_size=1, max_size=30))
def test_compact_reads_every_browsergym_line(lines):
    tree = parse("\n".join(lines))
    for i, s in enumerate(compact_lines(tree)):
        if s is not None:
            head = f"[{tree.bids[i]}] {tree.roles[i]}" if tree.bids[i] else tree.roles[i]
            assert s == " " * tree.depths[i] + head or s.startswith(" " * tree.depths[i] + head)
            # the attributes (after the name, which may itself read "url=") are filtered
            attrs = re.sub(
                r"^ ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", "", s.lstrip()[len(head) :]
            )
            assert "url=" not in attrs and "live=" not in attrs and "\t" not in s
            if "expanded=False" in tree.texts[i]:
                assert "expanded=False" in s


@pytest.mark.parametrize("view", ["full", "compact"])
def test_both_views_render_in_prompts(real_trees, view):
    t = real_trees["webarena_magento"]
    msgs = get_prompt("paper").build(t["goal"], t["tree"], view=view)
    assert "<observation>\n1: RootWebArea" in msgs[1]["content"]


def test_the_retriever_sees_a_payload_hidden_past_the_cut():
    """A name cut at 200 characters would hide its tail from the retriever while the agent
    reads the whole line: a tail with an address, markup or an instruction is shown whole."""
    from lrlab.injection.injection_sets import realistic_set

    item = next(it for it in realistic_set() if it.placements[0].attack == "modal-long")
    p = item.placements[0]
    shown = compact_lines(item.step.axtree)
    button = next(s for s in shown[p.first - 1 : p.last] if s and "focused" in s)
    assert "localhost:4321" in button and "</think>" in button and "…" not in button
    assert len(button) > LEAF_NAME_CHARS + 50
    # a long name without anything of the kind is still cut
    benign = parse("RootWebArea 'x'\n\t[3] button '" + "cookies and privacy " * 20 + "'")
    assert compact_lines(benign)[1].endswith("…'")


def test_real_pages_render_as_before_the_payload_check():
    """No recorded page has an instruction-like tail past a cut: the check changes no
    real retriever prompt (and so no cached answer)."""
    from lrlib.core.pruning import INSTRUCTION_LIKE, PARENT_NAME_CHARS
    from lrlib.data import dataset as data

    for step in data.load_steps():
        for text in step.axtree.texts:
            for m in re.finditer(r"'((?:[^'\\]|\\.)*)'", text):
                body = m.group(1)
                if len(body) > PARENT_NAME_CHARS:
                    assert not INSTRUCTION_LIKE.search(body, PARENT_NAME_CHARS - 20), body[:80]
