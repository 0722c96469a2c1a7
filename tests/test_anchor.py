"""The ``anchor`` reducer (issue 34, :mod:`lrlab.reducers.anchor`) and the documentation
policy's click retry: what the policy needs on long pages is kept (a table row with its
header, the ``Label: value`` line under a named heading, a named link among many), on
hand-written trees and on random ones (hypothesis); the live check on trees chromium
rendered is in ``tests/test_docsite.py``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.docsite.policy import DocsScriptedPolicy
from lrlab.reducers.anchor import Anchor, goal_phrases, phrase_lines
from lrlib import Step, get_reducer


def _page(n_rows: int = 400) -> str:
    """A long reference page: a link list, a table of ``n_rows`` rows, sections."""
    lines = ["RootWebArea 'Reference'", "\t[1] navigation ''"]
    lines += [f"\t\t[{10 + i}] link 'entry{i}()'" for i in range(n_rows)]
    lines += ["\t[900] table ''", "\t\t[901] row ''", "\t\t\t[902] columnheader 'Name'",
              "\t\t\t[903] columnheader 'Default'"]  # fmt: skip
    for i in range(n_rows):
        b = 1000 + 4 * i
        lines += [f"\t\t[{b}] row ''", f"\t\t\t[{b + 1}] cell ''", f"\t\t\t\tStaticText 'opt{i}'",
                  f"\t\t\t[{b + 2}] cell '{i * 7}'"]  # fmt: skip
    for i in range(n_rows // 4):
        lines += [f"\t[{5000 + i}] heading 'Section {i} ¶'",
                  "\t\tStaticText 'Some prose about this section and its options.'",
                  f"\t\tStaticText 'Added in: v{i}.0'"]  # fmt: skip
    return "\n".join(lines)


def _act(reducer, goal: str, tree: str, history: tuple[str, ...] = ()):
    from lrlab.agent.preprocess import line_numbers

    r = reducer.reduce(Step(goal=goal, tree=tree, history=history))
    nums = line_numbers(r.text, r.kept, r.stubs, len(Step(goal=goal, tree=tree).axtree))
    return DocsScriptedPolicy().act(goal, history, r.text, nums), r


def test_anchor_keeps_what_each_family_needs_at_a_large_reduction():
    tree = _page()
    anchor = get_reducer("anchor")
    goals = {
        'In the table on this page, report the "Default" in the row "opt321".': "send_msg_to_user('2247')",
        'Under the heading "Section 77" on this page, report the "Added in".': "send_msg_to_user('v77.0')",
        'Open the page linked as "entry250()".': "click('260')",
    }  # fmt: skip
    for goal, action in goals.items():
        full = DocsScriptedPolicy().act(goal, (), tree)
        got, r = _act(anchor, goal, tree)
        assert full.action == action and got.action == action, (goal, got.raw)
        assert 1 - r.tokens_after / r.tokens_before > 0.9
    # BM25 alone loses the table's value (it shares no word with the goal) and the header
    # naming the key column: the policy misreads the row or stops
    goal, action = next(iter(goals.items()))
    got, _ = _act(get_reducer("bm25", top_k=5), goal, tree)
    assert got.action != action


def test_goal_without_quotes_falls_back_to_bm25_lines():
    r = Anchor(top_k=3).reduce(Step(goal="open entry12 page", tree=_page(50)))
    assert any("entry12()" in t for t in r.text.split("\n"))
    assert Anchor(top_k=0, controls=False).reduce(Step(goal="x", tree=_page(5))).kept == []


def test_phrases_and_label_lines():
    assert goal_phrases('a "B c" and "d" and "B c"') == ["B c", "d"]
    texts = ["heading 'Install #'", "StaticText 'Default: 80'", "link 'install'"]
    assert phrase_lines(texts, ["install"], 9) == [0, 2]
    assert phrase_lines(texts, ["install"], 1) == [0]
    assert phrase_lines(texts, ["Default"], 9, label=True) == [1]


_NAMES = st.text(st.sampled_from("abc XY:_."), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(
        ["link", "heading", "row", "cell", "table", "columnheader", "StaticText", "searchbox"]),
        _NAMES), min_size=1, max_size=60),
    phrase=_NAMES,
)  # fmt: skip
def test_any_tree_reduces_to_a_pruned_view_keeping_every_named_line(rows, phrase):
    lines, depth = [], 0
    for i, (d, role, name) in enumerate(rows):
        depth = min(d, depth + 1)
        lines.append("\t" * depth + f"[{i}] {role} {name!r}")
    tree = "\n".join(lines)
    step = Step(goal=f'Find "{phrase}" here.', tree=tree)
    r = get_reducer("anchor").reduce(step)
    n = len(step.axtree)
    assert set(r.kept) <= set(range(1, n + 1)) and not set(r.kept) & set(r.stubs)
    named = {i + 1 for i, (_, _, name) in enumerate(rows)
             if name.strip().casefold() == phrase.strip().casefold() and phrase.strip()}  # fmt: skip
    if len(named) <= 40:
        assert named <= set(r.kept)


def test_policy_clicks_a_link_again_once_when_the_page_did_not_change():
    p = DocsScriptedPolicy()
    tree = "RootWebArea 'Doc'\n\t[7] link 'Next page'"
    goal = 'Open the page linked as "Next page".'
    seq = []
    for _ in range(5):
        d = p.act(goal, tuple(seq), tree)
        if d.stop:
            break
        seq.append(d.action)
    assert seq == ["click('7')", "noop(2000)", "click('7')", "noop(2000)"] and d.stop
