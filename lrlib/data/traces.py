"""Read BrowserGym / AgentLab experiment folders into plain per-step records.

An experiment folder holds ``step_<n>.pkl.gz`` (one gzip-pickled ``StepInfo`` per step),
and usually ``summary_info.json`` and ``goal_object.pkl.gz``. Pickles are read with
:mod:`lrlib.data.safepickle` (no BrowserGym/AgentLab needed, nothing in them is run). Whatever
cannot be read is listed in :attr:`Episode.skipped` with the reason, and reading goes on.

The goal of an episode is, in order: the legacy ``obs["goal"]`` string; the user messages
that open the chat (those of the earliest readable step; later user messages, such as a
task's "Nice work, thank you!" feedback, are follow-ups, kept apart); the text parts of
``goal_object.pkl.gz``.

>>> parse_folder_name("2025-01-02_11-59-10_DemoAgentArgs_on_workarena.servicenow.order-ipad-mini_12")
('workarena', 'workarena.servicenow.order-ipad-mini', 12)
>>> parse_folder_name("2024-11-06_13-49-20_DemoAgentArgs_on_webarena.4_11 (copy)")
('webarena', 'webarena.4', 11)
"""

from __future__ import annotations

import json
import os
import pickle
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lrlib.data.safepickle import load_path

STEP_FILE = re.compile(r"^step_(\d+)\.pkl\.gz$")
_FOLDER = re.compile(r"_on_(?P<task>(?P<bench>[A-Za-z][\w-]*)\.[^\s_]+?)_(?P<seed>\d+)(?!\d)")
# what a broken file raises: gzip/zlib/pickle/unsafe-global errors, truncation, bad state
READ_ERRORS = (OSError, EOFError, zlib.error, pickle.UnpicklingError, ValueError, TypeError,
               AttributeError, IndexError, KeyError, ImportError, MemoryError, RecursionError)  # fmt: skip


@dataclass
class RawStep:
    """What one step pickle says, as plain values (``None`` where the file has nothing)."""

    step: int
    source: str
    obs_ok: bool  # the step carries an observation dict
    axtree_txt: str | None
    url: str | None
    raw_action: str | None
    last_action: str | None
    last_action_error: str
    legacy_goal: str | None
    chat_users: list[str]
    reward: float


@dataclass
class Episode:
    """One experiment folder: its steps (ordered), summary and goal, and what was skipped."""

    name: str
    source: str  # folder path relative to the traces root
    benchmark: str
    task: str
    seed: int | None
    steps: list[RawStep] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    goal_object_text: str | None = None
    n_files: int = 0  # step files found
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (file, remark), not fatal

    def goal_messages(self) -> list[str]:
        """The user messages that open the chat (see the module doc)."""
        first = next((s for s in self.steps if s.obs_ok and s.chat_users), None)
        if first is not None and (first.step == 0 or not self.goal_object_text):
            # at reset the chat holds only the goal; after a missing step 0, only trust
            # the first message (later ones may already be follow-ups)
            return list(first.chat_users) if first.step == 0 else first.chat_users[:1]
        return [self.goal_object_text] if self.goal_object_text else []

    def goal(self, step: RawStep) -> str:
        """The goal text for ``step`` ("" when the folder holds none)."""
        if step.legacy_goal:
            return step.legacy_goal
        return "\n".join(self.goal_messages())

    def followups(self, step: RawStep) -> list[str]:
        """User messages of ``step``'s chat that came after the goal messages."""
        goal, users = self.goal_messages(), step.chat_users
        k = 0
        while k < min(len(goal), len(users)) and users[k] == goal[k]:
            k += 1
        return users[k:] if k else users[1:]


def parse_folder_name(name: str) -> tuple[str, str, int | None]:
    """(benchmark, task, seed) from ``<date>_<agent>_on_<task>_<seed>[suffix]``.

    Unrecognised names give ``("unknown", name, None)``.

    >>> parse_folder_name("some folder")
    ('unknown', 'some folder', None)
    """
    m = _FOLDER.search(name)
    if not m:
        return "unknown", name, None
    return m["bench"].lower(), m["task"], int(m["seed"])


def find_experiments(root: str | Path) -> list[Path]:
    """Experiment folders (holding ``step_*.pkl.gz``) at or under ``root``, sorted by path.
    Symlinked folders are followed (a results folder of links to runs is common); a folder
    reached twice, or a link cycle, is visited once.

    >>> find_experiments("/nonexistent")
    []
    """
    root = Path(root)
    if not root.is_dir():
        return []
    found, seen = set(), set()
    for here, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(here)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        if any(STEP_FILE.match(f) for f in files):
            found.add(Path(here))
    return sorted(found)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _url(obs: dict[str, Any]) -> str | None:
    if isinstance(obs.get("url"), str):  # older BrowserGym observations
        return obs["url"]
    urls = obs.get("open_pages_urls")
    if urls is None or len(urls) == 0:
        return None
    try:
        index = int(obs.get("active_page_index", [0])[0])
    except (TypeError, ValueError, IndexError):
        index = 0
    urls = list(urls)
    return str(urls[index]) if 0 <= index < len(urls) else str(urls[-1])


def _chat_users(obs: dict[str, Any]) -> list[str]:
    chat = obs.get("chat_messages") or []
    return [
        str(m.get("message", ""))
        for m in chat
        if isinstance(m, dict) and m.get("role") == "user" and m.get("message")
    ]


def read_step(path: Path, source: str) -> RawStep:
    """Read one step pickle; raises one of :data:`READ_ERRORS` when it cannot.

    >>> import gzip, pickle, tempfile
    >>> p = Path(tempfile.mkdtemp()) / "step_0.pkl.gz"
    >>> _ = p.write_bytes(gzip.compress(pickle.dumps({"obs": {}})))
    >>> read_step(p, "run/step_0.pkl.gz")
    Traceback (most recent call last):
    ...
    TypeError: not a StepInfo record (dict)
    """
    info = load_path(path, source=source)
    attrs = getattr(info, "__dict__", None)
    if not isinstance(attrs, dict) or "obs" not in attrs:
        raise TypeError(f"not a StepInfo record ({type(info).__name__})")
    obs = attrs.get("obs")
    obs = obs if isinstance(obs, dict) else {}
    reward = attrs.get("reward")
    return RawStep(
        step=-1,
        source=source,
        obs_ok=bool(obs),
        axtree_txt=_text(obs.get("axtree_txt")),
        url=_url(obs),
        raw_action=_text(attrs.get("action")),
        last_action=_text(obs.get("last_action")),
        last_action_error=_text(obs.get("last_action_error")) or "",
        legacy_goal=_text(obs.get("goal")) or None,
        chat_users=_chat_users(obs),
        reward=float(reward) if isinstance(reward, int | float) else 0.0,
    )


def _goal_object_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, list | tuple):
        parts = [p.get("text") for p in value if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str)) or None
    return None


def iter_steps(folder: str | Path, rel: str) -> Iterator[RawStep | tuple[str, str]]:
    """The step files of ``folder`` in step order, one at a time: a :class:`RawStep`, or
    ``(source, reason)`` for a file that cannot be read (``rel``: the folder's path in
    ``source`` names).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "step_0.pkl.gz").write_bytes(b"not gzip")
    >>> [type(x).__name__ for x in iter_steps(d, "run")]
    ['tuple']
    """
    numbered = ((STEP_FILE.match(p.name), p) for p in Path(folder).iterdir())
    for number, path in sorted((int(m[1]), p) for m, p in numbered if m and p.is_file()):
        source = f"{rel}/{path.name}"
        try:
            step = read_step(path, source)
        except READ_ERRORS as exc:
            yield source, _reason(exc)
            continue
        step.step = number
        yield step


def read_episode(folder: str | Path, root: str | Path, steps: bool = True) -> Episode:
    """Read one experiment folder; ``root`` is what ``source`` paths are relative to.
    ``steps=False``: only what the folder's name says (no file is read).

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "x_on_webarena.4_2").mkdir()
    >>> ep = read_episode(root / "x_on_webarena.4_2", root)
    >>> ep.task, ep.seed, ep.steps, ep.notes
    ('webarena.4', 2, [], [('x_on_webarena.4_2/summary_info.json', 'missing (run stopped early?)')])
    """
    folder, root = Path(folder), Path(root)
    rel = folder.relative_to(root).as_posix() if folder != root else folder.name
    benchmark, task, seed = parse_folder_name(folder.name)
    ep = Episode(name=folder.name, source=rel, benchmark=benchmark, task=task, seed=seed)
    if not steps:
        return ep
    for item in iter_steps(folder, rel):
        ep.n_files += 1
        if isinstance(item, RawStep):
            ep.steps.append(item)
        else:
            ep.skipped.append(item)
    summary = folder / "summary_info.json"
    if summary.is_file():
        try:
            ep.summary = json.loads(summary.read_text(encoding="utf-8"))
            if not isinstance(ep.summary, dict):
                raise ValueError(f"expected a JSON object, got {type(ep.summary).__name__}")
        except (OSError, ValueError) as exc:
            ep.summary = None
            ep.notes.append((f"{rel}/{summary.name}", f"unreadable, ignored: {_reason(exc)}"))
    else:
        ep.notes.append((f"{rel}/summary_info.json", "missing (run stopped early?)"))
    goal_file = folder / "goal_object.pkl.gz"
    if goal_file.is_file():
        try:
            ep.goal_object_text = _goal_object_text(
                load_path(goal_file, source=f"{rel}/{goal_file.name}")
            )
        except READ_ERRORS as exc:
            ep.notes.append((f"{rel}/{goal_file.name}", f"unreadable, ignored: {_reason(exc)}"))
    return ep


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or "no message"
    return f"{type(exc).__name__}: {text}"[:300]
