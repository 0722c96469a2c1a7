"""An evaluation's summary folded frame by frame: per-episode sums and counts, not rows.

:func:`lrlib.eval.intervals.summary` bootstraps over episodes, and for a share (target,
evidence, horizon coverage) an episode enters every replicate only through the sum of its
values and their count: those two numbers per episode are sufficient statistics, and the
replicates from them are the replicates from the rows (same draws, same sums: identical
intervals). :class:`EpisodeStats` keeps them, per reducer, while frames of whole episodes
stream past (:func:`lrlab.scale.sharded.evaluate_file` adds each shard), plus the counts the
point summary needs (:func:`lrlib.eval.metrics.summarize`: statuses, successful
episodes). Medians have no such statistics: the values of the median measures (reduction in
tokens, characters and lines, latency) are kept as numbers, 36 bytes per step and reducer
with the step's episode code (36 MB for a million steps of one reducer); no text, no
frame.

``intervals.summary`` and ``metrics.summarize`` accept an :class:`EpisodeStats` in place of
a frame (grouped by reducer), so :func:`lrlib.report.tables.interval_table` prints its
table unchanged.

>>> import pandas as pd
>>> f = pd.DataFrame({"reducer": ["a"] * 4, "episode": ["e1", "e1", "e2", "e3"],
...     "reduction": [0.2, 0.4, 0.6, 0.8], "covered": [True, None, False, True],
...     "target_status": ["ok", "none", "ok", "ok"]})
>>> stats = EpisodeStats()
>>> stats.add(f.iloc[:2]); stats.add(f.iloc[2:])
>>> from lrlib.eval import intervals
>>> intervals.summary(stats).equals(intervals.summary(f))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: share columns folded per episode (sum of values, count of non-missing values)
SHARES = ("covered", "covered_visible", "evidence_covered", "evidence_covered_lines",
          "horizon_covered_1", "horizon_covered_2", "horizon_covered_3")  # fmt: skip
#: columns whose values are kept per step (medians, latency quantiles)
VALUES = ("reduction", "reduction_chars", "reduction_lines", "latency_s")
STATUSES = ("target_status", "evidence_status")


def _floats(series: pd.Series) -> np.ndarray:
    """A column as float64, booleans as 0/1, missing as NaN (as the bootstrap reads it)."""
    import pandas as pd

    return pd.to_numeric(series.astype("float64"), errors="coerce").to_numpy()


class _Reducer:
    """The folded statistics of one reducer."""

    def __init__(self) -> None:
        self.rows = 0
        self.sums: dict[str, np.ndarray] = {}  # share -> per-episode sum (global codes)
        self.counts: dict[str, np.ndarray] = {}  # share -> per-episode count of values
        self.success: dict[str, float] = {"sum": 0.0, "n": 0}  # covered, successful episodes
        self.statuses: dict[str, dict[str, int]] = {}
        self.values: dict[str, list[np.ndarray]] = {}  # per-step numbers, chunk by chunk
        self.codes: list[np.ndarray] = []  # per-step episode codes, same chunks

    def grow(self, n_episodes: int) -> None:
        import numpy as np

        for table in (self.sums, self.counts):
            for col, arr in table.items():
                if len(arr) < n_episodes:  # doubling: amortised constant per episode
                    extra = max(n_episodes, 2 * len(arr)) - len(arr)
                    table[col] = np.concatenate([arr, np.zeros(extra)])


class EpisodeStats:
    """Summary statistics of evaluation frames, added shard by shard (whole episodes or not:
    an episode's sums add up wherever its rows come). See the module docstring.

    :func:`lrlib.eval.intervals.summary` and :func:`lrlib.eval.metrics.summarize` hand an
    object with ``folded_by_episode`` set to its own :meth:`summary` and :meth:`summarize`
    (they are lrlib's and do not import this module of the research wing)."""

    folded_by_episode = True

    def __init__(self) -> None:
        self.episodes: dict[str, int] = {}  # name -> code, in order of first appearance
        self.reducers: dict[str, _Reducer] = {}
        self.columns: set[str] = set()

    def __len__(self) -> int:
        """Rows added (steps x reducers)."""
        return sum(r.rows for r in self.reducers.values())

    def add(self, frame: pd.DataFrame) -> None:
        """Fold the rows of an evaluation frame (columns ``reducer``, ``episode`` and any of
        :data:`SHARES`, :data:`VALUES`, :data:`STATUSES`, ``episode_success``)."""
        import numpy as np

        self.columns.update(frame.columns)
        for label, part in frame.groupby("reducer", sort=False):
            red = self.reducers.setdefault(str(label), _Reducer())
            codes = np.fromiter(
                (self.episodes.setdefault(str(e), len(self.episodes)) for e in part["episode"]),
                dtype=np.int32, count=len(part),
            )  # fmt: skip
            k = len(self.episodes)
            red.rows += len(part)
            for col in SHARES:
                if col not in part.columns:
                    continue
                v = _floats(part[col])
                known = ~np.isnan(v)
                red.sums.setdefault(col, np.zeros(k))
                red.counts.setdefault(col, np.zeros(k))
                red.grow(k)
                red.sums[col][:k] += np.bincount(codes[known], weights=v[known], minlength=k)
                red.counts[col][:k] += np.bincount(codes[known], minlength=k)
            if "covered" in part.columns and "episode_success" in part.columns:
                ok = part["episode_success"].fillna(False).astype(bool).to_numpy()
                v = _floats(part["covered"])[ok]
                red.success["sum"] += float(np.nansum(v))
                red.success["n"] += int((~np.isnan(v)).sum())
            for col in STATUSES:
                if col in part.columns:
                    counts = red.statuses.setdefault(col, {})
                    for status, n in part[col].value_counts(dropna=False).items():
                        counts[status] = counts.get(status, 0) + int(n)
            for col in VALUES:
                if col in part.columns:
                    red.values.setdefault(col, []).append(_floats(part[col]))
            red.codes.append(codes)

    # ---- reading it back -----------------------------------------------------------------

    def _check_by(self, by: str | Sequence[str]) -> None:
        keys = [by] if isinstance(by, str) else list(by)
        if keys != ["reducer"]:
            raise ValueError(f"episode statistics are grouped by reducer only, not by {keys}")

    def _values(self, red: _Reducer, col: str) -> np.ndarray:
        import numpy as np

        return np.concatenate(red.values[col]) if col in red.values else np.full(red.rows, np.nan)

    def summary(
        self,
        by: str | Sequence[str] = "reducer",
        measures: Sequence[tuple[str, str, str]] | None = None,
        n_boot: int | None = None,
        seed: int = 0,
    ) -> pd.DataFrame:
        """What :func:`lrlib.eval.intervals.summary` gives on the rows that were added (the
        same intervals: the same draws over the same per-episode sums)."""
        import numpy as np
        import pandas as pd

        from lrlib.eval import intervals

        self._check_by(by)
        measures = intervals.MEASURES if measures is None else measures
        n_boot = intervals.N_BOOT if n_boot is None else n_boot
        measures = [m for m in measures if m[0] in self.columns]
        # every (measure, reducer): its point estimate, n, clusters and statistic; those with
        # as many clusters share one stream of draws (the draws of intervals.interval)
        cells: dict[tuple[str, str], dict[str, Any]] = {}
        for column, stat, prefix in measures:
            for label, red in self.reducers.items():
                cells[prefix, label] = self._cell(red, column, stat)
        by_k: dict[int, list[dict[str, Any]]] = {}
        for cell in cells.values():
            if cell["k"] >= 2:
                by_k.setdefault(cell["k"], []).append(cell)
        for k, group in by_k.items():
            reps = intervals.shared_replicates(k, [c["statistic"] for c in group], n_boot, seed)
            for cell, r in zip(group, reps, strict=True):
                cell["reps"] = r
        out: pd.DataFrame | None = None
        for _, _, prefix in measures:
            rows = []
            for label in self.reducers:
                c = cells[prefix, label]
                r = intervals.finish(c["estimate"], c.get("reps", np.zeros(0)), c["n"], c["k"])
                rows.append({"reducer": label, prefix: r["estimate"], f"{prefix}_lo": r["lo"],
                             f"{prefix}_hi": r["hi"], f"{prefix}_n": r["n_steps"],
                             f"{prefix}_episodes": r["n_episodes"]})  # fmt: skip
            b = pd.DataFrame(rows)
            out = b if out is None else out.merge(b, on=["reducer"], how="left")
        return out if out is not None else pd.DataFrame(columns=["reducer"])

    def _cell(self, red: _Reducer, column: str, stat: str) -> dict[str, Any]:
        """Point estimate, n, clusters and replicate statistic of one measure of a reducer."""
        import numpy as np
        import pandas as pd

        from lrlib.eval import intervals

        if stat == "median":
            v = self._values(red, column)
            codes = np.concatenate(red.codes) if red.codes else np.zeros(0, np.int32)
            keep = ~np.isnan(v)
            v = v[keep]
            if not v.size:
                return {"estimate": float("nan"), "n": 0, "k": 0}
            clusters, uniques = pd.factorize(codes[keep])  # first appearance, as interval()
            return {"estimate": float(np.median(v)), "n": int(v.size), "k": len(uniques),
                    "statistic": intervals.median_statistic(v, clusters)}  # fmt: skip
        if stat != "mean":
            raise ValueError(f"unknown statistic {stat!r}; choose one of: mean, median")
        if column not in red.sums:
            raise KeyError(f"no per-episode sums of {column!r}; folded: {SHARES}")
        counts = red.counts[column]
        keep = counts > 0
        s, c = red.sums[column][keep], counts[keep]
        n = int(c.sum())
        if not n:
            return {"estimate": float("nan"), "n": 0, "k": 0}
        return {"estimate": float(s.sum()) / n, "n": n, "k": int(s.size),
                "statistic": intervals.mean_statistic(s, c)}  # fmt: skip

    def summarize(self, by: str | Sequence[str] = "reducer") -> pd.DataFrame:
        """What :func:`lrlib.eval.metrics.summarize` gives on the rows that were added."""
        import pandas as pd

        from lrlib.eval.metrics import HORIZONS

        self._check_by(by)
        rows = []
        for label, red in self.reducers.items():

            def share(col: str, red: _Reducer = red) -> tuple[float, int]:
                if col not in red.sums:
                    return float("nan"), 0
                n = int(red.counts[col].sum())
                return (float(red.sums[col].sum()) / n if n else float("nan")), n

            status = red.statuses.get("target_status", {})
            cov, n_target = share("covered")
            n_succ = red.success["n"]
            lat = pd.Series(self._values(red, "latency_s")).astype(float) * 1000
            reduction = pd.Series(self._values(red, "reduction"))
            row: dict[str, Any] = {
                "reducer": label,
                "n_steps": red.rows,
                "median_reduction": float(reduction.median()),
                "mean_reduction": float(reduction.mean()),
                "median_reduction_chars": float(
                    pd.Series(self._values(red, "reduction_chars")).median()
                ),
                "median_reduction_lines": float(
                    pd.Series(self._values(red, "reduction_lines")).median()
                ),
                "coverage": cov,
                "n_target": n_target,
                "coverage_success": (red.success["sum"] / n_succ if n_succ else float("nan"))
                if "episode_success" in self.columns
                else float("nan"),
                "n_target_success": n_succ,
                "coverage_visible": share("covered_visible")[0],
            }
            if "evidence_status" in self.columns:
                row["evidence_coverage"], row["n_evidence"] = share("evidence_covered")
                if "evidence_covered_lines" in self.columns:
                    row["evidence_coverage_lines"] = share("evidence_covered_lines")[0]
                for k in HORIZONS:
                    col = f"horizon_covered_{k}"
                    if col in self.columns:
                        row[f"horizon_coverage_{k}"], row[f"n_horizon_{k}"] = share(col)
            else:
                row.update({"evidence_coverage": float("nan"), "n_evidence": 0})
            row["n_none"] = status.get("none", 0)
            row["n_missing"] = status.get("missing", 0)
            row["median_latency_ms"] = float(lat.median())
            row["p95_latency_ms"] = float(lat.quantile(0.95))
            rows.append(row)
        return pd.DataFrame(rows)
