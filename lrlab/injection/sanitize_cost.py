"""What sanitising page text (:mod:`lrlib.core.sanitize`) costs the offline reducers in
target coverage."""

from __future__ import annotations

from typing import Any

from lrlib.core.sanitize import sanitize_step

__all__ = [
    "coverage_cost",
]


def _kept(result: Any) -> tuple[list[int], list[int]]:
    return result.kept, result.stubs


def coverage_cost(steps: Any, reducers: Any = ("truncate", "bm25", "program")) -> Any:
    """What sanitising costs in target coverage: per reducer, on the steps with a target,
    the share covered on the raw and on the sanitised trees, and the steps lost / gained.
    ``changed``: steps whose tree sanitising changed at all (the others cannot differ).

    >>> from lrlib.core.step import Step
    >>> s = Step(goal="g", tree="RootWebArea 'x'\\n\\t[5] button '<think>'", target_bids=("5",))
    >>> coverage_cost([s], ["full"])[["reducer", "n_steps", "changed", "lost"]].values.tolist()
    [['full', 1, 1, 0]]
    """
    import pandas as pd

    from lrlib.eval.evaluation import resolve
    from lrlib.eval.metrics import covers

    rows = []
    for label, reducer in resolve(list(reducers)).items():
        raw, clean, changed = [], [], 0
        for step in steps:
            cleaned = sanitize_step(step)
            a = covers(step, *_kept(reducer.reduce(step)))
            if a is None:
                continue
            b = covers(cleaned, *_kept(reducer.reduce(cleaned)))
            raw.append(bool(a))
            clean.append(bool(b))
            changed += cleaned.meta["sanitized"] > 0
        n = len(raw)
        rows.append({
            "reducer": label, "n_steps": n, "changed": changed,
            "coverage_raw": sum(raw) / n if n else float("nan"),
            "coverage_sanitized": sum(clean) / n if n else float("nan"),
            "lost": sum(a and not b for a, b in zip(raw, clean, strict=True)),
            "gained": sum(b and not a for a, b in zip(raw, clean, strict=True)),
        })  # fmt: skip
    return pd.DataFrame(rows)
