"""The baseline reducers on real trees: the shared contract, then each reducer's own rules."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.reducers.bm25 import bm25_scores
from lrlab.reducers.chunking import line_chunks, query_of, token_chunks
from lrlab.reducers.embedding import EmbeddingRetriever
from lrlab.reducers.embeddings import normalise
from lrlab.reducers.program import (
    PARAMS_FILE,
    Knobs,
    Program,
    goal_terms,
    keep_lines,
    line_features,
)
from lrlab.tuning.program_tuning import TuningSet, tune
from lrlib.core.axtree import parse
from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens, get_encoding
from lrlib.data.actions import action_bids
from lrlib.eval.metrics import covers
from lrlib.reducers import get_reducer, list_reducers, listed_reducers
from lrlib.reducers.baselines import DELETED_NOTE, AgentLabTruncate


class Hashing:
    """A deterministic offline embedder: bag of hashed words (no model, no cache)."""

    model = "hashing"

    def embed(self, texts, kind="passage"):
        out = np.zeros((len(texts), 64))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w)) % 64] += 1
        return normalise(out + 1e-6)


@pytest.fixture(scope="module")
def steps(real_trees):
    """The fixture trees as steps, with the recorded action's bids as targets."""
    return [
        Step(
            goal=t["goal"],
            tree=t["tree"],
            history=("click('a12')", "scroll(0, 200)"),
            target_bids=tuple(action_bids(t["action_raw"])),
            step_id=name,
        )
        for name, t in real_trees.items()
    ]


# every default reducer but the embedding one, which computes vectors: tested on its own
FAST = [spec for spec in listed_reducers(model_answers=False) if spec != "embedding"]


def make(spec, **extra):
    from lrlib.eval.evaluation import parse_spec

    name, params = parse_spec(spec)
    return get_reducer(name, **params, **extra)


def test_registry_holds_the_baselines():
    names = set(list_reducers())
    assert {
        "full",
        "truncate",
        "truncate-agentlab",
        "random",
        "oracle",
        "embedding",
        "bm25",
        "program",
    } <= names
    with pytest.raises(KeyError, match="valid reducers: .*program"):
        get_reducer("nope")


@pytest.mark.parametrize("spec", FAST + ["embedding"])
def test_contract_on_real_trees(spec, steps):
    extra = {"embedder": Hashing()} if spec == "embedding" else {}
    reducer = make(spec, **extra)
    json.dumps(reducer.params, default=str)  # parameters are recordable
    for step in steps:
        r = reducer.reduce(step)
        tree = step.axtree
        assert r.tokens_before == count_tokens(tree.text)
        assert r.tokens_after == count_tokens(r.text)
        assert r.latency_s >= 0 and r.step_id == step.step_id
        assert r.kept == sorted(set(r.kept)) and set(r.kept) <= set(range(1, len(tree) + 1))
        assert not set(r.kept) & set(r.stubs)
        # kept lines are verbatim and in page order in the text
        pos = 0
        for n in r.kept:
            found = r.text.find(tree.texts[n - 1], pos)
            assert found >= 0, (spec, n)
            pos = found + len(tree.texts[n - 1])
        if spec != "full":
            assert r.tokens_after < r.tokens_before


# ---- truncation -----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(0, 5000))
def test_truncate_is_the_longest_prefix_within_budget(real_trees, budget):
    tree = real_trees["workarena_ipad"]["tree"]
    step = Step(goal="g", tree=tree)
    r = get_reducer("truncate", budget=budget).reduce(step)
    lines = step.axtree.texts
    assert r.tokens_after <= budget
    assert r.text == "\n".join(lines[: len(r.kept)])
    if len(r.kept) < len(lines):
        assert count_tokens("\n".join(lines[: len(r.kept) + 1])) > budget


def test_truncate_budget_edges(steps):
    step = steps[0]
    big = get_reducer("truncate", budget=10**9).reduce(step)
    assert big.text == step.axtree.text and big.reduction == 0.0
    tiny = get_reducer("truncate", budget=count_tokens(step.axtree.texts[0]) - 1).reduce(step)
    assert tiny.text == "" and tiny.kept == [] and tiny.reduction == 1.0
    assert not covers(step, tiny.kept)
    with pytest.raises(ValueError):
        get_reducer("truncate", budget=-1)


def test_agentlab_loop_waits_then_cuts_a_share_per_round(steps):
    step = max(steps, key=lambda s: len(s.axtree))
    n = len(step.axtree)
    fits = AgentLabTruncate(max_prompt_tokens=10**9).select(step)
    assert fits.kept == list(range(1, n + 1)) and fits.extra["rounds"] == 0
    # a budget below the tree: ten idle rounds, then each round keeps int(70%) of the block's
    # lines, the previous notice line included (AgentLab's Trunkater)
    budget = count_tokens(step.axtree.text) // 3
    out = AgentLabTruncate(max_prompt_tokens=budget, overhead_tokens=500).select(step)
    rounds = out.extra["rounds"]
    keep = n
    for cut in range(rounds - 10):
        keep = int((keep + (cut > 0)) * 0.7)
    assert rounds > 10 and len(out.kept) == keep and out.extra["prompt_fits"]
    assert out.text.endswith(DELETED_NOTE.format(n=n + rounds - 11 - keep))
    # one round fewer would not have fitted: the loop stops as soon as the prompt fits
    looser = AgentLabTruncate(max_prompt_tokens=budget, overhead_tokens=500, max_rounds=rounds - 1)
    assert not looser.select(step).extra["prompt_fits"]


def test_agentlab_counts_the_whole_prompt(steps):
    step = steps[0]
    tree_tokens = count_tokens(step.axtree.text)
    # tree, goal and history fit, but with the instructions around them the prompt does not
    budget = tree_tokens + count_tokens(step.goal) + 100
    assert (
        AgentLabTruncate(max_prompt_tokens=budget, overhead_tokens=0).select(step).extra["rounds"]
        == 0
    )
    cut = AgentLabTruncate(max_prompt_tokens=budget, overhead_tokens=1000).select(step)
    assert len(cut.kept) < len(step.axtree)


def test_agentlab_gives_up_after_max_rounds(steps):
    out = AgentLabTruncate(max_prompt_tokens=10, overhead_tokens=0).select(steps[0])
    assert out.extra["rounds"] == 20 and out.extra["prompt_fits"] is False
    keep = len(steps[0].axtree)  # 20 shrinks, the last one never measured: 9 cuts
    for cut in range(9):
        keep = int((keep + (cut > 0)) * 0.7)
    assert len(out.kept) == keep


# ---- random and oracle ------------------------------------------------------------


def test_random_keeps_the_ratio_and_is_seeded(steps):
    step = steps[2]
    n = len(step.axtree)
    a = get_reducer("random", keep_ratio=0.25, seed=3, strategy="remove").reduce(step)
    b = get_reducer("random", keep_ratio=0.25, seed=3, strategy="remove").reduce(step)
    c = get_reducer("random", keep_ratio=0.25, seed=4, strategy="remove").reduce(step)
    assert len(a.kept) == round(0.25 * n) and a.kept == b.kept and a.kept != c.kept
    assert get_reducer("random", keep_ratio=0.0).reduce(step).kept == []
    assert len(get_reducer("random", keep_ratio=1.0).reduce(step).kept) == n
    with pytest.raises(ValueError):
        get_reducer("random", keep_ratio=1.5)


def test_oracle_keeps_exactly_the_targets_with_their_ancestors(steps):
    for step in steps:
        r = get_reducer("oracle").reduce(step)
        assert r.kept == step.target_lines
        ancestors = {a for n in step.target_lines for a in step.axtree.ancestors(n)}
        assert set(r.stubs) == ancestors - set(r.kept)
        if step.target_lines:
            assert covers(step, r.kept) and r.reduction > 0.9


# ---- chunking, embedding, BM25 ------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    size=st.integers(5, 200),
    overlap=st.integers(0, 60),
    name=st.sampled_from(["workarena_ipad", "webarena_magento"]),
)
def test_token_windows_tile_the_text(real_trees, size, overlap, name):
    overlap = min(overlap, size - 1)
    tree = parse(real_trees[name]["tree"])
    chunks = token_chunks(tree, size, overlap)
    enc = get_encoding()
    raw = tree.text.encode()
    assert chunks[0].start == 0 and chunks[-1].end == len(raw)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert len(enc.encode_ordinary(raw[a.start : a.end].decode("utf-8", "ignore"))) <= size + 2
        assert b.start < a.end or overlap == 0  # neighbours share ``overlap`` tokens
        assert b.start <= a.end
    for c in chunks:  # the lines a chunk holds whole are inside its byte span
        assert all(tree.texts[n - 1] in c.text for n in c.whole)


@settings(max_examples=30, deadline=None)
@given(size=st.integers(5, 300), overlap=st.integers(0, 60))
def test_line_chunks_cover_every_line_within_size(real_trees, size, overlap):
    overlap = min(overlap, size - 1)
    tree = parse(real_trees["workarena_ipad"]["tree"])
    chunks = line_chunks(tree, size, overlap)
    seen = set()
    for c in chunks:
        seen.update(c.whole)
        assert c.text == "\n".join(tree.texts[c.first - 1 : c.last])
        if c.last > c.first:
            assert count_tokens(c.text + "\n") <= size
    assert seen == set(range(1, len(tree) + 1))
    assert all(b.first > a.first for a, b in zip(chunks, chunks[1:], strict=False))


def test_embedding_top_k_page_and_score_order(steps):
    step = steps[2]
    page = EmbeddingRetriever(embedder=Hashing(), top_k=4).select(step)
    score = EmbeddingRetriever(embedder=Hashing(), top_k=4, order="score").select(step)
    assert page.extra["chunks"] == score.extra["chunks"] and len(page.extra["chunks"]) == 4
    assert page.extra["scores"] == sorted(page.extra["scores"], reverse=True)
    assert set(page.kept) == set(score.kept)
    chunks = token_chunks(step.axtree, 100, 10)
    best = [chunks[i] for i in page.extra["chunks"]]
    assert score.text == "\n".join(c.text.strip("\n") for c in best)
    # page order: the chunks' spans in the order of the page
    starts = [page.text.find(c.text.strip("\n")[:30]) for c in sorted(best, key=lambda c: c.start)]
    assert starts == sorted(starts)
    everything = EmbeddingRetriever(embedder=Hashing(), top_k=10**6).reduce(step)
    assert everything.kept == list(range(1, len(step.axtree) + 1))


def test_embedding_line_chunks_keep_whole_lines(steps):
    out = EmbeddingRetriever(embedder=Hashing(), unit="lines", top_k=3).select(steps[0])
    assert out.stubs == [] and out.text.split("\n") == [
        steps[0].axtree.texts[n - 1] for n in out.kept
    ]


def test_embedding_with_the_offline_e5_model_finds_the_target(real_trees, tmp_path):
    t = real_trees["workarena_ipad"]
    lines = parse(t["tree"]).texts[100:170]  # the order form around the target (fast)
    step = Step(goal=t["goal"], tree="\n".join(lines), target_bids=("a225",))
    from lrlab.reducers.embeddings import CachedEmbedder, LocalE5

    emb = CachedEmbedder(LocalE5(), path=tmp_path / "e5.sqlite")
    r = EmbeddingRetriever(embedder=emb, top_k=3).reduce(step)
    assert r.extra["n_chunks"] > 3
    assert r.extra["cache_misses"] > 0 and covers(step, r.kept, r.stubs, count_stubs=True)
    again = EmbeddingRetriever(embedder=emb, top_k=3).reduce(step)
    assert again.extra["cache_misses"] == 0 and again.text == r.text
    assert again.extra["cold_latency_s"] >= again.extra["cold_embed_s"] > 0


def test_query_is_goal_then_history():
    s = Step(goal=" Buy milk ", tree="", history=("click('3')", "fill('4', 'x')"))
    assert query_of(s) == "Buy milk\nclick('3')\nfill('4', 'x')"


def test_bm25_lines_keep_only_matching_lines(steps):
    step = steps[1]
    r = get_reducer("bm25", top_k=5, strategy="remove").reduce(step)
    scores = bm25_scores([t.strip() for t in step.axtree.texts], query_of(step))
    assert 0 < len(r.kept) <= 5
    assert all(scores[n - 1] > 0 for n in r.kept)
    assert min(scores[n - 1] for n in r.kept) >= np.sort(scores)[-len(r.kept)]


def test_bm25_finds_history_bids_and_chunks(steps):
    tree = "\n".join(["RootWebArea 'x'", "\t[a12] button 'Next'", "\t[a13] link 'Other'"])
    r = get_reducer("bm25", top_k=1).reduce(Step(goal="zzz", tree=tree, history=("click('a12')",)))
    assert r.kept == [2]
    chunks = get_reducer("bm25", unit="chunks", top_k=2).reduce(steps[2])
    assert len(chunks.extra["chunks"]) <= 2 and chunks.tokens_after <= 2 * 100 + 10
    with pytest.raises(ValueError):
        get_reducer("bm25", unit="words")


def test_bm25_with_no_overlap_keeps_nothing():
    r = get_reducer("bm25").reduce(Step(goal="qqq", tree="[1] link 'a'\n[2] link 'b'"))
    assert r.kept == [] and r.text == ""


# ---- the program reducer ------------------------------------------------------------


def test_program_params_file_has_provenance():
    record = json.loads(PARAMS_FILE.read_text())
    prov = record["provenance"]
    assert prov["split"].startswith("train+validation") and "test never read" in prov["split"]
    assert prov["git_commit"]
    assert Knobs.load() == Knobs(**record["knobs"])
    assert Program().knobs == Knobs.load()
    cv = record["cv"]  # grouped cross-validation, one row per held-out family
    assert "leave one task family out" in cv["scheme"] and len(cv["per_family"]) >= 5
    assert 0 < cv["coverage"] <= 1 and cv["n_target"] > 100


def test_program_does_not_depend_on_site_roles():
    """Unknown roles, iframes, containers named by a child text line, unnamed icons and a
    one-word goal: the rules read role groups and children's text, not ServiceNow's names."""
    tree = "\n".join([
        "RootWebArea 'Widgets'",
        "\t[2] Iframe 'app'",
        "\t\t[a3] x-swatch ''",  # unknown role named by its child text
        "\t\t\tStaticText 'Turquoise'",
        "\t\t[a5] x-swatch ''",
        "\t\t\tStaticText 'Crimson'",
        "\t\t[a7] generic ''",  # a clickable card named by its text
        "\t\t\tStaticText 'Turquoise scarf, size M'",
        "\t[9] StaticText 'Turquoise is our colour of the month'",
    ])  # fmt: skip
    step = Step(goal="Turquoise", tree=tree, target_bids=("a3",))
    kept = set(Program().reduce(step).kept)
    assert {2, 3, 7, 9} <= kept  # the iframe, the swatch, the card, the text line
    assert 6 not in kept  # a text line without the goal term


def test_program_keeps_form_controls_and_goal_links(steps):
    step = steps[0]  # the iPad order form: the target is a radio group's radio
    r = get_reducer("program").reduce(step)
    tree = step.axtree
    forms = [
        n
        for n in range(1, len(tree) + 1)
        if tree.roles[n - 1] in ("radio", "combobox", "textbox", "checkbox")
    ]
    assert set(forms) <= set(r.kept)
    assert r.reduction > 0.5


def test_program_threshold_is_monotone(steps):
    for step in steps:
        kept = [set(Program(threshold=t).reduce(step).kept) for t in (-1.0, 0.5, 2.0, 5.0)]
        assert kept[0] >= kept[1] >= kept[2] >= kept[3]


def test_program_rejects_unknown_knobs():
    with pytest.raises(TypeError, match="valid:"):
        Program(colour=1)


def test_goal_terms_match_inside_words():
    from lrlab.reducers.program import term_matcher

    m = term_matcher(goal_terms("Top best-selling product for customers in 2022"))
    assert m.search("bestsellers report") and m.search("all customer groups")
    assert m.search("year 2022") and not m.search("year 20221")


def test_tuning_set_agrees_with_the_reducer(steps):
    data = TuningSet(steps)
    for knobs in (Knobs(), Knobs(link=1.0, chrome=0.0, other=2.0, icon=1.0), Knobs.load()):
        mask = data.kept(knobs)
        offset = 0
        for step in steps:
            n = len(step.axtree)
            want = keep_lines(line_features(step), knobs)
            assert [i + 1 for i in np.flatnonzero(mask[offset : offset + n])] == want
            offset += n
        reds = [Program(**asdict(knobs)).reduce(s).reduction for s in steps]
        assert data.measure(knobs)["median_reduction"] == pytest.approx(np.median(reds), abs=1e-3)


def test_tune_reaches_the_coverage_it_is_asked_for(steps):
    knobs, report = tune(steps, min_coverage=1.0, samples=30, restarts=2, rounds=2)
    assert report["coverage"] == 1.0 and report["n_target_steps"] == 2
    for step in steps:
        assert covers(step, Program(**asdict(knobs)).reduce(step).kept) is not False
