"""A :class:`Selection`: the line ranges a retriever kept, sorted, disjoint, 1-based and
inclusive; what :func:`lrlib.core.ranges.parse_answer` returns and views and pruning read.

>>> sel = Selection.from_ranges([(5, 3), (4, 9)], n_lines=6)
>>> sel, sel.lines()
(Selection([(3, 6)], n_lines=6), [3, 4, 5, 6])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

HUGE = 10**18  # numbers longer than 18 digits are treated as "beyond any tree"


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
        i = bisect_right(self.ranges, (number, HUGE)) - 1
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
