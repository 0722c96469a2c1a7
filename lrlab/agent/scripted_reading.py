"""The scripted policy's rules that compute an answer from page text: a table's value, a
sum, an equation, the n-th word, a text area's content, the cheapest ticket, a number's
feedback (registered into :data:`lrlab.agent.scripted.RULES` on import).

The lines a rule reads to compute its answer are reported with the action, so a reducer
that drops the problem's text makes the policy stop rather than guess.

>>> from lrlab.agent.scripted import ScriptedPolicy
>>> tree = "RootWebArea 'T'\\n\\tStaticText '7 - 9 ='\\n\\t[15] textbox ''\\n\\t[16] button 'Submit'"
>>> goal = "Solve the math problem and type your answer into the textbox. Press submit when done."
>>> d = ScriptedPolicy().act(goal, (), tree)
>>> d.action, d.lines
("fill('15', '-2')", [2, 3])
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
from lrlab.agent.scripted_forms import Step, field_after, fill_in, ordinal, under


def _texts(ns: list[Node]) -> list[Node]:
    return [x for x in ns if x.role == "StaticText" and x.name.strip()]


def _answer(ns: list[Node], history, box: Node, text: str, read: list[int]) -> Step:
    """Fill ``box`` with ``text`` once, then Submit; ``read`` are the lines the answer
    came from."""
    if not fill_count(history):
        action, lines = fill_in(box, text)
    else:
        action, lines = submit_on(ns)
    return action, lines + read


def _cell_value(ns: list[Node], key: str) -> tuple[str, list[int]]:
    cells = [x for x in ns if x.role in ("cell", "gridcell")]
    for a, b in zip(cells, cells[1:], strict=False):
        if a.name.strip() == key:
            return b.name, [a.n, b.n]
    raise Missing(f"no table row {key!r}")


@rule(r"^Enter the value of (.*) into the text field and press Submit\.?$")
def read_table(m, ns, history):
    value, read = _cell_value(ns, m.group(1))
    return _answer(ns, history, find_one(ns, "textbox"), value, read)


@rule(r"^Enter the value that corresponds with each label into the form and submit when done\.?$")
def read_table_form(m, ns, history):
    labels = [x for x in _texts(ns) if x.name.endswith(":")]
    if not labels:
        raise Missing("no labelled fields")
    read = []
    for label in labels:
        key = label.name[:-1].strip()
        field = field_after(ns, label.name.strip())
        if field is None:
            raise Missing(f"no field for {key!r}")
        value, lines = _cell_value(ns, key)
        read += [label.n, field.n, *lines]
        if field.prop("value") != value:
            return fill_in(field, value)[0], [label.n, field.n, *lines]
    action, lines = submit_on(ns)
    return action, lines + read


_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "x": lambda a, b: a * b,
        "*": lambda a, b: a * b, "/": lambda a, b: a / b, "÷": lambda a, b: a / b}  # fmt: skip


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


@rule(r"^Solve the math problem and type your answer into the textbox\. Press submit when done\.?$")
def arithmetic(m, ns, history):
    for x in _texts(ns):
        found = re.fullmatch(r"\s*(-?\d+)\s*([-+x*/÷])\s*(-?\d+)\s*=\s*", x.name)
        if found:
            a, op, b = found.groups()
            value = _OPS[op](int(a), int(b))
            return _answer(ns, history, find_one(ns, "textbox"), _number(value), [x.n])
    raise Missing("no math problem")


def _solve(op: str, k: int, rhs: int, x_first: bool) -> float:
    """x in ``x op k = rhs`` (``x_first``) or ``k op x = rhs``.

    >>> _solve("-", 10, 4, x_first=False), _solve("x", 3, 12, x_first=True)
    (6, 4.0)
    """
    if op == "+":
        return rhs - k
    if op == "-":
        return rhs + k if x_first else k - rhs
    if op in ("x", "*"):
        return rhs / k
    return rhs * k if x_first else k / rhs


@rule(r"^Solve for x and type your answer into the textbox\. Press Submit when done\.?$")
def algebra(m, ns, history):
    for x in _texts(ns):
        found = re.fullmatch(r"\s*(?:x\s*([-+x*/])\s*(-?\d+)|(-?\d+)\s*([-+x*/])\s*x)\s*=\s*(-?\d+)\s*", x.name)  # fmt: skip
        if not found:
            continue
        op1, b, a, op2, rhs = found.groups()
        value = _solve(op1 or op2, int(b or a), int(rhs), x_first=bool(op1))
        return _answer(ns, history, find_one(ns, "textbox"), _number(value), [x.n])
    raise Missing("no equation")


@rule(
    r'^Find the (\d+\w\w) word in the paragraph, type that into the textbox and press "Submit"\.?$'
)
def nth_word(m, ns, history):
    para = find_one(ns, "paragraph")
    texts = [x for x in under(ns, para) if x.role == "StaticText"]
    words = " ".join(x.name for x in texts).split()
    k = ordinal(m.group(1))
    if not texts or len(words) < k:
        raise Missing(f"fewer than {k} words in the paragraph")
    word = re.sub(r"[^A-Za-z]", "", words[k - 1])
    return _answer(ns, history, find_one(ns, "textbox"), word, [x.n for x in texts])


def _areas(ns: list[Node]) -> list[Node]:
    return [x for x in find_all(ns, "textbox") if x.prop("value")]


@rule(r"^Copy the text in the textarea below, paste it into the textbox and press Submit\.?$")
def copy_paste(m, ns, history):
    areas = _areas(ns)
    if not areas:
        raise Missing("no text area with text")
    box = [x for x in find_all(ns, "textbox") if x not in areas] or [areas[-1]]
    if fill_count(history):
        box = [areas[-1]] if len(areas) > 1 else box
    return _answer(ns, history, box[-1], areas[0].prop("value") or "", [areas[0].n])


@rule(
    r"^Copy the text from the (\d+\w\w) text area below and paste it into the text input, "
    r"then press Submit\.?$"
)
def copy_paste_nth(m, ns, history):
    k = ordinal(m.group(1))
    areas = find_all(ns, "textbox")[:-1]  # the text input is the last text box
    if len(areas) < k or not find_all(ns, "textbox"):
        raise Missing(f"fewer than {k} text areas")
    source, box = areas[k - 1], find_all(ns, "textbox")[-1]
    return _answer(ns, history, box, source.prop("value") or "", [source.n])


@rule(r"^Type the text below into the text field and press Submit\.?$")
def transcribe(m, ns, history):
    box = find_one(ns, "textbox")
    texts = [x for x in ns[: ns.index(box)] if x.role == "StaticText" and x.name.strip()]
    if not texts:
        raise Missing("no text to type")
    return _answer(ns, history, box, "".join(x.name.strip() for x in texts), [x.n for x in texts])


@rule(r"^Find the last word in the text area, enter it into the text field and hit Submit\.?$")
def last_word(m, ns, history):
    areas = _areas(ns)
    if not areas:
        raise Missing("no text area with text")
    words = (areas[0].prop("value") or "").split()
    if not words:
        raise Missing("empty text area")
    word = words[-1].replace(".", "")
    box = [x for x in find_all(ns, "textbox") if x is not areas[0]]
    if not box:
        raise Missing("no text field")
    return _answer(ns, history, box[-1], word, [areas[0].n])


def _minutes(text: str) -> int | None:
    found = re.fullmatch(r"\s*(\d+)h (\d+)m\s*", text)
    return int(found.group(1)) * 60 + int(found.group(2)) if found else None


@rule(r"^Buy the ticket with the (cheapest cost|most expensive cost|shortest duration|longest duration)\.?$")  # fmt: skip
def buy_ticket(m, ns, history):
    tickets = []  # (duration line, minutes, button)
    duration = None
    for x in ns:
        if x.role == "StaticText" and _minutes(x.name) is not None:
            duration = x
        elif x.role == "button" and x.bid and x.name.startswith("Book for $"):
            if duration is None:
                raise Missing(f"no duration before {x.name!r}")
            tickets.append((duration, _minutes(duration.name), x))
            duration = None
    if not tickets:
        raise Missing("no tickets")
    what = m.group(1)
    if what.endswith("cost"):
        key = lambda t: float(t[2].name.removeprefix("Book for $").replace(",", ""))  # noqa: E731
    else:
        key = lambda t: t[1]  # noqa: E731
    pick = (min if what in ("cheapest cost", "shortest duration") else max)(tickets, key=key)
    read = [t[2].n for t in tickets] + ([t[0].n for t in tickets] if "duration" in what else [])
    return click_on(pick[2])[0], read


@rule(r"^Generate (?:a|an) (odd number|even number|number less than (\d+)|number greater than (\d+)), then press submit\.?$")  # fmt: skip
def generate_number(m, ns, history):
    button = find_one(ns, "button", "Generate")
    i = ns.index(button)
    shown = next((x for x in reversed(ns[:i]) if x.role == "StaticText"), None)
    if shown is None:
        raise Missing("no number display")
    value = int(shown.name) if re.fullmatch(r"-?\d+", shown.name.strip()) else None
    want, less, more = m.groups()
    ok = value is not None and (
        (want == "odd number" and value % 2 == 1)
        or (want == "even number" and value % 2 == 0)
        or (less is not None and value < int(less))
        or (more is not None and value > int(more))
    )
    if not ok:
        return click_on(button)[0], [shown.n, button.n]
    action, lines = submit_on(ns)
    return action, lines + [shown.n]


@rule(r"^Guess the number between (\d+)-(\d+) and press Submit\..*$")
def guess_number(m, ns, history):
    lo, hi = int(m.group(1)), int(m.group(2))
    box = find_one(ns, "spinbutton")
    found = (re.match(r"fill\('[^']*', '(-?\d+)'\)", a) for a in history)
    guesses = [int(g.group(1)) for g in found if g]
    for a, b in zip(guesses, guesses[1:], strict=False):  # a guess above the last one: "higher"
        lo, hi = (a + 1, hi) if b > a else (lo, a - 1)
    if guesses and len(history) % 2 == 0:  # the last guess submitted: read its feedback
        note = next((x for x in _texts(ns) if x.name.startswith("The number is")), None)
        if note is None:
            raise Missing("no feedback")
        last = guesses[-1]
        lo, hi = (last + 1, hi) if "higher" in note.name else (lo, last - 1)
        return fill_in(box, str((lo + hi) // 2))[0], [box.n, note.n]
    if not guesses:
        return fill_in(box, str((lo + hi) // 2))
    action, lines = submit_on(ns)
    return action, lines + [box.n]
