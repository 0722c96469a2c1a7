"""A documentation site: a folder of HTML pages (a Debian ``*-doc`` package, or any other),
its pages parsed with the standard library, and a local HTTP server for it.

A site is named by its root folder. :class:`Site` reads every ``.html`` file under it into a
small element tree (:class:`El`), names itself by the Debian package that owns the folder
(``dpkg-query -S``) or, failing that, the folder's name, and fingerprints the folder (a hash
of file names and sizes), so results name a site without machine paths. An optional
``lrlib-site.json`` in the root may set ``name``, ``start`` (pages where navigation starts) and
``exclude`` (path prefixes to ignore).

:func:`serve` runs :mod:`http.server` (threaded) on 127.0.0.1 at an ephemeral port in a
background thread, pages declared UTF-8; it is a context manager that stops it.

>>> root = parse_html("<html><title>T</title><body><h1 id='a'>Hi<a href='#a'>¶</a></h1>"
...                   "<p>x <b>y</b></p></body></html>")
>>> [e.tag for e in root.iter()][:4], root.find("h1")[0].text()
(['#root', 'html', 'title', 'body'], 'Hi¶')
>>> clean("  Hi ¶ "), norm("The  Value. ")
('Hi', 'the value')
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import posixpath
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

CONFIG = "lrlib-site.json"
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}  # fmt: skip
_SKIP_TEXT = {"script", "style", "template", "noscript"}
# an element closes these open ones implicitly (enough of HTML's rules for generated docs)
_IMPLIED = {"p": {"p"}, "li": {"li"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"},
            "tr": {"tr", "td", "th"}, "td": {"td", "th"}, "th": {"td", "th"},
            "option": {"option"}}  # fmt: skip
_BLOCK = {"p", "div", "li", "dt", "dd", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6",
          "pre", "table", "ul", "ol", "dl", "section", "br", "blockquote"}  # fmt: skip


@dataclass(eq=False)
class El:
    """An HTML element: tag, attributes, children (elements and text strings)."""

    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[El | str] = field(default_factory=list)
    parent: El | None = None
    offset: int = 0  # characters of page text before it (its depth in the page)
    css_hidden: bool = False  # a stylesheet rule hides it (:func:`mark_hidden`)

    def iter(self) -> Iterator[El]:
        """This element and every element below it, in document order."""
        yield self
        for c in self.children:
            if isinstance(c, El):
                yield from c.iter()

    def find(self, tag: str) -> list[El]:
        """Every element below (or at) this one with tag ``tag``."""
        return [e for e in self.iter() if e.tag == tag]

    def text(self) -> str:
        """The element's text, whitespace collapsed (scripts and styles left out)."""
        parts: list[str] = []
        self._text(parts)
        return " ".join("".join(parts).split())

    def _text(self, parts: list[str]) -> None:
        if self.tag in _SKIP_TEXT:
            return
        for c in self.children:
            if isinstance(c, str):
                parts.append(c)
            else:
                if c.tag in _BLOCK:
                    parts.append(" ")
                c._text(parts)

    def ancestors(self) -> Iterator[El]:
        """The element's ancestors, nearest first."""
        e = self.parent
        while e is not None:
            yield e
            e = e.parent


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#root")
        self.cur = self.root
        self.chars = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        closes = _IMPLIED.get(tag)
        if closes:
            stop = {"table"} if tag in ("tr", "td", "th") else {"ul", "ol", "dl", "select"}
            e: El | None = self.cur
            while e is not None and e.tag not in stop and e is not self.root:
                if e.tag in closes:
                    self.cur = e.parent or self.root
                    break
                e = e.parent
        el = El(tag, {k: v or "" for k, v in attrs}, parent=self.cur, offset=self.chars)
        self.cur.children.append(el)
        if tag not in _VOID:
            self.cur = el

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.cur.children.append(El(tag, {k: v or "" for k, v in attrs}, parent=self.cur))

    def handle_endtag(self, tag: str) -> None:
        e: El | None = self.cur
        while e is not None and e is not self.root:
            if e.tag == tag:
                self.cur = e.parent or self.root
                return
            e = e.parent

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)
        if self.cur.tag not in _SKIP_TEXT:
            self.chars += len(data.strip())


def parse_html(html: str, css: str = "") -> El:
    """An element tree of ``html`` (forgiving: unclosed tags close at their parent's end);
    the elements that its ``<style>`` blocks or ``css`` hide are marked (:func:`mark_hidden`).

    >>> root = parse_html("<style>.menu { display: none }</style><ul class='menu'><li>x</li></ul>")
    >>> [e.tag for e in root.iter() if e.css_hidden]
    ['ul']
    """
    b = _Builder()
    b.feed(html)
    b.close()
    b.root.offset = b.chars  # the root's offset: the page's whole text length
    inline = "\n".join(c for e in b.root.find("style") for c in e.children if isinstance(c, str))
    mark_hidden(b.root, inline + "\n" + css)
    return b.root


# one compound selector: an optional tag, then ids and classes (no combinator, no pseudo-class)
_COMPOUND = re.compile(r"([a-zA-Z][\w-]*)?((?:[.#][\w-]+)*)")
_HIDES = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important)?\s*(?:;|$)"
)
_SHOWS = re.compile(r"(?:^|;)\s*(?:display|visibility)\s*:")


def hidden_selectors(css: str) -> list[tuple[str | None, frozenset[str], frozenset[str]]]:
    """The selectors whose elements a stylesheet hides (``display: none`` or ``visibility:
    hidden``), as ``(tag, ids, classes)``: top-level rules with one compound selector only
    (rules in ``@media`` and other at-rule blocks, and selectors with combinators or
    pseudo-classes, are left out: an element is called hidden only where that is certain for
    every screen). A later top-level rule of the same selector that sets ``display`` or
    ``visibility`` otherwise takes it back.

    >>> hidden_selectors(".picker { display: none } #nav li { display: none } "
    ...                  "@media print { .x { display: none } } div.a, p { visibility: hidden }")
    [(None, frozenset(), frozenset({'picker'})), ('div', frozenset(), frozenset({'a'})), ('p', frozenset(), frozenset())]
    """
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    state: dict[tuple, bool] = {}
    i, n = 0, len(css)
    while i < n:
        j = css.find("{", i)
        if j < 0:
            break
        head = css[i:j].rsplit(";", 1)[-1].rsplit("}", 1)[-1].strip()
        depth, k = 1, j + 1
        while k < n and depth:
            depth += {"{": 1, "}": -1}.get(css[k], 0)
            k += 1
        body, i = css[j + 1 : k - 1], k
        if head.startswith("@") or "{" in body or not _SHOWS.search(body):
            continue
        hides = bool(_HIDES.search(body))
        for sel in head.split(","):
            m = _COMPOUND.fullmatch(sel.strip())
            if not m or not sel.strip():
                continue
            parts = re.findall(r"([.#])([\w-]+)", m.group(2) or "")
            key = (m.group(1) and m.group(1).lower(),
                   frozenset(v for k_, v in parts if k_ == "#"),
                   frozenset(v for k_, v in parts if k_ == "."))  # fmt: skip
            state.pop(key, None)  # the last rule wins: keep document order of the latest
            state[key] = hides
    return [key for key, hides in state.items() if hides]


def mark_hidden(root: El, css: str) -> None:
    """Mark (``css_hidden``) the elements under ``root`` that ``css`` hides
    (:func:`hidden_selectors`)."""
    rules = hidden_selectors(css)
    if not rules:
        return
    for e in root.iter():
        classes = set(e.attrs.get("class", "").split())
        ident = e.attrs.get("id")
        for tag, ids, cls in rules:
            if ((tag is None or tag == e.tag) and (not ids or ids == {ident})
                    and cls <= classes):  # fmt: skip
                e.css_hidden = True
                break


_MARKS = "¶#§🔗"


def clean(text: str) -> str:
    """Text as a label: whitespace collapsed, permalink marks (¶ # §) at the end dropped."""
    return " ".join(text.split()).rstrip(_MARKS + " ").strip()


def norm(text: str) -> str:
    """Normalised for exact-match scoring: casefolded, whitespace collapsed, quotes and end
    punctuation dropped."""
    t = clean(text).casefold().strip("\"'`“”‘’ ")
    return " ".join(t.rstrip(".;:,").split())


@dataclass
class Page:
    """One HTML page of a site: its path relative to the root, title and element tree."""

    path: str
    title: str
    root: El

    @property
    def length(self) -> int:
        """Characters of text on the page."""
        return self.root.offset


def _owner(root: Path) -> tuple[str | None, str | None]:
    """The Debian package owning ``root`` and its version (None, None elsewhere)."""
    for probe in [root, *sorted(root.glob("*.html"))[:1]]:
        try:
            out = subprocess.run(["dpkg-query", "-S", str(probe)], capture_output=True,
                                 text=True, timeout=20)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None, None
        if out.returncode == 0 and out.stdout:
            pkg = out.stdout.split(":")[0].split(",")[0].strip()
            ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                                 capture_output=True, text=True, timeout=20).stdout.strip()  # fmt: skip
            return pkg, ver or None
    return None, None


class SiteError(FileNotFoundError):
    """A site folder that cannot be used (the message says why and what to do)."""


class Site:
    """A documentation site rooted at ``root`` (module doc). Pages are parsed lazily.

    >>> Site("/nonexistent/docs")
    Traceback (most recent call last):
    ...
    lrlab.docsite.site.SiteError: no documentation site at /nonexistent/docs: name a folder of HTML pages (e.g. apt-get install python3.11-doc, then --site /usr/share/doc/python3.11-doc/html)
    """

    def __init__(self, root: str | Path, max_pages: int = 2000) -> None:
        self.root = Path(root).expanduser()
        files = sorted(self.root.rglob("*.html")) if self.root.is_dir() else []
        if not files:
            raise SiteError(
                f"no documentation site at {root}: name a folder of HTML pages (e.g. apt-get "
                "install python3.11-doc, then --site /usr/share/doc/python3.11-doc/html)"
            )
        cfg_path = self.root / CONFIG
        self.config: dict[str, Any] = json.loads(cfg_path.read_text()) if cfg_path.is_file() else {}
        exclude = tuple(self.config.get("exclude", ()))
        rel = [f.relative_to(self.root).as_posix() for f in files]
        self.paths = [p for p in rel if not p.startswith(exclude) or not exclude][:max_pages]
        self.package, self.package_version = _owner(self.root)
        name = self.config.get("name") or self.package or self.root.name
        if name in ("html", "api", "doc", "docs") and not self.config.get("name"):
            name = f"{self.root.parent.name}-{name}"
        self.name = re.sub(r"[^a-z0-9.-]+", "-", str(name).lower()).strip("-.") or "site"
        h = hashlib.sha256()
        for p in self.paths:
            h.update(f"{p}:{(self.root / p).stat().st_size}\n".encode())
        self.hash = h.hexdigest()[:12]
        self._pages: dict[str, Page] = {}
        self._css: dict[str, str] = {}

    def stylesheets(self, path: str, html: str) -> str:
        """The site's own stylesheets the page at ``path`` links for screens (``<link
        rel=stylesheet>`` to a file of the site; ``media`` absent, ``all`` or ``screen``)."""
        parts = []
        for tag in re.findall(r"<link\b[^>]*>", html, flags=re.I):
            attrs = {
                k.lower(): v for k, v in re.findall(r"""([\w-]+)\s*=\s*["']([^"']*)["']""", tag)
            }
            media = attrs.get("media", "all").strip().lower()
            href = urlsplit(attrs.get("href", ""))
            if ("stylesheet" not in attrs.get("rel", "").lower().split()
                    or media not in ("all", "screen") or href.scheme or href.netloc):  # fmt: skip
                continue
            css = posixpath.normpath(f"{posixpath.dirname(path)}/{unquote(href.path)}".lstrip("/"))
            if css not in self._css:
                f = self.root / css
                ok = not css.startswith("..") and f.is_file()
                self._css[css] = f.read_text(encoding="utf-8", errors="replace") if ok else ""
            parts.append(self._css[css])
        return "\n".join(parts)

    def page(self, path: str) -> Page:
        """The parsed page at ``path`` (relative to the root), elements its stylesheets hide
        marked (:func:`mark_hidden`)."""
        if path not in self._pages:
            html = self.raw(path)
            root = parse_html(html, self.stylesheets(path, html))
            titles = root.find("title")
            self._pages[path] = Page(path, clean(titles[0].text()) if titles else path, root)
        return self._pages[path]

    def size(self, path: str) -> int:
        """The page file's size in bytes."""
        return (self.root / path).stat().st_size

    def raw(self, path: str) -> str:
        """The page's HTML source."""
        return (self.root / path).read_text(encoding="utf-8", errors="replace")

    def pages(self) -> Iterator[Page]:
        """Every page, in path order."""
        for p in self.paths:
            yield self.page(p)

    def describe(self) -> dict[str, Any]:
        """What names the site in results: name, package and version, pages, folder hash."""
        return {"site": self.name, "site_package": self.package,
                "site_package_version": self.package_version, "site_pages": len(self.paths),
                "site_hash": self.hash}  # fmt: skip


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".html": "text/html; charset=utf-8",
                      ".js": "text/javascript; charset=utf-8"}  # fmt: skip

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base's name)
        pass


class Server:
    """``root`` served on 127.0.0.1 at an ephemeral port (a thread); ``url`` is its address.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, Server(d) as s:
    ...     s.url.startswith("http://127.0.0.1:")
    True
    """

    def __init__(self, root: str | Path) -> None:
        handler = functools.partial(_Handler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving and free the port."""
        with contextlib.suppress(Exception):
            self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "docsite"


def fixture_site() -> Site:
    """The tiny site the tests use (``tests/fixtures/docsite``: a few generated pages)."""
    return Site(FIXTURE)
