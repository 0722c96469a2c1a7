"""Live MiniWoB++ episodes with a reducer in the loop and a policy acting on what it kept.

:func:`run_episode` plays one task type and seed: at each step the observation is reduced
(:class:`~lrlab.agent.preprocess.ObsPreprocessor`), the policy chooses an action on the
reduced tree, BrowserGym executes it. Each episode is written in AgentLab's on-disk layout
(``step_<n>.pkl.gz`` holding BrowserGym's ``StepInfo``, ``summary_info.json``,
``goal_object.pkl.gz``), so ``lrlib import-traces`` and AgentXray read it; ``obs["axtree_txt"]``
is the FULL tree (so every reducer can be scored offline on the same steps), the policy's
view is in ``agent_info["extra_info"]["reduced_axtree_txt"]``. ``summary_info.json`` carries
the provenance (:func:`lrlib.runinfo.provenance`: policy model, prompt hash, reducer and its
parameters, chromium build, package versions) and the latencies split into reduction
(lrlib's share and BrowserGym's flattening), policy and browser.

:func:`run_live` runs reducers x tasks x seeds, skipping episodes already recorded
(resumable), several browsers side by side with ``jobs > 1``; :func:`summarise` gives the
success rate per reducer with bootstrap intervals over task types, beside each reducer's
offline target and evidence coverage of the steps of the reference runs (the ``full``
reducer's successful episodes), computed by :mod:`lrlib.eval.metrics` on the recorded trees.

>>> episode_dir(Path("out"), "bm25:top_k=3", "scripted", "click-button", 2).name
'lrlib-scripted-bm25_top_k=3_on_miniwob.click-button_2'
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from lrlab.agent.policy import Policy
from lrlab.agent.preprocess import ObsPreprocessor, flatten, goal_text
from lrlib.runinfo import provenance

__all__ = [
    "TASKS",
    "task_types",
    "task_types_help",
    "REDUCERS",
    "PACKAGES",
    "MAX_STEPS",
    "package_versions",
    "label_of",
    "episode_dir",
    "EpisodeSpec",
    "run_episode",
    "done",
    "plan_episodes",
    "run_live",
]

#: The MiniWoB++ task types the scripted policy solves from labels and page text (the first
#: 17 since issue 23, the rest added in issue 33 on development seeds 0-4 only).
TASKS = (
    "click-button", "click-button-sequence", "click-checkboxes", "click-dialog",
    "click-dialog-2", "click-option", "click-tab", "click-test", "click-test-2",
    "enter-password", "enter-text", "login-user", "choose-list", "unicode-test", "focus-text",
    "enter-text-2", "focus-text-2",
    "click-test-transfer", "click-checkboxes-large", "click-checkboxes-transfer",
    "click-collapsible", "click-collapsible-nodelay", "click-scroll-list", "enter-date",
    "enter-time", "enter-text-dynamic", "login-user-popup", "read-table", "read-table-2",
    "use-autocomplete", "use-autocomplete-nodelay", "use-spinner", "simple-arithmetic",
    "simple-algebra", "find-word", "copy-paste", "copy-paste-2", "text-transform",
    "scroll-text", "form-sequence-2", "form-sequence-3", "buy-ticket", "generate-number",
    "guess-number", "phone-book", "click-menu",
)  # fmt: skip


def task_types(policy: str) -> tuple[str, ...]:
    """The task types ``policy`` may play: the scripted policy's :data:`TASKS` (it has rules
    for those only), every registered MiniWoB++ type (``data/live/task_split.json``) for any
    other policy.

    >>> len(task_types("llm")), "click-test" in task_types("scripted")
    (125, True)
    """
    if policy == "scripted":
        return TASKS
    from lrlab.agent.split import task_split

    split = task_split()
    return tuple(sorted(split["tuning"] + split["heldout"]))


def task_types_help(policy: str) -> str:
    """Where the valid task types of ``policy`` are listed (one line)."""
    if policy == "scripted":
        return (f"the {len(TASKS)} the scripted policy has rules for: {', '.join(TASKS)} "
                "(lrlab.agent.live.TASKS)")  # fmt: skip
    n = len(task_types(policy))
    return f"the {n} registered MiniWoB++ task types listed in data/live/task_split.json"


REDUCERS = ("full", "truncate", "bm25", "program", "learned")
PACKAGES = ("lrlib", "browsergym-core", "browsergym-miniwob", "miniwob", "playwright",
            "gymnasium", "xllamacpp", "openai")  # fmt: skip
MAX_STEPS = 16
_OBS_KEYS = ("goal", "goal_object", "chat_messages", "url", "open_pages_urls", "open_pages_titles",
             "active_page_index", "last_action", "last_action_error", "focused_element_bid",
             "elapsed_time")  # fmt: skip


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None when absent).

    >>> package_versions(["lrlib", "surely-not-installed"])["surely-not-installed"] is None
    True
    """
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def label_of(spec: str) -> str:
    """A folder-safe label of a reducer spec.

    >>> label_of("bm25:top_k=3,unit=chunks")
    'bm25_top_k=3_unit=chunks'
    """
    return re.sub(r"[^\w.=-]+", "_", spec).strip("_")


def episode_dir(
    out: Path, reducer: str, policy: str, task: str, seed: int, benchmark: str = "miniwob"
) -> Path:
    """Where one episode is recorded (``lrlib import-traces`` reads task and seed from it)."""
    return Path(out) / f"lrlib-{policy}-{label_of(reducer)}_on_{benchmark}.{task}_{seed}"


@dataclass
class EpisodeSpec:
    """One episode to play."""

    reducer: str
    task: str
    seed: int


def _slim(obs: dict[str, Any], tree: str, canonical: Any) -> dict[str, Any]:
    out = {k: obs[k] for k in _OBS_KEYS if k in obs}
    for k in ("url",):
        if isinstance(out.get(k), str):
            out[k] = canonical(out[k])
    if "open_pages_urls" in out:
        out["open_pages_urls"] = [canonical(str(u)) for u in out["open_pages_urls"]]
    out["axtree_txt"] = tree
    return out


def _save(info: Any, folder: Path) -> None:
    info.save_step_info(folder, save_screenshot=False)


def run_episode(
    mw: Any,
    spec: EpisodeSpec,
    policy: Policy,
    out: Path,
    max_steps: int = MAX_STEPS,
) -> dict[str, Any]:
    """Play one episode in the :class:`~lrlab.agent.miniwob.MiniWoB` ``mw`` and record it
    under ``out``; returns its ``summary_info.json`` content."""
    from browsergym.experiments.loop import StepInfo

    from lrlib.eval.evaluation import parse_spec

    name, params = parse_spec(spec.reducer)
    pre = ObsPreprocessor(name, **params)
    bench = getattr(mw, "benchmark", "miniwob")  # lrlab.docsite.env.DocsEnv: "docs"
    folder = episode_dir(out, spec.reducer, policy.name, spec.task, spec.seed, bench)
    folder.mkdir(parents=True, exist_ok=True)
    from lrlab.agent.exp_args import exp_args, write_exp_args

    described = exp_args(spec.task, spec.seed, max_steps=max_steps, policy=policy.name,
                         policy_model=getattr(policy, "model", None), reducer=spec.reducer,
                         reducer_params=pre.reducer.params, exp_dir=folder,
                         benchmark=bench)  # fmt: skip
    write_exp_args(folder, described)  # first, as BrowserGym does: AgentXray lists it at once
    env = mw.env(spec.task)
    start = time.perf_counter()
    t = time.perf_counter()
    obs, _ = env.reset(seed=spec.seed)
    reset_s = time.perf_counter() - t
    history: list[str] = []
    rows: list[dict[str, Any]] = []
    reward, terminated, truncated, err, cum = 0.0, False, False, None, 0.0
    for n in range(max_steps + 1):
        # the reducer sees the tree as recorded (server address canonical), so scoring it
        # offline on the recorded step reproduces the live reduction exactly
        t = time.perf_counter()
        tree = mw.canonical(flatten(obs))
        flatten_s = time.perf_counter() - t
        p = pre({**obs, "axtree_txt": tree}, history)
        p.info["flatten_s"] = flatten_s
        slim = _slim(obs, tree, mw.canonical)
        done = terminated or truncated or n == max_steps
        info = StepInfo(step=n, obs=slim, reward=reward, raw_reward=reward,
                        terminated=terminated, truncated=truncated)  # fmt: skip
        if done:
            info.truncated = truncated or not terminated
            _save(info, folder)
            break
        decision = policy.act(goal_text(obs), history, p.text, p.numbers)
        action = decision.action
        extra = {"lrlib": p.info, "reduced_axtree_txt": p.text,
                 "policy": decision.record()}  # fmt: skip
        info.action = action
        info.agent_info = {"think": decision.raw, "extra_info": extra, "stats": {}}
        t = time.perf_counter()
        if not decision.stop:
            obs, reward, terminated, truncated, _ = env.step(action)
            cum += float(reward)
        browser_s = time.perf_counter() - t
        info.stats = {"reduction_s": p.info["latency_s"], "flatten_s": p.info["flatten_s"],
                      "policy_s": decision.latency_s, "browser_s": browser_s}  # fmt: skip
        _save(info, folder)
        rows.append({"step": n, "action": action, "stop": decision.stop,
                     "relied_lines": decision.lines, "kept": len(p.info["kept"]),
                     "n_lines": p.info["n_lines"], "tokens_before": p.info["tokens_before"],
                     "tokens_after": p.info["tokens_after"], **info.stats})  # fmt: skip
        history.append(action)
        if decision.stop:
            err = f"policy stopped: {decision.raw}"
            terminated, truncated = False, True
            info = StepInfo(step=n + 1, obs=slim, reward=0.0, terminated=False, truncated=True)
            _save(info, folder)
            break
    summary = {
        "n_steps": len(rows),
        "cum_reward": cum,
        "cum_raw_reward": cum,
        "err_msg": err,
        "stack_trace": None,
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "success": cum >= 1.0,
        "task": spec.task,
        "seed": spec.seed,
        "reducer": spec.reducer,
        "episode_s": time.perf_counter() - start,
        "reset_s": reset_s,
        "steps": rows,
        "stats.cum_reduction_s": sum(r["reduction_s"] for r in rows),
        "stats.cum_policy_s": sum(r["policy_s"] for r in rows),
        "stats.cum_browser_s": sum(r["browser_s"] for r in rows),
        "provenance": provenance(
            **policy.provenance(),
            reducer=name,
            reducer_params=pre.reducer.params,
            benchmark=bench,
            browser_build=mw.browser_build,
            packages=package_versions(),
            **getattr(mw, "provenance", {}),
        ),
    }
    tmp = folder / "summary_info.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2, default=str))
    os.replace(tmp, folder / "summary_info.json")  # written last: its presence means "done"
    return summary


def done(
    out: Path, spec: EpisodeSpec, policy: str, benchmark: str = "miniwob"
) -> dict[str, Any] | None:
    """The recorded summary of an episode, if it finished before (resuming)."""
    folder = episode_dir(out, spec.reducer, policy, spec.task, spec.seed, benchmark)
    path = folder / "summary_info.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def plan_episodes(
    reducers: Sequence[str], tasks: Sequence[str], seeds: Sequence[int]
) -> list[EpisodeSpec]:
    """Every (reducer, task, seed), reducers outermost.

    >>> len(plan_episodes(["full", "bm25"], ["click-test"], [0, 1]))
    4
    """
    return [EpisodeSpec(r, t, s) for r in reducers for t in tasks for s in seeds]


_WORKER: dict[str, Any] = {}


def _worker_init(base: str, chromium: str | None, policy_name: str, policy_kw: dict) -> None:
    from lrlab.agent.miniwob import MiniWoB
    from lrlab.agent.policies import get_policy

    _WORKER["mw"] = MiniWoB(chromium=chromium, base=base)
    _WORKER["policy"] = get_policy(policy_name, **policy_kw)


def _worker_run(spec: EpisodeSpec, out: str, max_steps: int) -> dict[str, Any]:
    return _play(_WORKER["mw"], spec, _WORKER["policy"], Path(out), max_steps)


def _play(mw: Any, spec: EpisodeSpec, policy: Policy, out: Path, max_steps: int) -> dict[str, Any]:
    for attempt in range(3):  # BrowserGym's action timeouts on a loaded CPU: replay the seed
        try:
            return run_episode(mw, spec, policy, out, max_steps)
        except Exception as e:  # noqa: BLE001  (a browser failure loses an episode, not the run)
            if attempt == 2:
                return {"task": spec.task, "seed": spec.seed, "reducer": spec.reducer,
                        "success": False, "err_msg": f"{type(e).__name__}: {str(e)[:200]}",
                        "steps": [], "recorded": False}  # fmt: skip
            mw.close_env(spec.task)
    raise AssertionError("unreachable")


def run_live(
    specs: Sequence[EpisodeSpec],
    out: Path,
    policy_name: str = "scripted",
    policy_kw: dict[str, Any] | None = None,
    jobs: int = 1,
    max_steps: int = MAX_STEPS,
    chromium: str | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Play the episodes ``specs`` not yet recorded under ``out``; every episode's summary."""
    from tqdm.auto import tqdm

    from lrlab.agent.miniwob import MiniWoB
    from lrlab.agent.policies import get_policy

    policy_kw = dict(policy_kw or {})
    results: dict[int, dict[str, Any]] = {}
    todo = []
    for i, spec in enumerate(specs):
        prev = done(out, spec, policy_name)
        if prev is not None:
            results[i] = prev
        else:
            todo.append(i)
    bar = tqdm(total=len(specs), initial=len(results), desc="episodes", unit="ep",
               disable=not progress)  # fmt: skip
    get_policy(policy_name, **policy_kw)  # a bad policy fails here, before any browser
    # the browsers always run in worker processes, also for one job: BrowserGym keeps a
    # process-wide Playwright whose event loop would stay "running" in the caller (then
    # asyncio.run, a notebook's loop or another Playwright fail in that process)
    with (
        MiniWoB(chromium=chromium) as mw,
        ProcessPoolExecutor(
            max(1, min(jobs, len(todo))),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(mw.base, chromium, policy_name, policy_kw),
        ) as pool,
    ):
        futures = {pool.submit(_worker_run, specs[i], str(out), max_steps): i for i in todo}
        for f in as_completed(futures):
            results[futures[f]] = f.result()
            bar.update()
    bar.close()
    return [results[i] for i in range(len(specs))]
