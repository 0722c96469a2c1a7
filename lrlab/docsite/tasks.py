"""Task families generated from a documentation site's own HTML (ground truth from the HTML,
never from a model), seeded and deterministic.

- ``navigate``: from a start page with long link lists (the site's pages with the most links:
  index, contents), open the page a named link leads to (success: the browser is on it).
- ``report``: on a long page, report a fact that lives in one element (a table cell by its
  row and column, or a ``Label: value`` line under a heading) with ``send_msg_to_user``;
  scored by normalised exact match (:func:`lrlab.docsite.site.norm`).
- ``deep``: the same, for facts in the lower half of pages of >= 15,000 characters (far below
  the first screen: a cut by length loses them).
- ``multihop``: open a named link from a start page, then report a fact of that page.
- ``search``: type a page's title into the site's own search form and open that result
  (only where a page has a search form whose action is a page of the site, e.g. Sphinx's
  ``search.html`` with its ``searchindex.js``, which runs offline).

Every candidate is one task; a family's tasks are shuffled by ``seed`` (default 34) and the
site's hash, so task ``i`` of a family is fixed for a site. Elements a browser does not show
(closed ``<details>``, ``hidden``, ``display:none`` or ``visibility:hidden`` inline or by a
plain rule of the page's own stylesheets, ``aria-hidden``) give no task; labels must be
unique on their page.

>>> from lrlab.docsite.site import parse_html
>>> t = parse_html("<table><tr><th>Name</th><th>Default</th></tr><tr><td>port</td><td>80</td></tr></table>")
>>> [(f.key, f.label, f.answer) for f in table_facts(t)]
[('port', 'Default', '80')]
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cached_property
from posixpath import dirname, normpath
from urllib.parse import unquote, urlsplit

from lrlab.docsite.site import El, Page, Site, clean

FAMILIES = ("navigate", "report", "deep", "multihop", "search")
SEED = 34
DEEP_CHARS = 15_000  # a page this long runs far past the first screen
MAX_BYTES = 250_000  # larger pages start no task (their trees take a browser 30-60 s)
START_LINKS = 80  # a start page offers at least this many links
_LABEL_LINE = re.compile(r"^([A-Z][A-Za-z ]{1,24}):\s+(\S.{0,59})$")


@dataclass(frozen=True)
class Task:
    """One generated task: where it starts, the goal, and its ground truth."""

    site: str
    family: str
    index: int
    start: str  # page path relative to the site root
    goal: str
    target: str | None = None  # the page to reach (navigate, search)
    answer: str | None = None  # the text to report (report, deep, multihop)
    source: str = ""  # page and element the ground truth comes from

    def record(self) -> dict:
        """As a plain dict."""
        return asdict(self)


@dataclass(frozen=True)
class Fact:
    """A fact in one element: ``key`` (row or heading) and ``label`` (column or label)."""

    kind: str  # "table" or "label"
    key: str
    label: str
    answer: str
    offset: int  # characters of page text before it

    def goal(self) -> str:
        """The goal sentence asking for it."""
        if self.kind == "table":
            return f'In the table on this page, report the "{self.label}" in the row "{self.key}".'
        return f'Under the heading "{self.key}" on this page, report the "{self.label}".'


def shown(el: El) -> bool:
    """Whether a browser shows ``el``: not in a closed ``<details>``, not hidden by an
    attribute, an inline style or a rule of the page's stylesheets (``El.css_hidden``)."""
    for e in [el, *el.ancestors()]:
        if e.css_hidden:
            return False
        a = e.attrs
        style = a.get("style", "").replace(" ", "").lower()
        if "hidden" in a or a.get("aria-hidden") == "true" or "display:none" in style:
            return False
        if e.tag in ("script", "template", "noscript", "head"):
            return False
        if e.tag == "details" and "open" not in a and e is not el:
            summaries = [c for c in e.children if isinstance(c, El) and c.tag == "summary"]
            if not any(s is el or s in el.ancestors() for s in summaries):
                return False
    return True


def _cells(row: El) -> list[El]:
    return [c for c in row.children if isinstance(c, El) and c.tag in ("td", "th")]


def _rows(table: El) -> list[El]:
    out = []
    for e in table.iter():
        if e.tag == "tr" and next((a for a in e.ancestors() if a.tag == "table"), None) is table:
            out.append(e)
    return out


def table_facts(root: El) -> list[Fact]:
    """Cells of shown tables named by their row's first cell and their column's header,
    where both are unique (row keys over the whole page) and the cell is short text."""
    found: list[Fact] = []
    for table in root.find("table"):
        rows = _rows(table)
        if len(rows) < 2 or not shown(table):
            continue
        head = [clean(c.text()) for c in _cells(rows[0])]
        if not all(c.tag == "th" for c in _cells(rows[0])) or len(set(head)) != len(head):
            continue
        if not head or not all(head) or any(len(h) > 40 for h in head):  # no header row
            continue
        for row in rows[1:]:
            cells = _cells(row)
            if len(cells) != len(head) or any("colspan" in c.attrs for c in cells):
                continue
            key = clean(cells[0].text())
            for label, cell in zip(head[1:], cells[1:], strict=True):
                answer = clean(cell.text())
                if key and 0 < len(answer) <= 60 and len(key) <= 60:
                    found.append(Fact("table", key, label, answer, cell.offset))
    rows_total: Counter[str] = Counter()
    for table in root.find("table"):
        for row in _rows(table):
            cells = _cells(row)
            if cells:
                rows_total[clean(cells[0].text()).casefold()] += 1
    return [f for f in found if rows_total[f.key.casefold()] == 1]


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def label_facts(root: El) -> list[Fact]:
    """``Label: value`` lines (an element holding that text alone) under a shown heading
    whose text is unique on the page; the first line of each label under each heading. A
    hidden heading ends the previous one's section (what follows is under no heading)."""
    found: list[Fact] = []
    heading: str | None = None
    seen: set[str] = set()
    counts = Counter(clean(h.text()).casefold() for h in root.iter() if h.tag in _HEADINGS)
    for e in root.iter():
        if e.tag in _HEADINGS:
            heading = clean(e.text()) if shown(e) else None
            seen = set()
            continue
        if heading is None or counts[heading.casefold()] != 1 or len(heading) > 80:
            continue
        if not e.children or not all(isinstance(c, str) for c in e.children):
            continue
        m = _LABEL_LINE.match(clean(e.text()))
        if m and m.group(1) not in seen and shown(e):
            seen.add(m.group(1))
            found.append(Fact("label", heading, m.group(1), m.group(2).strip(), e.offset))
    return found


@dataclass(frozen=True)
class Link:
    """A shown link of a page to another page of the site, its text unique on the page."""

    label: str
    target: str


def resolve(page: str, href: str) -> str | None:
    """The site path ``href`` leads to from ``page`` (None: another site, or this page).

    >>> resolve("library/os.html", "../reference/index.html#x"), resolve("a.html", "http://x/")
    ('reference/index.html', None)
    """
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = normpath(f"{dirname(page)}/{unquote(parts.path)}".lstrip("/"))
    if path.endswith("/") or not path.endswith(".html"):
        path = path.rstrip("/") + "/index.html" if not path.endswith(".html") else path
    return None if path == page or path.startswith("..") else path


def _words(title: str) -> str:
    """A title as a search query: its words only (a search index has no dashes or quotes).

    >>> _words("dbm — Interfaces to Unix “databases”")
    'dbm Interfaces to Unix databases'
    """
    return " ".join(re.findall(r"[\w.]+", title))


class Generator:
    """The task families of a :class:`Site` (module doc).

    ``max_pages`` bounds the pages read for facts (the longest first)."""

    def __init__(self, site: Site, seed: int = SEED, max_pages: int = 200) -> None:
        self.site = site
        self.seed = seed
        self.max_pages = max_pages
        self._paths = set(site.paths)
        # pages a browser renders into a tree an episode can play (Node's all.html, 5.9 MB,
        # is left out: its tree is tens of thousands of lines)
        self._playable = [p for p in site.paths if site.size(p) <= MAX_BYTES]

    def links(self, page: Page) -> list[Link]:
        """The page's shown links to other pages, their text unique among the page's links."""
        anchors = [a for a in page.root.find("a") if a.attrs.get("href")]
        counts = Counter(clean(a.text()).casefold() for a in anchors)
        out = []
        for a in anchors:
            label = clean(a.text())
            target = resolve(page.path, a.attrs["href"])
            if (target in self._paths and label and counts[label.casefold()] == 1
                    and 2 <= len(label) <= 80 and shown(a)):  # fmt: skip
                out.append(Link(label, target))
        return out

    @cached_property
    def starts(self) -> list[str]:
        """Start pages: the configured ones, else the (at most 4) pages with the most links
        (at least :data:`START_LINKS`; at most 3,000, so a tree stays playable)."""
        if self.site.config.get("start"):
            return list(self.site.config["start"])
        sizes = []
        for path in self._playable:
            n = len(re.findall(r"<a\s[^>]*href=", self.site.raw(path)))
            if n <= 3000:
                sizes.append((n, path))
        sizes.sort(key=lambda x: (-x[0], x[1]))
        best = [p for n, p in sizes[:4] if n >= START_LINKS]
        return best or [p for _, p in sizes[:1]]

    @cached_property
    def facts(self) -> dict[str, list[Fact]]:
        """Facts per page path (tables and label lines), for the longest pages."""
        by_size = sorted(self._playable, key=lambda p: (-self.site.size(p), p))
        out = {}
        for page in map(self.site.page, by_size[: self.max_pages]):
            facts = table_facts(page.root) + label_facts(page.root)
            if facts:
                out[page.path] = facts
        return out

    def _report(self, deep: bool) -> Iterator[tuple[str, Fact]]:
        for path, facts in self.facts.items():
            length = self.site.page(path).length
            for f in facts:
                rel = f.offset / max(1, length)
                if (
                    deep
                    and length >= DEEP_CHARS
                    and rel >= 0.5
                    or not deep
                    and length >= 2000
                    and rel < 0.5
                ):
                    yield path, f

    def _candidates(self, family: str) -> list[Task]:
        s = self.site.name
        if family == "navigate":
            return [Task(s, family, 0, start, f'Open the page linked as "{link.label}".',
                         target=link.target, source=f"{start} -> {link.target}")
                    for start in self.starts for link in self.links(self.site.page(start))]  # fmt: skip
        if family in ("report", "deep"):
            return [Task(s, family, 0, path, f.goal(), answer=f.answer,
                         source=f"{path}: {f.kind} {f.key!r} / {f.label!r}")
                    for path, f in self._report(deep=family == "deep")]  # fmt: skip
        if family == "multihop":
            out = []
            for start in self.starts:
                for link in self.links(self.site.page(start)):
                    for f in self.facts.get(link.target, [])[:3]:
                        goal = f'Open the page linked as "{link.label}". Then: {f.goal()}'
                        out.append(Task(s, family, 0, start, goal, answer=f.answer,
                                        source=f"{start} -> {link.target}: {f.kind} {f.key!r} / {f.label!r}"))  # fmt: skip
            return out
        if family == "search":
            start = self.search_start
            if start is None:
                return []
            titles = Counter()
            heads = {}
            for page in map(self.site.page, self._playable):
                h1 = [h for h in page.root.find("h1") if shown(h)]
                if len(h1) == 1 and 2 <= len(clean(h1[0].text())) <= 60:
                    heads[page.path] = clean(h1[0].text())
                    titles[heads[page.path].casefold()] += 1
            corpus = self.search_corpus
            return [Task(s, family, 0, start,
                         f'Search this site for "{_words(t)}" and open the result "{t}".',
                         target=path, source=f"{path}: h1")
                    for path, t in heads.items() if titles[t.casefold()] == 1 and path != start
                    and (f'"{path}"' in corpus or f'"{path.removesuffix(".html")}"' in corpus)]  # fmt: skip
        raise KeyError(f"unknown task family {family!r}; valid: {', '.join(FAMILIES)}")

    @cached_property
    def search_start(self) -> str | None:
        """A start page with a search form whose action is a page of the site (or None)."""
        order = ["index.html", *self.starts, *self.site.paths[:50]]
        for path in order:
            if path not in self._paths:
                continue
            page = self.site.page(path)
            for form in page.root.find("form"):
                action = resolve(page.path, form.attrs.get("action", ""))
                inputs = [i for i in form.find("input")
                          if i.attrs.get("type", "text") in ("text", "search")]  # fmt: skip
                if action in self._paths and inputs and shown(form):
                    return path
        return None

    @cached_property
    def search_corpus(self) -> str:
        """The search page's source and the local scripts and indexes it names: a page can
        be found by the site's search when its path (or path without ``.html``) is quoted
        there (Sphinx's ``searchindex.js`` lists ``docnames``)."""
        start = self.search_start
        if start is None:
            return ""
        page = self.site.page(start)
        action = next(resolve(page.path, f.attrs.get("action", "")) for f in page.root.find("form")
                      if resolve(page.path, f.attrs.get("action", "")) in self._paths)  # fmt: skip
        raw = self.site.raw(action)
        names = set(re.findall(r"""["']([\w./-]+\.(?:js|json))["']""", raw))
        parts = [raw]
        for name in sorted(names):
            path = normpath(f"{dirname(action)}/{name}".lstrip("/"))
            f = self.site.root / path
            if f.is_file() and f.stat().st_size <= 20_000_000:
                parts.append(f.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(parts)

    def tasks(self, family: str) -> list[Task]:
        """The family's tasks, shuffled (seeded by ``seed`` and the site's hash), numbered."""
        cands = sorted(self._candidates(family), key=lambda t: (t.start, t.goal, t.source))
        rng = random.Random(f"{self.seed}:{self.site.hash}:{family}")
        rng.shuffle(cands)
        return [Task(**{**t.record(), "index": i}) for i, t in enumerate(cands)]

    def counts(self) -> dict[str, int]:
        """How many tasks each family has."""
        return {f: len(self.tasks(f)) for f in FAMILIES}


def _code_hash() -> str:
    from pathlib import Path

    here = Path(__file__).parent
    blob = b"".join((here / f).read_bytes() for f in ("site.py", "tasks.py"))
    return hashlib.sha256(blob).hexdigest()[:10]


def load_tasks(site: Site, seed: int = SEED, cache: bool = True) -> dict[str, list[Task]]:
    """Every family's tasks, cached per site hash, seed and generator code under the work
    dir (``.lrlib/docsite/``): reading a big site's pages takes minutes, once.

    >>> from lrlab.docsite.site import fixture_site
    >>> {f: len(t) for f, t in load_tasks(fixture_site(), cache=False).items()}["navigate"] > 0
    True
    """
    from lrlib.paths import work_dir

    path = work_dir() / "docsite" / f"{site.name}-{site.hash}-{seed}-{_code_hash()}.json"
    if cache and path.is_file():
        raw = json.loads(path.read_text())
        return {f: [Task(**t) for t in ts] for f, ts in raw.items()}
    gen = Generator(site, seed)
    out = {f: gen.tasks(f) for f in FAMILIES}
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({f: [t.record() for t in ts] for f, ts in out.items()}))
        os.replace(tmp, path)
    return out
