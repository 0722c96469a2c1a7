"""truncate-agentlab against AgentLab's own fit_tokens + Trunkater (dynamic_prompting.py).

The peer prompt is the same text lrlib measures (goal, history, observation block, with the
instructions as fit_tokens' additional prompt); what is compared is AgentLab's loop: how
many shrinks, what each cuts, its notice, and what it returns when nothing fits.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peer_import import peer, recorded_steps, tree_lines

from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens
from lrlib.reducers.base import Output
from lrlib.reducers.baselines import DELETED_NOTE, ELEMENTS, AgentLabTruncate


def agentlab_fit(step: Step, reducer: AgentLabTruncate) -> tuple[str, bool]:
    """The observation block AgentLab's fit_tokens returns, and whether its prompt fits."""
    dp = peer().dp
    if reducer.element == "tree":
        block = dp.Trunkater(
            visible=True, shrink_speed=reducer.cut, start_trunkate_iteration=reducer.patience
        )
        block._prompt = step.axtree.text
    else:
        block = dp.AXTree(
            step.axtree.text, visible_elements_only=False, visible_tag=False, prefix="## "
        )
        block.shrink_speed, block.start_trunkate_iteration = reducer.cut, reducer.patience

    class Main(dp.Shrinkable):
        @property
        def _prompt(self) -> str:
            return AgentLabTruncate.prompt(step, block.prompt)

        def shrink(self) -> None:
            block.shrink()

    returned = dp.fit_tokens(
        Main(),
        reducer.max_prompt_tokens,
        max_iterations=reducer.max_rounds,
        model_name="openai/gpt-4o",
        additional_prompts=[reducer.instructions()],
    )
    budget = reducer.max_prompt_tokens - count_tokens(reducer.instructions()) - 1
    prefix = AgentLabTruncate.prompt(step, "")[:-1]
    assert returned.startswith(prefix) and returned.endswith("\n")
    return returned[len(prefix) : -1], count_tokens(returned) <= budget


def check_same(step: Step, reducer: AgentLabTruncate) -> Output:
    """Assert lrlib's result is AgentLab's; returns lrlib's."""
    out = reducer.select(step)
    block, fits = agentlab_fit(step, reducer)
    head, tail = ELEMENTS[reducer.element]
    assert out.extra["prompt_fits"] == fits
    if block == head + step.axtree.text + tail:  # nothing cut
        assert out.text == step.axtree.text and len(out.kept) == len(step.axtree)
        return out
    lines = block.splitlines()
    n_head = len(head.splitlines())
    assert lines[-1].startswith("... Deleted ")
    tree_part = lines[n_head:] if len(lines) - 1 >= n_head else lines[-1:]
    assert out.text == "\n".join(tree_part)
    assert len(out.kept) == sum(1 for t in tree_part[:-1] if t)  # "" only where emptied
    assert out.kept == list(range(1, len(out.kept) + 1))
    return out


def test_the_issue_reproduction_keeps_what_agentlab_keeps():
    tree = "\n".join(f"[{i}] link 'page {i}'" for i in range(1000))
    step = Step(goal="g", tree=tree)
    reducer = AgentLabTruncate(max_prompt_tokens=270, overhead_tokens=0)
    out = reducer.select(step)
    assert len(out.kept) == 41 and out.extra["prompt_fits"] is False
    assert out.extra["rounds"] == 20  # 20 shrinks, the last one never measured: 9 cuts
    assert out.text.splitlines()[-1] == DELETED_NOTE.format(n=1000 + 8 - 41)
    check_same(step, reducer)
    # GenericAgent's AXTree element: its 4 header lines are cut like tree lines
    axtree = AgentLabTruncate(max_prompt_tokens=270, overhead_tokens=0, element="axtree")
    assert len(axtree.select(step).kept) == 38
    check_same(step, axtree)


@pytest.mark.parametrize("element", sorted(ELEMENTS))
def test_recorded_steps_at_three_budgets(element):
    steps = recorded_steps() if element == "tree" else recorded_steps()[::2]
    assert len(steps) >= 50
    shapes = {"fits": 0, "cut": 0, "over": 0}
    for step in steps:
        tokens = count_tokens(step.axtree.text)
        for max_prompt, overhead in ((tokens + 400, 200), (tokens // 2 + 300, 300), (150, 0)):
            reducer = AgentLabTruncate(max_prompt, overhead, element=element)
            out = check_same(step, reducer)
            fits, cut = out.extra["prompt_fits"], len(out.kept) < len(step.axtree)
            shapes["over" if not fits else "cut" if cut else "fits"] += 1
    assert min(shapes.values()) >= 25, shapes  # every branch is exercised many times


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=tree_lines(),
    max_prompt=st.integers(0, 600),
    overhead=st.integers(0, 40),
    cut=st.sampled_from([0.1, 0.3, 0.5, 0.9]),
    patience=st.integers(0, 12),
    rounds=st.integers(1, 22),
    element=st.sampled_from(sorted(ELEMENTS)),
)
def test_generated_trees_and_knobs(lines, max_prompt, overhead, cut, patience, rounds, element):
    step = Step(goal="Open the page", tree="\n".join(lines), history=("click('12')",))
    reducer = AgentLabTruncate(max_prompt, overhead, cut, patience, rounds, element=element)
    check_same(step, reducer)
