"""evaluate(): one tidy row per (step, reducer) with provenance; sweeps; the CLI command."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lrlib import cli
from lrlib.core.step import Step
from lrlib.data.actions import action_bids
from lrlib.eval import evaluation
from lrlib.eval.evaluation import curves, evaluate, parse_spec, resolve, sweep
from lrlib.reducers import Knob, Output, Reducer, knobs


@pytest.fixture(scope="module")
def steps(real_trees):
    out = []
    for i, (name, t) in enumerate(real_trees.items()):
        meta = {
            "episode": name,
            "benchmark": name.split("_")[0],
            "task": "t",
            "step": i,
            "split": "validation",
            "episode_success": i != 1,
            "episode_reward": 1.0,
        }
        out.append(
            Step(
                goal=t["goal"],
                tree=t["tree"],
                history=("click('a12')",),
                target_bids=tuple(action_bids(t["action_raw"])),
                step_id=name,
                meta=meta,
            )
        )
    return out


class FakeLLM(Reducer):
    """Stands in for an LLM reducer: usage, a model, a prompt, sometimes a failure."""

    name = "fake-llm"
    model = "tiny-model"

    def provenance(self):
        return {"model": self.model, "prompt": "paper", "prompt_hash": "0123456789ab"}

    def select(self, step):
        if "magento" in step.step_id:
            return Output(
                text=step.axtree.text,
                kept=list(range(1, len(step.axtree) + 1)),
                failure="no_answer",
                usage={"prompt_tokens": 10, "completion_tokens": 2},
            )
        return Output(
            text=step.axtree.texts[0],
            kept=[1],
            extra={"cache_hit": True},
            usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        )


def test_one_row_per_step_and_reducer_with_provenance(steps):
    f = evaluate(
        ["full", "oracle", "truncate:budget=300", FakeLLM(temperature=0)], steps, progress=False
    )
    assert len(f) == 4 * len(steps)
    assert list(f.reducer.unique()) == ["full", "oracle", "truncate:budget=300", "fake-llm"]
    for col in (
        "step_id",
        "episode",
        "benchmark",
        "split",
        "episode_success",
        "reduction",
        "reduction_chars",
        "reduction_lines",
        "covered",
        "covered_visible",
        "target_status",
        "latency_s",
        "cold_latency_s",
        "lrlib_version",
        "git_commit",
        "created",
        "model",
        "prompt",
        "prompt_hash",
        "params",
        "failure",
    ):
        assert col in f.columns, col
    assert f.lrlib_version.notna().all()
    trunc = f[f.reducer == "truncate:budget=300"]
    assert json.loads(trunc.params.iloc[0]) == {"budget": 300}
    assert (trunc.tokens_after <= 300).all()
    llm = f[f.reducer == "fake-llm"].set_index("step_id")
    assert (llm.model == "tiny-model").all() and (llm.prompt_hash == "0123456789ab").all()
    assert llm.loc["webarena_magento", "failure"] == "no_answer"
    assert llm.loc["workarena_ipad", "usage_total_tokens"] == 15
    assert bool(llm.loc["workarena_ipad", "cache_hit"]) is True
    full = f[f.reducer == "full"]
    assert (full.reduction == 0).all() and full[full.target_status == "ok"].covered.all()
    # the magento step's action (send_msg_to_user) names no element: excluded, counted
    assert set(f[f.step_id == "webarena_magento"].target_status) == {"none"}


def test_steps_may_come_as_an_observations_frame(steps):
    rows = pd.DataFrame(
        [
            {
                "goal": s.goal,
                "axtree_txt": s.tree,
                "history": list(s.history),
                "action_bids": list(s.target_bids),
                "step_id": s.step_id,
                **s.meta,
            }
            for s in steps
        ]
    )
    f = evaluate("oracle", rows, progress=False)
    assert list(f.step_id) == [s.step_id for s in steps]
    assert f.episode_success.tolist() == [s.meta["episode_success"] for s in steps]


def test_specs_and_labels():
    assert parse_spec("random:keep_ratio=0.5,seed=2,strategy=remove") == (
        "random",
        {"keep_ratio": 0.5, "seed": 2, "strategy": "remove"},
    )
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("random:0.5")
    table = resolve({"cheap": "truncate:budget=10", "all": "full"})
    assert list(table) == ["cheap", "all"] and table["cheap"].params == {"budget": 10}
    with pytest.raises(ValueError, match="two reducers"):
        resolve(["full", "full"])
    with pytest.raises(KeyError, match="valid reducers"):
        resolve(["no-such-reducer"])


def test_sweep_trades_coverage_for_reduction(steps):
    curve = sweep("truncate", "budget", [50, 500, 2000, 10**6], steps, progress=False)
    assert list(curve.value) == [50, 500, 2000, 10**6]
    assert curve.median_reduction.is_monotonic_decreasing
    assert curve.coverage.is_monotonic_increasing
    assert curve.coverage.iloc[-1] == 1.0 and curve.median_reduction.iloc[-1] == 0.0
    assert json.loads(curve.params.iloc[0]) == {"budget": 50}


def test_curves_cover_every_reducer_with_a_knob(steps, monkeypatch):
    # shrink the default sweeps to two values each, to keep the test fast
    short = {k: Knob(v.option, v.values[:2], v.variant) for k, v in knobs().items()}
    short.pop("embedding")
    monkeypatch.setattr(evaluation, "knobs", lambda: short)
    table = curves(steps, progress=False)
    assert set(table.reducer) == set(short)
    assert (table.groupby("reducer").size() == 2).all()
    with pytest.raises(KeyError, match="reducers with knobs"):
        curves(steps, ["full"])


def test_every_default_knob_is_a_real_parameter():
    from lrlib.reducers import get_reducer

    for spec, knob in knobs().items():
        name, params = parse_spec(spec)
        if name == "embedding":
            continue  # building it is cheap but needs no check beyond its signature
        value = knob.values[0]
        assert get_reducer(name, **params, **{knob.option: value}).params[knob.option] == value


def test_cli_evaluate_writes_rows_and_prints_a_table(steps, tmp_path, monkeypatch, capsys):
    from lrlib.data import dataset as data

    calls = {}

    def fake_load_steps(split=None, benchmark=None, limit=None, path=None):
        calls.update(split=split, benchmark=benchmark, limit=limit, path=path)
        return steps[:limit] if limit else steps

    monkeypatch.setattr(data, "load_steps", fake_load_steps)
    out = tmp_path / "eval.csv.gz"
    code = cli.main(
        [
            "evaluate",
            "--reducers",
            "full;program;truncate:budget=200",
            "--split",
            "validation",
            "--limit",
            "2",
            "--out",
            str(out),
            "--no-progress",
            "--curves",
        ]
    )
    assert code == 0
    assert calls == {"split": "validation", "benchmark": None, "limit": 2, "path": None}
    frame = pd.read_csv(out)
    assert len(frame) == 3 * 2 and set(frame.reducer) == {"full", "program", "truncate:budget=200"}
    printed = capsys.readouterr().out
    assert "| reducer |" in printed and "| program |" in printed
    curve = pd.read_csv(tmp_path / "curves-eval.csv.gz")
    assert set(curve.reducer) == {"program"}


def test_provenance_reads_objects_and_aliases():
    from lrlib.core.prompts import get_prompt
    from lrlib.eval.evaluation import reducer_provenance

    class Client:
        model = "remote-model"

    class Retriever(Reducer):
        name = "retriever"

        def __init__(self):
            super().__init__(fingerprint="abcdef123456")
            self.model = Client()
            self.prompt = get_prompt("paper")

        def select(self, step):
            return Output(text="", kept=[], usage={"prompt_tokens": 3, "cached_tokens": 2})

    r = Retriever()
    assert reducer_provenance(r) == {
        "model": "remote-model",
        "prompt": "paper",
        "prompt_hash": "abcdef123456",
    }
    row = evaluate([r], [Step(goal="g", tree="[1] link 'a'", step_id="s")], progress=False)
    assert row.usage_cached_tokens.iloc[0] == 2 and row.usage_prompt_tokens.iloc[0] == 3


def test_rows_carry_the_grouping_fields_and_evidence():
    from lrlib.data import dataset as data

    steps = data.load_steps(split="test", limit=12)
    f = evaluate("oracle", steps, progress=False)
    assert f.family.tolist() == [s.family for s in steps] and f.family.str.len().gt(0).all()
    assert f.episode.tolist() == [s.episode for s in steps]
    assert set(f.evidence_status) <= {"ok", "none", "missing"}
    ok = f[f.evidence_status == "ok"]
    assert ok.n_evidence.ge(1).all()
    # the oracle keeps targets and their ancestors only: it misses most extra evidence
    extra = ok[ok.n_evidence > ok.n_targets]
    assert not extra.empty and not extra.evidence_covered.all()
    hand = evaluate("full", [Step(goal="g", tree="[1] link 'a'", step_id="h")], progress=False)
    assert hand.episode.tolist() == ["h"]  # a hand-made step is its own episode


def test_sweep_rows_carry_intervals(steps):
    curve = sweep("truncate", "budget", [200, 10**6], steps, progress=False)
    for prefix in ("reduction", "coverage"):
        assert (
            curve[f"{prefix}_lo"] <= curve[prefix if prefix == "coverage" else "median_reduction"]
        ).all()
        assert (curve[f"{prefix}_n"] > 0).all()
    assert curve.coverage_lo.iloc[-1] == curve.coverage_hi.iloc[-1] == 1.0


def test_all_reducers_adds_registered_ones(monkeypatch):
    from lrlib.reducers import base

    monkeypatch.setitem(base._REGISTRY, "my-scorer", base._REGISTRY["full"])
    names = evaluation.all_reducers()
    assert names[-1] == "my-scorer" and "lineretriever" not in names
    assert "lineretriever" in evaluation.all_reducers(llm=True)


def test_interval_table_cells_show_interval_and_n(steps):
    from lrlib.report.tables import interval_table

    f = evaluate(["full", "truncate:budget=200"], steps, progress=False)
    t = interval_table(f).set_index("reducer")
    cell = t.loc["truncate:budget=200", "target coverage"]
    n_ok = int((f[f.reducer == "full"].target_status == "ok").sum())
    assert cell.endswith(f"n={n_ok}/{n_ok}") and "[" in cell  # one episode per fixture step
    assert t.loc["full", "median reduction"].startswith("0.0% [0.0, 0.0]")


def test_interval_table_rows_match_their_groups():
    """Each row's steps, latency and intervals belong to its own (reducer, split) group."""
    from lrlib.data import dataset as data
    from lrlib.report.tables import interval_table

    steps = data.load_steps(split="validation", limit=8) + data.load_steps(split="test", limit=5)
    f = evaluate(["truncate:budget=500", "full"], steps, progress=False)
    t = interval_table(f, by=["reducer", "split"])
    assert len(t) == 4
    for _, row in t.iterrows():
        part = f[(f.reducer == row["reducer"]) & (f.split == row["split"])]
        assert row["steps"] == len(part)
        assert row["median reduction"].endswith(f"n={len(part)}/{part.episode.nunique()}")
        ok = part[part.target_status == "ok"]
        assert row["target coverage"].endswith(f"n={len(ok)}/{ok.episode.nunique()}")
        assert row["target coverage"].startswith(f"{100 * ok.covered.astype(float).mean():.1f}%")
        assert row["median latency ms"] == round(float(part.latency_s.median() * 1000), 2)
