"""lrlib.data.actions: the BrowserGym call in an agent's text, its canonical form and its bids."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.data.actions import (
    BID_PARAMS,
    KNOWN_ACTIONS,
    NO_BID_ACTIONS,
    action_bids,
    canonical_action,
    extract_code,
    parse_action,
    parse_code,
)
from lrlib.data.safepickle import load_path


@pytest.fixture(scope="module")
def raw_actions(traces_dir) -> list[str]:
    """Every recorded raw action text (step pickles with an action)."""
    out = []
    for f in sorted(traces_dir.glob("*/step_*.pkl.gz")):
        action = load_path(f).action
        if action:
            out.append(action)
    assert len(out) > 900
    return out


def test_real_actions_parse_when_their_last_block_is_a_call(raw_actions):
    blocks = re.compile(r"```(?:python\n|\n)?([^`]*)```")
    call = re.compile(r"\s*([a-z_]+)\((.*)\)\s*", re.S)
    n_calls = 0
    for raw in raw_actions:
        found = blocks.findall(raw)
        m = call.fullmatch(found[-1]) if found else None
        action = parse_action(raw)
        if m is None:
            assert action is None, raw[-200:]
            continue
        n_calls += 1
        assert action is not None, raw[-200:]
        assert action.names == (m[1],) and action.known
        if m[1] in BID_PARAMS:
            first = re.match(r"""\s*(['"])(.*?)\1""", m[2])
            assert first and action.bids[0] == first[2]
        else:
            assert action.bids == ()
        assert parse_code(action.canonical) == action  # canonical form is a fixed point
    assert n_calls > 900


def test_real_prose_without_a_block_has_no_action(raw_actions):
    prose = [r for r in raw_actions if "```" not in r]
    assert prose  # the recording has such answers (BrowserGym rejected them)
    assert all(parse_action(r) is None for r in prose)


@pytest.mark.parametrize(
    ("raw", "canonical", "bids"),
    [
        ('```click("a51")```', "click('a51')", ("a51",)),
        ("text\n```python\nclick('12', button=\"right\")\n```\n", "click('12', button='right')", ("12",)),
        ("```\nfill('a12', \"it's \\\"quoted\\\"\")\n```", "fill('a12', 'it\\'s \"quoted\"')", ("a12",)),
        ("```select_option('c48', [\"red\", 'blue'])```", "select_option('c48', ['red', 'blue'])", ("c48",)),
        ("```drag_and_drop('56', '498')```", "drag_and_drop('56', '498')", ("56", "498")),
        ("```drag_and_drop(to_bid='2', from_bid='1')```", "drag_and_drop(to_bid='2', from_bid='1')", ("1", "2")),
        ("```click(bid='b7')```", "click(bid='b7')", ("b7",)),
        ("```click(207)```", "click(207)", ("207",)),
        ("```upload_file(\"572\", \"r.pdf\")```", "upload_file('572', 'r.pdf')", ("572",)),
        ("```scroll(-50.2, -100.5)```", "scroll(-50.2, -100.5)", ()),
        ("```mouse_click(887.2, 68)```", "mouse_click(887.2, 68)", ()),
        ("```send_msg_to_user('done')```", "send_msg_to_user('done')", ()),
        ("```noop()```", "noop()", ()),
        ("```go_back()```", "go_back()", ()),
        ("```fill('1', 'a')\nclick('2')```", "fill('1', 'a')\nclick('2')", ("1", "2")),
        ("first ```click('1')``` then ```click('2')```", "click('2')", ("2",)),
        ("```click('1')``` and an unclosed ```click('3')", "click('1')", ("1",)),
        ("hover('a5')", "hover('a5')", ("a5",)),  # AgentLab stores the bare action
    ],
)  # fmt: skip
def test_examples(raw, canonical, bids):
    action = parse_action(raw)
    assert action is not None
    assert (action.canonical, action.bids) == (canonical, bids)
    assert canonical_action(raw) == canonical and action_bids(raw) == list(bids)


@pytest.mark.parametrize("name", sorted(BID_PARAMS))
def test_every_bid_function_names_its_bids(name):
    n = len(BID_PARAMS[name])
    args = ", ".join(f"'x{i}'" for i in range(n)) + ", 'value'"
    assert parse_action(f"```{name}({args})```").bids == tuple(f"x{i}" for i in range(n))


@pytest.mark.parametrize("name", sorted(NO_BID_ACTIONS))
def test_other_functions_name_no_bid(name):
    assert parse_action(f"```{name}('12', 3)```").bids == ()


def test_known_actions_cover_browsergym():
    assert {"click", "fill", "drag_and_drop", "scroll", "send_msg_to_user", "mouse_click"} <= (
        KNOWN_ACTIONS
    )
    assert parse_action("```teleport('a1')```").known is False


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "I will click the `Submit` button.",
        "```click(bid)```",  # a name, not a literal
        "```click('1') + 1```",
        "```x = click('1')```",
        "```import os```",
        "```page.click('1')```",
        "```click(*['1'])```",
        "```click(**{'bid': '1'})```",
        "```click('1'```",
        "```\n```",
    ],
)
def test_non_actions_give_none(raw):
    assert parse_action(raw) is None
    assert canonical_action(raw) is None and action_bids(raw) == []


def test_code_is_parsed_never_run(tmp_path):
    marker = tmp_path / "ran"
    raw = f"```click(__import__('os').system('touch {marker}'))```"
    assert parse_action(raw) is None
    assert not marker.exists()


def test_extract_code_drops_language_tag_only():
    assert extract_code("```python\nclick('1')\n```") == "click('1')"
    assert extract_code("```\nnoop()\n```") == "noop()"
    assert extract_code("```click('1')\nclick('2')```") == "click('1')\nclick('2')"


_bid = st.text(alphabet="abc0123456789", min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(bid=_bid, value=st.text(max_size=30), tag=st.sampled_from(["", "python", "py"]))
def test_quoting_style_does_not_change_the_canonical_form(bid, value, tag):
    single = f"```{tag}\nfill({bid!r}, {value!r})\n```"
    double = f"```{tag}\nfill({json.dumps(bid)}, {json.dumps(value, ensure_ascii=False)})\n```"
    a, b = parse_action(single), parse_action(double)
    assert a is not None and a == b
    assert a.bids == (bid,)
    assert a.canonical == f"fill({bid!r}, {value!r})"
    assert "\n" not in a.canonical  # one line, whatever the value holds


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_is_handled(text):
    action = parse_action(text)
    if action is not None:
        assert parse_code(action.canonical) == action
