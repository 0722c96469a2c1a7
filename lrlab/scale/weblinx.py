"""WebLINX's BrowserGym release (``McGill-NLP/weblinx-browsergym``) as dataset rows.

The release, as a user has it on disk after downloading it (see docs/weblinx.md), is
the layout that ``weblinx_browsergym`` reads: ``<root>/metadata.json`` maps
``split -> demo id -> turn -> step`` (``intent``, ``args`` with the ``uid`` of the element
acted on, ``is_task``, ``has_full_snapshot``, ``tab.url``, and file paths relative to
``<root>/demonstrations/``); each page's accessibility tree is BrowserGym's merged AX tree
as JSON (``<demo>/axtrees/page-<turn>-<n>.json``, a ``browsergym_id`` on marked nodes).

One row per BrowserGym task of the release (a step with ``is_task`` and
``has_full_snapshot``, as ``weblinx_browsergym.list_tasks`` registers them): the tree
flattened by :func:`flatten_axtree` (BrowserGym's ``flatten_axtree_to_str`` with its
defaults), the dialogue so far as ``goal`` (``user: ...`` / ``assistant: ...`` lines), the
navigator's earlier actions in BrowserGym syntax as ``history``, and the recorded action
(``click``/``hover``/``submit`` -> ``click(uid)``, ``textinput`` -> ``fill(uid, value)``,
``load`` -> ``goto``, ``say`` -> ``send_msg_to_user``...) as ``action``; its uid is the
target bid. Every row carries ``licence`` and ``attribution``; the WebLINX split is kept in
``weblinx_split`` (``train`` -> train, ``valid`` -> validation, ``test_*`` -> test).

Results computed on these rows must be called WebLINX-BG (or WebLINX-1.1) results, are
non-commercial and shared alike (CC BY-NC-SA 4.0).

>>> flatten_axtree({"nodes": [
...     {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Shop"},
...      "childIds": ["2"]},
...     {"nodeId": "2", "role": {"value": "button"}, "name": {"value": "Buy"},
...      "browsergym_id": "a1b2c3d4-e5f6-0718", "childIds": []}]})
"RootWebArea 'Shop'\\n\\t[a1b2c3d4-e5f6-0718] button 'Buy'"
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lrlib.data.actions import parse_action
from lrlib.data.evidence import evidence_groups
from lrlib.data.traces import RawStep

LICENCE = "CC BY-NC-SA 4.0"
ATTRIBUTION = (
    "WebLINX (Lù, Kasner, Reddy, ICML 2024), BrowserGym release McGill-NLP/weblinx-browsergym, "
    "https://huggingface.co/datasets/McGill-NLP/weblinx-browsergym"
)
RESULTS_NAME = "WebLINX-BG"
SPLITS = {
    "train": "train", "valid": "validation", "test_iid": "test", "test_geo": "test",
    "test_web": "test", "test_cat": "test", "test_vis": "test",
}  # fmt: skip
IGNORED_ROLES = frozenset({"LineBreak"})
IGNORED_PROPERTIES = frozenset(
    {"editable", "readonly", "level", "settable", "multiline", "invalid", "focusable"}
)
_FLAGS = ("required", "focused", "atomic")  # printed by name when true


def _node_line(node: Mapping[str, Any], parent_name: str) -> tuple[str | None, str]:
    """(the node's line or None when it is not printed, the name its children compare to)."""
    role = node["role"]["value"]
    if role in IGNORED_ROLES or "name" not in node:
        return None, ""
    name = node["name"]["value"]
    attributes = []
    for prop in node.get("properties", []):
        value = prop.get("value")
        if not isinstance(value, Mapping) or "value" not in value:
            continue
        key, v = prop["name"], value["value"]
        if key in IGNORED_PROPERTIES:
            continue
        if key in _FLAGS:
            if v:
                attributes.append(key)
        else:
            attributes.append(f"{key}={v!r}")
    if role == "generic" and not attributes:
        return None, name
    if role == "StaticText" and name in parent_name:
        return None, name
    text = role if role == "generic" and not name else f"{role} {name.strip()!r}"
    bid = node.get("browsergym_id")
    if bid is not None:
        text = f"[{bid}] {text}"
    value = node.get("value")
    if isinstance(value, Mapping) and "value" in value:
        text += f" value={value['value']!r}"
    return text + "".join(f", {a}" for a in attributes), name


def flatten_axtree(axtree: Mapping[str, Any]) -> str:
    """BrowserGym's merged AX tree (``{"nodes": [...]}``) as text, the way BrowserGym's
    ``flatten_axtree_to_str`` writes it with its default options: depth-first from the
    first node, one tab per printed ancestor, ``[bid] role 'name'``, ``value=``, then the
    properties (``LineBreak`` nodes, nodes without a name, generic nodes without properties
    and static text repeating its parent's name are not printed; their children are, one
    level up). Iterative, so a deep page cannot exhaust the recursion limit.

    >>> flatten_axtree({"nodes": [
    ...     {"nodeId": "1", "role": {"value": "link"}, "name": {"value": "Home"},
    ...      "properties": [{"name": "focused", "value": {"value": True}}], "childIds": ["2"]},
    ...     {"nodeId": "2", "role": {"value": "StaticText"}, "name": {"value": "Home"},
    ...      "childIds": []}]})
    "link 'Home', focused"
    """
    nodes = axtree.get("nodes") or []
    if not nodes:
        return ""
    index = {n["nodeId"]: i for i, n in enumerate(nodes)}
    lines: list[str] = []
    stack: list[tuple[int, int, str]] = [(0, 0, "")]  # (node index, depth, parent's name)
    while stack:
        i, depth, parent_name = stack.pop()
        node = nodes[i]
        line, name = _node_line(node, parent_name)
        if line is not None:
            lines.append("\t" * depth + line)
        child_depth = depth if line is None else depth + 1
        children = [
            index[c] for c in node.get("childIds", []) if c in index and c != node["nodeId"]
        ]
        stack.extend((c, child_depth, name) for c in reversed(children))
    return "\n".join(lines)


def bg_action(intent: str, args: Mapping[str, Any]) -> str | None:
    """A WebLINX action as the BrowserGym call ``weblinx_browsergym`` maps it to (None for
    the intents BrowserGym has no action for: ``copy``, ``paste``, ``change``).

    >>> bg_action("textinput", {"uid": "a-b-c", "value": "hi"}), bg_action("submit", {"uid": "x"})
    ("fill('a-b-c', 'hi')", "click('x')")
    >>> bg_action("say", {"speaker": "navigator", "utterance": "Done."})
    "send_msg_to_user('Done.')"
    """
    simple = {"click": "click", "hover": "hover", "submit": "click"}
    if intent in simple:
        return f"{simple[intent]}({args['uid']!r})"
    if intent == "textinput":
        return f"fill({args['uid']!r}, {args.get('value', '')!r})"
    if intent == "load":
        return f"goto({args['url']!r})"
    if intent == "scroll":
        return f"scroll({args.get('x', 0)!r}, {args.get('y', 0)!r})"
    if intent == "say":
        return f"send_msg_to_user({args.get('utterance', '')!r})"
    if intent == "tabcreate":
        return "new_tab()"
    if intent == "tabremove":
        return "tab_close()"
    if intent == "tabswitch":
        return f"tab_focus({args.get('target', 0)!r})"
    return None


def read_metadata(root: str | Path) -> dict[str, Any]:
    """``<root>/metadata.json`` of the release; a missing one is a one-line user error.

    >>> read_metadata("/nonexistent")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no WebLINX-BG metadata.json in /nonexistent; download the release first (docs/weblinx.md)
    """
    path = Path(root) / "metadata.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no WebLINX-BG metadata.json in {root}; download the release first (docs/weblinx.md)"
        )
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def check_splits(metadata: Mapping[str, Any], splits: list[str] | None) -> list[str]:
    """The WebLINX splits to read (default: all in the file); an unknown one lists the valid."""
    have = [s for s in metadata if isinstance(metadata[s], Mapping)]
    if not splits:
        return have
    bad = [s for s in splits if s not in have]
    if bad:
        raise ValueError(f"unknown WebLINX split {bad[0]!r}; valid: {', '.join(sorted(have))}")
    return list(splits)


def _dialogue_line(step: Mapping[str, Any]) -> str | None:
    if step.get("intent") != "say":
        return None
    args = step.get("args") or {}
    role = "user" if args.get("speaker") == "instructor" else "assistant"
    return f"{role}: {args.get('utterance', '')}"


def demo_rows(
    root: str | Path, split: str, demo: str, steps: Mapping[str, Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The rows of one demonstration (one episode) and the files it could not read.

    Rows have the importer's columns but ``n_tokens`` and ``split`` (set by the caller),
    plus ``weblinx_split``, ``licence`` and ``attribution``.
    """
    from lrlib.data.importer import step_fields

    base = Path(root) / "demonstrations"
    order = sorted(steps, key=int)
    dialogue: list[str] = []
    history: list[str] = []
    rows, skipped = [], []
    episode = f"weblinx.{demo}"
    for turn in order:
        st = steps[turn]
        action = bg_action(str(st.get("intent")), st.get("args") or {})
        if st.get("is_task") and st.get("has_full_snapshot") and st.get("axtree_path"):
            path = base / st["axtree_path"]
            try:
                with path.open(encoding="utf-8") as f:
                    tree = flatten_axtree(json.load(f))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                skipped.append((str(path), f"unreadable tree ({type(exc).__name__})"))
                tree = ""
            if tree.strip():
                goal = "\n".join(dialogue)
                raw = RawStep(
                    step=int(turn), source=str(Path(st["axtree_path"])), obs_ok=True, axtree_txt=tree,
                    url=(st.get("tab") or {}).get("url"), raw_action=action, last_action=None,
                    last_action_error="", legacy_goal=goal, chat_users=[], reward=0.0,
                )  # fmt: skip
                row = {"step_id": f"{episode}.{turn}", "goal": goal}
                row.update(episode=episode, benchmark="weblinx", task=episode, family=episode)
                row.update(seed=None, episode_reward=None, episode_success=None)
                row.update(episode_error=None, has_summary=False)
                row.update(step_fields(raw, list(history)))
                row["evidence_lines"] = evidence_groups(tree, row["action"], goal)
                row.update(user_followups=[], duplicate_steps=[], weblinx_split=split)
                row.update(licence=LICENCE, attribution=ATTRIBUTION)
                rows.append(row)
        line = _dialogue_line(st)
        if line is not None:
            dialogue.append(line)
        if action is not None and st.get("intent") != "say":
            act = parse_action(action)
            history.append(act.canonical if act else action)
    return rows, skipped


@dataclass
class WeblinxReport:
    """What a WebLINX-BG import read, kept and skipped."""

    root: str
    output: str | None = None
    n_demos: int = 0
    n_rows: int = 0
    per_split: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def text(self) -> str:
        """The summary printed at the end of an import."""
        splits = ", ".join(f"{k} {v}" for k, v in sorted(self.per_split.items()))
        out = [
            f"imported {self.n_rows} steps from {self.n_demos} WebLINX-BG demonstrations "
            f"in {self.seconds:.1f} s",
            f"steps per WebLINX split: {splits or 'none'}",
            f"licence: {LICENCE} ({ATTRIBUTION}); call results {RESULTS_NAME}, "
            "non-commercial, share alike",
        ]
        if self.output:
            out.append(f"written: {self.output}")
        out.append(f"skipped files ({len(self.skipped)}):")
        out += [f"  {src}: {why}" for src, why in self.skipped[:20]] or ["  none"]
        return "\n".join(out)


def iter_rows(
    root: str | Path,
    splits: list[str] | None = None,
    report: WeblinxReport | None = None,
    progress: bool = False,
    limit: int | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """The rows of the release, one demonstration (episode) at a time, ready to write
    (``split`` and ``n_tokens`` set). ``limit``: at most this many demonstrations."""
    from tqdm.auto import tqdm

    from lrlib.core.tokens import count_tokens

    metadata = read_metadata(root)
    chosen = check_splits(metadata, splits)
    demos = [(s, d) for s in chosen for d in metadata[s]]
    if limit is not None:
        demos = demos[:limit]
    report = report if report is not None else WeblinxReport(root=str(root))
    for split, demo in tqdm(demos, disable=not progress, unit="demo", desc="import-weblinx"):
        rows, skipped = demo_rows(root, split, demo, metadata[split][demo])
        report.n_demos += 1
        report.skipped += skipped
        for r in rows:
            r["split"] = SPLITS.get(split, "test")
            r["n_tokens"] = count_tokens(r["axtree_txt"])
        report.n_rows += len(rows)
        report.per_split[split] = report.per_split.get(split, 0) + len(rows)
        if rows:
            yield rows


def provenance(root: str | Path, splits: list[str] | None) -> dict[str, Any]:
    """What the output file records about where its rows come from (licence included)."""
    from lrlib import runinfo

    info = runinfo.provenance()
    info.update(
        source="McGill-NLP/weblinx-browsergym", licence=LICENCE, attribution=ATTRIBUTION,
        results_name=RESULTS_NAME, root=str(root), splits=splits or "all",
        flattening="BrowserGym flatten_axtree_to_str defaults (lrlab.scale.weblinx.flatten_axtree)",
    )  # fmt: skip
    return info


def import_weblinx(
    root: str | Path,
    out: str | Path,
    splits: list[str] | None = None,
    progress: bool = False,
    limit: int | None = None,
) -> WeblinxReport:
    """Import the release at ``root`` into ``out`` (``.parquet``, ``.jsonl`` or
    ``.jsonl.gz``), one demonstration at a time (memory does not grow with the number of
    steps written); the licence goes into every row and into the file's provenance.

    >>> import_weblinx("/nonexistent", "/tmp/x.parquet")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no WebLINX-BG metadata.json in /nonexistent; download the release first (docs/weblinx.md)
    """
    from lrlib.data.dataset import write_row_batches

    start = time.perf_counter()
    report = WeblinxReport(root=str(root))
    batches = iter_rows(root, splits, report, progress=progress, limit=limit)
    first = next(batches, None)  # reads metadata.json: a missing release fails here
    if first is not None:

        def chain() -> Iterator[list[dict[str, Any]]]:
            yield first
            yield from batches

        write_row_batches(chain(), out, provenance=provenance(root, splits))
        report.output = str(out)
    report.seconds = time.perf_counter() - start
    return report
