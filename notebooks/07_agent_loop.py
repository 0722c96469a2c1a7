# %% [markdown]
# # 07 · The agent in the loop: does offline coverage predict success?
#
# Everything else in this repository is measured offline, on recorded steps, by proxies:
# a reducer *covers* a step when it keeps the line of the element the agent acted on
# (target coverage) and the lines that justify the action (evidence coverage). The paper's
# own measure is success. `lrlib live` closes the loop on MiniWoB++ (offline: the task
# pages of the `miniwob` package, Debian's chromium, BrowserGym): at every step a reducer
# prunes the observation, a **policy** acts on what it kept, BrowserGym executes the
# action. Each episode is recorded in AgentLab's layout with the browser build, the
# reducer, the policy's model and the latencies split into reduction, policy and browser.
#
# Two policies (`lrlib.agent.policies`):
#
# * **scripted**: hand-written rules that find the element the goal names *by its label*
#   and stop when it is missing. It succeeds on every episode with the full observation,
#   so under a reducer it fails exactly when the reducer dropped something it reads: the
#   cleanest test of whether offline coverage is the right proxy;
# * **llm**: any chat model (OpenAI-compatible); here the embedded SmolLM2-135M-Instruct,
#   asked under a JSON schema narrowed to the page's own actions.
#
# This notebook reads the shipped results of `benchmarks/bench_live.py` (`data/live/`) and
# the minimal failure sets of `lrlib mfs`; it runs no browser and no model.

# %%
import pandas as pd
from IPython.display import display

from lrlib import paths
from lrlib.agent import live, live_report
from lrlib.data import dataset as data
from lrlib.eval import intervals
from lrlib.eval.evaluation import evaluate
from lrlib.report import figures, plots, tables

# %% tags=["parameters"]
QUICK = figures.quick_mode()
LIVE = paths.shipped_data_dir() / "live"
REDUCERS = ["full", "truncate", "bm25", "program", "learned"]
MFS_STEPS = 40 if QUICK else None  # None: every MiniWoB check-set step the scripted policy knows

# %% [markdown]
# ## Success per reducer, beside its offline coverage of the same steps
#
# Success is bootstrapped over **task types** (the seeds of one task share its layout, so
# they are not independent). The offline columns score each reducer on the steps of the
# `full` run's episodes (the same pages, seed for seed): step target and evidence coverage,
# and *episode coverage*, the share of episodes in which every step's target is kept.
# `agreement` is the share of episodes where live success equals episode coverage.

# %%
scripted = pd.read_csv(LIVE / "scripted" / "summary.csv")
cols = ["reducer", "success", "success_lo", "success_hi", "n_episodes", "n_tasks", "episode_cov",
        "episode_cov_lo", "episode_cov_hi", "episode_mfs_cov", "target_cov", "evidence_cov",
        "median_reduction", "agreement", "mfs_agreement"]  # fmt: skip
display(scripted[cols].round(3))
_ = tables.save_table(scripted[cols], "live_scripted",
                  "Live MiniWoB++ episodes, scripted policy: success [95% over task types] "
                  "beside offline coverage of the full run's steps")  # fmt: skip

# %%
fig = live_report.plot_success_vs_coverage(
    scripted, title="scripted policy on MiniWoB++ (Debian chromium)"
)
_ = plots.save(fig, "live_success_vs_coverage")

# %% [markdown]
# What the shipped run shows (17 task types x 5 seeds = 85 episodes per reducer; the
# `full` point sits under `truncate`, whose token budget exceeds every MiniWoB tree):
#
# * for **bm25** and **program**, live success equals offline episode coverage on 98% and
#   100% of the episodes: when they fail, they dropped a line the policy needed;
# * **learned** succeeds less often than its offline coverage says (67% [46, 88] against
#   88% [71, 100]; agreement 79%): after the first action it drops lines that show the
#   page's *state* (the radio just ticked, the second password field), which the policy
#   checks before it submits and which are neither the target nor its evidence. Its
#   minimal-failure-set coverage (`episode_mfs_cov`, with this policy's sets) comes closer.
#
# The intervals are wide (17 task types): read the differences between reducers as
# directions, not rankings.

# %% [markdown]
# ## What lrlib costs per step
#
# Medians per step with 95% intervals over task types: lrlib's share (tree parsed, reduced,
# numbered, tokens counted; BrowserGym's own flattening apart), the policy and the browser.

# %%
latency = pd.read_csv(LIVE / "scripted" / "latency.csv")
display(latency.round(2))

# %% [markdown]
# ## The embedded model as the policy
#
# SmolLM2-135M-Instruct, a 135M-parameter model, answers under a schema that only admits
# the page's own actions. Read its numbers as a floor: the loop, not the model, is what this
# shows.

# %%
llm = pd.read_csv(LIVE / "llm" / "summary.csv")
display(llm[[c for c in cols if c in llm.columns]].round(3))

# %% [markdown]
# ## Minimal failure sets
#
# `lrlib mfs` asks which lines the policy cannot lose: on a recorded step where the policy
# reproduces the recorded action, it removes the lines the policy says it relied on (and
# the evidence lines), then delta-debugs (ddmin) that set down to a 1-minimal one whose
# removal changes the action. **MFS coverage** is the share of steps whose whole set a
# reducer keeps. Here with the scripted policy on the MiniWoB check set (no model):

# %%
steps = [s for s in data.load_steps(path=paths.miniwob_path())
         if s.family.removeprefix("miniwob.") in live.TASKS and s.target_bids]  # fmt: skip
steps = steps[:MFS_STEPS] if MFS_STEPS else steps
frame = evaluate(REDUCERS, steps, progress=False)  # joins data/mfs/mfs_scripted.jsonl
measures = [("mfs_scripted", "mean", "mfs"), ("covered", "mean", "target"),
            ("evidence_covered", "mean", "evidence"), ("reduction", "median", "reduction")]  # fmt: skip
mfs_table = intervals.summary(frame, measures=measures)
display(mfs_table.round(3))
_ = tables.save_table(mfs_table, "mfs_coverage_scripted",
                  "MFS coverage (scripted policy) beside target and evidence coverage, MiniWoB "
                  "check set, 95% over episodes")  # fmt: skip
