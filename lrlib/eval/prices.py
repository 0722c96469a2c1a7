"""Model prices from a small dated table (``data/prices.csv``), not from constants in code,
and the paper's break-even (appendix B): the retriever pays off when the kept fraction
``alpha <= (C_L - C_S) / C_L``. What a step costs is :mod:`lrlib.eval.costs`.

>>> agent = Price("big", "2025-01-01", input=2.0, cached_input=0.5, output=8.0)
>>> small = Price("small", "2025-01-01", input=0.4, cached_input=0.1, output=1.6)
>>> paper_breakeven(agent, small)
0.8
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lrlib import paths
from lrlib.settings import current

if TYPE_CHECKING:
    import pandas as pd

PRICE_COLUMNS = (
    "model",
    "date",
    "input_usd_per_mtok",
    "cached_input_usd_per_mtok",
    "output_usd_per_mtok",
    "source",
)


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model, as published on ``date``."""

    model: str
    date: str
    input: float
    cached_input: float
    output: float
    source: str = ""

    def cost(
        self, input_tokens: float, output_tokens: float = 0, cached_tokens: float = 0
    ) -> float:
        """USD for one call; ``cached_tokens`` are the part of ``input_tokens`` read from cache.

        >>> Price("m", "2025-01-01", 2.0, 0.5, 8.0).cost(1_000_000, 0, cached_tokens=500_000)
        1.25
        """
        fresh = input_tokens - cached_tokens
        return (
            fresh * self.input + cached_tokens * self.cached_input + output_tokens * self.output
        ) / 1e6


def prices_path() -> Path:
    """The price table: ``$LRLIB_PRICES``, else ``<data>/prices.csv``, else the one shipped
    in the repository (so another ``LRLIB_DATA_DIR`` needs no copy of it).

    >>> prices_path().name
    'prices.csv'
    """
    value = current().prices
    if value is not None:
        return value
    local = paths.data_dir() / "prices.csv"
    return local if local.is_file() else paths.REPO_DIR / "data" / "prices.csv"


def load_prices(path: str | Path | None = None) -> pd.DataFrame:
    """The dated price table (``#`` lines are comments); checks columns and values.

    >>> "gpt-4.1-mini" in set(load_prices()["model"])
    True
    """
    import pandas as pd

    path = Path(path) if path is not None else prices_path()
    table = pd.read_csv(path, comment="#", skipinitialspace=True, dtype={"model": str})
    missing = [c for c in PRICE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {list(PRICE_COLUMNS)}")
    table["date"] = pd.to_datetime(table["date"], format="%Y-%m-%d").dt.strftime("%Y-%m-%d")
    numbers = list(PRICE_COLUMNS[2:5])
    table[numbers] = table[numbers].astype(float)
    if (table[numbers] < 0).to_numpy().any():
        raise ValueError(f"{path}: prices must be >= 0")
    bad = table[table["cached_input_usd_per_mtok"] > table["input_usd_per_mtok"]]
    if len(bad):
        raise ValueError(f"{path}: cached input dearer than input for {list(bad['model'])}")
    return table.fillna({"source": ""}).reset_index(drop=True)


def get_price(model: str, prices: pd.DataFrame | None = None, on: str | None = None) -> Price:
    """The newest price of ``model`` (published on or before ``on``, an ISO date, if given).

    >>> get_price("gpt-4.1").input
    2.0
    >>> get_price("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    KeyError: "no price for 'nope'; models in the table: ..."
    """
    table = load_prices() if prices is None else prices
    rows = table[table["model"] == model]
    if on is not None:
        rows = rows[rows["date"] <= on]
    if rows.empty:
        valid = ", ".join(sorted(set(table["model"])))
        raise KeyError(
            f"no price for {model!r}{f' on {on}' if on else ''}; models in the table: {valid}"
        )
    row = rows.sort_values("date").iloc[-1]
    return Price(
        str(row["model"]),
        str(row["date"]),
        float(row["input_usd_per_mtok"]),
        float(row["cached_input_usd_per_mtok"]),
        float(row["output_usd_per_mtok"]),
        str(row["source"]),
    )


def paper_breakeven(agent: Price, retriever: Price) -> float:
    """The paper's threshold ``(C_L - C_S) / C_L`` on input prices.

    >>> paper_breakeven(get_price("gpt-4.1"), get_price("gpt-4.1-mini"))
    0.8
    """
    if agent.input <= 0:
        raise ValueError(f"the agent model {agent.model!r} has no input price")
    return (agent.input - retriever.input) / agent.input
