"""Write the tiny documentation site the tests use: ``tests/fixtures/docsite/`` (a few
generated pages: a contents page with a search form, a settings table, API entries with
``Added in:`` lines, a long page whose facts sit at its end, a hidden table in a closed
``<details>``, a menu of links hidden by the site's stylesheet under a shown heading (as
Node.js's pages have) and one hidden by a page's own ``<style>``, and a search page whose
own script lists matching titles, offline).

    python benchmarks/build_docs_fixture.py   # rewrites tests/fixtures/docsite/
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "docsite"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey"]  # fmt: skip


def page(title: str, body: str, depth: int = 0) -> str:
    up = "../" * depth
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title} — '
            f'Fixture docs</title><link rel="stylesheet" href="{up}style.css"></head>\n<body>\n<nav><a href="{up}index.html">Contents</a> '
            f'| <a href="{up}search.html">Search</a></nav>\n<main>\n{body}\n</main>\n'
            "</body></html>\n")  # fmt: skip


def text(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n)).capitalize() + "."


def table(head: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{c}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>\n" for r in rows)
    return f"<table>\n<thead><tr>{h}</tr></thead>\n<tbody>\n{b}</tbody></table>"


PAGES = {
    "settings.html": "Settings reference",
    "api/widgets.html": "Widget API",
    "api/gadgets.html": "Gadget API",
    "guide/long.html": "The long guide",
    "guide/intro.html": "Introduction",
}


def build() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    settings = [[f"{w}_limit", str(10 * (i + 1)), ("int", "str", "bool")[i % 3]]
                for i, w in enumerate(WORDS[:8])]  # fmt: skip
    hidden = table(["Name", "Default"], [["secret_knob", "42"]])
    body = (f"<h1>Settings reference</h1>\n<p>{text(300, 1)}</p>\n"
            + table(["Name", "Default", "Type"], settings)
            + f"\n<details><summary>Internal settings</summary>{hidden}</details>\n")  # fmt: skip
    (OUT / "settings.html").write_text(page("Settings reference", body))
    for path, kind in (("api/widgets.html", "widget"), ("api/gadgets.html", "gadget")):
        # a menu the stylesheet hides (.picker), right under the shown <h1>: its link reads
        # as a "Label: value" line in the HTML, but a browser shows neither link nor line
        other = "gadgets" if kind == "widget" else "widgets"
        parts = [f"<h1>{kind.capitalize()} API</h1>",
                 f'<ul class="picker"><li><a href="{other}.html">Menu: the {other[:-1]} '
                 "page</a></li></ul>"]  # fmt: skip
        for i, w in enumerate(WORDS[:6]):
            parts.append(f'<h2 id="{kind}-{w}">{kind}.{w}(options)<a href="#{kind}-{w}">#</a></h2>'
                         f"\n<div><span>Added in: v{i + 1}.{len(w)}.0</span></div>\n"
                         f"<p>{text(60, i)}</p>")  # fmt: skip
        (OUT / path).parent.mkdir(exist_ok=True)
        (OUT / path).write_text(page(f"{kind.capitalize()} API", "\n".join(parts), depth=1))
    long_parts = ["<h1>The long guide</h1>"]
    for i in range(60):
        long_parts.append(f"<h2>Part {i + 1}</h2>\n<p>{text(40, i)}</p>")
    long_parts.append("<h2>Limits at the end</h2>\n<div><span>Stability: 2 - Stable</span></div>")
    long_parts.append(table(["Limit", "Value"], [["max_depth", "64"], ["max_width", "4096"]]))
    (OUT / "guide/long.html").parent.mkdir(exist_ok=True)
    (OUT / "guide/long.html").write_text(page("The long guide", "\n".join(long_parts), depth=1))
    intro = (f"<h1>Introduction</h1>\n<p>{text(60, 3)}</p>\n<p>See the "
             '<a href="../settings.html">settings reference</a>.</p>')  # fmt: skip
    (OUT / "guide/intro.html").write_text(page("Introduction", intro, depth=1))
    links = "\n".join(f'<li><a href="{p}">{t}</a></li>' for p, t in PAGES.items())
    anchors = "\n".join(
        f'<li><a href="api/{k}s.html#{k}-{w}">{k}.{w}</a></li>'
        for k in ("widget", "gadget")
        for w in WORDS[:6]
    )
    index = (
        "<style>.compact { display: none }</style>\n"
        '<ul class="compact"><li><a href="guide/long.html">Hidden shortcut</a></li></ul>\n'
        '<h1>Fixture documentation</h1>\n<form class="search" action="search.html" method="get">'
        '<input type="text" name="q" aria-label="Search"><input type="submit" value="Go"></form>\n'
        f"<h2>Contents</h2>\n<ul>\n{links}\n</ul>\n<h2>API index</h2>\n<ul>\n{anchors}\n</ul>"
    )
    (OUT / "index.html").write_text(page("Fixture documentation", index))
    titles = json.dumps([{"title": t, "url": p} for p, t in PAGES.items()])
    search = (
        '<h1>Search</h1>\n<form action="search.html" method="get"><input type="text" name="q" '
        'aria-label="Search"><input type="submit" value="Go"></form>\n<ul id="results"></ul>\n'
        f"<script>\nconst PAGES = {titles};\n"
        'const q = (new URLSearchParams(location.search).get("q") || "").toLowerCase();\n'
        "const words = q.split(/\\s+/).filter(Boolean);\n"
        "setTimeout(() => {\n  for (const p of PAGES) {\n"
        "    if (words.length && words.every(w => p.title.toLowerCase().includes(w))) {\n"
        '      const li = document.createElement("li"), a = document.createElement("a");\n'
        "      a.href = p.url; a.textContent = p.title; li.appendChild(a);\n"
        '      document.getElementById("results").appendChild(li);\n    }\n  }\n}, 200);\n'
        "</script>"
    )
    (OUT / "search.html").write_text(page("Search", search))
    (OUT / "style.css").write_text("body { font-family: sans-serif }\n"
                                   ".picker { display: none }\n"
                                   "@media print { nav { display: none } }\n")  # fmt: skip
    (OUT / "lrlib-site.json").write_text(json.dumps({"name": "fixture-docs",
                                                     "start": ["index.html"]}, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    build()
    print(f"written: {OUT}")
