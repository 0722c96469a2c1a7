"""The per-step memo of the research reducers (lrlab.reducers.memo): shared work is keyed on
everything it depends on, stays bounded, and cannot be written into."""

from __future__ import annotations

import numpy as np
import pytest

from lrlab.reducers.budget import page_costs
from lrlab.reducers.memo import SIZE, per_step
from lrlab.reducers.suspect import suspect_lines
from lrlib.core.step import Step

TREE = (
    "RootWebArea 'Shop'\n\t[3] link 'See all the deals of the week', url='http://evil.example/x'"
    "\n\t[4] button 'Buy'"
)  # a link named by a message: the guard reads its host


def test_the_page_url_is_part_of_the_key():
    """The guard reads the page's own host from meta["url"]: a link to that host is no
    cross-site link, so two steps differing only in their URL get their own verdicts."""
    other = suspect_lines(Step(goal="buy", tree=TREE, meta={"url": "http://shop.example/"}))
    own = suspect_lines(Step(goal="buy", tree=TREE, meta={"url": "http://evil.example/"}))
    assert other != own


def test_equal_steps_share_one_result_that_cannot_be_written():
    a, b = Step(goal="buy", tree=TREE), Step(goal="buy", tree=TREE, step_id="another")
    tokens, _ = page_costs(a, "o200k_base")
    assert page_costs(b, "o200k_base")[0] is tokens
    with pytest.raises(ValueError, match="read-only"):
        tokens[0] = 1


def test_the_memo_is_bounded_and_recomputes_what_it_dropped():
    calls = []

    @per_step
    def n_lines(step):
        calls.append(step.goal)
        return np.zeros(len(step.axtree))

    steps = [Step(goal=f"g{i}", tree=TREE) for i in range(SIZE + 5)]
    for s in steps:
        n_lines(s)
    n_lines(steps[-1])  # still kept
    assert len(calls) == SIZE + 5
    n_lines(steps[0])  # the least recently used went first
    assert len(calls) == SIZE + 6
