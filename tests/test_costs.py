"""lrlib.eval.costs: the price table, the paper's break-even and its per-step extension."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens
from lrlib.eval import costs

AGENT = costs.Price("agent", "2025-01-01", input=2.0, cached_input=0.5, output=8.0)
SMALL = costs.Price("small", "2025-01-01", input=0.4, cached_input=0.1, output=1.6)


def test_shipped_price_table_is_complete_and_dated():
    table = costs.load_prices()
    assert list(table.columns[:6]) == list(costs.PRICE_COLUMNS)
    assert table["model"].is_unique or table.duplicated(["model", "date"]).sum() == 0
    assert (table["date"].str.match(r"^\d{4}-\d{2}-\d{2}$")).all()
    assert (table["source"].str.len() > 0).all()  # every price says where it comes from


def test_newest_price_wins_and_date_filter(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(
        "# comment line\n" + ",".join(costs.PRICE_COLUMNS) + "\n"
        "m,2024-01-01,4,1,8,old\n"
        "m,2025-01-01,2,0.5,8,new\n"
    )
    table = costs.load_prices(path)
    assert costs.get_price("m", table).input == 2.0
    assert costs.get_price("m", table, on="2024-06-30").source == "old"
    with pytest.raises(KeyError, match="models in the table: m"):
        costs.get_price("m", table, on="2023-01-01")


@pytest.mark.parametrize(
    "row, message",
    [
        ("m,2025-01-01,-1,0,1,x", ">= 0"),
        ("m,2025-01-01,1,2,1,x", "cached input dearer"),
    ],
)
def test_bad_price_rows_are_refused(tmp_path, row, message):
    path = tmp_path / "p.csv"
    path.write_text(",".join(costs.PRICE_COLUMNS) + "\n" + row + "\n")
    with pytest.raises(ValueError, match=message):
        costs.load_prices(path)


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("model,date,input_usd_per_mtok\nm,2025-01-01,1\n")
    with pytest.raises(ValueError, match="cached_input_usd_per_mtok"):
        costs.load_prices(path)


def test_hand_computed_step():
    # 10,000-token tree; retriever reads 12,000 (2,048 from cache), writes 200; agent reads 3,000
    frame = pd.DataFrame(
        {
            "tokens_before": [10_000],
            "tokens_after": [3_000],
            "retriever_prompt_tokens": [12_000],
            "retriever_cached_tokens": [2_048],
            "retriever_output_tokens": [200],
        }
    )
    c = costs.step_costs(frame, AGENT, SMALL).iloc[0]
    retriever = (9_952 * 0.4 + 2_048 * 0.1 + 200 * 1.6) / 1e6
    assert c.cost_full == pytest.approx(0.02)
    assert c.cost_retriever == pytest.approx(retriever)
    assert c.cost_reduced == pytest.approx(0.006 + retriever)
    assert c.alpha_star == pytest.approx(1 - retriever / 0.02)
    assert c.alpha_star_paper == pytest.approx(0.8)
    assert bool(c.pays_off) and bool(c.pays_off_paper)
    no_cache = costs.step_costs(frame, AGENT, SMALL, use_cache=False).iloc[0]
    assert no_cache.cost_retriever > c.cost_retriever


def test_paper_rule_is_the_special_case():
    """With the observation as the retriever's whole prompt and no output, the per-step
    break-even equals the paper's (C_L - C_S) / C_L on every step."""
    frame = pd.DataFrame({"tokens_before": [100, 5_000, 40_000]})
    c = costs.step_costs(frame, AGENT, SMALL)
    assert c["alpha_star"].tolist() == pytest.approx([0.8] * 3)


@settings(max_examples=60, deadline=None)
@given(
    before=st.integers(1, 200_000),
    after_share=st.floats(0, 1),
    overhead=st.integers(0, 5_000),
    produced=st.integers(0, 2_000),
    cached=st.integers(0, 4_000),
)
def test_alpha_star_is_exactly_where_saving_changes_sign(
    before, after_share, overhead, produced, cached
):
    prompt = before + overhead
    frame = pd.DataFrame(
        {
            "tokens_before": [before],
            "tokens_after": [before * after_share],
            "retriever_prompt_tokens": [prompt],
            "retriever_cached_tokens": [min(cached, prompt)],
            "retriever_output_tokens": [produced],
        }
    )
    c = costs.step_costs(frame, AGENT, SMALL).iloc[0]
    assert c.saving == pytest.approx(c.cost_full * (c.alpha_star - c.alpha), abs=1e-15)
    # without cache discounts, overhead and output can only lower the paper's bound
    plain = costs.step_costs(frame, AGENT, SMALL, use_cache=False).iloc[0]
    assert plain.alpha_star <= 0.8 + 1e-12
    assert c.alpha_star >= plain.alpha_star - 1e-12  # a cache hit never makes it worse


def test_cacheable_follows_the_provider_rule():
    assert [costs.cacheable(n) for n in (0, 1023, 1024, 1151, 1152, 5000)] == [
        0,
        0,
        1024,
        1024,
        1152,
        4992,
    ]


def test_retriever_prompt_tokens_on_a_real_episode(real_trees):
    t = next(iter(real_trees.values()))
    first = Step(goal=t["goal"], tree=t["tree"], step_id="e/0", meta={"episode": "e"})
    second = Step(
        goal=t["goal"],
        tree=t["tree"],
        history=("click('a1')",),
        step_id="e/1",
        meta={"episode": "e"},
    )
    other = Step(goal=t["goal"], tree=t["tree"], step_id="f/0", meta={"episode": "f"})
    table = costs.retriever_prompt_tokens([first, second, other])
    tree_tokens = count_tokens(t["tree"])
    # the numbered tree plus instructions: more than the tree itself
    assert (table["retriever_prompt_tokens"] > tree_tokens).all()
    # the first step of an episode shares nothing; the next one shares system + goal
    assert table["retriever_prefix_tokens"].tolist()[0] == 0
    assert 0 < table["retriever_prefix_tokens"].tolist()[1] < table["retriever_prompt_tokens"][1]
    assert table["retriever_prefix_tokens"].tolist()[2] == 0  # another episode
    assert (table["retriever_cached_tokens"] <= table["retriever_prefix_tokens"]).all()


def test_share_paying_off():
    c = costs.step_costs(
        pd.DataFrame({"tokens_before": [100, 1_000, 10_000], "tokens_after": [90, 100, 1_000]}),
        AGENT,
        SMALL,
        output_tokens=100,
    )
    share = costs.share_paying_off(c)
    assert share["paper"] == pytest.approx(2 / 3)  # alpha 0.9 > 0.8 on the first step
    assert share["extended"] == pytest.approx(2 / 3)
    assert share["n_steps"] == 3
    assert costs.share_paying_off(c, alpha=0.39)["extended"] == pytest.approx(2 / 3)
