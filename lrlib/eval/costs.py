"""Does LineRetriever save money? The paper's break-even, per step, and what it leaves out.

The paper (appendix B) compares an agent reading the full observation (``N`` tokens at the
large model's input price ``C_L``) with a small retriever reading the same ``N`` tokens at
``C_S`` and the agent then reading ``alpha * N``: the retriever pays off when

    alpha <= (C_L - C_S) / C_L

Here ``alpha`` is measured per step (reduced / original observation tokens), and the
break-even is extended with what the paper leaves out: the retriever's own prompt (system
text, goal, history, instructions, the line numbers it adds), its output tokens (the
``<think>`` block and the answer) and cached-input prices (a provider caches the prefix a
call shares with the previous call of the episode). Prices come from a small dated table,
``data/prices.csv``, not from constants in code.

>>> agent = Price("big", "2025-01-01", input=2.0, cached_input=0.5, output=8.0)
>>> small = Price("small", "2025-01-01", input=0.4, cached_input=0.1, output=1.6)
>>> paper_breakeven(agent, small)
0.8
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lrlib import paths
from lrlib.core.prompts import PromptOptions, get_prompt
from lrlib.core.step import Step
from lrlib.core.tokens import DEFAULT_ENCODING
from lrlib.llm.completions import chat_tokens
from lrlib.settings import current

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PRICE_COLUMNS",
    "Price",
    "prices_path",
    "load_prices",
    "get_price",
    "paper_breakeven",
    "CACHE_MIN_TOKENS",
    "CACHE_INCREMENT",
    "cacheable",
    "retriever_prompt_tokens",
    "step_costs",
    "share_paying_off",
    "scenario_table",
    "pair_table",
    "observation_cost",
    "configuration_table",
]

PRICE_COLUMNS = ("model", "date", "input_usd_per_mtok", "cached_input_usd_per_mtok",
                 "output_usd_per_mtok", "source")  # fmt: skip


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
    usd = (float(row[c]) for c in PRICE_COLUMNS[2:5])  # input, cached input, output
    return Price(str(row["model"]), str(row["date"]), *usd, str(row["source"]))


def paper_breakeven(agent: Price, retriever: Price) -> float:
    """The paper's threshold ``(C_L - C_S) / C_L`` on input prices.

    >>> paper_breakeven(get_price("gpt-4.1"), get_price("gpt-4.1-mini"))
    0.8
    """
    if agent.input <= 0:
        raise ValueError(f"the agent model {agent.model!r} has no input price")
    return (agent.input - retriever.input) / agent.input


# ---- what a step costs -------------------------------------------------------------------

# OpenAI's prompt caching: prefixes of 1024 tokens or more, hit in steps of 128 tokens
CACHE_MIN_TOKENS = 1024
CACHE_INCREMENT = 128


def cacheable(
    prefix_tokens: int, minimum: int = CACHE_MIN_TOKENS, increment: int = CACHE_INCREMENT
) -> int:
    """Tokens of a shared prefix that a provider serves from cache (0 below ``minimum``).

    >>> cacheable(1000), cacheable(1100), cacheable(1300)
    (0, 1024, 1280)
    """
    if prefix_tokens < minimum:
        return 0
    return minimum + (prefix_tokens - minimum) // increment * increment


def _shared_prefix(a: str, b: str) -> str:
    """The common prefix of two texts, cut back to a line boundary (tokens agree there)."""
    common = os.path.commonprefix([a, b])
    return common[: common.rfind("\n") + 1] if len(common) < min(len(a), len(b)) else common


def retriever_prompt_tokens(
    steps: Iterable[Step],
    prompt: str = "paper",
    options: PromptOptions | None = None,
    encoding: str = DEFAULT_ENCODING,
) -> pd.DataFrame:
    """Exact prompt tokens the retriever reads per step, and the prefix shared with the
    previous step of the same episode (what a provider can serve from its cache).

    Columns: ``step_id, retriever_prompt_tokens, retriever_prefix_tokens,
    retriever_cached_tokens`` (the cacheable part of the prefix, see :func:`cacheable`).
    Steps of an episode must come in order (``meta["episode"]``; no episode: no sharing).

    >>> s = Step(goal="Buy milk", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", step_id="a")
    >>> from lrlib.core.tokens import count_tokens
    >>> t = retriever_prompt_tokens([s])
    >>> int(t.loc[0, "retriever_prompt_tokens"]) > count_tokens(s.tree)
    True
    """
    import pandas as pd

    variant = get_prompt(prompt)
    rows: list[dict[str, Any]] = []
    previous: tuple[Any, str] | None = None
    for step in steps:
        system, user = messages = variant.build(step.goal, step.axtree, step.history, options)
        total = chat_tokens(messages, encoding)
        episode = step.meta.get("episode") if step.meta else None
        prefix = 0
        if previous is not None and episode is not None and previous[0] == episode:
            shared = _shared_prefix(previous[1], user["content"])
            prefix = chat_tokens([system, {"content": shared}], encoding, reply=False)
        previous = (episode, user["content"])
        rows.append(
            {
                "step_id": step.step_id,
                "retriever_prompt_tokens": total,
                "retriever_prefix_tokens": prefix,
                "retriever_cached_tokens": cacheable(prefix),
            }
        )
    return pd.DataFrame(rows)


def step_costs(
    frame: pd.DataFrame,
    agent: Price,
    retriever: Price,
    output_tokens: float | Sequence[float] | None = None,
    use_cache: bool = True,
) -> pd.DataFrame:
    """Per-step cost of the observation with and without the retriever, and the break-even.

    ``frame`` needs ``tokens_before`` (the full observation's tokens); optional columns:
    ``tokens_after`` (the reduced observation), ``retriever_prompt_tokens`` (default: the
    observation alone, as in the paper), ``retriever_cached_tokens``,
    ``retriever_output_tokens`` (or the ``output_tokens`` argument; default 0). Adds, in USD
    per step: ``cost_full`` (agent reads the full tree), ``cost_retriever``,
    ``alpha_star_paper`` (the paper's threshold) and ``alpha_star`` (the break-even with the
    retriever's real prompt, output and cache: ``1 - cost_retriever / cost_full``, negative
    when the retriever costs more than the whole observation). With ``tokens_after``:
    ``alpha``, ``cost_reduced``, ``saving``, ``pays_off_paper`` and ``pays_off``.

    >>> import pandas as pd
    >>> a, s = get_price("gpt-4.1"), get_price("gpt-4.1-mini")
    >>> f = pd.DataFrame({"tokens_before": [1000], "tokens_after": [300]})
    >>> c = step_costs(f, a, s)
    >>> float(c.alpha_star[0]), float(c.alpha[0]), bool(c.pays_off[0])
    (0.8, 0.3, True)
    """
    out = frame.copy()
    if output_tokens is not None:
        out["retriever_output_tokens"] = output_tokens
    before = out["tokens_before"].astype(float)

    def column(name: str, default: pd.Series) -> pd.Series:
        return out[name].astype(float) if name in out else default

    prompt = column("retriever_prompt_tokens", before)
    cached = column("retriever_cached_tokens", 0.0 * before) if use_cache else 0.0 * before
    produced = column("retriever_output_tokens", 0.0 * before)
    out["cost_full"] = before * agent.input / 1e6
    out["cost_retriever"] = retriever.cost(prompt, produced, cached)
    out["alpha_star_paper"] = paper_breakeven(agent, retriever)
    out["alpha_star"] = 1.0 - out["cost_retriever"] / out["cost_full"].where(before > 0)
    if "tokens_after" in out:
        out["alpha"] = out["tokens_after"].astype(float) / before.where(before > 0)
        out["cost_reduced"] = (
            out["tokens_after"].astype(float) * agent.input / 1e6 + out["cost_retriever"]
        )
        out["saving"] = out["cost_full"] - out["cost_reduced"]
        out["pays_off_paper"] = out["alpha"] <= out["alpha_star_paper"]
        out["pays_off"] = out["saving"] >= 0
    return out


def share_paying_off(costs: pd.DataFrame, alpha: float | None = None) -> dict[str, float]:
    """Shares of steps where the retriever saves money: under the paper's rule and with the
    full accounting, for the measured ``alpha`` column or for one assumed ``alpha``.

    >>> import pandas as pd
    >>> a, s = get_price("gpt-4.1"), get_price("gpt-4.1-mini")
    >>> c = step_costs(pd.DataFrame({"tokens_before": [100, 1000]}), a, s, output_tokens=100)
    >>> share_paying_off(c, alpha=0.39)
    {'paper': 1.0, 'extended': 0.5, 'n_steps': 2}
    """
    alphas = costs["alpha"] if alpha is None else alpha
    paper = (alphas <= costs["alpha_star_paper"]).mean()
    extended = (alphas <= costs["alpha_star"]).mean()
    return {"paper": float(paper), "extended": float(extended), "n_steps": int(len(costs))}


def scenario_table(costs: pd.DataFrame, scenarios: dict[str, float]) -> pd.DataFrame:
    """One row per named kept fraction ``alpha``: the shares of steps that save money under
    the paper's rule and with the full accounting.

    >>> import pandas as pd
    >>> c = step_costs(pd.DataFrame({"tokens_before": [100, 1000]}), get_price("gpt-4.1"),
    ...                get_price("gpt-4.1-mini"), output_tokens=100)
    >>> scenario_table(c, {"paper": 0.39}).iloc[0].to_dict()
    {'scenario': 'paper', 'alpha': 0.39, 'share_paper_rule': 1.0, 'share_full_accounting': 0.5, 'n_steps': 2}
    """
    import pandas as pd

    rows = []
    for name, alpha in scenarios.items():
        share = share_paying_off(costs, alpha=alpha)
        rows.append(
            {
                "scenario": name,
                "alpha": alpha,
                "share_paper_rule": share["paper"],
                "share_full_accounting": share["extended"],
                "n_steps": share["n_steps"],
            }
        )
    return pd.DataFrame(rows)


def pair_table(
    frame: pd.DataFrame,
    prices: pd.DataFrame,
    agents: Sequence[str],
    retrievers: Sequence[str],
    alpha: float,
    output_tokens: float = 0.0,
) -> pd.DataFrame:
    """For every (agent, retriever) price pair: the paper's threshold, the median per-step
    threshold with the full accounting, and the share of steps that save money at ``alpha``.
    ``frame`` as for :func:`step_costs` (``tokens_before``, retriever prompt columns).

    >>> import pandas as pd
    >>> t = pair_table(pd.DataFrame({"tokens_before": [1000]}), load_prices(), ["gpt-4.1"],
    ...                ["gpt-4.1-mini"], alpha=0.39)
    >>> t[["agent", "retriever", "alpha_star_paper"]].values.tolist()
    [['gpt-4.1', 'gpt-4.1-mini', 0.8]]
    """
    import pandas as pd

    rows = []
    for a in agents:
        for r in retrievers:
            agent, small = get_price(a, prices), get_price(r, prices)
            c = step_costs(frame, agent, small, output_tokens=output_tokens)
            share = share_paying_off(c, alpha=alpha)
            rows.append(
                {
                    "agent": a,
                    "retriever": r,
                    "alpha_star_paper": paper_breakeven(agent, small),
                    "median_alpha_star": float(c["alpha_star"].median()),
                    f"share_saving_at_alpha_{alpha:.2f}": share["extended"],
                    "n_steps": share["n_steps"],
                }
            )
    return pd.DataFrame(rows)


def observation_cost(
    frame: pd.DataFrame,
    agent: Price,
    retriever: Price | None = None,
    embedding: Price | None = None,
    embedding_overlap: float = 100 / 90,
) -> pd.Series:
    """USD per step of showing the reduced observation: the agent reads ``tokens_after``;
    rows with ``retriever_prompt_tokens`` also pay the retriever (prompt, cached part and
    ``retriever_output_tokens``); rows of a reducer that embeds the tree (its class sets
    ``embeds_tree``, e.g. ``embedding``) pay for embedding it
    in overlapping chunks (``tokens_before * embedding_overlap``) at ``embedding``'s price.

    >>> import pandas as pd
    >>> f = pd.DataFrame({"reducer": ["full"], "tokens_before": [1000], "tokens_after": [1000]})
    >>> float(observation_cost(f, get_price("gpt-4.1")).iloc[0])
    0.002
    """
    cost = frame["tokens_after"].astype(float) * agent.input / 1e6
    if retriever is not None and "retriever_prompt_tokens" in frame:
        prompt = frame["retriever_prompt_tokens"].astype(float)
        cached = frame.get("retriever_cached_tokens", 0.0 * prompt).fillna(0).astype(float)
        produced = frame.get("retriever_output_tokens", 0.0 * prompt).fillna(0).astype(float)
        cost = cost + retriever.cost(prompt, produced, cached).fillna(0.0)
    if embedding is not None and "reducer" in frame:
        embedded = frame["reducer"].astype(str).map(_embeds_tree).astype(bool)
        tokens = embedded * frame["tokens_before"].astype(float)
        cost = cost + tokens * embedding_overlap * embedding.input / 1e6
    return cost


def _embeds_tree(label: str) -> bool:
    """Whether the reducer of a results label embeds the tree (False for unknown labels)."""
    from lrlib.reducers import describe

    try:
        return bool(getattr(describe(label), "embeds_tree", False))
    except KeyError:
        return False


def configuration_table(
    steps: Sequence[Step],
    agent: Price,
    retriever: Price,
    configs: dict[str, tuple[PromptOptions, float]],
    alpha: float,
    prompt: str = "paper",
) -> pd.DataFrame:
    """How the retriever's configuration moves the break-even: for each named
    ``(PromptOptions, output tokens per call)``, the median prompt tokens and overhead over
    the tree, the median per-step ``alpha*`` and the share of steps saving at ``alpha``.

    >>> s = [Step(goal="Buy", tree="RootWebArea 'Shop'\\n\\t[4] button 'Buy'", step_id="a")]
    >>> t = configuration_table(s, get_price("gpt-4.1"), get_price("gpt-4.1-mini"),
    ...                         {"no think": (PromptOptions(think=False), 10)}, alpha=0.39)
    >>> list(t.columns)[:3]
    ['configuration', 'view', 'think']
    """
    import pandas as pd

    from lrlib.core.tokens import count_lines

    before = pd.Series([count_lines(s.axtree.texts) for s in steps], dtype=float)
    rows = []
    for name, (options, produced) in configs.items():
        t = retriever_prompt_tokens(steps, prompt, options)
        frame = t.assign(tokens_before=before.to_numpy())
        c = step_costs(frame, agent, retriever, output_tokens=produced)
        rows.append(
            {
                "configuration": name,
                "view": options.view,
                "think": options.think,
                "median_prompt_tokens": float(t["retriever_prompt_tokens"].median()),
                "median_overhead_vs_tree": float(
                    (t["retriever_prompt_tokens"] / before.where(before > 0)).median()
                ),
                "output_tokens": produced,
                "median_alpha_star": float(c["alpha_star"].median()),
                f"share_saving_at_alpha_{alpha:.2f}": share_paying_off(c, alpha=alpha)["extended"],
                "n_steps": len(c),
            }
        )
    return pd.DataFrame(rows)
