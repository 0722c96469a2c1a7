"""lrlib's overhead per step on a documentation page of about 10,000 tree lines (issue 34).

    python benchmarks/bench_docs_overhead.py                      # Node.js 18's crypto page
    python benchmarks/bench_docs_overhead.py --site /usr/share/doc/nodejs/api --page fs.html

Renders ``--page`` of the site once in Debian's chromium (BrowserGym, as ``lrlib live --env
docs`` does; the tree is cached under the work dir), then times lrlib's whole share of a
step (:class:`lrlab.agent.preprocess.ObsPreprocessor`: parse, reduce, number, count tokens)
for every study reducer, ``--repeats`` times each, with a goal of a generated task of that
page (any report task's wording when the page has none). Prints the median and fastest
time per reducer with the tree size, the load average and the chromium build (a loaded
machine slows every figure: say so beside them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

SITE = "/usr/share/doc/nodejs/api"


def render(site_root: str, page: str) -> tuple[str, str, str]:
    """``(tree, goal, browser_build)`` of ``page`` (cached per site hash and page)."""
    from lrlab.agent.preprocess import flatten
    from lrlab.docsite.env import DocsEnv
    from lrlab.docsite.site import Site
    from lrlab.docsite.tasks import load_tasks
    from lrlib.paths import work_dir

    site = Site(site_root)
    tasks = [t for ts in load_tasks(site).values() for t in ts]
    on_page = [t for t in tasks if t.start == page and t.family in ("report", "deep")]
    goal = (on_page or [t for t in tasks if t.family == "report"])[0].goal
    cache = work_dir() / "docsite" / f"tree-{site.name}-{site.hash}-{page.replace('/', '_')}.json"
    if cache.is_file():
        got = json.loads(cache.read_text())
        return got["tree"], goal, got["browser_build"]
    with DocsEnv(site) as mw:
        family = next(f for f, ts in mw.tasks.items() if ts)
        env = mw.env(family)
        env.reset(seed=0)
        obs, *_ = env.step(f"goto({mw.base + page!r})")
        tree = mw.canonical(flatten(obs))
        build = mw.browser_build
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"tree": tree, "browser_build": build}))
    return tree, goal, build


def main(argv: list[str] | None = None) -> int:
    from lrlab.agent.preprocess import ObsPreprocessor
    from lrlab.docsite.site import SiteError
    from lrlab.docsite.study import STUDY_REDUCERS
    from lrlab.reducers import memo
    from lrlib.eval.evaluation import parse_spec

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--site", default=SITE, help="the site's root folder")
    p.add_argument("--page", default="crypto.html", help="a page of the site (about 10k lines)")
    p.add_argument("--reducers", default=";".join(STUDY_REDUCERS), help="';'-separated specs")
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args(argv)
    try:
        tree, goal, build = render(args.site, args.page)
    except SiteError as e:
        print(f"bench_docs_overhead: {e}", file=sys.stderr)
        return 2
    n_lines = tree.count("\n") + 1
    print(f"{args.page}: {n_lines} lines; {build}; load average {os.getloadavg()}")
    out = {}
    for spec in [s for s in args.reducers.split(";") if s]:
        name, params = parse_spec(spec)
        pre = ObsPreprocessor(name, **params)
        obs = {"goal": goal, "axtree_txt": tree}
        pre(obs)  # warm: models and lexicons load once
        times = []
        for _ in range(args.repeats):
            memo.clear()  # every repetition a new step: nothing of the last one kept
            t = time.perf_counter()
            pre(obs)
            times.append(1e3 * (time.perf_counter() - t))
        out[spec] = {"median_ms": statistics.median(times), "min_ms": min(times)}
        print(
            f"  {spec:24s} median {out[spec]['median_ms']:7.1f} ms   fastest {min(times):7.1f} ms"
        )
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
