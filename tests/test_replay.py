"""lrlib.report.replay, lrlab.report.explore and the figures runner: offline replay skips and counts, a live
endpoint fills the cache, the explorer labels fallbacks, notebooks execute in order."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from lrlab.report import explore
from lrlib.core.step import Step
from lrlib.report import plots, replay


@pytest.fixture
def steps(real_trees):
    out = []
    for i, t in enumerate(real_trees.values()):
        tree = Step(goal=t["goal"], tree=t["tree"]).axtree
        bid = next(b for b in tree.bids if b)
        out.append(
            Step(
                goal=t["goal"],
                tree=t["tree"],
                target_bids=(bid,),
                step_id=f"t{i}",
                meta={"episode": f"e{i}", "episode_success": True},
            )
        )
    return out


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _answer(text: str) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {"prompt_tokens": 1234, "completion_tokens": 9, "total_tokens": 1243},
    }


def test_mode_follows_the_environment(monkeypatch):
    assert replay.offline()  # conftest removed every endpoint variable
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert not replay.offline()
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    assert replay.offline()
    monkeypatch.setenv("LRLIB_QUICK", "1")
    monkeypatch.delenv("LRLIB_OFFLINE")
    assert replay.offline()  # quick runs call no model unless told to
    monkeypatch.setenv("LRLIB_OFFLINE", "0")
    assert not replay.offline()  # told to: the explicit switch wins


def test_offline_without_answers_skips_and_counts(steps, empty_cache):
    run = replay.run_lineretriever(steps)
    assert run.n_answered == 0 and run.skipped == [s.step_id for s in steps]
    assert "0 of 3 steps answered, 3 skipped (no cached answer)" in run.note()
    assert run.model == "SmolLM2-135M-Instruct.Q4_1" and "offline" in run.mode
    assert list(run.frame.columns) == replay.EMPTY_COLUMNS
    fallback = replay.safe_reduce(replay.lineretriever(), steps[0])
    assert fallback.failure == replay.NO_ANSWER and fallback.reduction == 0.0


def test_live_endpoint_fills_the_cache_then_replays_offline(
    steps, empty_cache, httpserver, monkeypatch
):
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        _answer("<answer>[(1, 4)]</answer>")
    )
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    monkeypatch.setenv("LRLIB_MODEL", "scripted-model")
    live = replay.run_lineretriever(steps[:2])
    assert live.n_answered == 2 and not live.skipped and "live" in live.mode
    assert live.model == "scripted-model"
    calls = len(httpserver.log)
    assert calls >= 2
    assert (live.frame["usage_prompt_tokens"] == 1234).all()
    assert (live.frame["retriever_output_tokens"] > 0).all()
    assert (live.frame["retriever_prompt_tokens"] > live.frame["tokens_before"] * 0.3).all()

    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    again = replay.run_lineretriever(steps)  # the third step was never answered
    assert len(httpserver.log) == calls  # nothing sent offline
    assert again.n_answered == 2 and again.skipped == [steps[2].step_id]
    assert again.frame["reduction"].tolist() == pytest.approx(live.frame["reduction"].tolist())


def test_ablation_grid_and_prompt_tokens(steps, empty_cache):
    grid = replay.ablation_grid(["paper", "neutral"], (True, False), (False,), ("tags", "json"))
    assert len(grid) == 8 and len({g["config"] for g in grid}) == 8
    tokens = replay.prompt_token_table(steps, grid)
    assert len(tokens) == 8 * len(steps) and (tokens["prompt_tokens"] > 0).all()
    paper = tokens[(tokens.prompt == "paper") & (tokens.answer == "tags")]
    # the history switch can only add tokens
    on = paper[paper.history].set_index("step_id")["prompt_tokens"]
    off = paper[~paper.history].set_index("step_id")["prompt_tokens"]
    assert (on >= off).all()
    result = replay.ablation(steps[:1], grid[:2])
    assert result.summary["n_answered"].tolist() == [0, 0]
    assert "0 of 2 configurations" in result.note and result.summary["n_paired"].tolist() == [0, 0]


def test_explorer_view_highlights_kept_lines_and_labels_fallbacks(steps, empty_cache):
    switch = explore.Switch(lineretriever=replay.lineretriever)
    oracle = switch(steps[0], "oracle", "paper", "remove")
    html = explore.side_by_side(steps[0], oracle, title="oracle")
    assert html.count('data-kind="kept"') == len(oracle.kept)
    assert "targets kept 1/1" in html
    lr = switch(steps[0], "lineretriever", "soft", "structure")
    assert lr.failure == replay.NO_ANSWER
    assert "fallback: offline:no_cached_answer" in explore.side_by_side(steps[0], lr)
    widget = explore.explorer(steps, switch, ["oracle", "lineretriever"], ["paper"], ["remove"])
    assert "lr-pair" in widget.children[-1].value


def test_figures_runner_executes_in_order_and_writes_executed_pairs(tmp_path, monkeypatch):
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))  # its times, not the user's
    (tmp_path / "00_first.py").write_text(
        '# %%\nfrom lrlib import settings\n\n# %% tags=["parameters"]\n'
        "QUICK = settings.current().quick\n\n# %%\nprint('quick' if QUICK else 'full')\n"
    )
    (tmp_path / "01_broken.py").write_text("# %%\nraise RuntimeError('boom')\n")
    (tmp_path / "notes.py").write_text("# not a notebook\n")
    done = plots.run_all(quick=True, folder=tmp_path, timeout=120)
    assert [d.name for d in done] == ["00_first", "01_broken"]
    assert done[0].error is None and "boom" in done[1].error
    nb = nbformat.read(tmp_path / "00_first.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in cells] == [1, 2, 3]
    assert "quick" in json.dumps(cells[-1].outputs)
    assert nb.metadata["kernelspec"]["name"] == plots.KERNEL
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"


def test_embedding_baseline_replays_cached_vectors_only(steps, empty_cache, tmp_path):
    import numpy as np

    from lrlab.reducers.embeddings import CachedEmbedder, normalise
    from lrlib.reducers import get_reducer

    class Letters:  # a toy embedder: counts of a few letters
        model = "letters"

        def embed(self, texts, kind="passage"):
            return normalise(np.array([[t.count(c) + 1e-3 for c in "aeiou"] for t in texts]))

    reducer = get_reducer("embedding", embedder=CachedEmbedder(Letters(), tmp_path / "v.sqlite"))
    assert reducer.cached_steps(steps) == [False] * 3  # no file yet
    reducer.reduce(steps[1])  # computes and stores this step's vectors
    assert reducer.cached_steps(steps) == [False, True, False]
    assert replay.ready_steps(reducer, steps) == [steps[1]]
    assert replay.ready_steps(get_reducer("bm25"), steps) == steps  # nothing to cache
    # the default e5 embedder with an empty cache: every step skipped, counted, no compute
    # (new goals: the shipped vector pack holds some fixture trees' chunks and queries)
    from dataclasses import replace

    steps = [replace(s, goal=s.goal + " (not in the pack)") for s in steps]
    frame, notes = replay.evaluate_cached(["embedding", "oracle"], steps)
    assert set(frame["reducer"]) == {"oracle"} and len(frame) == 3
    assert notes == [
        "embedding: 0 of 3 steps evaluated, 3 skipped (their embeddings are not "
        "cached; LRLIB_OFFLINE=0 computes them)"
    ]
    curves, notes = replay.curves_cached(steps, ["embedding", "random"])
    assert set(curves["reducer"]) == {"random"} and "embedding curve: 0 of 3" in notes[0]


@pytest.mark.slow
def test_figures_with_an_endpoint_ask_it_cache_the_answers_and_name_its_model(
    tmp_path, httpserver, monkeypatch
):
    """`make figures` with an endpoint configured: a notebook's LineRetriever cells ask the
    endpoint (here a scripted local server), its answers land in the cache, the outputs name
    its model; the same notebook run offline afterwards replays them and asks nothing."""
    from werkzeug import Response

    from lrlib import paths

    def answer(request):
        body = json.loads(request.get_data())
        text = (
            '{"ranges": [[1, 6]]}' if body.get("response_format") else "<answer>[(1, 6)]</answer>"
        )
        return Response(json.dumps(_answer(text)), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(answer)
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    monkeypatch.setenv("LRLIB_MODEL", "scripted-model")
    monkeypatch.setenv("LRLIB_OFFLINE", "0")  # live even in quick mode
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LRLIB_FIGURES_DIR", str(tmp_path / "figures"))
    source = paths.notebooks_dir() / "00_quickstart.py"
    live = plots.execute(source, quick=True, write=tmp_path / "live.ipynb")
    assert live.error is None, live.error
    asked = len(httpserver.log)
    assert asked >= 1
    assert list((tmp_path / "cache").rglob("*.json*")), "answers were not cached"
    text = (tmp_path / "live.ipynb").read_text()
    assert "retriever model: scripted-model (live (compatible endpoint)" in text
    # lines 1-6 of the compact view, widened to the original lines they stand for
    assert re.search(r"ranges:  \[\[1, \d+\]\] \| failure: None", text)
    assert httpserver.url_for("/") not in text

    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    again = plots.execute(source, quick=True, write=tmp_path / "offline.ipynb")
    assert again.error is None and len(httpserver.log) == asked
    replayed = (tmp_path / "offline.ipynb").read_text()
    assert re.search(r"ranges:  \[\[1, \d+\]\] \| failure: None", replayed)


@pytest.mark.slow
def test_notebooks_run_on_another_dataset_with_nothing_cached(tmp_path, monkeypatch):
    """A user's own recordings (LRLIB_DATA_DIR): no cached answer, no vector pack. The
    notebooks still run through, skip and count what they cannot replay, and say so."""
    from lrlib import paths
    from lrlib.data import dataset as data

    rows = [r for r in data.read_rows() if r["split"] == "train"][:40]
    for r in rows:  # other steps: other prompts, so nothing in the shipped cache matches
        r["split"], r["goal"] = "validation", r["goal"] + " (my own run)"
    data.write_row_batches([rows], tmp_path / "mine" / "observations.jsonl.gz")
    monkeypatch.setenv("LRLIB_DATA_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("LRLIB_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("LRLIB_OFFLINE", "1")
    for name in ("03_reduction_boxplot", "05_baselines"):
        out = tmp_path / f"{name}.ipynb"
        done = plots.execute(paths.notebooks_dir() / f"{name}.py", quick=True, write=out)
        assert done.error is None, f"{name}: {done.error}"
        text = out.read_text()
        assert "skipped" in text and "embedding: 0 of" in text, name
    assert (tmp_path / "figures" / "fig3_reduction_by_reducer.png").is_file()
    assert (tmp_path / "figures" / "table1_validation.md").is_file()
