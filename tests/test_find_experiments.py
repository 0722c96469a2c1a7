"""Finding experiment folders: symlinked runs are followed, cycles and repeats visited once."""

from __future__ import annotations

import os

from lrlib.data.traces import find_experiments


def _run(folder, *steps):
    folder.mkdir(parents=True)
    for name in steps:
        (folder / name).write_bytes(b"")
    return folder


def test_symlinked_runs_are_found_and_link_cycles_end(tmp_path):
    store = tmp_path / "store"
    a = _run(store / "2024_run_on_workarena.x_1", "step_0.pkl.gz", "step_1.pkl.gz")
    b = _run(store / "nested" / "2024_run_on_webarena.4_2", "step_0.pkl.gz")
    _run(store / "not_a_run", "summary_info.json", "step_x.pkl.gz")
    results = tmp_path / "results"
    results.mkdir()
    os.symlink(a, results / "first")
    os.symlink(store / "nested", results / "more")
    os.symlink(results, results / "more_again")  # a cycle back to the top
    os.symlink(a, results / "first_again")  # the same run twice
    found = find_experiments(results)
    assert len(found) == 2
    assert sorted(os.path.realpath(p) for p in found) == sorted(map(os.path.realpath, (a, b)))
    assert find_experiments(store) == sorted([a, b])
