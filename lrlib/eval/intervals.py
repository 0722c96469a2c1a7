"""95% confidence intervals by bootstrapping over episodes (clusters), paired comparisons.

Steps of one episode share a task, a page and often a tree, so they are not independent:
resampling steps would make intervals too narrow. Every function here resamples whole
*clusters* (``episode`` by default): each bootstrap replicate draws as many episodes as
there are, with replacement, and recomputes the statistic over all their steps. The draw is
vectorised (a multinomial weight per episode and replicate), so a whole results table of a
few thousand rows takes well under a second.

- :func:`bootstrap` - one statistic (``mean`` for rates such as coverage, ``median`` for
  reductions) per group of a tidy frame, with its interval and its n (steps, episodes).
- :func:`paired` - the difference between two reducers *on the same steps* (rows are
  matched by ``step_id``), bootstrapped over episodes: the right test for "is A better
  than B", since both share each step's difficulty.
- :func:`fmt` - ``"95.1% [93.0, 97.2] n=114/31"`` for tables.
- :func:`summary` - a whole results table at once: median reduction, target coverage and
  evidence coverage with intervals and n per reducer (and split, benchmark...);
  :func:`paired_table` - every reducer against a reference on shared steps;
  :func:`gap` - validation minus test per reducer (independent sides, not paired).

Percentile intervals; with fewer than 2 clusters the interval is undefined (NaN).

>>> import pandas as pd
>>> df = pd.DataFrame({"reducer": ["a"] * 6, "episode": [1, 1, 2, 2, 3, 3],
...                    "covered": [1, 1, 0, 1, 1, 1]})
>>> row = bootstrap(df, "covered", by="reducer").iloc[0]
>>> round(float(row["estimate"]), 3), int(row["n_steps"]), int(row["n_episodes"])
(0.833, 6, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "STATISTICS",
    "N_BOOT",
    "LEVEL",
    "shared_replicates",
    "mean_statistic",
    "median_statistic",
    "interval",
    "finish",
    "bootstrap",
    "paired",
    "fmt",
    "MEASURES",
    "summary",
    "gap",
    "paired_table",
]

STATISTICS = ("mean", "median")
N_BOOT = 2000
LEVEL = 0.95
_BLOCK_CELLS = 4_000_000  # weights computed at once (replicates x steps): ~32 MB


def _check_stat(stat: str) -> None:
    if stat not in STATISTICS:
        raise ValueError(f"unknown statistic {stat!r}; choose one of: {', '.join(STATISTICS)}")


def shared_replicates(
    k: int, statistics: Sequence[Any], n_boot: int = N_BOOT, seed: int = 0
) -> list[np.ndarray]:
    """Replicates of several statistics over the same ``k`` clusters from one stream of
    draws (the draws :func:`interval` makes for ``k`` clusters and this ``seed``): each of
    ``statistics`` maps a block of weights (rows x ``k``) to one value per row. Drawing
    the weights is what costs at many clusters; statistics of one size share them.

    >>> import numpy as np
    >>> values, clusters = np.array([1.0, 0.0, 1.0, 1.0]), np.array([0, 0, 1, 2])
    >>> (mean,) = shared_replicates(3, [lambda w: (w @ [1.0, 1, 1]) / (w @ [2.0, 1, 1])], 50)
    >>> bool((mean == _resampled(values, clusters, "mean", 50, 0)[1]).all())
    True
    """
    import numpy as np

    block = max(1, min(n_boot, _BLOCK_CELLS // max(k, 1)))
    out: list[list[np.ndarray]] = [[] for _ in statistics]
    rng = np.random.default_rng(seed)
    p = np.full(k, 1.0 / k)
    for i in range(0, n_boot, block):
        w = rng.multinomial(k, p, size=min(block, n_boot - i))
        for got, statistic in zip(out, statistics, strict=True):
            got.append(statistic(w))
    return [np.concatenate(got) for got in out]


def mean_statistic(sums: np.ndarray, counts: np.ndarray) -> Any:
    """For :func:`shared_replicates`: the mean of the values under cluster weights, from
    each cluster's sum and count of values (all a mean needs).

    >>> import numpy as np
    >>> f = mean_statistic(np.array([2.0, 1.0]), np.array([2.0, 2.0]))
    >>> f(np.array([[1, 1], [2, 0]])).tolist()
    [0.75, 1.0]
    """
    import numpy as np

    def statistic(w: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (w @ sums) / (w @ counts)

    return statistic


def median_statistic(values: np.ndarray, clusters: np.ndarray) -> Any:
    """For :func:`shared_replicates`: the weighted median of ``values`` (clusters coded
    0..k-1), sorted once, computed a few rows at a time (rows x steps stays small).

    >>> import numpy as np
    >>> f = median_statistic(np.array([3.0, 1.0, 2.0]), np.array([0, 1, 2]))
    >>> f(np.array([[1, 1, 1], [3, 0, 0]])).tolist()
    [2.0, 3.0]
    """
    import numpy as np

    order = np.argsort(values, kind="stable")
    sorted_values, sorted_clusters = values[order], clusters[order]
    rows = max(1, _BLOCK_CELLS // max(1, values.size))

    def medians(w: np.ndarray) -> np.ndarray:
        cum = np.cumsum(w[:, sorted_clusters].astype(float), axis=1)  # step weights, in order
        idx = (cum < cum[:, -1:] / 2.0).sum(axis=1)  # first index reaching half the weight
        return sorted_values[np.minimum(idx, len(sorted_values) - 1)]

    def statistic(w: np.ndarray) -> np.ndarray:
        return np.concatenate([medians(w[i : i + rows]) for i in range(0, len(w), rows)])

    return statistic


def interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray,
    stat: str = "mean",
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int = 0,
) -> dict[str, float | int]:
    """Point estimate, percentile interval and n of ``stat`` over ``values``, resampling
    whole ``clusters``. NaN values are dropped first (a step with no target, say).

    >>> r = interval([1, 1, 0, 1, 0, 1], ["a", "a", "b", "b", "c", "c"])
    >>> round(r["estimate"], 3), r["n_steps"], r["n_episodes"], 0 <= r["lo"] <= r["hi"] <= 1
    (0.667, 6, 3, True)
    """
    _check_stat(stat)
    return finish(*_resampled(values, clusters, stat, n_boot, seed), level)


def finish(
    est: float, reps: np.ndarray, n_steps: int, n_clusters: int, level: float = LEVEL
) -> dict[str, float | int]:
    """The row of :func:`interval` from a point estimate and its bootstrap replicates
    (percentile interval; NaN with fewer than 2 clusters).

    >>> import numpy as np
    >>> finish(0.5, np.linspace(0, 1, 101), 10, 4)["hi"]
    0.975
    """
    import numpy as np

    out: dict[str, float | int] = {"n_steps": n_steps, "n_episodes": n_clusters}
    if n_clusters < 2:  # no value (estimate NaN) or one episode: nothing to resample
        return {"estimate": est, "lo": float("nan"), "hi": float("nan"), **out}
    reps = reps[~np.isnan(reps)]
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [alpha, 1.0 - alpha])
    return {"estimate": est, "lo": float(lo), "hi": float(hi), **out}


def _resampled(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray,
    stat: str,
    n_boot: int,
    seed: int,
) -> tuple[float, np.ndarray, int, int]:
    """Point estimate, ``n_boot`` cluster-bootstrap replicates, n values and n clusters of
    ``stat`` over ``values`` with NaN values dropped first (no value: NaN estimate and
    replicates, 0, 0). Shared by :func:`interval` and :func:`gap`."""
    import numpy as np
    import pandas as pd

    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    if not keep.any():
        return float("nan"), np.full(n_boot, np.nan), 0, 0
    v = v[keep]
    codes, uniques = pd.factorize(pd.Series(np.asarray(clusters, dtype=object)[keep]))
    k = len(uniques)
    # replicates drawn and computed a block at a time (the same draws as all at once): the
    # weights (block x clusters) and the median's step weights (rows x steps) stay small
    # however many steps there are
    if stat == "median":
        statistic, point = median_statistic(v, codes), np.median(v)
    else:
        sums, counts = np.bincount(codes, weights=v, minlength=k), np.bincount(codes, minlength=k)
        statistic, point = mean_statistic(sums, counts.astype(float)), np.mean(v)
    reps = shared_replicates(k, [statistic], n_boot, seed)[0]
    return float(point), reps, int(v.size), int(k)


def bootstrap(
    frame: pd.DataFrame,
    value: str,
    by: str | Sequence[str] = "reducer",
    stat: str = "mean",
    cluster: str = "episode",
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per group of ``by``: ``estimate``, ``lo``, ``hi``, ``n_steps``, ``n_episodes``.

    ``value`` is a column (booleans count as 0/1; NaN rows, such as steps without a target,
    are left out and not counted in n).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"reducer": ["a", "a", "b", "b"], "episode": [1, 2, 1, 2],
    ...                    "reduction": [0.5, 0.7, 0.1, 0.3]})
    >>> bootstrap(df, "reduction", stat="median")[["reducer", "estimate", "n_steps"]].values.tolist()
    [['a', 0.6, 2], ['b', 0.2, 2]]
    """
    import pandas as pd

    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [value, cluster, *by] if c not in frame.columns]
    if missing:
        raise KeyError(
            f"no column(s) {missing}; the frame has: {', '.join(map(str, frame.columns))}"
        )
    rows = []
    frame = frame[list(dict.fromkeys([*by, value, cluster]))]  # groups copy only these
    for key, group in frame.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        values = pd.to_numeric(group[value].astype("float64"), errors="coerce").to_numpy()
        r = interval(values, group[cluster].to_numpy(), stat, n_boot, level, seed)
        rows.append({**dict(zip(by, key, strict=True)), **r})
    return pd.DataFrame(rows, columns=[*by, "estimate", "lo", "hi", "n_steps", "n_episodes"])


def paired(
    frame: pd.DataFrame,
    value: str,
    a: str,
    b: str,
    column: str = "reducer",
    key: str = "step_id",
    stat: str = "mean",
    cluster: str = "episode",
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int = 0,
) -> dict[str, float | int | str]:
    """``value`` of ``a`` minus ``value`` of ``b`` on the steps both have (matched by
    ``key``), with an interval from resampling episodes. An interval that excludes 0 means
    the difference is unlikely to be noise at this n.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"reducer": ["x"] * 4 + ["y"] * 4, "step_id": [1, 2, 3, 4] * 2,
    ...                    "episode": [1, 1, 2, 2] * 2, "covered": [1, 1, 1, 0, 1, 0, 0, 0]})
    >>> d = paired(df, "covered", "x", "y")
    >>> d["estimate"], d["n_steps"], d["n_episodes"]
    (0.5, 4, 2)
    """
    import pandas as pd

    def side(name: str) -> pd.DataFrame:
        part = frame[frame[column] == name]
        if part.empty:
            valid = ", ".join(map(str, frame[column].unique()))
            raise ValueError(f"no rows for {column}={name!r}; valid: {valid}")
        return part[[key, cluster, value]].drop_duplicates(key)

    both = side(a).merge(side(b), on=key, suffixes=("_a", "_b"))
    va = pd.to_numeric(both[f"{value}_a"].astype("float64"), errors="coerce")
    vb = pd.to_numeric(both[f"{value}_b"].astype("float64"), errors="coerce")
    r = interval((va - vb).to_numpy(), both[f"{cluster}_a"].to_numpy(), stat, n_boot, level, seed)
    return {"a": a, "b": b, "value": value, **r}


def fmt(row: Any, pct: bool = True, digits: int = 1) -> str:
    """``"95.1% [93.0, 97.2] n=114/31"`` (n = steps/episodes) from a row of :func:`bootstrap`.

    >>> fmt({"estimate": 0.951, "lo": 0.93, "hi": 0.972, "n_steps": 114, "n_episodes": 31})
    '95.1% [93.0, 97.2] n=114/31'
    >>> fmt({"estimate": 12.0, "lo": 10.0, "hi": 14.5, "n_steps": 9, "n_episodes": 3}, pct=False)
    '12.0 [10.0, 14.5] n=9/3'

    Where no interval can be drawn, it says why instead of printing ``[nan, nan]``:

    >>> fmt({"estimate": 1.0, "lo": float("nan"), "hi": float("nan"), "n_steps": 2, "n_episodes": 1})
    '100.0% [no interval: 1 episode] n=2/1'
    >>> fmt({"estimate": float("nan"), "lo": float("nan"), "hi": float("nan"), "n_steps": 0,
    ...      "n_episodes": 0})
    'n/a [no step to measure] n=0/0'
    """
    scale, unit = (100.0, "%") if pct else (1.0, "")

    def num(x: float) -> str:
        return "nan" if x != x else f"{x * scale:.{digits}f}"

    n = f"n={row['n_steps']}/{row['n_episodes']}"
    estimate, lo, hi = row["estimate"], row["lo"], row["hi"]
    if estimate != estimate:
        return f"n/a [no step to measure] {n}"
    if lo != lo or hi != hi:
        why = "1 episode" if row["n_episodes"] == 1 else "too few values to resample"
        return f"{num(estimate)}{unit} [no interval: {why}] {n}"
    return f"{num(estimate)}{unit} [{num(lo)}, {num(hi)}] {n}"


# ---- whole results tables -------------------------------------------------------------------

#: (column of an evaluation frame, statistic, output prefix) summarised by :func:`summary`
MEASURES = (
    ("reduction", "median", "reduction"),
    ("covered", "mean", "coverage"),
    ("evidence_covered", "mean", "evidence"),
)


def summary(
    frame: pd.DataFrame,
    by: str | Sequence[str] = "reducer",
    measures: Sequence[tuple[str, str, str]] = MEASURES,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per group: for each measure ``<prefix>``, ``<prefix>_lo``, ``<prefix>_hi``
    and ``<prefix>_n`` (steps) / ``<prefix>_episodes``: median token reduction, target
    coverage and evidence coverage by default, each bootstrapped over episodes. Measures
    whose column the frame lacks are skipped.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"reducer": ["a"] * 4, "episode": [1, 1, 2, 3],
    ...     "reduction": [0.2, 0.4, 0.6, 0.8], "covered": [1.0, None, 0.0, 1.0]})
    >>> row = summary(df).iloc[0]
    >>> float(row["reduction"]), round(float(row["coverage"]), 3), int(row["coverage_n"])
    (0.5, 0.667, 3)
    """
    import pandas as pd

    if getattr(frame, "folded_by_episode", False):  # a large evaluation (EpisodeStats)
        return frame.summary(by, measures, n_boot, seed)
    by = [by] if isinstance(by, str) else list(by)
    out: pd.DataFrame | None = None
    for column, stat, prefix in measures:
        if column not in frame.columns:
            continue
        b = bootstrap(frame, column, by=by, stat=stat, n_boot=n_boot, seed=seed)
        b = b.rename(
            columns={
                "estimate": prefix, "lo": f"{prefix}_lo", "hi": f"{prefix}_hi",
                "n_steps": f"{prefix}_n", "n_episodes": f"{prefix}_episodes",
            }
        )  # fmt: skip
        out = b if out is None else out.merge(b, on=by, how="left")  # same groups, same order
    return out if out is not None else pd.DataFrame(columns=by)


def gap(
    frame: pd.DataFrame,
    value: str,
    a: str = "validation",
    b: str = "test",
    column: str = "split",
    by: str = "reducer",
    stat: str = "mean",
    cluster: str = "episode",
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int = 0,
) -> pd.DataFrame:
    """Per ``by`` group: ``value`` on rows ``column == a`` minus on ``column == b`` (the
    generalisation gap, validation minus test), with an interval from bootstrapping the
    episodes of each side independently (the sides share no step, so nothing is paired).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"reducer": ["x"] * 6, "split": ["validation"] * 3 + ["test"] * 3,
    ...     "episode": [1, 2, 3, 4, 5, 6], "covered": [1, 1, 1, 1, 0, 0]})
    >>> g = gap(df, "covered").iloc[0]
    >>> round(float(g["gap"]), 3), int(g["n_a"]), int(g["n_b"]), bool(g["lo"] <= g["gap"] <= g["hi"])
    (0.667, 3, 3, True)
    """
    import numpy as np
    import pandas as pd

    _check_stat(stat)
    rows = []
    alpha = (1.0 - level) / 2.0
    for key, group in frame.groupby(by, sort=False):
        (ea, ra, na, ka), (eb, rb, nb, kb) = (
            _resampled(
                pd.to_numeric(side[value].astype("float64"), errors="coerce").to_numpy(),
                side[cluster].to_numpy(), stat, n_boot, seed + i,
            )
            for i, side in enumerate((group[group[column] == a], group[group[column] == b]))
        )  # fmt: skip
        diff = ra - rb
        diff = diff[~np.isnan(diff)]
        lo, hi = (
            np.quantile(diff, [alpha, 1 - alpha])
            if diff.size and min(ka, kb) > 1
            else (np.nan,) * 2
        )
        rows.append(
            {by: key, "value": value, a: ea, b: eb, "gap": ea - eb, "lo": float(lo),
             "hi": float(hi), "n_a": na, "episodes_a": ka, "n_b": nb, "episodes_b": kb}
        )  # fmt: skip
    return pd.DataFrame(rows)


def paired_table(
    frame: pd.DataFrame,
    value: str,
    reference: str,
    column: str = "reducer",
    stat: str = "mean",
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`paired` of every other value of ``column`` against ``reference``: one row
    each (``a`` minus ``reference`` on their shared steps, interval, n).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"reducer": ["x"] * 4 + ["y"] * 4, "step_id": [1, 2, 3, 4] * 2,
    ...                    "episode": [1, 1, 2, 2] * 2, "covered": [1, 1, 1, 0, 1, 0, 0, 0]})
    >>> paired_table(df, "covered", "x")[["a", "b", "estimate"]].values.tolist()
    [['y', 'x', -0.5]]
    """
    import pandas as pd

    others = [r for r in dict.fromkeys(frame[column]) if r != reference]
    rows = [
        paired(frame, value, r, reference, column=column, stat=stat, n_boot=n_boot, seed=seed)
        for r in others
    ]
    return pd.DataFrame(
        rows, columns=["a", "b", "value", "estimate", "lo", "hi", "n_steps", "n_episodes"]
    )
