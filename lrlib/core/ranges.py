"""Read a retriever's answer into a :class:`Selection` of 1-based line numbers.

Only the answer counts: in tag mode the last ``<answer>`` block outside ``<think>`` and
after the last ``</think>``; in structured mode the JSON object ``{"ranges": [[start, end],
...]}``. Page text that the model echoes while thinking (including fake ``<answer>`` and
``</think>`` tags planted in a page) is ignored; given the ``page``, an answer block copied
from it is ignored too, even when the output is cut off right after the copy.

Accepted inside an answer: ``(a, b)`` tuples, ``[a, b]`` lists, JSON, ``a-b``, ``a..b``,
``a to b``, single numbers, stray spaces and newlines. Ranges are clamped to ``[1, n]``,
reversed pairs are swapped, overlaps merged; nothing is ever materialised, so
``(1, 10**18)`` costs the same as ``(1, 2)``. A range entirely outside ``[1, n]`` is
dropped, never "clamped" into a line the model did not ask for. When nothing usable
remains, :class:`AnswerParseError` says why; the caller decides what to do then.

>>> parse_answer("<think>line 3</think><answer>[(1, 2), (10, 8)]</answer>", n_lines=9)
Selection([(1, 2), (8, 9)], n_lines=9)
>>> parse_answer('{"ranges": [[4, 4]]}', n_lines=9, mode="json").lines()
[4]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import islice
from typing import Literal

from lrlib.core.echo import TAG as _TAG
from lrlib.core.echo import PageEcho, normalise, page_echo
from lrlib.core.selection import HUGE, Selection

AnswerMode = Literal["tags", "json"]
Page = str | Sequence[str] | None  # what the model was shown: one text or several renderings

# possessive quantifiers (``*+``, ``++``) and the look-behind keep every pattern linear: no
# backtracking into a run of spaces or digits, no match starting inside a number
_NUM = r"(-?\d++)"
_PAIR = re.compile(r"[(\[]\s*+" + _NUM + r"\s*+[,;:]\s*+" + _NUM + r"\s*+[)\]]")
_SPAN = re.compile(r"(?<!\d)" + _NUM + r"\s*+(?:-|–|—|\.\.\.?|\bto\b|:)\s*+" + _NUM)
_SINGLE = re.compile(r"-?\d+")
# a number written as an expression or a non-integer: 10**18, 2^10, 1e9, 1_000, 2.5, 0x1f
_EXPR = re.compile(
    r"(?<![\d.])\d++(?:\s*+(?:\*\*?|\^|/|\+)\s*+\d++|[eE][+-]?\d++|(?:_\d++)++|\.\d++)"
    r"|\b0[xXbBoO][0-9a-fA-F]++"
)
_SHORT_BODY = 10_000  # answers up to this long have their pairs listed at once
MAX_TAGS = 2_000  # more think/answer tags than this, with a page to check: not an answer
_EXPR_CHARS = "*^/+_.eEbBoOxX"  # one of these is in every match of _EXPR
_ECHOED = "no <answer> block other than copies of the page's"
# the start of a think/answer tag cut off by the end of the output ("</ans", "<answer  ")
_PARTIAL_TAG = re.compile(
    r"<\s*+/?\s*+(?:t(?:h(?:i(?:nk?)?)?)?|a(?:n(?:s(?:w(?:er?)?)?)?)?)?\s*+$", re.IGNORECASE
)


class AnswerParseError(ValueError):
    """No line selection could be read from an answer. ``reason`` is a short code:
    ``empty``, ``no_answer``, ``no_ranges``, ``out_of_range``, ``bad_json``, ``bad_schema``,
    ``expression`` (a number written as ``10**18``, ``1e9``...)."""

    REASONS = ("empty", "no_answer", "no_ranges", "out_of_range", "bad_json", "bad_schema",
               "expression")  # fmt: skip

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _int(token: str) -> int:
    if len(token) <= 18:  # the common case, fast: at most 18 digits fit below HUGE
        return int(token)
    digits = token.lstrip("-")
    if len(digits) > 18:
        return -HUGE if token.startswith("-") else HUGE
    return int(token)


def answer_block(text: str, page: Page = None) -> tuple[str, bool]:
    """The body of the last ``<answer>`` block outside ``<think>``, and whether it was cut off.

    Only what follows the last ``</think>`` can be the answer: a ``</think>`` after an answer
    block means the model was still thinking, so the block (and the earlier ``</think>``)
    were page text it echoed. With ``page`` (the text the model was shown, or several
    renderings of it), tags copied from the page are not tags (:mod:`lrlib.core.echo`): they
    neither open nor close anything, and a block closed by a copied ``</answer>`` or whose
    body is a page's answer body (or, cut off, the start of one) is discarded.

    >>> answer_block("<think><answer>9</answer></think><answer> 1-3 </answer>")
    (' 1-3 ', False)
    >>> answer_block("<think>it says </think><answer>9</answer>, odd</think><answer>2</answer>")
    ('2', False)
    """
    echo = page_echo(page)
    planted = echo.answers if echo else set()
    in_think, echoed = False, False
    answer_start = -1  # start of the body of the currently open answer block
    last: tuple[str, bool] | None = None
    check = echo is not None and echo.has_tags
    for m in _TAG.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2).lower()
        if check and echo.copied(text, m):  # type: ignore[union-attr]
            if tag == "answer" and closing and answer_start >= 0 and not in_think:
                answer_start, echoed = -1, True  # a copy's end: the block was a copy
            echoed = True
            continue
        if tag == "think":
            if closing:  # whatever came before was thinking
                in_think, last, answer_start = False, None, -1
            elif answer_start < 0:
                in_think = True
        elif not in_think:
            if not closing:
                answer_start = m.end()
            elif answer_start >= 0:
                body = text[answer_start : m.start()]
                if planted and normalise(body) in planted:
                    echoed = True
                else:
                    last = (body, False)
                answer_start = -1
    if answer_start >= 0:  # output ended inside an answer block
        body = text[answer_start:]
        cuts = {normalise(body), normalise(_PARTIAL_TAG.sub("", body))}  # maybe cut in a tag
        if not any(p.startswith(c) for p in planted for c in cuts):
            return body, True
        echoed = True
    if last is None:
        reason = "an unclosed <think>" if in_think else "no <answer> block"
        if echoed:
            reason = _ECHOED
        raise AnswerParseError("no_answer", f"{reason} in the model output")
    return last


def ranges_in(body: str) -> list[tuple[int, int]]:
    """Every range written in ``body``, in any accepted notation (not yet normalised).

    >>> ranges_in("[(3, 5)], 7-9, 12 and [20,21]")
    [(3, 5), (20, 21), (7, 9), (12, 12)]
    """
    # each distinct range once, in order of appearance: memory grows with the distinct
    # ranges, not with the answer (a 10 MB answer of "1, 1, 1, ..." is one range)
    found: dict[tuple[int, int], None] = {}

    def take(m: re.Match) -> str:
        found[(_int(m.group(1)), _int(m.group(2)))] = None
        return " "  # matched text is consumed, so a pair's numbers are not read again

    for pattern in (_PAIR, _SPAN):
        if len(body) > _SHORT_BODY:
            body = pattern.sub(take, body)
        else:  # a short answer: the same in one pass, without a call per match
            parts = pattern.split(body)  # text, start, end, text, start, end, ..., text
            if len(parts) > 1:
                starts, ends = parts[1::3], parts[2::3]
                read = int if len(max(starts + ends, key=len)) <= 18 else _int  # as _int
                found.update(dict.fromkeys(zip(map(read, starts), map(read, ends), strict=True)))
                body = " ".join(parts[::3])
    for m in _SINGLE.finditer(body):
        value = _int(m.group())
        found[(value, value)] = None
    return list(found)


class _Float(str):
    """A JSON number with a fraction or an exponent (``1e9``, ``2.0``): not a line number."""


def _json_ranges(text: str, echo: PageEcho | None) -> list[tuple[int, int]]:
    """The ranges of the model's JSON answer in ``text``: the whole text when it is one
    object, else the last ``{"ranges": ...}`` object not copied from the page."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        obj = json.loads(stripped, parse_int=_int, parse_float=_Float)  # _int: no int() of
    except (ValueError, RecursionError):  # a 5,000-digit number
        obj = _last_json_object(stripped, echo)
    else:
        if echo is not None and echo.has_json and echo.copied_text(stripped):
            raise AnswerParseError("no_answer", f"{_ECHOED} (a copied JSON object)")
    if not isinstance(obj, dict) or not isinstance(obj.get("ranges"), list):
        raise AnswerParseError("bad_schema", 'expected an object {"ranges": [[start, end], ...]}')
    out = []
    for item in obj["ranges"]:
        if type(item) is list and len(item) == 2:  # fast path: [int, int] (bools excluded)
            a, b = item
            if type(a) is int and type(b) is int:
                out.append((_clip(a), _clip(b)))
                continue
        if isinstance(item, bool):
            continue
        values = item if isinstance(item, list) else [item]
        if any(isinstance(v, _Float) for v in values):
            raise AnswerParseError("expression", f"a line number written as {values}")
        if isinstance(item, int):
            out.append((_clip(item), _clip(item)))
        elif (
            isinstance(item, list)
            and len(item) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in item)
        ):
            out.append((_clip(item[0]), _clip(item[1])))
    return out


def _clip(v: int) -> int:
    return max(-HUGE, min(HUGE, v))


_MAX_OBJECTS = 64  # candidate objects tried from the end of the output


def _last_json_object(text: str, echo: PageEcho | None) -> object:
    """The last ``{"ranges"...}`` object of ``text`` that is not a copy of page text (or,
    with none, the object at the last ``{``)."""
    decoder = json.JSONDecoder(parse_int=_int, parse_float=_Float)
    starts, end = [], len(text)
    while len(starts) < _MAX_OBJECTS:
        at = text.rfind('"ranges"', 0, end)
        if at < 0:
            break
        brace = len(text[:at].rstrip())  # the "{" right before the key, spaces aside
        if brace > 0 and text[brace - 1] == "{":
            starts.append(brace - 1)
        end = at
    if not starts:
        brace = text.rfind("{")
        starts = [brace] if brace >= 0 else []
    if not starts:
        raise AnswerParseError("bad_json", "no JSON object in the model output")
    copies = 0
    for start in starts:
        try:
            obj, stop = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise AnswerParseError("bad_json", f"unreadable JSON ({exc})") from None
        if echo is not None and echo.has_json and echo.copied_text(text[start:stop]):
            copies += 1
            continue
        return obj
    raise AnswerParseError("no_answer", f"{_ECHOED} ({copies} copied JSON objects)")


def parse_answer(
    text: str, n_lines: int, mode: AnswerMode = "tags", page: Page = None
) -> Selection:
    """Parse a retriever answer into a :class:`Selection` over a tree of ``n_lines`` lines.

    Raises :class:`AnswerParseError` (never anything else) when no usable range is found.
    Pass what the model was shown as ``page`` (the tree, its rendered view, or several
    texts): tags and JSON answers copied from it are never taken for the model's own, in
    any view, across line breaks and numbering, even when the output was cut off inside the
    copy. A line number written as an expression (``10**18``, ``1e9``, ``1_000``, ``2.5``)
    makes the answer unreadable (reason ``expression``) rather than being read digit-wise.

    >>> parse_answer("<answer>\\n12\\n3 - 5\\n</answer>", n_lines=20).ranges
    ((3, 5), (12, 12))
    >>> parse_answer("<answer>[(1, 10**18)]</answer>", n_lines=20)
    Traceback (most recent call last):
    lrlib.core.ranges.AnswerParseError: expression: a line number written as '10**18'
    """
    if not isinstance(text, str) or not text.strip():
        raise AnswerParseError("empty", "the model output is empty")
    if n_lines < 1:
        raise AnswerParseError("out_of_range", "the tree has no lines")
    truncated = False
    if page is not None and next(islice(_TAG.finditer(text), MAX_TAGS, None), None):
        # no model writes this many think/answer tags; checking each against the page
        # would cost seconds: the output is not read (fail closed, in constant time)
        raise AnswerParseError("no_answer", f"more than {MAX_TAGS:,} think/answer tags")
    echo = page_echo(page)
    if mode == "json":
        try:
            body, truncated = answer_block(text, page)
        except AnswerParseError:  # no <answer> block of its own: the JSON outside thinking
            body = _strip_think(text, echo)  # (copied objects are skipped there)
        raw = _json_ranges(body, echo)
    elif mode == "tags":
        body, truncated = answer_block(text, page)
        # the regex tries every position: look for the characters it needs first
        expression = _EXPR.search(body) if any(c in body for c in _EXPR_CHARS) else None
        if expression:
            raise AnswerParseError(
                "expression", f"a line number written as {expression.group().strip()!r}"
            )
        raw = ranges_in(body)
    else:
        raise ValueError(f"unknown answer mode {mode!r}; valid: 'tags', 'json'")
    if not raw:
        raise AnswerParseError("no_ranges", "the answer names no line numbers")
    selection = Selection.from_ranges(raw, n_lines, truncated)
    if not selection.ranges:
        raise AnswerParseError("out_of_range", f"no range falls within 1..{n_lines}")
    return selection


def _strip_think(text: str, echo: PageEcho | None = None) -> str:
    """``text`` without its closed ``<think>`` blocks (and anything after an unclosed one);
    think tags copied from the page do not count."""
    out, pos, depth_start = [], 0, -1
    check = echo is not None and echo.has_tags
    for m in _TAG.finditer(text):
        if m.group(2).lower() != "think" or check and echo.copied(text, m):  # type: ignore[union-attr]
            continue
        if m.group(1) != "/" and depth_start < 0:
            out.append(text[pos : m.start()])
            depth_start = m.start()
        elif m.group(1) == "/" and depth_start >= 0:
            pos, depth_start = m.end(), -1
    if depth_start < 0:
        out.append(text[pos:])
    return "".join(out)
