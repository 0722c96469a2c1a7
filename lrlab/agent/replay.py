"""Offline replay: does a policy shown a reducer's output still act as on the full tree?

A browser-free proxy for live success (issue 33). For every recorded step of a trajectory
played on the **full** observation (the MiniWoB check set's verified steps, or the
full-tree steps ``lrlib live`` records), the *reference action* is the policy's own on the
full tree; the step is **kept** by a reducer when the policy, shown the reducer's output of
that tree (its lines numbered as in the full tree, :func:`lrlab.agent.preprocess.line_numbers`),
takes the same action (:func:`lrlab.agent.mfs.same_action`). An episode **replays** when
every step it played does. Episodes on which the policy does not reproduce the recorded
action on the full tree at some step are not *usable* (the policy could not play them):
they are left out, and counted.

What it can say: a reducer whose output changes the policy's action at some step of a
trajectory that succeeds on the full tree would, live, have sent the episode elsewhere.
What it cannot: whether that elsewhere fails (a page may forgive a detour), nor anything
about steps the full-tree trajectory never reached.

>>> from lrlab.agent.scripted import ScriptedPolicy
>>> tree = "RootWebArea 'T'\\n\\t[13] button 'no'\\n\\t[15] button 'Ok'"
>>> s = Step(goal='Click on the "Ok" button.', tree=tree, episode="e", family="miniwob.click-test",
...          meta={"action": "click('15')"})
>>> rows = replay_steps([s], ["full"], ScriptedPolicy())
>>> [(r["reducer"], r["usable"], r["same"]) for r in rows]
[('full', True, True)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lrlab.agent.mfs import same_action
from lrlab.agent.preprocess import line_numbers
from lrlib.core.step import Step
from lrlib.core.tokens import count_tokens
from lrlib.eval.evaluation import parse_spec
from lrlib.reducers.base import Reducer, get_reducer


def _reducer(spec: str | Reducer) -> tuple[str, Reducer]:
    if isinstance(spec, Reducer):
        return spec.name, spec
    name, params = parse_spec(spec)
    return spec, get_reducer(name, **params)


def replay_steps(
    steps: Sequence[Step], reducers: Sequence[str | Reducer], policy: Any
) -> list[dict[str, Any]]:
    """One row per (reducer, step): ``usable`` (the policy reproduces the recorded action,
    ``meta["action"]``, on the full tree; a step without one: its full-tree action is the
    reference), ``same`` (shown the reducer's output it takes that action again),
    ``reduction`` (share of lines not shown), ``token_reduction`` (share of the full tree's
    tokens not shown), and the step's task, episode and id."""
    memo: dict[tuple, tuple[str, bool]] = {}
    made = [_reducer(r) for r in reducers]
    rows = []
    for s in steps:
        key = (s.goal, tuple(s.history), s.tree)
        if key not in memo:
            ref = policy.act(s.goal, s.history, s.tree).action
            recorded = (s.meta or {}).get("action")
            memo[key] = (ref, recorded is None or same_action(ref, recorded))
        ref, usable = memo[key]
        n = len(s.axtree)
        tokens = count_tokens(s.tree)
        for label, red in made:
            out = red.reduce(s)
            numbers = line_numbers(out.text, out.kept, out.stubs, n)
            got = policy.act(s.goal, s.history, out.text, numbers).action
            rows.append({"reducer": label, "task": s.family.removeprefix("miniwob."),
                         "episode": s.episode or s.step_id, "step_id": s.step_id,
                         "usable": usable, "same": same_action(got, ref),
                         "reduction": 1 - (len(out.kept) + len(out.stubs)) / max(1, n),
                         "token_reduction": 1 - count_tokens(out.text) / max(1, tokens)})  # fmt: skip
    return rows


def sufficient_lines(step: Step, policy: Any) -> list[int]:
    """A 1-minimal set of ``step``'s lines on which ``policy`` still takes its full-tree
    action: every line dropped in turn, the costliest (most tokens) first, for good when the
    action stays the same. What an oracle reducer could keep for this policy: its token
    reduction bounds what a line selector can reach at no replay loss (a greedy bound, not
    the global minimum).

    >>> from lrlab.agent.scripted import ScriptedPolicy
    >>> tree = "RootWebArea 'T'\\n\\t[13] button 'no'\\n\\t[15] button 'Ok'"
    >>> sufficient_lines(Step(goal='Click on the "Ok" button.', tree=tree), ScriptedPolicy())
    [3]
    """
    lines = step.tree.split("\n")
    ref = policy.act(step.goal, step.history, step.tree).action
    keep = set(range(1, len(lines) + 1))
    for n in sorted(keep, key=lambda n: (-count_tokens(lines[n - 1]), n)):
        trial = sorted(keep - {n})
        if not trial:
            continue
        text = "\n".join(lines[m - 1] for m in trial)
        if same_action(policy.act(step.goal, step.history, text, trial).action, ref):
            keep.discard(n)
    return sorted(keep)


def replay_episodes(rows: Sequence[dict[str, Any]]) -> Any:
    """Per (reducer, episode): ``replays`` (every step the same action), over the usable
    episodes only (every step usable), with the episode's task.

    >>> r = [{"reducer": "x", "task": "t", "episode": "e", "step_id": "e/0", "usable": True,
    ...       "same": True, "reduction": 0.5}, {"reducer": "x", "task": "t", "episode": "e",
    ...       "step_id": "e/1", "usable": True, "same": False, "reduction": 0.4}]
    >>> replay_episodes(r)[["reducer", "episode", "replays"]].values.tolist()
    [['x', 'e', False]]
    """
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    grouped = frame.groupby(["reducer", "task", "episode"], sort=True)
    eps = grouped.agg(usable=("usable", "all"), replays=("same", "all"),
                      n_steps=("same", "size"), reduction=("reduction", "median"),
                      **({"token_reduction": ("token_reduction", "median")}
                         if "token_reduction" in frame else {})).reset_index()  # fmt: skip
    return eps[eps["usable"]].drop(columns="usable").reset_index(drop=True)


def replay_table(episodes: Any, by: Sequence[str] = ("reducer",)) -> Any:
    """Replay success per group of ``by`` with a 95% interval bootstrapped over task types
    (seeds of one task share its layout), n = episodes / task types.

    >>> import pandas as pd
    >>> eps = pd.DataFrame({"reducer": ["x"] * 4, "task": list("aabb"), "episode": list("1234"),
    ...                     "replays": [True, True, True, False], "reduction": [0.5] * 4})
    >>> replay_table(eps)[["reducer", "replay", "n_episodes", "n_tasks"]].values.tolist()
    [['x', 0.75, 4, 2]]
    """
    from lrlib.eval.intervals import bootstrap

    frame = episodes.assign(replays=episodes["replays"].astype(float))
    out = bootstrap(frame, "replays", by=list(by), cluster="task")
    out = out.rename(columns={"estimate": "replay", "lo": "replay_lo", "hi": "replay_hi",
                              "n_steps": "n_episodes", "n_episodes": "n_tasks"})  # fmt: skip
    red = bootstrap(episodes, "reduction", by=list(by), stat="median", cluster="task")
    out["median_line_reduction"] = red["estimate"].to_numpy()
    cols = [*by, "replay", "replay_lo", "replay_hi", "n_episodes", "n_tasks",
            "median_line_reduction"]  # fmt: skip
    if "token_reduction" in episodes:
        tok = bootstrap(episodes, "token_reduction", by=list(by), stat="median", cluster="task")
        out["median_token_reduction"] = tok["estimate"].to_numpy()
        cols.append("median_token_reduction")
    return out[cols]
