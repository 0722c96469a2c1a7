"""``lrlib cache``: show the two answer caches (shipped and user); ``--refresh``
(maintainers) re-asks the embedded model for the pinned steps and rewrites the shipped one.

It sits in the report layer because a refresh runs LineRetriever (:mod:`lrlib.report.run`).
"""

from __future__ import annotations

from typing import Any

from lrlib import paths
from lrlib.llm.cache import ResponseCache


def add_arguments(parser: Any) -> None:
    """Options of ``lrlib cache``."""
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="maintainers: ask the embedded model again for the notebooks' default run "
        "(lrlib.report.run.default_steps, both answer formats) and rewrite the shipped cache "
        "data/cache/llm (slow: tens of seconds per answer)",
    )
    parser.add_argument("--limit", type=int, default=None, help="with --refresh: first N steps")


def plan(args: Any) -> str:
    """What ``lrlib cache`` is about to do."""
    if not args.refresh:
        return "counting the entries of the shipped and the user caches (instant)"
    from lrlib.report.run import DEFAULT_ANSWERS, DEFAULT_N_STEPS

    n = (args.limit or DEFAULT_N_STEPS) * len(DEFAULT_ANSWERS)
    return (
        f"asking the embedded model for {n} answers and rewriting {paths.shipped_cache_dir()} "
        f"(about 40 s an answer on 2 cores: ~{n * 40 / 60:.0f} min)"
    )


def run(args: Any) -> int:
    """Show both layers; with ``--refresh`` rewrite the shipped layer (maintainers only)."""
    if args.refresh:
        from lrlib.llm.errors import MODEL_ID
        from lrlib.reducers.lineretriever import LineRetriever, RetrieverConfig
        from lrlib.report.run import DEFAULT_ANSWERS, default_steps, run_steps

        shipped = ResponseCache(paths.shipped_cache_dir(), refresh=True)
        steps = default_steps()[: args.limit]
        retrievers = [  # the embedded model, asked (the command said so first)
            LineRetriever(RetrieverConfig(answer=a, model=MODEL_ID), cache=shipped, offline=False)
            for a in DEFAULT_ANSWERS
        ]
        run_steps(steps, retrievers)
    for name, root in (("shipped", paths.shipped_cache_dir()), ("user", paths.user_cache_dir())):
        cache = ResponseCache(root)
        size = cache.size_bytes() if root.is_dir() else 0
        n = len(cache)
        print(f"{name}: {root} ({n} answer{'' if n == 1 else 's'}, {size / 1e6:.1f} MB)")
    return 0
