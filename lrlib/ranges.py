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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

AnswerMode = Literal["tags", "json"]

# possessive quantifiers (``*+``, ``++``) and the look-behind keep every pattern linear: no
# backtracking into a run of spaces or digits, no match starting inside a number
_TAG = re.compile(r"<\s*+(/?)\s*+(think|answer)\s*+>", re.IGNORECASE)
_NUM = r"(-?\d++)"
_PAIR = re.compile(r"[(\[]\s*+" + _NUM + r"\s*+[,;:]\s*+" + _NUM + r"\s*+[)\]]")
_SPAN = re.compile(r"(?<!\d)" + _NUM + r"\s*+(?:-|–|—|\.\.\.?|\bto\b|:)\s*+" + _NUM)
_SINGLE = re.compile(r"-?\d+")
_HUGE = 10**18  # numbers longer than 18 digits are treated as "beyond any tree"
_ECHOED = "no <answer> block other than copies of the page's"
# the start of a think/answer tag cut off by the end of the output ("</ans", "<answer  ")
_PARTIAL_TAG = re.compile(
    r"<\s*+/?\s*+(?:t(?:h(?:i(?:nk?)?)?)?|a(?:n(?:s(?:w(?:er?)?)?)?)?)?\s*+$", re.IGNORECASE
)


class AnswerParseError(ValueError):
    """No line selection could be read from an answer. ``reason`` is a short code:
    ``empty``, ``no_answer``, ``no_ranges``, ``out_of_range``, ``bad_json``, ``bad_schema``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Selection:
    """Sorted, disjoint, inclusive 1-based line ranges within ``1..n_lines``."""

    ranges: tuple[tuple[int, int], ...]
    n_lines: int
    truncated: bool = False  # the answer block was not closed (output cut off)

    def __repr__(self) -> str:
        return f"Selection({list(self.ranges)}, n_lines={self.n_lines})"

    def __len__(self) -> int:
        """Number of selected lines."""
        return sum(b - a + 1 for a, b in self.ranges)

    def __contains__(self, number: object) -> bool:
        from bisect import bisect_right

        if not isinstance(number, int):
            return False
        i = bisect_right(self.ranges, (number, _HUGE)) - 1
        return i >= 0 and self.ranges[i][0] <= number <= self.ranges[i][1]

    def __iter__(self) -> Iterator[int]:
        for a, b in self.ranges:
            yield from range(a, b + 1)

    def lines(self) -> list[int]:
        """Selected line numbers (at most ``n_lines`` of them)."""
        return list(self)

    @property
    def fraction(self) -> float:
        """Share of the tree's lines that are selected."""
        return len(self) / self.n_lines if self.n_lines else 0.0

    @classmethod
    def from_ranges(
        cls, ranges: Iterable[tuple[int, int]], n_lines: int, truncated: bool = False
    ) -> Selection:
        """Normalise raw pairs: swap reversed, clamp to 1..n_lines, drop outside, merge.

        >>> Selection.from_ranges([(5, 3), (0, 0), (4, 99)], n_lines=10)
        Selection([(3, 10)], n_lines=10)
        """
        kept = []
        for a, b in ranges:
            if a > b:
                a, b = b, a
            if b < 1 or a > n_lines:
                continue
            kept.append((max(a, 1), min(b, n_lines)))
        kept.sort()
        merged: list[tuple[int, int]] = []
        for a, b in kept:
            if merged and a <= merged[-1][1] + 1:
                if b > merged[-1][1]:
                    merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        return cls(tuple(merged), n_lines, truncated)

    @classmethod
    def from_lines(cls, numbers: Iterable[int], n_lines: int) -> Selection:
        """Selection of individual 1-based line numbers.

        >>> Selection.from_lines([3, 1, 2, 7], n_lines=9).ranges
        ((1, 3), (7, 7))
        """
        return cls.from_ranges(((n, n) for n in numbers), n_lines)

    @classmethod
    def all(cls, n_lines: int) -> Selection:
        """Every line."""
        return cls(((1, n_lines),) if n_lines else (), n_lines)


def _int(token: str) -> int:
    digits = token.lstrip("-")
    if len(digits) > 18:
        return -_HUGE if token.startswith("-") else _HUGE
    return int(token)


def answer_block(text: str, page: str | None = None) -> tuple[str, bool]:
    """The body of the last ``<answer>`` block outside ``<think>``, and whether it was cut off.

    Only what follows the last ``</think>`` can be the answer: a ``</think>`` after an answer
    block means the model was still thinking, so the block (and the earlier ``</think>``)
    were page text it echoed. With ``page``, blocks whose body (whitespace aside) is, or a
    cut-off start of, an ``<answer>`` body written in the page are skipped.

    >>> answer_block("<think><answer>9</answer></think><answer> 1-3 </answer>")
    (' 1-3 ', False)
    >>> answer_block("<think>it says </think><answer>9</answer>, odd</think><answer>2</answer>")
    ('2', False)
    """
    planted = _page_answers(page) if page else set()
    in_think, echoed = False, False
    answer_start = -1  # start of the body of the currently open answer block
    last: tuple[str, bool] | None = None
    for m in _TAG.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2).lower()
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
                if planted and _squash(body) in planted:
                    echoed = True
                else:
                    last = (body, False)
                answer_start = -1
    if answer_start >= 0:  # output ended inside an answer block
        body = text[answer_start:]
        cuts = {_squash(body), _squash(_PARTIAL_TAG.sub("", body))}  # maybe cut inside a tag
        if not any(p.startswith(c) for p in planted for c in cuts):
            return body, True
        echoed = True
    if last is None:
        reason = "an unclosed <think>" if in_think else "no <answer> block"
        if echoed:
            reason = _ECHOED
        raise AnswerParseError("no_answer", f"{reason} in the model output")
    return last


def _squash(text: str) -> str:
    return "".join(text.split())


def _page_answers(page: str) -> set[str]:
    """What a model copying the page could take for an answer body: the text after each
    ``<answer>`` of the page up to its next answer tag (or the end), whitespace removed."""
    tags = [m for m in _TAG.finditer(page) if m.group(2).lower() == "answer"]
    ends = [m.start() for m in tags[1:]] + [len(page)] * bool(tags)
    return {
        _squash(page[m.end() : end]) for m, end in zip(tags, ends, strict=True) if m.group(1) != "/"
    }


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
        body = pattern.sub(take, body)
    for m in _SINGLE.finditer(body):
        value = _int(m.group())
        found[(value, value)] = None
    return list(found)


def _json_ranges(text: str) -> list[tuple[int, int]]:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        obj = json.loads(stripped, parse_int=_int)  # _int: no int() of a 5,000-digit number
    except (ValueError, RecursionError):
        obj = _last_json_object(stripped)
    if not isinstance(obj, dict) or not isinstance(obj.get("ranges"), list):
        raise AnswerParseError("bad_schema", 'expected an object {"ranges": [[start, end], ...]}')
    out = []
    for item in obj["ranges"]:
        if isinstance(item, bool):
            continue
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
    return max(-_HUGE, min(_HUGE, v))


def _last_json_object(text: str) -> object:
    decoder = json.JSONDecoder(parse_int=_int)
    start = text.rfind('{"ranges"')
    if start < 0:
        start = text.rfind("{")
    if start < 0:
        raise AnswerParseError("bad_json", "no JSON object in the model output")
    try:
        return decoder.raw_decode(text, start)[0]
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise AnswerParseError("bad_json", f"unreadable JSON ({exc})") from None


def parse_answer(
    text: str, n_lines: int, mode: AnswerMode = "tags", page: str | None = None
) -> Selection:
    """Parse a retriever answer into a :class:`Selection` over a tree of ``n_lines`` lines.

    Raises :class:`AnswerParseError` (never anything else) when no usable range is found.
    Pass the observation as ``page`` so that an ``<answer>`` block the page itself contains
    is never taken for the model's, even when the output was cut off right after copying it.

    >>> parse_answer("<answer>\\n12\\n3 - 5\\n</answer>", n_lines=20).ranges
    ((3, 5), (12, 12))
    """
    if not isinstance(text, str) or not text.strip():
        raise AnswerParseError("empty", "the model output is empty")
    if n_lines < 1:
        raise AnswerParseError("out_of_range", "the tree has no lines")
    truncated = False
    if mode == "json":
        try:
            body, truncated = answer_block(text, page)
        except AnswerParseError as err:
            if err.detail.startswith(_ECHOED):
                raise
            body = _strip_think(text)
        raw = _json_ranges(body)
    elif mode == "tags":
        body, truncated = answer_block(text, page)
        raw = ranges_in(body)
    else:
        raise ValueError(f"unknown answer mode {mode!r}; valid: 'tags', 'json'")
    if not raw:
        raise AnswerParseError("no_ranges", "the answer names no line numbers")
    selection = Selection.from_ranges(raw, n_lines, truncated)
    if not selection.ranges:
        raise AnswerParseError("out_of_range", f"no range falls within 1..{n_lines}")
    return selection


def _strip_think(text: str) -> str:
    """``text`` without its closed ``<think>`` blocks (and anything after an unclosed one)."""
    out, pos, depth_start = [], 0, -1
    for m in _TAG.finditer(text):
        if m.group(2).lower() != "think":
            continue
        if m.group(1) != "/" and depth_start < 0:
            out.append(text[pos : m.start()])
            depth_start = m.start()
        elif m.group(1) == "/" and depth_start >= 0:
            pos, depth_start = m.end(), -1
    if depth_start < 0:
        out.append(text[pos:])
    return "".join(out)
