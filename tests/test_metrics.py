"""Metrics against values computed by hand on a small example."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens
from lrlib.eval.metrics import coverage, covers, reduction, step_metrics, summarize, target_status
from lrlib.reducers import get_reducer

TREE = "RootWebArea 'Shop'\n\t[1] link 'Home'\n\t[2] button 'Buy'\n\tStaticText 'Price'"
# characters: 18 + 1 + 16 + 1 + 17 + 1 + 19 = 73


def test_reduction_by_hand():
    assert reduction(20, 8) == pytest.approx(0.6)
    assert reduction(20, 20) == 0.0 and reduction(20, 0) == 1.0 and reduction(0, 0) == 0.0


def test_step_metrics_by_hand():
    step = Step(goal="Buy", tree=TREE, target_bids=("2",))
    text = "RootWebArea 'Shop'\n\t[2] button 'Buy'"  # 18 + 1 + 17 = 36 characters
    m = step_metrics(step, text, kept=[1, 3], tokens_before=20, tokens_after=8)
    assert m["reduction"] == pytest.approx(0.6)
    assert (m["chars_before"], m["chars_after"]) == (73, 36)
    assert m["reduction_chars"] == pytest.approx(1 - 36 / 73)
    assert (m["lines_before"], m["lines_after"], m["reduction_lines"]) == (4, 2, 0.5)
    assert (m["n_kept"], m["n_stubs"], m["target_status"], m["n_targets"]) == (2, 0, "ok", 1)
    assert m["covered"] is True and m["covered_visible"] is True


def test_stubs_show_the_bid_but_do_not_cover():
    step = Step(goal="g", tree=TREE, target_bids=("1",))
    m = step_metrics(
        step, "RootWebArea\n\t[1] link", kept=[], stubs=[2], tokens_before=1, tokens_after=1
    )
    assert m["covered"] is False and m["covered_visible"] is True


def test_statuses_and_exclusion():
    assert target_status(Step(goal="g", tree=TREE)) == "none"
    assert target_status(Step(goal="g", tree=TREE, target_bids=("1", "2"))) == "ok"
    assert target_status(Step(goal="g", tree=TREE, target_bids=("1", "99"))) == "missing"
    assert covers(Step(goal="g", tree=TREE, target_bids=("1", "99")), kept=[1, 2, 3, 4]) is None
    # every target of a multi-bid action (drag_and_drop) must survive
    both = Step(goal="g", tree=TREE, target_bids=("1", "2"))
    assert covers(both, [2]) is False and covers(both, [2, 3]) is True


def _frame():
    # reducer a: 4 ok steps (3 covered), 1 none, 1 missing; reducer b: 2 ok (both missed)
    return pd.DataFrame(
        {
            "reducer": ["a"] * 6 + ["b"] * 2,
            "target_status": ["ok", "ok", "ok", "ok", "none", "missing", "ok", "ok"],
            "covered": [True, True, False, True, None, None, False, False],
            "covered_visible": [True, True, True, True, None, None, False, True],
            "episode_success": [True, False, True, True, True, False, True, None],
            "reduction": [0.1, 0.2, 0.3, 0.4, 0.5, 0.9, 0.0, 1.0],
            "reduction_chars": [0.0] * 8,
            "reduction_lines": [0.0] * 8,
            "latency_s": [0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.010, 0.020],
        }
    )


def test_coverage_by_hand():
    f = _frame()
    a = f[f.reducer == "a"]
    assert coverage(a) == {"coverage": 0.75, "n": 4, "n_none": 1, "n_missing": 1}
    # successful episodes: ok steps 1, 3, 4 (covered, missed, covered)
    assert coverage(a, successful_only=True)["coverage"] == pytest.approx(2 / 3)
    assert coverage(a, "covered_visible")["coverage"] == 1.0


def test_summarize_by_hand():
    s = summarize(_frame()).set_index("reducer")
    a, b = s.loc["a"], s.loc["b"]
    assert a["n_steps"] == 6 and a["n_target"] == 4 and a["n_target_success"] == 3
    assert a["median_reduction"] == pytest.approx(0.35)  # median of .1 .2 .3 .4 .5 .9
    assert a["mean_reduction"] == pytest.approx(2.4 / 6)
    assert a["coverage"] == 0.75 and a["coverage_success"] == pytest.approx(2 / 3)
    assert (a["n_none"], a["n_missing"]) == (1, 1)
    assert a["median_latency_ms"] == pytest.approx(3.5)
    assert a["p95_latency_ms"] == pytest.approx(5.75)  # linear interpolation of 6 values
    assert b["coverage"] == 0.0 and b["coverage_visible"] == 0.5
    assert b["coverage_success"] == 0.0 and b["n_target_success"] == 1


def test_no_target_steps_give_nan_not_zero():
    f = _frame()
    only_none = f[f.target_status == "none"]
    assert math.isnan(coverage(only_none)["coverage"])


@given(st.integers(1, 10**6), st.integers(0, 10**6))
def test_reduction_is_at_most_one(before, after):
    r = reduction(before, after)
    assert r <= 1.0 and (r >= 0) == (after <= before)


def test_a_reducer_result_measures_consistently(real_trees):
    t = real_trees["webarena_magento"]
    step = Step(goal=t["goal"], tree=t["tree"], target_bids=())
    r = get_reducer("truncate", budget=500).reduce(step)
    m = step_metrics(step, r.text, r.kept, r.stubs, r.tokens_before, r.tokens_after)
    assert m["reduction"] == pytest.approx(r.reduction)
    assert m["tokens_after"] == count_tokens(r.text) <= 500
    assert m["lines_after"] == len(r.kept) and m["covered"] is None


# ---- evidence coverage -------------------------------------------------------------------

FORM = (
    "RootWebArea 'Order'\n"  # 1
    "\t[10] row ''\n"  # 2
    "\t\t[11] cell 'When do you need it ?'\n"  # 3
    "\t\t\t[12] LabelText ''\n"  # 4
    "\t\t\t\t[13] heading 'When do you need it ?'\n"  # 5
    "\t\t\t[14] textbox 'When do you need it ?', focused\n"  # 6
    "\t[20] row ''\n"  # 7
    "\t\t[21] cell 'Quantity'\n"  # 8
    "\t\t\t[22] StaticText 'Quantity'\n"  # 9
    "\t\t\t[23] combobox '' value='1', hasPopup='menu'\n"  # 10
    "\t\t\t\t[24] option '1', selected=True\n"  # 11
    "\t\t\t\t[25] option '2', selected=False\n"  # 12
    "\t[30] button ''\n"  # 13
    "\t\tStaticText '\\uf13e'\n"  # 14 (an icon glyph: not a name)
    "\t\tStaticText 'Save draft'\n"  # 15
    "\tStaticText 'Total: 2 items'\n"  # 16
    "\t[40] cell '$65.32'\n"  # 17
    "\t\tStaticText '$65.32'"  # 18
)


def _ev(action: str, goal: str = "Order it", tree: str = FORM) -> list[list[int]]:
    from lrlib.eval.metrics import evidence_status

    bids = tuple(b for b in ("14", "23", "30", "99") if f"'{b}'" in action)
    return evidence_status(Step(goal, tree, target_bids=bids, meta={"action": action}))


def test_evidence_of_each_action_kind_by_hand():
    # fill: the target and its label: the lines before it, in its row, named like the field
    # (the cell and the heading: either one shows the label)
    assert _ev("fill('14', 'next week')") == ("ok", [[6], [3, 5]])
    # select_option on an unnamed combobox: its option, and the nearest label line before it
    assert _ev("select_option('23', '2')") == ("ok", [[10], [12], [9]])
    assert _ev("select_option('23', ['1', '2'])") == ("ok", [[10], [11], [12], [9]])
    # click on an unnamed button: the first child line with text (icon glyphs skipped)
    assert _ev("click('30')") == ("ok", [[13], [15]])
    # an answer: the lines naming what it reports; restated goal text does not count
    assert _ev("send_msg_to_user('The total cost is $65.32.')") == ("ok", [[17, 18]])
    assert _ev("send_msg_to_user('It is $65.32', )", goal="Is it $65.32?") == ("none", [])
    # no element and no reported text: nothing to need; a bid not in the tree: missing
    assert _ev("scroll(0, 200)") == ("none", [])
    assert _ev("click('99')") == ("missing", [])


def test_evidence_coverage_needs_one_line_of_every_group():
    step = Step("Order it", FORM, target_bids=("23",), meta={"action": "select_option('23', '2')"})
    keep_target_only = step_metrics(step, "", kept=[10])
    assert keep_target_only["covered"] is True and keep_target_only["evidence_covered"] is False
    full = step_metrics(step, "", kept=[9, 10, 12])
    assert full["evidence_covered"] is True and full["n_evidence"] == 3
    # a stub of the option line shows its bid, not its name: not evidence
    stubbed = step_metrics(step, "", kept=[9, 10], stubs=[12])
    assert stubbed["evidence_covered"] is False
    answer = Step("g", FORM, meta={"action": "send_msg_to_user('It costs $65.32')"})
    m = step_metrics(answer, "", kept=[18])  # either of the two lines carries the value
    assert (m["target_status"], m["covered"], m["evidence_status"]) == ("none", None, "ok")
    assert m["evidence_covered"] is True


def test_summarize_reports_evidence_coverage():
    f = pd.DataFrame(
        {
            "reducer": ["a"] * 3, "reduction": [0.5] * 3, "reduction_chars": [0.5] * 3,
            "reduction_lines": [0.5] * 3, "target_status": ["ok", "ok", "none"],
            "covered": [True, True, None], "covered_visible": [True, True, None],
            "evidence_status": ["ok", "ok", "ok"], "evidence_covered": [True, False, True],
            "latency_s": [0.001] * 3,
        }
    )  # fmt: skip
    s = summarize(f).iloc[0]
    assert (s["coverage"], s["n_target"]) == (1.0, 2)
    assert s["evidence_coverage"] == pytest.approx(2 / 3) and s["n_evidence"] == 3


@pytest.fixture(scope="module")
def real_steps():
    from lrlib.data import dataset as data

    return data.load_steps()


def test_evidence_on_real_steps(real_steps):
    from lrlib.core.axtree import parse
    from lrlib.data.evidence import line_name
    from lrlib.eval.metrics import evidence_status

    kinds: dict[str, int] = {}
    for s in real_steps:
        status, groups = evidence_status(s)
        # the shipped dataset stores the same groups (the importer uses lrlib.data.evidence)
        assert groups == (s.meta["evidence_lines"] if status != "missing" else [])
        if status == "ok" and s.target_lines:
            assert [[n] for n in s.target_lines] == groups[: len(s.target_lines)]
        action = s.meta["action"] or ""
        tree = parse(s.tree)
        if action.startswith("select_option") and status == "ok":
            extra = [g for g in groups[1:] if tree.roles[g[0] - 1] == "option"]
            for g in extra:  # every option group names the chosen value
                assert all(line_name(tree.texts[n - 1]) in action.casefold() for n in g)
            kinds["option"] = kinds.get("option", 0) + bool(extra)
        if action.startswith("fill") and len(groups) > 1:
            field = line_name(tree.texts[groups[0][0] - 1])
            label = line_name(tree.texts[groups[1][0] - 1])
            assert not field or label == field  # a named field's label repeats its name
            assert groups[1][0] < groups[0][0]  # labels come before the field
            kinds["label"] = kinds.get("label", 0) + 1
        choice = s.target_lines and tree.roles[s.target_lines[0] - 1] in ("radio", "checkbox")
        if action.startswith("click") and choice:
            assert len(groups) == 2 and groups[1][0] < s.target_lines[0]  # question first
            kinds["group"] = kinds.get("group", 0) + 1
        if action.startswith("send_msg_to_user") and groups:
            for g in groups:
                assert all(line_name(tree.texts[n - 1]) in action.casefold() for n in g)
            kinds["answer"] = kinds.get("answer", 0) + 1
    # the recorded data exercises every rule: most select_option steps find their option,
    # most fills their label, every radio/checkbox click its question, most answers the
    # page text they report
    assert kinds["option"] >= 50 and kinds["label"] >= 15 and kinds["answer"] >= 10, kinds
    assert kinds["group"] >= 40, kinds


def test_a_choice_needs_the_question_it_answers():
    tree = (
        "RootWebArea 'Order'\n"  # 1
        "\t[5] group ''\n"  # 2
        "\t\t[6] heading 'Choose the colour'\n"  # 3
        "\t\t[7] radiogroup 'Mandatory Choose the colour'\n"  # 4
        "\t\t\t[8] radio 'Silver', checked='false'\n"  # 5
        "\t\t\t[9] radio 'Gold', checked='false'\n"  # 6
        "\t[10] group ''\n"  # 7
        "\t\t[11] Legend ''\n"  # 8
        "\t\t\t[12] heading 'Optional Software'\n"  # 9
        "\t\t[13] LayoutTable ''\n"  # 10
        "\t\t\t[14] checkbox 'Slack', checked='false'"  # 11
    )
    from lrlib.eval.metrics import evidence_status as status

    # a named group: its line or the heading its name repeats
    named = Step("g", tree, target_bids=("9",), meta={"action": "click('9')"})
    assert status(named) == ("ok", [[6], [3, 4]])
    # an unnamed group: the first named label line inside it, before the choice
    unnamed = Step("g", tree, target_bids=("14",), meta={"action": "click('14')"})
    assert status(unnamed) == ("ok", [[11], [9]])
    # a plain button in no group needs nothing more
    plain = Step("g", tree, target_bids=("6",), meta={"action": "click('6')"})
    assert status(plain) == ("ok", [[3]])
