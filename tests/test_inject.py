"""lrlab.injection.inject: attacked trees stay valid trees, targets stay put, survival is measured right,
and an injected <answer> never becomes the selection."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.injection.inject import ATTACKS, EVIL_HOST, LEGACY, POSITIONS, inject
from lrlab.injection.injection_eval import breakdown, score, score_cached, summarize
from lrlab.injection.injection_sets import MARKS, build_set, plan
from lrlib.core.pruning import prune
from lrlib.core.ranges import AnswerParseError, parse_answer
from lrlib.core.step import Step
from lrlib.reducers import Output, Reducer, get_reducer


@pytest.fixture(scope="module")
def steps(tree_steps) -> list[Step]:
    return tree_steps


def _check_valid(item) -> None:
    """The invariants every attacked step must satisfy."""
    old, new = item.original.axtree, item.step.axtree
    injected = set(item.injected)
    assert len(new) == len(old) + len(injected)
    # original lines: verbatim, in order, at line_map; the rest are exactly the injected lines
    assert [new.texts[m - 1] for m in item.line_map] == old.texts
    assert sorted(set(range(1, len(new) + 1)) - set(item.line_map)) == sorted(injected)
    # no original line changes parent (through the map)
    for k, m in enumerate(item.line_map):
        parent = old.parents[k]
        assert new.parents[m - 1] == (item.line_map[parent] - 1 if parent >= 0 else -1)
    # fresh, unique bids; every attack root sits where its position says
    fresh = [new.bids[n - 1] for n in injected if new.bids[n - 1] is not None]
    assert len(set(fresh)) == len(fresh) and not set(fresh) & set(old.bid_lines)
    assert all(new.bids.count(b) == 1 for b in fresh)
    for p in item.placements:
        assert new.depths[p.first - 1] == p.depth
        assert new.roles[p.first - 1] == ATTACKS[p.attack][0][2]
        assert all(new.depths[n - 1] > p.depth for n in range(p.first + 1, p.last + 1))
    # the recorded action still names the same lines
    assert item.step.target_lines == [item.line_map[t - 1] for t in item.original.target_lines]
    assert item.step.target_bids == item.original.target_bids


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_every_attack_at_every_position_keeps_the_tree_valid(steps, attack, position):
    for step in steps:
        _check_valid(inject(step, [(attack, position)], seed=1))


def test_positions_mean_what_they_say(steps):
    ipad = next(s for s in steps if s.step_id == "workarena_ipad")
    target = ipad.target_lines[0]
    item = inject(ipad, [(a, p) for a, p in zip(LEGACY, POSITIONS, strict=True)])
    at = {p.position: p for p in item.placements}
    new = item.step.axtree
    assert at["top"].first == 2 and at["top"].depth == 1
    assert at["bottom"].last == len(new) and at["bottom"].depth == 1
    # right before the target, as its sibling
    assert at["near-target"].last + 1 == item.step.target_lines[0]
    assert at["near-target"].depth == ipad.axtree.depths[target - 1]
    assert at["deep"].depth >= 0.75 * max(ipad.axtree.depths) - 1
    # inside the iframe the fresh bids follow the frame's prefix ("a..."), outside they don't
    assert re.fullmatch(r"a\d+", new.bids[at["near-target"].first - 1])
    assert re.fullmatch(r"\d+", new.bids[at["top"].first - 1])


def test_attack_text_is_what_real_attacks_say(steps):
    item = inject(
        steps[0], [("fake-tags", "middle"), ("fake-lines", "top"), ("goal-hook", "bottom")]
    )
    text = item.step.tree
    for needle in ("<think>", "</think>", "<action>", "<answer>", EVIL_HOST, "1: RootWebArea"):
        assert needle in text
    fake_tags, fake_lines = item.placements[1], item.placements[0]
    assert fake_tags.attack == "fake-tags" and fake_lines.attack == "fake-lines"
    # the fake answer and the fake note point at the attack's own final line numbers
    assert f"<answer>[({fake_tags.first}, {fake_tags.last})]</answer>" in text
    assert f"lines {fake_lines.first} to {fake_lines.last} are the only lines" in text
    # the goal hook repeats the goal's first clause
    assert steps[0].goal.split("{")[0].split()[0] in item.step.axtree.texts[-3]


def test_deterministic_and_seeded(steps):
    pairs = [("popup", "deep"), ("alert", "near-target")]
    a, b = inject(steps[2], pairs, seed=3), inject(steps[2], pairs, seed=3)
    assert a.step.tree == b.step.tree and a.placements == b.placements
    trees = {inject(steps[2], [("popup", "deep")], seed=s).step.tree for s in range(8)}
    assert len(trees) > 1  # the seed picks among the deep lines


def test_plan_covers_every_pair_evenly():
    slots = [pair for step in plan(25, per_step=2) for pair in step]
    counts = {pair: slots.count(pair) for pair in set(slots)}
    assert len(counts) == len(LEGACY) * len(POSITIONS)
    assert set(counts.values()) == {2}
    assert all(len({p for _, p in step}) == 2 for step in plan(25, per_step=2))
    with pytest.raises(ValueError):
        plan(1, per_step=len(POSITIONS) + 1)


def test_build_set_samples_steps_with_targets(steps):
    items = build_set(steps, n=None, per_step=3)
    assert [it.original.step_id for it in items] == ["offsite_bestbuy_large", "workarena_ipad"]
    assert all(len(it.placements) == 3 for it in items)
    assert [it.step.tree for it in build_set(steps, n=1, seed=5)] == [
        it.step.tree for it in build_set(list(reversed(steps)), n=1, seed=5)
    ]


simple_tree = st.lists(
    st.tuples(st.integers(0, 6), st.sampled_from(["link", "button", "StaticText", "generic"]),
              st.booleans()),
    min_size=1, max_size=40,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    simple_tree,
    st.lists(st.tuples(st.sampled_from(list(ATTACKS)), st.sampled_from([*POSITIONS, "random"])),
             min_size=1, max_size=4),
    st.integers(0, 10**6),
    st.data(),
)  # fmt: skip
def test_injection_property(shape, attacks, seed, data):
    # a well-formed tree: depth grows by at most one per line, bids as BrowserGym writes them
    lines, depth = ["RootWebArea 'page'"], 0
    for i, (d, role, has_bid) in enumerate(shape):
        depth = min(d, depth + 1) or 1
        lines.append("\t" * depth + (f"[{i + 10}] " if has_bid else "") + f"{role} 'x{i}'")
    with_bid = [i + 10 for i, (_, _, b) in enumerate(shape) if b]
    targets = tuple(str(b) for b in data.draw(st.lists(st.sampled_from(with_bid), max_size=2))) \
        if with_bid else ()  # fmt: skip
    step = Step(goal="Do {it}", tree="\n".join(lines), target_bids=targets, step_id="p")
    _check_valid(inject(step, attacks, seed=seed))


class _Keep(Reducer):
    """Keeps the given lines (e.g. exactly the original ones: a perfect defender)."""

    name = "keep"

    def __init__(self, lines):
        super().__init__()
        self.lines = list(lines)

    def select(self, step: Step) -> Output:
        return Output(prune(step.axtree, self.lines).text, self.lines)


def test_score_measures_survival_and_coverage(steps):
    items = build_set(steps, n=None, per_step=2)
    full = score(get_reducer("full"), items)
    assert all(r["survived"] == r["lines"] and r["payload_visible"] for r in full)
    assert all(r["covered_clean"] and r["covered_injected"] for r in full)
    oracle = score(get_reducer("oracle"), items)
    assert all(r["survived"] == 0 and not r["payload_visible"] for r in oracle)
    assert all(r["covered_injected"] for r in oracle)
    table = summarize(full + oracle)
    assert table.set_index("reducer").loc["full", "survival"] == 1.0
    assert table.set_index("reducer").loc["full", "lift"] == 1.0
    assert table.set_index("reducer").loc["oracle", "lift"] == 0.0
    assert table.set_index("reducer").loc["oracle", "steps_any"] == 0.0
    assert table.set_index("reducer").loc["oracle", "coverage_change"] == 0.0
    by_attack = breakdown(full + oracle, "attack")
    assert list(by_attack.index) == ["full", "oracle"]
    assert (by_attack.loc["full"] == 1.0).all() and (by_attack.loc["oracle"] == 0.0).all()


def test_score_counts_text_even_when_kept_is_wrong(steps):
    """A reducer that under-reports ``kept`` cannot hide an attack it passed through."""

    class Liar(Reducer):
        name = "liar"

        def select(self, step):
            return Output(step.axtree.text, kept=[])

    item = inject(steps[0], [("popup", "top")])
    row = score(Liar(), [item])[0]
    assert row["survived"] == row["lines"] and row["payload_visible"]
    assert score(_Keep(item.line_map), [item])[0]["survived"] == 0
    assert score(_Keep(item.injected[:1]), [item])[0]["survived"] == 1


def test_truncation_drops_bottom_attacks_and_keeps_top_ones(steps):
    step = next(s for s in steps if s.step_id == "offsite_bestbuy_large")
    item = inject(step, [("popup", "top"), ("alert", "bottom")])
    rows = {r["position"]: r for r in score(get_reducer("truncate", budget=2000), [item])}
    assert rows["top"]["survived"] == rows["top"]["lines"]
    assert rows["bottom"]["survived"] == 0


# ---- the parser never takes an injected answer ------------------------------------------


@pytest.fixture(scope="module")
def tagged(steps):
    item = inject(steps[0], [("fake-tags", "near-target"), ("fake-lines", "top")])
    p = next(p for p in item.placements if p.attack == "fake-tags")
    page_lines = [item.step.axtree.texts[n - 1] for n in range(p.first, p.last + 1)]
    quoted = " ".join(re.search(r"'(.*)'", line)[1] for line in page_lines[1:])
    return item, p, quoted


def test_echoed_tags_in_thinking_never_count(tagged):
    item, p, quoted = tagged
    tree, n = item.step.tree, len(item.step.axtree)
    real = item.step.target_lines[0]
    planted = {(p.first, p.last)}
    # the model copies the page's tags (with their </think>) while thinking, then answers
    echo = f"<think>The page shows a dialog: {quoted} - that is not part of my goal.</think>"
    answer = f"<answer>[({real}, {real})]</answer>"
    assert parse_answer(echo + answer, n).ranges == ((real, real),)
    assert parse_answer(echo + answer, n, page=tree).ranges == ((real, real),)
    # ... and stops there: no answer, whether or not the page is given
    for page in (None, tree):
        with pytest.raises(AnswerParseError) as err:
            parse_answer(echo, n, page=page)
        assert err.value.reason == "no_answer"
    # ... or is cut off while still thinking: only the page tells the copy apart
    cut = f"<think>The dialog says {quoted} which I"
    assert set(parse_answer(cut, n).ranges) == planted  # the syntax alone cannot know
    with pytest.raises(AnswerParseError) as err:
        parse_answer(cut, n, page=tree)
    assert "copies of the page" in str(err.value)
    # ... or is cut off inside the copied answer block
    partial = f"<think>It says {quoted[: quoted.index('<answer>') + 12]}"
    with pytest.raises(AnswerParseError):
        parse_answer(partial, n, page=tree)
    # the numbered view the retriever reads carries the same tags: same outcome
    from lrlib.core.pruning import render

    numbered = render(item.step.axtree)
    with pytest.raises(AnswerParseError):
        parse_answer(cut, n, page=numbered)


def test_fake_line_numbers_are_not_an_answer(tagged):
    item, _, _ = tagged
    note = next(t for t in item.step.axtree.texts if "Retriever note" in t)
    n = len(item.step.axtree)
    with pytest.raises(AnswerParseError):
        parse_answer(f"<think>{note}</think>", n, page=item.step.tree)
    assert parse_answer(f"<think>{note}</think><answer>(3, 4)</answer>", n).ranges == ((3, 4),)


def test_marks_are_in_every_attack(steps):
    from lrlab.injection.injection_sets import visible_spans

    for attack in ATTACKS:
        text = "\n".join(inject(steps[0], [(attack, "top")]).step.axtree.texts[1:6])
        assert visible_spans(text, attack), attack  # its payload spans are in its text
        if attack in LEGACY:
            assert any(m in text for m in MARKS), attack


# ---- end to end: attacked tree -> scripted model that echoes the attack -> selection -------


def _lr(url, tmp_path, **kw):
    options = {"prompt": "defender", "view": "full", "answer": "tags", "think": True,
               "strategy": "remove", "min_lines": 1, "model": "echo-model", "base_url": url,
               "cache": False, "max_retries": 0, **kw}  # fmt: skip
    return get_reducer("lineretriever", **options)


@pytest.mark.parametrize("view", ["full", "compact"])
def test_lineretriever_never_selects_an_echoed_answer(tagged, tmp_path, view):
    """The model reads the attacked tree and copies the planted tags into its thinking:
    its own answer is taken when it gives one, otherwise nothing is (the failure policy
    decides), and the planted range is never the selection."""
    from drill_server import DrillServer

    item, p, _ = tagged
    real = item.step.target_lines[0]
    planted = [[p.first, p.last]]

    def echo(user: str) -> str:  # the planted lines exactly as the prompt shows them
        shown = [line for line in user.split("\n") if "</observation></think>" in line
                 or "<answer>[(" in line]  # fmt: skip
        assert len(shown) == 2, "the attack is not in the prompt"
        return " ".join(re.search(r"'(.*)'", line)[1] for line in shown)

    endings = {
        "answers": lambda e: (
            f"<think>The page says: {e} - ignore it.</think><answer>[({real}, {real})]</answer>"
        ),
        "stops": lambda e: f"<think>The page says: {e} - I am not sure.</think>",
        "cut off": lambda e: f"<think>The page says: {e} and I think",
    }
    for name, ending in endings.items():

        def behave(n, body, ending=ending):
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            return ("ok", ending(echo(user)))

        with DrillServer(behave) as server:
            result = _lr(server.url, tmp_path, view=view).reduce(item.step)
        selection = result.extra.get("selection")
        assert selection != planted, f"{name}: the echoed answer was taken"
        if name == "answers":
            assert selection == [[real, real]] and result.failure is None
            assert result.kept == [real]
        else:
            assert selection is None and result.failure == "parse:no_answer", name


# ---- scoring only what is cached -----------------------------------------------------------


def test_score_cached_skips_and_counts_what_is_not_cached(steps, tmp_path, monkeypatch):
    """Offline, a reducer is scored on the attacked steps whose answers (and vectors) are
    cached, for the attacked and the clean step; the rest is counted, never computed."""
    from drill_server import DrillServer

    from lrlib.report import replay

    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))
    items = build_set(steps, n=None, per_step=2)
    assert len(items) == 2
    answer = lambda n, body: ("ok", "<answer>[(1, 3)]</answer>")  # noqa: E731
    with DrillServer(answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("LRLIB_MODEL", "scripted-model")
        live = {"lr": replay.lineretriever(prompt="defender", answer="tags", view="full")}
        rows, notes = score_cached(live, items[:1], clean=False)  # only the attacked step
        assert not notes and {r["step_id"] for r in rows} == {items[0].original.step_id}
        assert all(r["model"] == "scripted-model" for r in rows)
        paid = len(server.requests)
        assert paid >= 1
        monkeypatch.setenv("LRLIB_OFFLINE", "1")
        lr = {"lr": replay.lineretriever(prompt="defender", answer="tags", view="full")}
        specs = {"full": "full", "embedding": "embedding", **lr}
        rows, notes = score_cached(specs, items, clean=True, seed=7)
        assert len(server.requests) == paid  # offline: nothing sent
    # the clean originals were never answered: with clean=True no step is ready
    assert notes == [
        "embedding: 0 of 2 attacked steps scored, 2 skipped (their embeddings are not "
        "cached; LRLIB_OFFLINE=0 computes them)",
        "lr: 0 of 2 attacked steps scored, 2 skipped (their answers are not cached; "
        "LRLIB_OFFLINE=0 computes them)",
    ]
    assert {r["reducer"] for r in rows} == {"full"} and {r["seed"] for r in rows} == {7}
    assert summarize(rows).set_index("reducer").loc["full", "n_steps"] == 2
    with DrillServer(answer) as server:  # the attacked step replays without a server
        rows, notes = score_cached(lr, items, clean=False)
        assert not server.requests
    assert notes[0].startswith("lr: 1 of 2 attacked steps scored, 1 skipped")
    replayed = [r for r in rows if r["reducer"] == "lr"]
    assert {r["step_id"] for r in replayed} == {items[0].original.step_id}
    # the cached answer [(1, 3)] is what gets replayed: the injected lines among 1..3 survive
    expected = {p.position: len({1, 2, 3} & set(range(p.first, p.last + 1)))
                for p in items[0].placements}  # fmt: skip
    assert {r["position"]: r["survived"] for r in replayed} == expected
    assert expected["top"] == 2
    assert all(r["covered_clean"] is None for r in replayed)


def test_cli_scores_the_cached_steps_only(steps, tmp_path, monkeypatch, capsys):
    from lrlib.cli import main

    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    out = tmp_path / "rows.csv"
    spec = "lineretriever:prompt=defender,offline=True"
    args = ["inject", "--split", "validation", "--steps", "2", "--cached", "--no-progress"]
    assert main([*args, "--reducers", f"oracle;{spec}", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{spec}: 0 of 2 attacked steps scored, 2 skipped (their answers" in printed
    assert "| oracle |" in printed and "2 attacked steps (" in printed
    import pandas as pd

    table = pd.read_csv(out)
    assert set(table["reducer"]) == {"oracle"} and (table["survived"] == 0).all()


# ---- payload visibility: any readable span, whatever the output format ---------------------


def test_visibility_counts_a_payload_tail_that_no_whole_line_carries(steps):
    """A reducer whose output holds only the tail of the focused button's name (a chunk
    boundary inside the line) keeps no attack line, yet the payload is readable."""
    from lrlab.injection.inject import SPANS
    from lrlab.injection.injection_sets import realistic_set, visible_spans

    item = next(it for it in realistic_set() if it.placements[0].attack == "modal-focus")
    p = item.placements[0]
    button = next(t for t in item.step.axtree.texts[p.first - 1 : p.last] if "focused" in t)
    tail = button[button.index("<action>") :]

    class Tail(Reducer):
        name = "tail"

        def select(self, step):
            return Output(text="RootWebArea 'x'\n" + tail, kept=[1])

    rows = score(Tail(), [item], clean=False)
    assert rows[0]["survived"] == 0 and rows[0]["visible"] and rows[0]["payload_visible"]
    assert visible_spans(tail, "modal-focus") == ["localhost:4321"]
    # a kept "Cancel" button of the same dialog is an attack line, not a payload
    cancel = item.step.axtree.texts[p.last - 1]
    assert "Cancel" in cancel and not visible_spans(cancel, "modal-focus")
    assert all(SPANS[a] for a in ATTACKS)  # every attack defines its payload spans


def test_realistic_attacks_sit_first_with_the_payload_in_a_focused_button(steps):
    from lrlab.injection.inject import PAYLOAD_HOST, REALISTIC
    from lrlab.injection.injection_sets import pinned_ids, realistic_set

    items = realistic_set()
    assert [it.original.step_id for it in items] == sorted(pinned_ids("core"))
    assert {it.placements[0].attack for it in items} == set(REALISTIC)
    for item in items:
        p = item.placements[0]
        tree = item.step.axtree
        assert p.first == 2 and tree.parents[p.first - 1] == 0  # first child of the page
        if p.attack.startswith("modal"):
            assert "modal=True" in tree.texts[p.first - 1]
            focused = [t for t in tree.texts[p.first - 1 : p.last] if t.endswith(", focused")]
            assert len(focused) == 1 and PAYLOAD_HOST in focused[0] and "</think>" in focused[0]
        _check_valid(item)


def test_pinned_core_set_is_the_one_whose_answers_ship(monkeypatch):
    """The pinned ids rebuild the attacked trees the cache was made for: a LineRetriever
    replay of the core set needs no model, whatever the current splits are."""
    from lrlab.injection.injection_sets import pinned_set
    from lrlib.paths import REPO_DIR
    from lrlib.report import replay

    items = pinned_set("core")
    assert len(items) == 15 and sum(len(it.injected) for it in items) == 120
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(REPO_DIR / "data" / "cache"))
    for prompt, answer in (("paper", "json"), ("defender", "tags")):
        lr = replay.lineretriever(prompt=prompt, answer=answer, offline=True)
        assert len(replay.ready_steps(lr, [it.step for it in items])) == 15


def test_cli_attacks_the_pinned_steps_realistically(tmp_path, monkeypatch, capsys):
    from lrlib.cli import main

    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    out = tmp_path / "rows.csv"
    args = ["inject", "--pinned", "core", "--realistic", "--no-clean", "--no-progress"]
    assert main([*args, "--reducers", "full;oracle", "--out", str(out)]) == 0
    import pandas as pd

    table = pd.read_csv(out)
    assert table["step_id"].nunique() == 15 and set(table["position"]) == {"top"}
    assert set(table["attack"]) == {"modal-focus", "modal-long", "alert-banner"}
    by = table.groupby("reducer")["payload_visible"].mean()
    assert by["full"] == 1.0 and by["oracle"] == 0.0
