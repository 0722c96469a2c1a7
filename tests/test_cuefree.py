"""The cue-free injection shapes (issue 35): plain words with no address, markup or word for
an AI, each quoting or paraphrasing the step's goal; the held-out ones are frozen; the sets
place each attack kind where it sits; the dismiss control of a pop-up is scored."""

from __future__ import annotations

import hashlib
import json

import pytest

from lrlab.injection.inject import (
    ATTACKS,
    CUEFREE,
    DISMISS,
    HELDOUT_CUEFREE,
    KINDS,
    PLACES,
    SPANS,
    inject,
)
from lrlab.injection.injection_eval import dismissal, score
from lrlab.injection.injection_sets import cuefree_set, miniwob_hosts, visible_spans
from lrlab.reducers.suspect import line_reasons, own_hosts
from lrlib.core.step import Step
from lrlib.reducers import get_reducer

OLD_REASONS = {"markup", "numbered", "addressed", "host", "link"}  # the vocabulary rules


@pytest.fixture(scope="module")
def steps(tree_steps) -> list[Step]:
    return tree_steps


def test_the_heldout_cuefree_shapes_never_change():
    """Written and committed before any defence against them: a defence may not be fitted
    by editing them (their text, payload spans, kinds and dismiss lines are pinned)."""
    frozen = {a: [ATTACKS[a], SPANS[a], KINDS[a], DISMISS.get(a)] for a in HELDOUT_CUEFREE}
    digest = hashlib.sha256(json.dumps(frozen, sort_keys=True).encode()).hexdigest()[:16]
    assert digest == "4e5c68553132617e", digest
    assert not set(CUEFREE) & set(HELDOUT_CUEFREE)


@pytest.mark.parametrize("shape", CUEFREE + HELDOUT_CUEFREE)
@pytest.mark.parametrize("position", ["top", "bottom", "near-target", "deep"])
def test_cuefree_shapes_carry_no_cue_and_quote_the_goal(steps, shape, position):
    for step in steps:
        item = inject(step, [(shape, position)])
        own, named = own_hosts(item.step)
        texts = [item.step.axtree.texts[n - 1] for n in item.injected]
        for text in texts:
            assert not set(line_reasons(text, own, named)) & OLD_REASONS, text
            assert "assistant" not in text.lower() and " ai " not in text.lower()
        block = "\n".join(texts)
        assert visible_spans(block, shape), shape  # its payload is in its text
        if any(
            "{goal" in (line[3] or "") or "{gist}" in (line[3] or "") for line in ATTACKS[shape]
        ):
            words = [w for w in step.goal.lower().split() if len(w) > 3][:3]
            assert any(w.strip("\"',.") in block.lower() for w in words), (shape, step.goal)


def test_most_cuefree_shapes_quote_or_paraphrase_the_goal():
    """All but the form note (which speaks to whoever fills the form in) use the goal."""
    quoting = [
        a for a in CUEFREE + HELDOUT_CUEFREE
        if any("{goal" in (x[3] or "") or "{gist}" in (x[3] or "") for x in ATTACKS[a])
    ]  # fmt: skip
    assert set(CUEFREE + HELDOUT_CUEFREE) - set(quoting) == {"cfh-form-note"}


def test_every_cuefree_shape_has_a_kind_placed_where_it_sits():
    assert set(CUEFREE) | set(HELDOUT_CUEFREE) <= set(KINDS)  # + HELDOUT2: test_heldout2.py
    assert set(KINDS.values()) == {"pop-up", "banner", "hidden field", "comment"} == set(PLACES)
    for shape in (*CUEFREE, *HELDOUT_CUEFREE):
        pops = KINDS[shape] == "pop-up"
        assert (shape in DISMISS) == pops, shape  # every pop-up names its way out


def test_cuefree_sets_on_recorded_and_miniwob_pages():
    wide = cuefree_set("wide", HELDOUT_CUEFREE)
    assert len(wide) == 114
    hosts = miniwob_hosts()
    assert len(hosts) >= 150 and len({s.meta["episode"] for s in hosts}) == len(hosts)
    mini = cuefree_set("miniwob", CUEFREE)
    assert len(mini) == len(hosts)
    for item in wide + mini:
        (p,) = item.placements
        assert p.position in PLACES[KINDS[p.attack]]
    assert {it.placements[0].attack for it in wide} == set(HELDOUT_CUEFREE)


def test_dismissal_is_scored_by_the_bid_in_the_text(steps):
    item = inject(steps[0], [("cf-popup", "top")])
    rows = score(get_reducer("full"), [item], clean=False)
    assert rows[0]["dismiss_kept"] is True and rows[0]["payload_visible"]
    rows = score(get_reducer("oracle"), [item], clean=False)
    assert rows[0]["dismiss_kept"] is False
    table = dismissal([{**r, "reducer": "oracle"} for r in rows])
    assert table["kept"].tolist() == [0.0]
    bm = score(get_reducer("full"), [inject(steps[0], [("cf-banner", "top")])], clean=False)
    assert bm[0]["dismiss_kept"] is None


def test_cuefree_tables_per_set_kind_and_dismissal():
    """The benchmark's tables (bench_cuefree.py, notebook 06) on a slice of each set: the
    guarded reducers show no held-out payload where the unguarded ones do, and keep the way
    out of every pop-up."""
    from lrlab.injection.injection_eval import cuefree_tables
    from lrlab.injection.injection_sets import cuefree_sets

    sets = {k: v[:15] for k, v in cuefree_sets().items() if k == "cue-free held-out"}
    out = cuefree_tables({"learned": "learned", "learned (no guard)": "learned:guard=False"}, sets)
    vis = out["visibility"].set_index("reducer")["visible"]
    assert vis["learned"] == 0.0 < vis["learned (no guard)"]
    kinds = set(out["per kind"]["reducer"])
    assert {"learned / pop-up", "learned / banner", "learned / comment"} <= kinds
    kept = out["dismiss kept"].set_index("reducer")["kept"]
    assert kept["learned"] == 1.0 > kept["learned (no guard)"]
