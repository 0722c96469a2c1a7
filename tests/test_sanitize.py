"""lrlib.core.sanitize: tag-like page text neutralised, lines and numbers unchanged."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.injection.inject import LEGACY, REALISTIC, inject
from lrlab.injection.injection_sets import pinned_set, realistic_set
from lrlib.core.ranges import AnswerParseError, parse_answer
from lrlib.core.sanitize import neutralise, sanitize_reduction, sanitize_step, sanitize_tree
from lrlib.data import dataset as data
from lrlib.reducers import get_reducer

CONTROL = re.compile(r"<\s*/?\s*(think|answer|action)\s*>|\"ranges\"", re.IGNORECASE)


@pytest.fixture(scope="module")
def steps():
    return data.load_steps()


def test_real_pages_keep_their_lines(steps):
    """Every recorded tree keeps its line count, its structure and its targets."""
    changed = 0
    for step in steps:
        clean = sanitize_step(step)
        assert len(clean.axtree) == len(step.axtree)
        assert clean.axtree.depths == step.axtree.depths and clean.axtree.bids == step.axtree.bids
        assert clean.target_lines == step.target_lines
        changed += clean.meta["sanitized"] > 0
    assert changed < len(steps) // 4  # real pages rarely carry anything tag-like


@pytest.mark.parametrize("attack", [*LEGACY, *REALISTIC, "fake-json"])
def test_every_attack_loses_its_control_syntax(steps, attack):
    step = next(s for s in steps if s.target_lines)
    item = inject(step, [(attack, "top")])
    text, n = sanitize_tree(item.step.tree)
    attack_lines = [text.split("\n")[k - 1] for k in item.injected]
    assert not any(CONTROL.search(line) for line in attack_lines)
    if attack in ("fake-tags", "fake-json", "fake-lines", "modal-focus", "modal-long"):
        assert n > 0
    # the planted answer, copied from the sanitised page, is no answer at all
    for line in attack_lines:
        with pytest.raises(AnswerParseError):
            parse_answer(line, len(item.step.axtree))


def test_reduction_text_is_neutralised_and_nothing_else_changes(steps):
    item = realistic_set(steps=steps)[0]
    r = get_reducer("full").reduce(item.step)
    s = sanitize_reduction(r)
    assert s.kept == r.kept and s.text.count("\n") == r.text.count("\n")
    assert "</think>" in r.text and "</think>" not in s.text and s.extra["sanitized"] >= 3


def test_the_measured_set_is_fully_neutralised(steps):
    """Every control-like span of the pinned attacked set is neutralised."""
    for item in pinned_set("core", steps=steps) + realistic_set(steps=steps):
        text, _ = sanitize_tree(item.step.tree)
        assert not CONTROL.search(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>/ thinkanswer{}\"rg:0123\n'acto")), max_size=80))
def test_neutralise_is_idempotent_and_keeps_lines(text):
    once, _ = sanitize_tree(text)
    twice, n = sanitize_tree(once)
    assert twice == once and n == 0
    assert once.count("\n") == text.count("\n")
    assert not re.search(r"<\s*/?\s*(think|answer|action)\b[^<>\n]*>", once, re.IGNORECASE)


def test_plain_text_is_untouched():
    assert neutralise("3 < 4, 5 > 2, a <b>bold</b> time 10: 30") == (
        "3 < 4, 5 > 2, a <b>bold</b> time 10: 30",
        0,
    )
