"""The trace importer (``lrlib import-traces``): BrowserGym/AgentLab experiment folders
become the rows of the recorded-observation dataset (:mod:`lrlib.data.dataset`).

:func:`import_traces` walks an experiment folder or a tree of them (see :mod:`lrlib.data.traces`),
keeps one row per step that has an accessibility tree, drops steps whose page is off the
benchmark and exact duplicate (goal, tree) pairs within an episode, assigns a fixed
train/validation/test split (test: whole task families), and writes gzipped JSON lines or
Parquet atomically (:func:`lrlib.data.dataset.write_row_batches`), one episode in memory at
a time. The schema is documented in ``data/README.md``.

Off-benchmark rule: every BrowserGym task starts on a page of its benchmark, so the
*benchmark's hosts* are the URL hosts of the first observation of each of its episodes
(ServiceNow instances for WorkArena, the WebArena server for WebArena; ports ignored). A
step whose active page is on another host, or has no http(s) URL (``about:blank``), is
off the benchmark.

Split rule: the task families of :data:`TEST_FAMILIES` go whole to ``test`` (never used
for tuning). For the rest, episodes of the same task and seed (re-runs of one task
instance) form a group; within each benchmark, groups are ordered by the SHA-256 of
``task/seed`` and the first ones go to ``validation`` until it holds
``round(0.3 * episodes)`` episodes (counted over all episodes, test families included, so
the development split is the same as before the test split existed), the others to ``train``.
A row's ``family`` is its task name.

>>> rows = [{"benchmark": "webarena", "task": "webarena.40", "seed": s, "episode": f"e{s}"}
...         for s in range(10)]
>>> assign_split(rows)
>>> sorted(r["split"] for r in rows).count("validation")
3
>>> rows = [{"benchmark": "webarena", "task": "webarena.4", "seed": 1, "episode": "e"}]
>>> assign_split(rows)
>>> rows[0]["split"], rows[0]["family"]
('test', 'webarena.4')
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lrlib import runinfo
from lrlib.data.actions import parse_action
from lrlib.data.dataset import COLUMNS, is_parquet, iter_row_batches, write_row_batches
from lrlib.data.evidence import evidence_groups
from lrlib.data.traces import Episode, RawStep, find_experiments, iter_steps, read_episode

VALIDATION_FRACTION = 0.3
#: Task families held out whole as the ``test`` split (why: see data/README.md, "Splits").
TEST_FAMILIES = frozenset(
    {
        "workarena.servicenow.order-sales-laptop",
        "workarena.servicenow.order-developer-laptop",
        "workarena.servicenow.knowledge-base-search",
        "workarena.servicenow.dashboard-retrieve-catalog-and-max-order-apple-macbook-pro15-l2",
        "webarena.2",
        "webarena.4",
    }
)
_SPLIT_SALT = "lrlib-split-v1"


@dataclass
class ImportReport:
    """What an import did: rows kept, steps dropped (by kind), files skipped (and why)."""

    root: str
    output: str | None = None
    n_folders: int = 0
    n_step_files: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)  # kept only when asked
    n_rows: int = 0
    episodes: set[str] = field(default_factory=set)
    per_benchmark: Counter[str] = field(default_factory=Counter)
    per_split: Counter[str] = field(default_factory=Counter)
    dropped_steps: list[tuple[str, str]] = field(default_factory=list)  # (file, kind)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    hosts: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def dropped(self) -> Counter[str]:
        """Dropped steps per kind (``off_benchmark``, ``duplicate``)."""
        return Counter(kind for _, kind in self.dropped_steps)

    def text(self) -> str:
        """The human-readable summary printed at the end of an import."""
        out = [
            f"imported {self.n_rows} steps from {len(self.episodes)} episodes "
            f"({self.n_folders} experiment folders, {self.n_step_files} step files) "
            f"in {self.seconds:.1f} s",
            "steps per benchmark: " + _fmt(self.per_benchmark),
            "steps per split: " + _fmt(self.per_split),
            "dropped: " + (_fmt(self.dropped) or "nothing"),
            "benchmark hosts: "
            + "; ".join(f"{b}: {', '.join(h)}" for b, h in sorted(self.hosts.items())),
        ]
        if self.output:
            out.append(f"written: {self.output}")
        out.append(f"skipped files ({len(self.skipped)}):")
        out += [f"  {src}: {why}" for src, why in self.skipped] or ["  none"]
        if self.notes:
            out.append(f"notes ({len(self.notes)}):")
            out += [f"  {src}: {why}" for src, why in self.notes]
        return "\n".join(out)


def _fmt(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items()))


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        parts = urlsplit(url)
        return parts.hostname if parts.scheme in ("http", "https") else None
    except ValueError:
        return None


def _example_step(n: int, url: str = "https://dev1.service-now.com/x", **kw: Any) -> RawStep:
    """A small step for the examples in this module's docstrings."""
    fields = dict(
        step=n, source=f"e/step_{n}.pkl.gz", obs_ok=True, url=url, last_action=None,
        axtree_txt="RootWebArea 'Home'\n\t[12] button 'Go'", raw_action="```click('12')```",
        last_action_error="", legacy_goal="Press Go", chat_users=[], reward=0.0,
    )  # fmt: skip
    return RawStep(**{**fields, **kw})


def _host_group(ep: Episode) -> str:
    """Episodes whose hosts are pooled: a benchmark's, or the episode alone if unknown."""
    return ep.benchmark if ep.benchmark != "unknown" else f"unknown:{ep.source}"


def start_host(folder: Path, root: Path) -> tuple[str, str | None]:
    """``(host group, host)`` of an experiment folder without reading all of it: the host of
    its first readable step with an http(s) page (the group: :func:`_host_group`).

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "x_on_webarena.4_2").mkdir()
    >>> start_host(root / "x_on_webarena.4_2", root)
    ('webarena', None)
    """
    ep = read_episode(folder, root, steps=False)
    for step in iter_steps(folder, ep.source):
        if isinstance(step, RawStep) and (h := _host(step.url)):
            return _host_group(ep), h
    return _host_group(ep), None


def _actions_by_step(ep: Episode) -> dict[int, str | None]:
    """Canonical action of every step number; a step whose file is unreadable gets it from
    the next step's ``last_action`` (BrowserGym stores the previous raw action there)."""
    actions: dict[int, str | None] = {}
    by_number = {s.step: s for s in ep.steps}
    for s in ep.steps:
        act = parse_action(s.raw_action)
        actions[s.step] = act.canonical if act else None
        prev = s.step - 1
        if prev >= 0 and prev not in by_number and s.last_action:
            act = parse_action(s.last_action)
            actions[prev] = act.canonical if act else None
    return actions


def _episode_fields(ep: Episode) -> dict[str, Any]:
    """The columns every row of an episode shares."""
    summary = ep.summary or {}
    reward = summary.get("cum_reward")
    reward = float(reward) if isinstance(reward, int | float) else sum(s.reward for s in ep.steps)
    error = summary.get("err_msg")
    return {
        "episode": ep.name,
        "benchmark": ep.benchmark,
        "task": ep.task,
        "seed": ep.seed,
        "episode_reward": reward,
        "episode_success": reward > 0,
        "episode_error": error if isinstance(error, str) and error else None,
        "has_summary": ep.summary is not None,
    }


def step_fields(s: RawStep, history: list[str]) -> dict[str, Any]:
    """The columns that come from one step: tree, action, its bids and their lines."""
    from lrlib.core.axtree import parse

    act = parse_action(s.raw_action)
    tree = parse(s.axtree_txt or "")
    bids = list(act.bids) if act else []
    found = (tree.line_of(b) for b in bids)
    return {
        "step": s.step,
        "url": s.url,
        "axtree_txt": s.axtree_txt,
        "action": act.canonical if act else None,
        "action_name": act.name if act else None,
        "action_bids": bids,
        "history": history,
        "target_lines": sorted({n for n in found if n is not None}),
        "last_action_error": s.last_action_error,
        "source": s.source,
        "n_lines": len(tree),
        "n_chars": len(s.axtree_txt or ""),
    }


def episode_rows(
    ep: Episode, hosts: set[str], dropped: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Rows for one episode (token counts and split are added later).

    Steps without a tree are added to ``ep.skipped``; off-benchmark steps and repeats of
    an earlier (goal, tree) pair are appended to ``dropped`` as (file, kind) (the first
    occurrence is kept and lists the repeats' step numbers in ``duplicate_steps``).

    >>> steps = [_example_step(0), _example_step(1), _example_step(2, url="https://apple.com")]
    >>> ep = Episode("e", "e", "workarena", "workarena.x", 1, steps=steps)
    >>> dropped = []
    >>> (row,) = episode_rows(ep, {"dev1.service-now.com"}, dropped)
    >>> row["action"], row["target_lines"], row["duplicate_steps"], dropped
    ("click('12')", [2], [1], [('e/step_1.pkl.gz', 'duplicate'), ('e/step_2.pkl.gz', 'off_benchmark')])
    """
    actions = _actions_by_step(ep)
    shared = _episode_fields(ep)
    first: dict[tuple[str, str], dict[str, Any]] = {}  # (goal, tree) -> its kept row
    rows = []
    for s in ep.steps:
        if not s.obs_ok or not (s.axtree_txt or "").strip():
            what = "empty observation" if not s.obs_ok else "empty axtree_txt"
            ep.skipped.append((s.source, f"no accessibility tree ({what})"))
            continue
        if hosts and _host(s.url) not in hosts:
            dropped.append((s.source, "off_benchmark"))
            continue
        goal = ep.goal(s)
        key = (goal, s.axtree_txt or "")
        if key in first:
            dropped.append((s.source, "duplicate"))
            first[key]["duplicate_steps"].append(s.step)
            continue
        history = [a for n, a in sorted(actions.items()) if n < s.step and a]
        row = {"step_id": f"{ep.name}/{s.step}", "goal": goal, **shared}
        row.update(step_fields(s, history))
        row["evidence_lines"] = evidence_groups(row["axtree_txt"] or "", row["action"], goal)
        row.update(user_followups=ep.followups(s), duplicate_steps=[])
        rows.append(first.setdefault(key, row))
    return rows


def assign_split(
    rows: list[dict[str, Any]],
    fraction: float = VALIDATION_FRACTION,
    test_families: Iterable[str] = TEST_FAMILIES,
) -> None:
    """Set ``row["family"]`` and ``row["split"]`` in place (rule: see the module doc)."""
    groups: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        key = f"{r['task']}/{r['seed']}" if r.get("seed") is not None else r["episode"]
        groups[r["benchmark"]][key].add(r["episode"])
    validation: set[str] = set()
    for bench_groups in groups.values():
        target = round(fraction * sum(len(e) for e in bench_groups.values()))
        order = sorted(
            bench_groups, key=lambda k: hashlib.sha256(f"{_SPLIT_SALT}:{k}".encode()).hexdigest()
        )
        taken = 0
        for key in order:
            if taken >= target:
                break
            validation |= bench_groups[key]
            taken += len(bench_groups[key])
    test = set(test_families)
    for r in rows:
        r["family"] = str(r.get("task") or r["episode"])  # its task (else its episode)
        if r["family"] in test:
            r["split"] = "test"
        else:
            r["split"] = "validation" if r["episode"] in validation else "train"


def import_traces(
    src: str | Path,
    out: str | Path | None = None,
    *,
    fraction: float = VALIDATION_FRACTION,
    progress: bool = False,
    keep_rows: bool = True,
) -> ImportReport:
    """Import every experiment folder at or under ``src``; write ``out`` when given.

    Episode by episode: the start hosts of all folders first (one step each), then each
    folder read, turned into rows and set aside (a temporary file beside ``out``), and
    the rows written once the splits are known (they depend on every episode). Peak memory
    is one episode's, not the dataset's. ``out``: gzipped JSON lines (``.jsonl.gz``, the
    bytes ``make data`` writes), plain ``.jsonl``, or Parquet (``.parquet``, with the
    provenance in its metadata), written atomically (:func:`~lrlib.data.dataset.write_row_batches`).
    ``keep_rows``: also return the rows (:attr:`ImportReport.rows`); ``lrlib import-traces``
    passes False. ``progress``: a progress bar with ETA per pass (tqdm).

    >>> import_traces("/nonexistent").rows
    []
    """
    from tqdm.auto import tqdm

    from lrlib.core.tokens import count_tokens

    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"validation fraction must be in [0, 1], got {fraction}")
    start = time.perf_counter()
    src = Path(src)
    folders = find_experiments(src)
    root = src.parent if src in folders else src
    report = ImportReport(root=str(src), n_folders=len(folders))
    hosts: dict[str, set[str]] = defaultdict(set)
    bar = dict(disable=not progress, unit="folder", smoothing=0.1)
    for folder in tqdm(folders, desc="import: start pages", **bar):
        group, host = start_host(folder, root)
        if host:
            hosts[group].add(host)
    report.hosts = {b: sorted(h) for b, h in hosts.items()}
    keys: list[dict[str, Any]] = []  # one per episode with rows: what the split needs
    with _Spill(Path(out) if out is not None and not keep_rows else None) as spill:
        for folder in tqdm(folders, desc="import: episodes", **bar):
            ep = read_episode(folder, root)
            report.n_step_files += ep.n_files
            rows = episode_rows(ep, hosts.get(_host_group(ep), set()), report.dropped_steps)
            report.skipped += ep.skipped
            report.notes += ep.notes
            if not rows:
                continue
            for r in rows:
                r["n_tokens"] = count_tokens(r["axtree_txt"])
            keys.append({k: rows[0][k] for k in ("benchmark", "task", "seed", "episode")})
            keys[-1]["n_rows"] = len(rows)
            if keep_rows:
                report.rows += rows
            else:
                spill.add(rows)  # nothing without an output: the report counts the rows
        assign_split(keys, fraction)
        split = {k["episode"]: (k["family"], k["split"]) for k in keys}
        for k in keys:
            report.n_rows += k["n_rows"]
            report.episodes.add(k["episode"])
            report.per_benchmark[k["benchmark"]] += k["n_rows"]
            report.per_split[k["split"]] += k["n_rows"]

        def final(row: dict[str, Any]) -> dict[str, Any]:
            row["family"], row["split"] = split[row["episode"]]
            return {c: row[c] for c in COLUMNS}

        report.rows = [final(r) for r in report.rows]
        if out is not None and keys:  # never replace a dataset with an empty one
            if keep_rows:
                batches: Iterable[list[dict[str, Any]]] = [report.rows]
            else:
                batches = ([final(r) for r in b] for b in spill.batches())
            prov = None  # JSON lines: the same bytes as ``make data`` wrote, no side file
            if is_parquet(out):
                prov = {**runinfo.provenance(), "source": report.root, "importer": "import-traces"}
            write_row_batches(batches, out, provenance=prov)
            report.output = str(out)
    report.seconds = time.perf_counter() - start
    return report


class _Spill:
    """Rows set aside episode by episode until their split is known: a temporary gzipped
    JSON-lines file beside the output (nothing is kept without an output)."""

    def __init__(self, out: Path | None) -> None:
        self.out, self.path, self.fh = out, None, None

    def __enter__(self) -> _Spill:
        if self.out is not None:
            import gzip
            import tempfile

            self.out.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self.out.parent, prefix=f".{self.out.name}.",
                                        suffix=".rows.tmp.gz")  # fmt: skip
            self.path = Path(name)
            self.fh = gzip.open(open(fd, "wb"), "wt", encoding="utf-8", compresslevel=1)
        return self

    def add(self, rows: list[dict[str, Any]]) -> None:
        for r in rows if self.fh is not None else ():
            self.fh.write(json.dumps(r, ensure_ascii=False) + "\n")

    def batches(self) -> Iterator[list[dict[str, Any]]]:
        self.fh.close()
        return iter_row_batches(self.path)

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            self.fh.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
