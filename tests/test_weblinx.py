"""WebLINX-BG import (lrlab.scale.weblinx, `lrlib import-weblinx`) on a fixture in the
release's on-disk layout, built from real MiniWoB pages captured through BrowserGym in
Debian's chromium (benchmarks/build_weblinx_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlab.scale import weblinx
from lrlib.cli import main
from lrlib.data import dataset
from lrlib.data.dataset import COLUMNS, load_steps

FIXTURE = Path(__file__).parent / "fixtures" / "weblinx_bg"


def _trees() -> list[dict]:
    return [
        json.loads(p.read_text()) for p in sorted(FIXTURE.glob("demonstrations/*/axtrees/*.json"))
    ]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wl") / "weblinx.parquet"
    report = weblinx.import_weblinx(FIXTURE, out)
    assert report.n_rows == 7 and report.n_demos == 2 and not report.skipped
    return out


def test_fixture_has_the_release_layout() -> None:
    """Every key weblinx_browsergym's WeblinxTasks reads is there, and the paths resolve
    under <root>/demonstrations/ as it resolves them."""
    meta = json.loads((FIXTURE / "metadata.json").read_text())
    tasks = [
        (s, d, t, step)
        for s, demos in meta.items()
        for d, steps in demos.items()
        for t, step in steps.items()
        if step["is_task"] and step["has_full_snapshot"]
    ]
    assert len(tasks) == 7
    for _, _, _, step in tasks:
        assert {"intent", "args", "tab", "zoom", "timestamp"} <= set(step)
        for key in ("axtree_path", "dom_object_path", "extra_props_path"):
            assert (FIXTURE / "demonstrations" / step[key]).is_file()
        axtree = json.loads((FIXTURE / "demonstrations" / step["axtree_path"]).read_text())
        assert axtree["nodes"][0]["role"]["value"] == "RootWebArea"


def test_rows_carry_licence_targets_and_history(imported: Path) -> None:
    rows = [r for b in dataset.iter_row_batches(imported) for r in b]
    assert set(COLUMNS) <= set(rows[0])
    assert {r["licence"] for r in rows} == {"CC BY-NC-SA 4.0"}
    assert all("weblinx-browsergym" in r["attribution"] for r in rows)
    assert {r["split"] for r in rows} == {"train", "validation"}
    by_id = {r["step_id"]: r for r in rows}
    click = by_id["weblinx.mwloginusr.3"]
    assert click["action_name"] == "click" and click["target_lines"]
    line = click["axtree_txt"].splitlines()[click["target_lines"][0] - 1]
    assert line.strip().startswith(f"[{click['action_bids'][0]}] button 'Login'")
    assert click["history"][0].startswith("fill(") and len(click["history"]) == 2
    assert click["goal"].startswith('user: Enter the username "')
    say = by_id["weblinx.mwloginusr.4"]
    assert say["action_name"] == "send_msg_to_user" and say["target_lines"] == []
    prov = dataset.read_provenance(imported)
    assert prov["licence"] == "CC BY-NC-SA 4.0" and prov["results_name"] == "WebLINX-BG"
    assert json.loads(dataset.provenance_path(imported).read_text())["licence"] == "CC BY-NC-SA 4.0"


def test_parquet_and_json_lines_hold_the_same_rows(imported: Path, tmp_path: Path) -> None:
    weblinx.import_weblinx(FIXTURE, tmp_path / "w.jsonl.gz")
    a = [r for b in dataset.iter_row_batches(imported) for r in b]
    b = [r for bt in dataset.iter_row_batches(tmp_path / "w.jsonl.gz") for r in bt]
    assert a == b


def test_fixture_imports_and_evaluates_end_to_end(imported: Path) -> None:
    from lrlib.eval.evaluation import evaluate

    steps = load_steps(path=imported)
    frame = evaluate(["full", "program", "learned", "bm25"], steps, progress=False)
    assert len(frame) == 4 * 7
    full = frame[frame.reducer == "full"]
    assert full["covered"].dropna().all()
    assert (frame[frame.reducer == "program"]["reduction"] > 0).any()


def test_command_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.parquet"
    assert main(["import-weblinx", str(FIXTURE), "-o", str(out), "-q", "--splits", "valid"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("lrlib import-weblinx: 1 demonstrations of valid")
    assert len(load_steps(path=out)) == 4
    assert main(["import-weblinx", str(FIXTURE), "--splits", "test_vis"]) == 2
    assert "valid: train, valid" in capsys.readouterr().err
    assert main(["import-weblinx", str(tmp_path / "none")]) == 2
    assert main(["import-weblinx", str(FIXTURE), "-o", "data/x.parquet"]) == 2


# --- flattening: BrowserGym's flatten_axtree_to_str -----------------------------------


def test_flatten_matches_browsergym_on_the_fixture_trees() -> None:
    obs = pytest.importorskip("browsergym.utils.obs", reason="browsergym-core not installed")
    for tree in _trees():
        assert weblinx.flatten_axtree(tree) == obs.flatten_axtree_to_str(tree)


def test_flatten_of_a_fixture_tree() -> None:
    tree = json.loads((FIXTURE / "demonstrations/mwloginusr/axtrees/page-4-0.json").read_text())
    text = weblinx.flatten_axtree(tree).splitlines()
    assert text[0].startswith("RootWebArea 'Login User Task', focused")
    assert "\t\t[f411f1c7-9c8e-da77] textbox '' value='macie'" in text
    assert "\t\t\tStaticText 'macie'" in text


ROLES = st.sampled_from(["generic", "StaticText", "button", "link", "LineBreak", "heading"])
NAMES = st.one_of(st.none(), st.sampled_from(["", "Go", "Go home", "home", " x "]))
PROPS = st.lists(
    st.tuples(
        st.sampled_from(["focused", "required", "level", "expanded", "url", "checked"]),
        st.one_of(st.booleans(), st.integers(0, 3), st.sampled_from(["a", "b'c"])),
    ),
    max_size=3,
)


@st.composite
def axtrees(draw: st.DrawFn) -> dict:
    """A random AX tree in CDP's shape: node 0 the root, each node's parent earlier."""
    n = draw(st.integers(1, 25))
    nodes = []
    for i in range(n):
        node = {"nodeId": str(i), "role": {"value": draw(ROLES)}, "childIds": []}
        name = draw(NAMES)
        if name is not None:
            node["name"] = {"value": name}
        if draw(st.booleans()):
            node["browsergym_id"] = f"b{i}"
        if draw(st.booleans()):
            node["value"] = {"value": draw(st.sampled_from(["v", 3]))}
        props = draw(PROPS)
        if props:
            node["properties"] = [{"name": k, "value": {"value": v}} for k, v in props]
        nodes.append(node)
        if i:
            nodes[draw(st.integers(0, i - 1))]["childIds"].append(str(i))
    if draw(st.booleans()):
        nodes[0]["childIds"].append("missing")  # CDP lists children it does not return
    return {"nodes": nodes}


@settings(max_examples=300, deadline=None)
@given(axtrees())
def test_flatten_agrees_with_browsergym_on_random_trees(tree: dict) -> None:
    obs = pytest.importorskip("browsergym.utils.obs", reason="browsergym-core not installed")
    assert weblinx.flatten_axtree(tree) == obs.flatten_axtree_to_str(tree)


@settings(max_examples=200, deadline=None)
@given(axtrees())
def test_flatten_prints_only_named_nodes_with_their_bids(tree: dict) -> None:
    text = weblinx.flatten_axtree(tree)
    bids = {n.get("browsergym_id") for n in tree["nodes"]}
    for line in filter(None, text.split("\n")):
        body = line.lstrip("\t")
        if body.startswith("["):
            assert body[1 : body.index("]")] in bids
        assert not body.startswith("LineBreak")


def test_flatten_survives_a_very_deep_page() -> None:
    depth = 5000  # BrowserGym's recursive version would exceed Python's recursion limit
    nodes = [
        {"nodeId": str(i), "role": {"value": "group"}, "name": {"value": f"g{i}"},
         "childIds": [str(i + 1)] if i + 1 < depth else []}
        for i in range(depth)
    ]  # fmt: skip
    lines = weblinx.flatten_axtree({"nodes": nodes}).split("\n")
    assert len(lines) == depth and lines[-1] == "\t" * (depth - 1) + "group 'g4999'"
