"""The goal's words, as the tunable reducers match them against line names.

Goal text is written by whoever sets the task, so matching it is a relevance signal the
page cannot fake on its own (a page can only *repeat* goal words, which the features
saturate, :mod:`.features`). Three granularities:

- :func:`goal_terms` / :func:`terms`: content words (stop words and instructions to the
  agent dropped, crude stems), for counting shared words;
- :func:`term_matcher`: a regex finding those words inside other text (*best-selling*
  finds *Bestsellers*, numbers only as whole numbers);
- :func:`quoted_phrases` and :func:`in_goal`: a line's *whole* name against the goal, as
  small synthetic tasks name their targets ("Click on the "no" button", "Select Nb and
  click Submit") and form-filling goals name their values (``{'Choose the colour':
  'Silver'}``).

>>> goal = 'Select Nb and click "Submit"'
>>> goal_terms(goal), sorted(quoted_phrases(goal)), in_goal("nb", normalise(goal))
(['select', 'nb', 'submit'], ['submit'], True)
"""

from __future__ import annotations

import functools
import operator
import re
from itertools import compress

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "go",
    "how", "i", "in", "into", "is", "it", "me", "my", "of", "on", "or", "our", "please", "show",
    "tell", "that", "the", "their", "them", "then", "there", "this", "to", "us", "was", "we",
    "what", "when", "where", "which", "who", "will", "with", "you", "your",
    # instructions to the agent, not content of the page
    "click", "press", "enter", "type", "find", "navigate",
))  # fmt: skip
_SUFFIX = re.compile(r"(?:ies|ings?|es|ed|s)$")
_SUFFIX_ENDS = ("s", "ed", "ing", "\n")  # what every _SUFFIX match ends with ("$": or a newline)
# "double", “curly” or 'single' quotes (a single quote only between non-letters: not it's)
_QUOTE = re.compile(r'"([^"]{1,80})"|“([^”]{1,80})”|(?<![A-Za-z])\'([^\']{1,80})\'(?![A-Za-z])')
_NOT_NAME = re.compile(r"[^\w#@$%&+./:-]+")
_NAME_BYTES = bytes(
    c if c == 10 or c > 127 or re.fullmatch(r"[\w#@$%&+./:-]", chr(c)) else 32 for c in range(256)
).translate(bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"))
_SPACES = re.compile(rb"  +")
_FLAT_NAME_BYTES = _NAME_BYTES[:10] + b" " + _NAME_BYTES[11:]  # a newline a separator
# a name the goal wants off: {'Eclipse IDE': False}, "uncheck 'Eclipse IDE'"
_OFF = re.compile(
    r"""(?:["'“]([^"'”]{1,80})["'”]\s*:\s*(?:false|no|off)\b)"""
    r"""|(?:\b(?:un-?check|untick|deselect|unselect|clear)\s+(?:the\s+)?["'“]([^"'”]{1,80})["'”])""",
    re.IGNORECASE,
)
MAX_NAME = 80  # characters: longer names are sentences, not labels the goal could repeat


def content(word: str) -> bool:
    """A content word: not a stop word, and two characters or more unless a number.

    >>> content("the"), content("x"), content("7"), content("ipad")
    (False, False, True, True)
    """
    return word not in _STOP and (len(word) > 1 or word.isdigit())


def stem(word: str) -> str:
    """A crude stem: common English suffixes off, at least 3 letters left.

    >>> stem("selling"), stem("customers"), stem("categories"), stem("is")
    ('sell', 'customer', 'categor', 'is')
    """
    if not word.endswith(_SUFFIX_ENDS):  # no suffix to cut: no regex to run
        return word
    cut = _SUFFIX.sub("", word)
    return cut if len(cut) >= 3 else word


def goal_terms(text: str) -> list[str]:
    """Stemmed content words of ``text`` (stop words and one-letter words dropped; numbers,
    even one digit, kept: "Select 5", "order 3" name an option or a quantity).

    >>> goal_terms("Go to the hardware store and order 3 'iPad pro' (Silver)")
    ['hardware', 'store', 'order', '3', 'ipad', 'pro', 'silver']
    """
    return list(dict.fromkeys(map(stem, content_words(text))))


def terms_of_goal(text: str) -> tuple[set[str], list[str]]:
    """:func:`terms` and :func:`goal_terms` of ``text``, from one scan of its words.

    >>> cut, stems = terms_of_goal("Order 2 laptops")
    >>> sorted(cut), stems
    (['2', 'lapto', 'order'], ['order', '2', 'laptop'])
    """
    words = content_words(text)
    return {w[:5] for w in words}, list(dict.fromkeys(map(stem, words)))


def content_words(text: str) -> list[str]:
    """The :func:`content` words of lower-cased ``text``, in order (repeats kept): what
    :func:`goal_terms` and :func:`terms` are made of.

    >>> content_words("Order the best-selling laptops, 2 of them")
    ['order', 'best', 'selling', 'laptops', '2']
    """
    return list(filter(content, _WORD.findall(text.lower())))


def term_matcher(terms: list[str]) -> re.Pattern[str] | None:
    """A regex finding the terms in lower-cased text: numbers as whole tokens, words of four
    letters or more anywhere in a word, shorter words at the start of a word (compiled
    once per list of terms: a goal's steps share it).

    >>> bool(term_matcher(["best"]).search("bestsellers")), term_matcher([])
    (True, None)
    """
    return _matcher(tuple(terms))


@functools.lru_cache(maxsize=1024)
def _matcher(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    parts = []
    for t in terms:  # each branch starts with its literal (a fast scan), then looks back
        e = re.escape(t)
        if t.isdigit():
            parts.append(rf"{e}(?<![0-9]{e})(?![0-9])")  # = (?<![0-9])t(?![0-9])
        elif len(t) >= 4:
            parts.append(e)
        else:
            parts.append(rf"{e}(?<!\w{e})")  # = \bt, t starting with a word character
    return re.compile("|".join(parts)) if parts else None


_WORD_CHAR = re.compile(r"\w")


_DIGIT_BYTES = frozenset(b"0123456789")
_WORD_BYTES = frozenset(c for c in range(128) if _WORD_CHAR.match(chr(c)))


def _word_before(data: bytes, p: int) -> bool:
    """Whether the character ending at byte ``p`` of UTF-8 ``data`` is a word character."""
    c = data[p - 1]
    if c < 128:
        return c in _WORD_BYTES
    q = p - 1
    while q > 0 and data[q] < 0xC0:  # a continuation byte: back to the character's lead byte
        q -= 1
    return _WORD_CHAR.match(data[q:p].decode("utf-8", "surrogatepass")) is not None


def utf8_term_finds(terms: list[str], data: bytes) -> list[tuple[int, int]]:
    """The matches of :func:`term_matcher` ``(terms)`` in lower-cased text given as its
    UTF-8 ``data``, as (byte offset, rank of the term in ``terms``), found by
    ``bytes.find`` (a literal scan per term, where the regex tries its alternatives at
    nearly every character): every occurrence that the branch's look-arounds allow, then,
    as ``finditer`` does, the leftmost first, the earlier term first at one start, none
    overlapping the one before. The terms are ASCII words (as :func:`goal_terms` gives
    them), so each is found where the text holds it.

    >>> utf8_term_finds(["best", "3", "ca"], "bestsellers: 3 of 13, écart ca".encode())
    [(0, 0), (13, 1), (29, 2)]
    """
    found = []
    for rank, t in enumerate(terms):
        b = t.encode()
        digit, short, end = t.isdigit(), len(b) < 4, len(b)
        p = data.find(b)
        while p >= 0:
            if digit:
                after = data[p + end : p + end + 1]
                ok = (p == 0 or data[p - 1] not in _DIGIT_BYTES) and not (
                    after and after[0] in _DIGIT_BYTES
                )
            else:
                ok = not short or p == 0 or not _word_before(data, p)
            if ok:
                found.append((p, rank, end))
            p = data.find(b, p + 1)
    found.sort()
    out, free = [], 0
    for p, rank, end in found:
        if p >= free:
            out.append((p, rank))
            free = p + end
    return out


def terms(text: str) -> set[str]:
    """Content words of ``text`` (as :func:`goal_terms` keeps them), cut to five letters.

    >>> sorted(terms("Order the best-selling laptops, 2 of them"))
    ['2', 'best', 'lapto', 'order', 'selli']
    """
    return {w[:5] for w in content_words(text)}


def normalise(text: str) -> str:
    """Case-folded words of ``text`` separated by single spaces (punctuation other than
    ``# @ $ % & + . / : -`` is a separator), for whole-name comparisons.

    >>> normalise("  Tab #2 ("), normalise("Choose the colour:")
    ('tab #2', 'choose the colour:')
    """
    if text.isascii():  # by a byte table (as normalise_lines), newlines separators too
        return _SPACES.sub(b" ", text.encode().translate(_FLAT_NAME_BYTES)).strip().decode()
    return " ".join(_NOT_NAME.sub(" ", text.casefold()).split())


def normalise_lines(texts: list[str]) -> list[str]:
    """:func:`normalise` of each of ``texts`` (which hold no ``\\n``), in one pass over
    their joined text.

    >>> normalise_lines(["  Tab #2 (", "", "Choose the colour:"])
    ['tab #2', '', 'choose the colour:']
    """
    if not texts:
        return []
    # ASCII: lower case and separators by a byte table, runs of spaces cut to one; lines
    # with other characters than ASCII one by one
    data = "\n".join(texts).encode("utf-8", "surrogatepass").translate(_NAME_BYTES)
    out = list(map(str.strip, _SPACES.sub(b" ", data).decode("utf-8", "surrogatepass").split("\n")))
    if not data.isascii():
        for i in compress(range(len(texts)), map(operator.not_, map(str.isascii, texts))):
            out[i] = normalise(texts[i])
    return out


def quoted_phrases(goal: str) -> set[str]:
    """The :func:`normalise`\\ d phrases the goal puts in quotes.

    >>> sorted(quoted_phrases("order 2 \\"iPad pro\\" with {'Choose the colour': 'Silver'}"))
    ['choose the colour', 'ipad pro', 'silver']
    >>> quoted_phrases("it's the user's page")
    set()
    """
    found = (next(g for g in m.groups() if g is not None) for m in _QUOTE.finditer(goal))
    return {p for p in map(normalise, found) if p}


def switched_off(goal: str) -> set[str]:
    """The :func:`normalise`\\ d names the goal wants unticked: a ``'name': False`` entry of a
    configuration, or a quoted name after "uncheck", "untick", "deselect", "unselect", "clear".

    >>> sorted(switched_off("order it with {'Adobe Acrobat': True, 'Eclipse IDE': False}"))
    ['eclipse ide']
    >>> switched_off('Uncheck "Newsletter" and submit')
    {'newsletter'}
    """
    return {normalise(a or b) for a, b in _OFF.findall(goal)}


def in_goal(name: str, goal: str) -> bool:
    """True when a :func:`normalise`\\ d line name occurs in the normalised ``goal`` as whole
    words, and is a plausible label: at most :data:`MAX_NAME` characters, with a content
    word or a number (so "to" or "a" never match).

    >>> g = normalise("Click on the Tab #2, then the 'no' button")
    >>> in_goal("tab #2", g), in_goal("no", g), in_goal("ta", g), in_goal("the", g)
    (True, True, False, False)
    """
    if not name or len(name) > MAX_NAME or not any(content(w) for w in _WORD.findall(name)):
        return False
    return f" {name} " in f" {goal} "
