"""lrlib.report.plots: every figure writes PNG and PDF, and LineRetriever figures name the model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lrlab.report import tradeoffs
from lrlib.eval import costs
from lrlib.report import plots, tables


@pytest.fixture
def figs(tmp_path, monkeypatch):
    """Figures go to a temporary folder; the last figure saved is kept for inspection."""
    monkeypatch.setenv("LRLIB_FIGURES_DIR", str(tmp_path))
    saved = {}
    real_save = plots.save

    def spy(fig, name):
        saved["title"] = fig._suptitle.get_text() if fig._suptitle else fig.axes[0].get_title()
        saved["texts"] = [t.get_text() for ax in fig.axes for t in ax.texts]
        saved["titles"] = [ax.get_title() for ax in fig.axes]
        return real_save(fig, name)

    monkeypatch.setattr(plots, "save", spy)
    saved["dir"] = tmp_path
    return saved


def _results(n=60, seed=0):
    rng = np.random.default_rng(seed)
    tokens = rng.lognormal(8, 0.8, n).astype(int) + 50
    rows = []
    for reducer in ("lineretriever+structure", "bm25", "oracle"):
        rows += [
            {
                "step_id": f"s{i}",
                "reducer": reducer,
                "tokens_before": t,
                "reduction": float(rng.uniform(0, 1)),
            }
            for i, t in enumerate(tokens)
        ]
    return pd.DataFrame(rows)


def test_bins_are_ordered_and_cover_every_size():
    sizes = pd.Series([0, 999, 1000, 2499, 2500, 15_999, 16_000, 10**6])
    binned = plots.bin_tokens(sizes)
    assert binned.notna().all()
    assert list(binned.astype(str)) == [
        "<1k",
        "<1k",
        "1k-2k",
        "2k-2.5k",
        "2.5k-3k",
        "8k-16k",
        "16k+",
        "16k+",
    ]
    assert binned.cat.ordered


def test_reduction_boxplot_writes_png_and_pdf_and_names_the_model(figs):
    path = plots.reduction_boxplot(_results(), model="TinyModel-1", name="fig3")
    assert path == figs["dir"] / "fig3.png" and path.stat().st_size > 10_000
    assert (figs["dir"] / "fig3.pdf").stat().st_size > 1_000
    assert "TinyModel-1" in figs["title"]
    assert "lineretriever+structure (60 steps)" in figs["titles"]
    assert "n=" in " ".join(figs["texts"])  # each box says how many steps it holds


def test_lineretriever_figures_refuse_to_go_unnamed(figs):
    with pytest.raises(ValueError, match="model="):
        plots.reduction_boxplot(_results())
    with pytest.raises(ValueError, match="model="):
        tradeoffs.coverage_vs_reduction(
            pd.DataFrame({"reducer": ["lineretriever"], "reduction": [0.5], "coverage": [0.9]})
        )
    # without LineRetriever rows no model is needed, and none is claimed
    plots.reduction_boxplot(_results().query("reducer != 'lineretriever+structure'"))
    assert "retriever model" not in figs["title"]


def test_empty_results_draw_a_labelled_placeholder(figs):
    plots.reduction_boxplot(_results().iloc[:0], name="empty")
    assert "no results" in figs["texts"]


def test_breakeven_plot_from_real_cost_frame(figs, real_trees):
    frame = pd.DataFrame(
        {
            "tokens_before": [200, 2_000, 20_000],
            "retriever_prompt_tokens": [500, 2_600, 24_000],
            "tokens_after": [150, 500, np.nan],
        }
    )
    c = costs.step_costs(
        frame, costs.get_price("gpt-4.1"), costs.get_price("gpt-4.1-mini"), output_tokens=40
    )
    tradeoffs.breakeven_plot(c, "gpt-4.1", "gpt-4.1-mini", model="M", reported_reduction=0.61)
    assert "agent gpt-4.1" in figs["title"] and "selections by M" in figs["title"]


def test_coverage_curves_and_table(figs):
    sweeps = pd.DataFrame(
        {
            "reducer": ["bm25"] * 3,
            "knob": ["top_k"] * 3,
            "value": [5.0, 10.0, 20.0],
            "median_reduction": [0.9, 0.7, 0.5],
            "coverage": [0.3, 0.6, 0.8],
        }
    )
    points = tradeoffs.curve_points(sweeps)
    assert points["label"].tolist() == ["top_k=5", "top_k=10", "top_k=20"]
    tradeoffs.coverage_vs_reduction(points)
    assert (figs["dir"] / "coverage_vs_reduction.pdf").is_file()
    assert {"top_k=5", "top_k=20"} <= set(figs["texts"])  # a curve's ends are labelled


def test_coverage_panels_keep_labels_inside_and_give_each_panel_its_own_n(figs):
    """Knob labels at 100% coverage or near 100% reduction stay inside the panel, and a
    single point's n is that panel's (steps with a target, steps with evidence)."""
    import matplotlib.pyplot as plt

    points = pd.DataFrame(
        {
            "reducer": ["learned", "learned", "program"],
            "reduction": [0.5, 0.97, 0.8],
            "coverage": [1.0, 0.6, 0.9],
            "evidence": [1.0, 0.5, 0.7],
            "label": ["budget=0.8", "budget=0.05", ""],
            "coverage_n": [None, None, 91],
            "evidence_n": [None, None, 57],
        }
    )
    drawn = {}
    real = plt.Figure.savefig

    def keep(fig, *a, **k):
        fig.canvas.draw()
        drawn["boxes"] = [
            (t.get_text(), ax.get_window_extent(), t.get_window_extent())
            for ax in fig.axes
            for t in ax.texts
        ]
        drawn["legend"] = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
        return real(fig, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt.Figure, "savefig", keep)
        tradeoffs.coverage_vs_reduction(points, name="cvr_edges")
    texts = [t for t, _, _ in drawn["boxes"]]
    assert texts.count("budget=0.8") == 2 and {"n=91", "n=57"} <= set(texts)
    for text, panel, box in drawn["boxes"]:
        assert panel.x0 <= box.x0 and box.x1 <= panel.x1 and box.y1 <= panel.y1, text
    assert not any("n=" in label for label in drawn["legend"])  # n is per panel, not shared
    frame = pd.DataFrame(
        {
            "reducer": ["lineretriever+structure", "lineretriever+structure", "full", "full"],
            "reduction": [0.6, 0.8, 0.0, 0.0],
            "reduction_chars": [0.6, 0.8, 0, 0],
            "reduction_lines": [0.5, 0.7, 0, 0],
            "target_status": ["ok", "none", "ok", "none"],
            "covered": [False, None, True, None],
            "covered_visible": [True, None, True, None],
            "episode_success": [True, True, True, True],
            "latency_s": [0.1, 0.3, 0.0, 0.0],
            "cost_usd": [0.001, 0.003, 0.004, 0.004],
        }
    )
    table = tables.table1(frame, tables.reported_numbers(), model="M", name="t1")
    assert table.set_index("reducer").loc["lineretriever+structure", "coverage"] == 0.0
    assert table.set_index("reducer").loc["full", "cost_per_step_usd"] == pytest.approx(0.004)
    assert (
        "61%"
        in table.set_index("reducer").loc["lineretriever+structure", "reported_reduction (paper)"]
    )
    md = (figs["dir"] / "t1.md").read_text()
    assert "retriever model M" in md and "reported" in md


def test_metric_bars_titles_the_model(figs):
    summary = pd.DataFrame(
        {"config": ["a", "b"], "answer": ["tags", "json"], "coverage": [0.5, 0.7]}
    )
    plots.metric_bars(summary, ["coverage"], by="config", hue="answer", model="M")
    assert "retriever model: M" in figs["title"]


def test_injection_survival_from_real_injection_rows(figs, real_trees):
    from lrlab.injection.injection_eval import breakdown, score_cached, summarize
    from lrlab.injection.injection_sets import build_set
    from lrlib.core.step import Step
    from lrlib.data.actions import action_bids

    steps = [Step(goal=t["goal"], tree=t["tree"], target_bids=tuple(action_bids(t["action_raw"])),
                  step_id=k) for k, t in real_trees.items()]  # fmt: skip
    rows, _ = score_cached(["full", "oracle", "truncate:budget=2000"], build_set(steps, n=None))
    summary, by = summarize(rows), breakdown(rows, "position")
    path = tradeoffs.injection_survival(summary, by, name="inj")
    assert path.stat().st_size > 10_000 and (figs["dir"] / "inj.pdf").is_file()
    assert "retriever model" not in figs["title"]
    assert "lift 1.00" in figs["texts"] and "lift 0.00" in figs["texts"]  # full, oracle
    assert "survival by position" in figs["titles"]
    lr = summary.assign(reducer=summary["reducer"].replace("full", "lineretriever:paper/json"))
    with pytest.raises(ValueError, match="model="):
        tradeoffs.injection_survival(lr, by.rename(index={"full": "lineretriever:paper/json"}))
    tradeoffs.injection_survival(lr, by.rename(index={"full": "lineretriever:paper/json"}),
                             model="TinyModel-1")  # fmt: skip
    assert "TinyModel-1" in figs["title"]


def _split_frame():
    rng = np.random.default_rng(3)
    rows = []
    for reducer in ("bm25", "lineretriever+structure"):
        for split in ("validation", "test"):
            for i in range(30):
                rows.append(
                    {
                        "reducer": reducer, "split": split, "step_id": f"{split}{i}",
                        "episode": f"{split}-e{i % 6}", "reduction": float(rng.uniform()),
                        "covered": bool(rng.uniform() < (0.8 if split == "validation" else 0.5)),
                        "evidence_covered": bool(rng.uniform() < 0.5),
                    }
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_forest_shows_every_interval_with_its_n_and_names_the_model(figs):
    from lrlab.report import forest
    from lrlib.eval import intervals

    f = _split_frame()
    summary = intervals.summary(f, by=["reducer", "split"])
    gaps = intervals.gap(f, "covered").assign(value="target coverage")
    with pytest.raises(ValueError, match="pass model="):
        forest.interval_forest(summary)
    forest.interval_forest(summary, gaps=gaps, model="M", name="g")
    assert "retriever model: M" in figs["title"]
    assert (figs["dir"] / "g.png").is_file() and (figs["dir"] / "g.pdf").is_file()
    # one n label per reducer, split and measure (3 measures x 2 reducers x 2 splits)
    labels = [t for t in figs["texts"] if t.startswith("n=")]
    assert len(labels) == 12 and "n=30/6" in labels


def test_reduction_boxplot_and_curves_carry_intervals(figs):
    f = _split_frame().assign(tokens_before=1500)
    plots.reduction_boxplot(f[f.reducer == "bm25"], name="box")
    assert any("target coverage" in t and "n=60/12" in t for t in figs["titles"])
    import matplotlib.pyplot as plt

    from lrlib.core.step import Step
    from lrlib.eval.evaluation import sweep

    steps = [Step("g", "[1] link 'a'\n[2] link 'b'", target_bids=("2",), step_id=str(i),
                  episode=f"e{i}") for i in range(4)]  # fmt: skip
    curve = sweep("truncate", "budget", [3, 100], steps, progress=False)
    points = tradeoffs.curve_points(curve)
    assert {"coverage_lo", "coverage_hi", "reduction_lo", "reduction_hi"} <= set(points)
    drawn = []
    real = plt.Axes.errorbar
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            plt.Axes, "errorbar", lambda self, *a, **k: drawn.append(a) or real(self, *a, **k)
        )
        tradeoffs.coverage_vs_reduction(points, name="cvr")
    assert drawn, "no error bars drawn"


@pytest.mark.slow
def test_notebooks_run_side_by_side_with_progress_and_eta(tmp_path, monkeypatch, capsys):
    """`lrlib figures --jobs 2`: two notebooks at once, a kernel each, one progress line per
    notebook with the time left, results in notebook order, each executed .ipynb written,
    and the times kept for the next run's order and estimate."""
    import json

    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    folder = tmp_path / "nb"
    folder.mkdir()
    for name in ("10_a", "11_b"):
        (folder / f"{name}.py").write_text(
            f"# %%\nimport os, time\ntime.sleep(2)\nprint('{name}', os.getpid())\n"
        )
    out = plots.run_all(folder=folder, jobs=2, timeout=120)
    assert [r.name for r in out] == ["10_a", "11_b"] and all(r.error is None for r in out)
    text = capsys.readouterr().out
    assert "2 notebooks, 2 at a time" in text and "[1/2]" in text and "s left" in text
    assert "[2/2]" in text
    pids = set()
    for name in ("10_a", "11_b"):
        nb = json.loads((folder / f"{name}.ipynb").read_text())
        printed = "".join(nb["cells"][0]["outputs"][0]["text"])
        assert printed.startswith(name)
        pids.add(printed.split()[1])
    assert len(pids) == 2  # a kernel each
    times = json.loads((tmp_path / "work" / "figures-times.json").read_text())["full"]
    assert set(times) == {"10_a", "11_b"} and all(t >= 2 for t in times.values())
    plots.run_all(folder=folder, jobs=2, timeout=120, write=False)
    assert "s left" in capsys.readouterr().out  # estimated from the saved times


def test_notebooks_start_longest_first_and_never_timed_ones_by_source_size(tmp_path):
    """The run order (`lrlib figures --jobs 2` finishes sooner when the long notebooks
    start first): by the last run's times; never-timed notebooks before those, the longest
    source first, as on a fresh clone where no time is recorded yet."""
    sources = []
    for name, size in (("10_a", 10), ("11_b", 300), ("12_c", 50), ("13_d", 20)):
        sources.append(tmp_path / f"{name}.py")
        sources[-1].write_text("#" * size)
    order = lambda last: [s.stem for s in plots._run_order(sources, last)]  # noqa: E731
    assert order({}) == ["11_b", "12_c", "13_d", "10_a"]
    assert order({"10_a": 30.0, "11_b": 2.0, "12_c": 9.5}) == ["13_d", "10_a", "12_c", "11_b"]
