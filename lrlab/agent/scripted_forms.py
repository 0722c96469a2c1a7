"""The scripted policy's rules for forms and widgets: dates and times, lists, sections,
ordinal fields, pop-ups, autocompletion, spinners, menus, a paged contact book (registered into
:data:`lrlab.agent.scripted.RULES` on import; module doc of :mod:`lrlab.agent.scripted`).

Every rule finds what the goal names by its label or its position among the page's fields
of one kind, reads the fields' state (checked, expanded, value) rather than counting past
actions where the page shows it, and raises :class:`~lrlab.agent.scripted.Missing` when the
observation lacks it.

>>> from lrlab.agent.scripted import ScriptedPolicy
>>> tree = "RootWebArea 'T'\\n\\t[14] InputTime ''\\n\\t[15] button 'Submit'"
>>> ScriptedPolicy().act("Enter 1:05 PM as the time and press submit.", (), tree).action
"fill('14', '13:05')"
"""

from __future__ import annotations

import re

from lrlab.agent.scripted import (
    Missing,
    Node,
    click_on,
    fill_count,
    find_all,
    find_one,
    rule,
    submit_on,
)

Step = tuple[str, list[int]]


def ordinal(word: str) -> int:
    """The number of an ordinal such as ``3rd``.

    >>> ordinal("22nd")
    22
    """
    return int(re.match(r"\d+", word).group(0))  # type: ignore[union-attr]


def fill_in(x: Node, text: str) -> Step:
    return f"fill({x.bid!r}, {text!r})", [x.n]


def nth_of(ns: list[Node], role: str, k: int, kind: str) -> Node:
    found = find_all(ns, role)
    if len(found) < k:
        raise Missing(f"fewer than {k} {kind}")
    return found[k - 1]


def under(ns: list[Node], parent: Node) -> list[Node]:
    """The lines nested under ``parent`` (its subtree, in order)."""
    i = ns.index(parent)
    out = []
    for x in ns[i + 1 :]:
        if x.depth <= parent.depth:
            break
        out.append(x)
    return out


def field_after(ns: list[Node], label: str) -> Node | None:
    """The first field following the text line ``label`` (a label and its field)."""
    for i, x in enumerate(ns):
        if x.role in ("StaticText", "LabelText") and x.name.strip() == label:
            return next((y for y in ns[i + 1 :] if y.bid and y.role == "textbox"), None)
    return None


@rule(r"^Enter (\d\d)/(\d\d)/(\d{4}) as the date and hit submit\.?$")
def enter_date(m, ns, history):
    if fill_count(history):
        return submit_on(ns)
    month, day, year = m.groups()
    return fill_in(find_one(ns, "Date"), f"{year}-{month}-{day}")


@rule(r"^Enter (\d{1,2}):(\d\d) (AM|PM) as the time and press submit\.?$")
def enter_time(m, ns, history):
    if fill_count(history):
        return submit_on(ns)
    hour = int(m.group(1)) % 12 + (12 if m.group(3) == "PM" else 0)
    return fill_in(find_one(ns, "InputTime"), f"{hour:02d}:{m.group(2)}")


@rule(r"^Select (.*) from the scroll list and click Submit\.?$", first=True)
def scroll_list(m, ns, history):
    if any(a.startswith("select_option(") for a in history):
        return submit_on(ns)
    box = find_one(ns, "listbox")
    names = [w.strip() for w in m.group(1).split(",") if w.strip()]
    options = {x.name: x for x in ns if x.role == "option"}
    if not set(names) <= set(options):
        raise Missing(f"no option for {sorted(set(names) - set(options))}")
    return f"select_option({box.bid!r}, {names!r})", [box.n] + [options[w].n for w in names]


@rule(r"^Expand the section below and click submit\.?$")
def expand_section(m, ns, history):
    section = find_one(ns, "tab")
    if section.prop("expanded") != "True":
        return click_on(section)
    action, lines = submit_on(ns)
    return action, lines + [section.n]


@rule(
    r'^Check the (\d+\w\w) radio button and enter the number "(.*)" into the (\d+\w\w) textbox\.?$'
)
def radio_and_number(m, ns, history):
    radio = nth_of(ns, "radio", ordinal(m.group(1)), "radio buttons")
    if radio.prop("checked") != "true":
        return click_on(radio)
    box = nth_of(ns, "textbox", ordinal(m.group(3)), "text boxes")
    if box.prop("value") != m.group(2):
        action, lines = fill_in(box, m.group(2))
        return action, lines + [radio.n]
    action, lines = submit_on(ns)
    return action, lines + [radio.n, box.n]


@rule(r'^Choose (.*) from the dropdown, then click the button labeled "(.*)"\.?$')
def dropdown_then_button(m, ns, history):
    box = find_one(ns, "combobox")
    option = next((x for x in ns if x.role == "option" and x.name == m.group(1)), None)
    if option is None:
        raise Missing(f"no option {m.group(1)!r}")
    if option.prop("selected") != "True":
        return f"select_option({box.bid!r}, {m.group(1)!r})", [box.n, option.n]
    action, lines = click_on(find_one(ns, "button", m.group(2)))
    return action, lines + [option.n]


@rule(
    r'^Enter the username "(.*)" and the password "(.*)" into the text fields and press login\.?$',
    first=True,
)
def login_with_popup(m, ns, history):
    """Log in; a pop-up asking to leave is dismissed (Cancel) and the fields refilled."""
    note = next((x for x in ns if x.name.startswith("Exit to home page")), None)
    if note is not None:
        action, lines = click_on(find_one(ns, "button", "Cancel"))
        return action, lines + [note.n]
    read = []
    for label, wanted in (("Username", m.group(1)), ("Password", m.group(2))):
        field = field_after(ns, label)
        if field is None:
            raise Missing(f"no {label} field")
        text = next(x for x in ns if x.name.strip() == label)
        read += [text.n, field.n]
        if field.prop("value") not in (wanted, "•" * len(wanted)):
            return fill_in(field, wanted)[0], [text.n, field.n]
    found = [x for x in find_all(ns, "button") if x.name in ("Login", "OK")]
    if not found:
        raise Missing("no login button")
    return click_on(found[0])[0], [found[0].n] + read


@rule(r'^Enter an item that starts with "([^"]*)"(?: and ends with "([^"]*)")?\.?$')
def autocomplete(m, ns, history):
    box = find_one(ns, "textbox")
    start, end = m.group(1), m.group(2) or ""
    value = box.prop("value") or ""
    if value.startswith(start) and value.endswith(end) and value != start:
        action, lines = submit_on(ns)
        return action, lines + [box.n]
    if not fill_count(history):
        return fill_in(box, start)
    if not any(x.role == "list" for x in ns) and history[-1:] != ("noop()",):
        return "noop()", [box.n]  # the suggestions come after a delay: wait for them once
    for x in ns:
        if x.bid and x.role in ("menuitem", "option", "listitem"):
            texts = [x] if x.name else [y for y in under(ns, x) if y.role == "StaticText"]
            label = "".join(y.name for y in texts)
            if label.startswith(start) and label.endswith(end):
                return click_on(x)[0], [box.n, x.n] + [y.n for y in texts]
    raise Missing(f"no suggestion starting {start!r} and ending {end!r}")


@rule(r"^Select (-?\d+) with the spinner and hit Submit\.?$")
def spinner(m, ns, history):
    box = find_one(ns, "spinbutton")
    if box.prop("valuetext") != m.group(1):
        return fill_in(box, m.group(1))
    action, lines = submit_on(ns)
    return action, lines + [box.n]


@rule(r"^Find (.*) in the contact book and click on their (phone number|email|address)\.?$")
def contact_book(m, ns, history):
    """The contact's page: the link after its "Phone:" (Email:, Address:) label; else the
    next page ``>``."""
    field = {"phone number": "Phone:", "email": "Email:", "address": "Address:"}[m.group(2)]
    for i, x in enumerate(ns):
        if x.role == "heading" and x.name == m.group(1):
            for j, y in enumerate(ns[i + 1 :], i + 1):
                if y.role == "heading":
                    break
                if y.name.strip() == field:
                    link = next((z for z in ns[j + 1 :] if z.role == "link" and z.bid), None)
                    if link is None:
                        raise Missing(f"no link after {field!r}")
                    return click_on(link)[0], [x.n, y.n, link.n]
            raise Missing(f"no {field!r} for {m.group(1)!r}")
    heading = next((x for x in ns if x.role == "heading"), None)
    nxt = [x for x in find_all(ns, "link", ">")]
    if heading is None or not nxt:
        raise Missing(f"no contact {m.group(1)!r} and no next page")
    return click_on(nxt[0])[0], [heading.n, nxt[0].n]


@rule(r"^Select ([^>]+(?:>[^>]+)*)$")
def menu_path(m, ns, history):
    """A menu path ``A>B>C``: the deepest item of the path the page shows is hovered (a
    parent, to open its submenu) or clicked (the last item: the choice)."""
    parts = m.group(1).split(">")
    items = {x.name: x for x in find_all(ns, "menuitem")}
    if not items:
        raise Missing("no menu")
    for k in range(len(parts) - 1, -1, -1):
        if parts[k] in items:
            x, read = items[parts[k]], [items[p].n for p in parts[: k + 1] if p in items]
            return (click_on(x)[0] if k == len(parts) - 1 else f"hover({x.bid!r})"), read
    raise Missing(f"no menu item {parts[0]!r}")
