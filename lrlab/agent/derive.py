"""Episodes that need not be played again: another reducer showed the policy the same text.

A recorded live episode of reducer A is also the episode of reducer B when, at every step
the policy acted on, B's output of the recorded tree (same goal, same past actions) is the
very text A showed, with the same line numbers. The scripted policies are deterministic
functions of (goal, history, text, numbers) and the pages are static, so B's live episode
takes the same actions and ends the same way. This prices a knob that rarely changes an
observation (the injection guard on clean pages, issue 34) without playing every episode
twice: only the episodes where some step differs are played with B (:func:`split`).

Sound only for a deterministic policy on a deterministic page (the docs sites, MiniWoB with
its seed); a model policy must be played.

>>> from lrlab.agent.derive import same_text
>>> same_text({"text": "a", "numbers": [1]}, {"text": "a", "numbers": [1]})
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lrlab.agent.live import EpisodeSpec, episode_dir
from lrlab.agent.preprocess import ObsPreprocessor, goal_text, line_numbers
from lrlib.eval.evaluation import parse_spec

__all__ = ["recorded_steps", "same_text", "same_episode", "split"]


def recorded_steps(folder: Path) -> Iterator[dict[str, Any]]:
    """The acted steps of a recorded episode, in order: the tree, goal and history it was
    reduced from, and the text and line numbers the policy was shown."""
    from lrlib.data.safepickle import load_path

    history: list[str] = []
    n = 0
    while (path := folder / f"step_{n}.pkl.gz").is_file():
        info = load_path(path)
        extra = (info.agent_info or {}).get("extra_info") or {}
        if info.action is None or "reduced_axtree_txt" not in extra:
            break  # the last step holds the final observation only
        kept = extra.get("lrlib", {})
        yield {"tree": info.obs["axtree_txt"], "goal": goal_text(info.obs),
               "history": list(history), "text": extra["reduced_axtree_txt"],
               "kept": kept.get("kept"), "stubs": kept.get("stubs")}  # fmt: skip
        history.append(str(info.action))
        n += 1


def same_text(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two reduced observations show the policy the same thing."""
    return a["text"] == b["text"] and a["numbers"] == b["numbers"]


def same_episode(folder: Path, reducer: str) -> tuple[bool, int, int]:
    """(every acted step identical under ``reducer``, steps that differ, steps compared)
    for the recorded episode in ``folder``."""
    name, params = parse_spec(reducer)
    pre = ObsPreprocessor(name, **params)
    differ = total = 0
    for s in recorded_steps(folder):
        p = pre({"axtree_txt": s["tree"], "goal": s["goal"]}, s["history"])
        # the recorded numbers: the kept and stubbed lines when the text is made of them
        was = line_numbers(s["text"], s["kept"] or [], s["stubs"] or [], p.info["n_lines"])
        differ += not same_text({"text": p.text, "numbers": p.numbers},
                                {"text": s["text"], "numbers": was})  # fmt: skip
        total += 1
    return differ == 0, differ, total


def split(
    out: Path, recorded: Sequence[dict[str, Any]], reducer: str, policy: str, bench: str
) -> tuple[list[dict[str, Any]], list[EpisodeSpec], dict[str, int]]:
    """The episodes of ``reducer`` that the ``recorded`` episodes' summaries (``task``,
    ``seed``, ``reducer``, ``success``) already are, as summaries naming ``reducer`` with
    ``derived_from``; the specs that must be played; and counts (episodes, steps compared,
    steps that differ)."""
    derived, todo = [], []
    counts = {"episodes": 0, "steps": 0, "steps_differ": 0, "episodes_differ": 0}
    for r in recorded:
        folder = episode_dir(out, r["reducer"], policy, r["task"], int(r["seed"]), bench)
        same, differ, total = same_episode(folder, reducer)
        counts["episodes"] += 1
        counts["steps"] += total
        counts["steps_differ"] += differ
        if same:
            derived.append({**r, "reducer": reducer, "derived_from": r["reducer"]})
        else:
            counts["episodes_differ"] += 1
            todo.append(EpisodeSpec(reducer, r["task"], int(r["seed"])))
    return derived, todo, counts
