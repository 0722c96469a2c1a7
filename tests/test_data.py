"""lrlib.data.dataset / lrlib.data.traces: the importer on the real traces, messy inputs, the shipped file."""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import pickle
import random
import re
import shutil
import sys
import types
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lrlib.cli import COMMANDS
from lrlib.core.axtree import split_lines
from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens
from lrlib.data import dataset as data
from lrlib.data import import_command, importer

HAND_CHECKED = "2024-11-06_13-52-18_DemoAgentArgs_on_webarena.210_30"
WITH_FOLLOWUPS = (
    "2024-11-21_19-51-18_DemoAgentArgs_on_workarena.servicenow."
    "dashboard-retrieve-catalog-and-max-order-apple-macbook-pro15-l2_25"
)


@pytest.fixture(scope="session")
def report(traces_dir) -> importer.ImportReport:
    return importer.import_traces(traces_dir)


@pytest.fixture(scope="session")
def rows(report) -> list[dict]:
    return report.rows


def _step_files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if re.fullmatch(r"step_\d+\.pkl\.gz", p.name)]


# ---- counts ------------------------------------------------------------------------------


def test_counts_match_the_folders(traces_dir, report, rows):
    folders = [Path(d) for d, _, files in os.walk(traces_dir) if any(f.startswith("step_") for f in files)]  # fmt: skip
    n_files = sum(len(_step_files(f)) for f in folders)
    assert report.n_folders == len(folders)
    assert report.n_step_files == n_files
    # every step file is a row, a dropped step, or a skipped file
    accounted = len(rows) + sum(report.dropped.values()) + len(report.skipped)
    assert accounted == n_files
    assert set(report.dropped) <= {"off_benchmark", "duplicate"}
    assert report.dropped["duplicate"] == sum(len(r["duplicate_steps"]) for r in rows)
    # per episode: kept rows + their duplicates never exceed the folder's files
    per_ep = Counter()
    for r in rows:
        per_ep[r["episode"]] += 1 + len(r["duplicate_steps"])
    for f in folders:
        assert per_ep[f.name] <= len(_step_files(f))
    assert len({r["step_id"] for r in rows}) == len(rows)
    for r in rows:
        assert (traces_dir / r["source"]).is_file()
        assert r["source"].endswith(f"/step_{r['step']}.pkl.gz")
        assert r["step_id"] == f"{r['episode']}/{r['step']}"


def test_every_step_file_is_accounted_for_per_folder(traces_dir, report, rows):
    fate = Counter()
    for r in rows:
        fate[r["source"]] += 1
    for src, kind in report.dropped_steps:
        assert kind in ("off_benchmark", "duplicate")
        fate[src] += 1
    for src, why in report.skipped:
        assert why.startswith("no accessibility tree") or "Error" in why
        fate[src] += 1
    files = {p.relative_to(traces_dir).as_posix() for p in traces_dir.glob("*/step_*.pkl.gz")}
    assert set(fate) == files and set(fate.values()) == {1}
    # episodes that failed at reset (empty first observation) give no row but are reported
    kept = {r["episode"] for r in rows}
    failed = {src.split("/")[0] for src, _ in report.skipped} - kept
    assert failed
    for ep in failed:
        assert not (traces_dir / ep / "goal_object.pkl.gz").exists()
    text = report.text()
    assert f"skipped files ({len(report.skipped)})" in text
    assert all(src in text for src, _ in report.skipped)


# ---- targets -------------------------------------------------------------------------------


def _lines_with_bid(tree: str, bid: str) -> list[int]:
    lines = [ln for ln in tree.replace("\r\n", "\n").split("\n") if ln.strip()]
    pat = re.compile(r"[\t ]*\[" + re.escape(bid) + r"\]( |$)")
    return [i for i, ln in enumerate(lines, 1) if pat.match(ln)]


def test_every_bid_action_has_its_bid_found_where_the_tree_has_it(rows):
    n_bid, n_found = 0, 0
    for r in rows:
        expected = set()
        for bid in r["action_bids"]:
            expected |= set(_lines_with_bid(r["axtree_txt"], bid))
        assert set(r["target_lines"]) == expected, r["step_id"]
        n_bid += bool(r["action_bids"])
        n_found += bool(r["target_lines"])
    assert n_bid > 200 and n_found > 0.9 * n_bid


def test_target_lines_agree_with_step_and_line_counts_with_axtree(rows):
    for r in rows[::7]:
        step = Step.from_row(r)
        assert step.target_lines == r["target_lines"]
        assert len(step.axtree) == r["n_lines"] == len(split_lines(r["axtree_txt"]))
        assert r["n_chars"] == len(r["axtree_txt"])
        assert r["n_tokens"] == count_tokens(r["axtree_txt"])
        for n in r["target_lines"]:
            assert step.axtree.line(n).bid in r["action_bids"]


# ---- goal and history ------------------------------------------------------------------------


def test_goal_and_history_on_a_hand_checked_episode(rows):
    ep = sorted((r for r in rows if r["episode"] == HAND_CHECKED), key=lambda r: r["step"])
    goal = "Find the customer name and email with phone number 2065555555"
    assert [r["goal"] for r in ep] == [goal] * 5
    assert [r["action"] for r in ep] == [
        "click('207')",
        "click('214')",
        "fill('844', '2065555555')",
        "click('845')",
        "send_msg_to_user('The customer with phone number 2065555555 is Adam Garcia, "
        "and their email is gamingpro456@gmail.com.')",
    ]
    assert [r["history"] for r in ep] == [[r2["action"] for r2 in ep[:i]] for i in range(5)]
    assert ep[-1]["duplicate_steps"] == [5]  # the final step repeats the last page
    assert ep[2]["last_action_error"].startswith("TimeoutError")
    assert [r["action_bids"] for r in ep] == [["207"], ["214"], ["844"], ["845"], []]
    assert ep[0]["benchmark"] == "webarena" and ep[0]["task"] == "webarena.210"
    assert ep[0]["seed"] == 30 and ep[0]["episode_reward"] == 1.0 and ep[0]["episode_success"]


def test_followup_user_messages_do_not_change_the_goal(rows):
    ep = sorted((r for r in rows if r["episode"] == WITH_FOLLOWUPS), key=lambda r: r["step"])
    assert len({r["goal"] for r in ep}) == 1
    assert ep[0]["goal"].startswith("Retrieve information from the chart with the title")
    assert ep[0]["goal"].endswith(
        "Please do not change any 'configuration' when placing the order.\n"
    )
    # a user kept typing "Step 4: " during the run: one more message at every step
    assert [r["user_followups"] for r in ep[:4]] == [["Step 4: "] * r["step"] for r in ep[:4]]


def test_goal_matches_goal_object_file(traces_dir, rows):
    from lrlib.data.safepickle import load_path

    goals = {r["episode"]: r["goal"] for r in rows}
    checked = 0
    for ep, goal in goals.items():
        path = traces_dir / ep / "goal_object.pkl.gz"
        if path.is_file():
            parts = [p["text"] for p in load_path(path) if p["type"] == "text"]
            assert goal == "\n".join(parts)
            checked += 1
    assert checked > 50


def test_history_is_the_previous_actions(rows):
    by_ep = defaultdict(list)
    for r in rows:
        by_ep[r["episode"]].append(r)
    for ep_rows in by_ep.values():
        ep_rows.sort(key=lambda r: r["step"])
        for a, b in zip(ep_rows, ep_rows[1:], strict=False):
            assert b["history"][: len(a["history"])] == a["history"]
            if a["action"] is not None:
                assert a["action"] in b["history"]
        for r in ep_rows:
            assert len(r["history"]) <= r["step"]


# ---- filters and split -----------------------------------------------------------------------


def test_off_benchmark_pages_are_dropped(report, rows):
    assert report.dropped["off_benchmark"] > 0
    for r in rows:
        assert urlsplit(r["url"]).hostname in report.hosts[r["benchmark"]]
    assert all(h.endswith(".service-now.com") for h in report.hosts["workarena"])
    assert not any(re.search(r"apple\.com|amazon\.com|bestbuy\.com", r["url"]) for r in rows)
    apple = [r for r in rows if r["episode"].endswith("Apple.com")]
    assert apple  # the episode keeps its on-benchmark steps


def test_no_duplicate_goal_tree_pair_within_an_episode(rows):
    keys = Counter((r["episode"], r["goal"], r["axtree_txt"]) for r in rows)
    assert max(keys.values()) == 1
    assert all(r["step"] < min(r["duplicate_steps"] or [10**9]) for r in rows)


def test_split_is_by_episode_grouped_and_stratified(rows):
    split_of = defaultdict(set)
    group_split = defaultdict(set)
    for r in rows:
        split_of[r["episode"]].add(r["split"])
        group_split[(r["task"], r["seed"])].add(r["split"])
    assert all(len(s) == 1 for s in split_of.values())
    assert all(len(s) == 1 for s in group_split.values())  # re-runs stay together
    for bench in ("workarena", "webarena"):
        eps = {r["episode"]: r["split"] for r in rows if r["benchmark"] == bench}
        dev = [s for s in eps.values() if s != "test"]
        share = sum(s == "validation" for s in dev) / len(dev)
        assert 0.2 <= share <= 0.4, (bench, share)


def test_test_split_is_whole_held_out_families(rows):
    split_of_family = defaultdict(set)
    for r in rows:
        assert r["family"] == r["task"]
        split_of_family[r["family"]].add(r["split"])
    test = {f for f, s in split_of_family.items() if "test" in s}
    assert test == importer.TEST_FAMILIES
    assert all(split_of_family[f] == {"test"} for f in test)  # a family is never split
    assert {r["benchmark"] for r in rows if r["split"] == "test"} == {"workarena", "webarena"}
    # the development split is the one from before the test split existed: every
    # non-test row keeps the train/validation it gets when no family is held out
    copies = [dict(r, split=None) for r in rows]
    importer.assign_split(copies, test_families=())
    for before, r in zip(copies, rows, strict=True):
        if r["split"] != "test":
            assert before["split"] == r["split"]


def test_split_is_deterministic_and_order_free(rows):
    copies = [dict(r, split=None) for r in rows]
    random.Random(3).shuffle(copies)
    importer.assign_split(copies)
    assert {r["step_id"]: r["split"] for r in copies} == {r["step_id"]: r["split"] for r in rows}


# ---- the shipped dataset -----------------------------------------------------------------


def test_shipped_dataset_is_a_fresh_import_of_the_traces(rows):
    shipped = data.read_rows(data.default_path())
    fresh = json.loads(json.dumps(rows))
    assert len(shipped) == len(fresh)
    assert shipped == fresh, "data/ is stale: run `make data`"


def test_load_observations_dataframe(rows):
    df = data.load_observations()
    assert list(df.columns) == data.COLUMNS
    assert len(df) == len(rows)
    assert df["step_id"].is_unique
    assert set(df["split"]) == set(data.SPLITS) == {"train", "validation", "test"}
    assert set(df["benchmark"]) == {"workarena", "webarena"}
    assert df["action"].map(lambda a: a is None or isinstance(a, str)).all()
    assert df["action"].isna().sum() == sum(r["action"] is None for r in rows) > 0
    assert df["action_bids"].map(lambda b: isinstance(b, list)).all()
    train = data.load_observations(split="train")
    val = data.load_observations(split="validation", benchmark="webarena")
    assert (train["split"] == "train").all() and len(train) < len(df)
    assert ((val["split"] == "validation") & (val["benchmark"] == "webarena")).all()
    test = data.load_observations(split="test")
    assert set(test["family"]) == importer.TEST_FAMILIES
    assert len(data.load_steps(split="test")) == len(test)
    with pytest.raises(ValueError, match="test, train, validation"):
        data.load_observations(split="dev")
    with pytest.raises(ValueError, match="webarena, workarena"):
        data.load_observations(benchmark="miniwob")


def test_load_steps(rows):
    steps = data.load_steps(split="validation", limit=20)
    assert len(steps) == 20 and all(isinstance(s, Step) for s in steps)
    assert all(s.meta["split"] == "validation" for s in steps)
    by_id = {r["step_id"]: r for r in rows}
    for s in steps:
        r = by_id[s.step_id]
        assert (s.goal, s.tree, list(s.history)) == (r["goal"], r["axtree_txt"], r["history"])
        assert s.target_lines == r["target_lines"]
        assert (s.episode, s.benchmark, s.family) == (r["episode"], r["benchmark"], r["family"])
    assert len(data.load_steps()) == len(rows)


def test_missing_dataset_says_how_to_build_it(tmp_path):
    missing = tmp_path / "none.jsonl.gz"
    with pytest.raises(FileNotFoundError, match=f"import-traces .* -o {missing}"):
        data.load_observations(path=missing)
    with pytest.raises(FileNotFoundError, match="make data"):  # the shipped one, gone
        data.load_observations(path=data.paths.shipped_data_dir() / "none.jsonl.gz")


# ---- messy and malicious inputs ---------------------------------------------------------------


@pytest.fixture
def messy_root(tmp_path, traces_dir) -> Path:
    """A copy of the hand-checked episode under folder names with spaces."""
    root = tmp_path / "my runs"
    ep = root / "batch 1" / f"{HAND_CHECKED} copy"
    shutil.copytree(traces_dir / HAND_CHECKED, ep)
    return root


def _episode_dir(root: Path) -> Path:
    return next(root.glob("batch 1/*"))


def test_corrupt_files_are_reported_and_skipped(messy_root):
    ep = _episode_dir(messy_root)
    raw = (ep / "step_2.pkl.gz").read_bytes()
    (ep / "step_2.pkl.gz").write_bytes(raw[: len(raw) // 3])  # truncated gzip
    (ep / "step_7.pkl.gz").write_bytes(b"this is not gzip")
    (ep / "step_8.pkl.gz").write_bytes(gzip.compress(b"\x80\x04not a pickle"))
    (ep / "step_9.pkl.gz").write_bytes(b"")
    (ep / "summary_info.json").write_text("{broken")
    report = importer.import_traces(messy_root)
    skipped = dict(report.skipped)
    prefix = f"batch 1/{ep.name}/"
    assert set(skipped) == {prefix + f"step_{n}.pkl.gz" for n in (2, 7, 8, 9)}
    assert skipped[prefix + "step_2.pkl.gz"].startswith("EOFError")
    assert "gzip" in skipped[prefix + "step_7.pkl.gz"].lower()
    assert any("summary_info.json" in src for src, _ in report.notes)
    assert [r["step"] for r in report.rows] == [0, 1, 3, 4]
    # step 2's action is recovered from step 3's last_action: history stays complete
    assert report.rows[2]["history"] == [
        "click('207')",
        "click('214')",
        "fill('844', '2065555555')",
    ]
    assert report.rows[0]["source"] == prefix + "step_0.pkl.gz"
    assert not report.rows[0]["has_summary"]
    assert report.rows[0]["episode_reward"] == 1.0  # from the step rewards


def test_malicious_pickle_is_refused_not_run(messy_root, tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    ep = _episode_dir(messy_root)
    (ep / "step_1.pkl.gz").write_bytes(gzip.compress(pickle.dumps(Evil())))
    report = importer.import_traces(ep)  # a single experiment folder works too
    assert not marker.exists()
    (why,) = [w for src, w in report.skipped if src.endswith("step_1.pkl.gz")]
    assert why.startswith("UnsafePickleError") and ".system'" in why
    assert [r["step"] for r in report.rows] == [0, 2, 3, 4]
    assert report.rows[0]["source"] == f"{ep.name}/step_0.pkl.gz"


def test_write_is_atomic(tmp_path, rows, monkeypatch):
    out = tmp_path / "obs.jsonl.gz"
    out.write_bytes(b"previous version")

    def interrupted(batches, f):
        f.write(b'{"partial": ')
        raise KeyboardInterrupt

    monkeypatch.setattr(data, "_write_json_lines", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.write_row_batches([rows[:3]], out)
    assert out.read_bytes() == b"previous version"
    assert [p.name for p in tmp_path.iterdir()] == ["obs.jsonl.gz"]  # no temp file left
    monkeypatch.undo()
    data.write_row_batches([rows[:3]], out)
    assert data.read_rows(out) == json.loads(json.dumps(rows[:3]))


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    import_command.add_arguments(parser)
    return import_command.run(parser.parse_args(argv))


def test_cli(messy_root, tmp_path, capsys):
    out = tmp_path / "out" / "obs.jsonl.gz"
    assert _cli(str(messy_root), "-o", str(out), "-q") == 0
    printed = capsys.readouterr().out
    assert "imported 5 steps from 1 episodes" in printed and "skipped files (0)" in printed
    df = data.load_observations(path=out)
    assert len(df) == 5
    ep = _episode_dir(messy_root)
    (ep / "step_3.pkl.gz").write_bytes(b"junk")
    assert _cli(str(messy_root), "-o", str(out), "-q", "--strict") == 2  # exists: refused
    assert _cli(str(messy_root), "-o", str(out), "-q", "--strict", "--force") == 1
    assert _cli(str(tmp_path / "nothing"), "-q") == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _cli(str(empty), "-o", str(tmp_path / "e.jsonl.gz"), "-q") == 1
    assert not (tmp_path / "e.jsonl.gz").exists()
    assert (
        "import-traces" in COMMANDS and COMMANDS["import-traces"][0] == "lrlib.data.import_command"
    )


# ---- goal sources (synthetic AgentLab-style pickles) --------------------------------------


@pytest.fixture
def fake_loop(monkeypatch):
    """A stand-in ``browsergym.experiments.loop`` so tests can write StepInfo pickles."""

    @dataclasses.dataclass
    class StepInfo:
        step: int = 0
        obs: dict | None = None
        reward: float = 0.0
        action: str | None = None

    name = "browsergym.experiments.loop"
    for part in ("browsergym", "browsergym.experiments", name):
        monkeypatch.setitem(sys.modules, part, types.ModuleType(part))
    StepInfo.__module__, StepInfo.__qualname__ = name, "StepInfo"
    sys.modules[name].StepInfo = StepInfo
    return StepInfo


def _write_episode(folder: Path, steps: list) -> None:
    folder.mkdir(parents=True)
    for s in steps:
        with gzip.open(folder / f"step_{s.step}.pkl.gz", "wb") as f:
            pickle.dump(s, f)


def _obs(url: str, tree: str, **extra) -> dict:
    return {"axtree_txt": tree, "open_pages_urls": [url], "active_page_index": [0], **extra}


def test_goal_sources_in_order(tmp_path, fake_loop):
    url = "https://dev1.service-now.com/x"
    legacy = tmp_path / "a_on_workarena.servicenow.x_1"
    _write_episode(
        legacy,
        [fake_loop(0, _obs(url, "[1] button 'A'", goal="legacy goal"), 0, "```click('1')```")],
    )
    from_file = tmp_path / "b_on_workarena.servicenow.x_2"
    _write_episode(from_file, [fake_loop(0, _obs(url, "[1] button 'B'"), 1.0, "click('1')")])
    with gzip.open(from_file / "goal_object.pkl.gz", "wb") as f:
        pickle.dump([{"type": "text", "text": "goal from file"}], f)
    chat = tmp_path / "c_on_workarena.servicenow.x_3"
    msgs = [{"role": "assistant", "message": "Hi"}, {"role": "user", "message": "chat goal"}]
    _write_episode(chat, [fake_loop(0, _obs(url, "[1] button 'C'", chat_messages=msgs))])
    rows = {r["episode"]: r for r in importer.import_traces(tmp_path).rows}
    assert rows[legacy.name]["goal"] == "legacy goal"
    assert rows[legacy.name]["action_bids"] == ["1"] and rows[legacy.name]["target_lines"] == [1]
    assert rows[from_file.name]["goal"] == "goal from file"
    assert rows[from_file.name]["episode_reward"] == 1.0
    assert rows[chat.name]["goal"] == "chat goal"
    assert rows[chat.name]["action"] is None  # a final step without an action is kept
