# %% [markdown]
# # 08 · Success where reduction matters: live episodes on big documentation pages
#
# MiniWoB++ pages are ~90 tokens: nothing there needs reducing. Debian ships the HTML
# documentation of Python, Node.js and many more; served on 127.0.0.1 and rendered by
# Debian's chromium, their pages give accessibility trees of thousands of lines.
# `lrlib live --env docs --site <folder>` generates tasks from a site's own HTML (ground
# truth from the HTML, never a model): *navigate* (open a named link from a page of long
# link lists), *report* (a table cell or a `Label: value` line of a long page, answered
# with `send_msg_to_user`), *deep* (the same, in the lower half of pages of >= 15,000
# characters), *multihop* (navigate, then report) and *search* (the site's own search page,
# where it works offline). The scripted docs policy finds what the goal names by label and
# stops when it is missing, so under a reducer it fails exactly when the reducer dropped
# something it reads.
#
# Reducers (`meta.json` lists the ones played): `full`, `truncate-agentlab` (AgentLab's own
# default cut), `anchor` (issue 34: the lines whose name the goal quotes, BM25's best lines,
# and the structure an answer lives in around them: the table row and its header row, the
# lines under a named heading; its one knob chosen by cross-validation grouped by site and
# family on the development sites) and, where time allowed, `bm25`, `program` and `learned`
# (each with its injection guard on and off). Python 3.11's and Node.js 18's docs are the
# development sites; PostgreSQL 15's docs, named by their folder only, are the check site.
#
# This notebook reads the shipped results of `benchmarks/bench_docs.py`
# (`data/live/docs/`); it runs no browser and no model.
#
# **Runs with** the core install and Jupyter (`pip install -e '.[notebooks]'`): no other extra.

# %%
import json

import pandas as pd
from IPython.display import display

from lrlab.docsite import study
from lrlib import paths, settings
from lrlib.report import plots, tables

# %% tags=["parameters"]
QUICK = settings.current().quick  # the tables are small: quick mode reads them all too
DOCS = paths.shipped_data_dir() / "live" / "docs"

# %% [markdown]
# ## What was played
#
# The sites (named by Debian package, version and a hash of the folder), the chromium
# build, the load of the machine while it ran, and the size of the trees the policy saw.

# %%
meta = json.loads((DOCS / "meta.json").read_text())
episodes = pd.read_csv(DOCS / "episodes.csv")
steps = pd.read_csv(DOCS / "steps.csv")
display(pd.DataFrame(meta["sites"]))
print(meta["browser_build"], "| load average", meta["load_average"], "| jobs", meta["jobs"])
full = steps[steps["reducer"] == "full"]
print(f"{len(episodes)} episodes, {len(steps)} steps; full-tree lines per played step: "
      f"median {full['n_lines'].median():.0f}, max {full['n_lines'].max():.0f}")  # fmt: skip
display(episodes.groupby(["site", "family"]).size().unstack(fill_value=0))
timing = meta.get("timing", {})
print("reducers:", meta["reducers"], "| episodes per reducer:", timing.get("episodes_per_reducer"))
print(f"seconds per episode (each in its worker, {meta['jobs']} browsers side by side, this "
      f"machine's load): median {timing.get('median_episode_s', float('nan')):.1f}, mean "
      f"{timing.get('mean_episode_s', float('nan')):.1f}; 300 episodes of one reducer "
      f"projected at {timing.get('projected_min_300_episodes')} minutes; the summary (offline "
      f"coverage, {timing.get('summary_jobs', 1)} workers) took "
      f"{timing.get('summary_s_per_episode', float('nan')):.2f} s per episode")  # fmt: skip

# %% [markdown]
# ## Success per reducer, beside its reduction
#
# Success with 95% intervals bootstrapped over tasks (`success_lo/hi`) and over task
# families (`family_lo/hi`, the wider: tasks of one family share their kind of page); the
# median token reduction per step (interval over tasks); the offline coverage of the same
# steps (target, evidence, every minimal failure set of the scripted policy); lrlib's
# median latency per step.

# %%
summary = pd.read_csv(DOCS / "summary.csv")
display(summary.round(3))
_ = tables.save_table(summary, "docs_live_scripted",
                      "Live documentation-site episodes, scripted policy: success [95% over "
                      "tasks; over families] beside median token reduction")  # fmt: skip

# %%
fig = study.plot_success_vs_reduction(
    summary, title=f"scripted policy, {meta['browser_build']}"[:70]
)
_ = plots.save(fig, "docs_success_vs_reduction")

# %% [markdown]
# ## Per family, and what the injection guard costs on clean pages
#
# The program and learned reducers drop lines whose text reads like an instruction to the
# agent (the guard); these pages carry no attack, so any success lost with the guard on is
# its price. Its guard-off episode is the guarded one wherever the guard hid nothing the
# policy would have been shown; only the others are played again.

# %%
per_family = episodes.pivot_table(index="reducer", columns="family", values="success",
                                  aggfunc="mean")  # fmt: skip
display(per_family.round(2))
# guard off: derived where it shows the policy the same text at every step, else played
# (benchmarks/bench_docs_guard.py, lrlab.agent.derive)
if (DOCS / "guard.csv").is_file():
    display(pd.read_csv(DOCS / "guard.csv").round(3))

# %% [markdown]
# ## Why reducers fail here
#
# The scripted policy stops with what it could not find; each failed episode is counted
# by that (a failure without a stop is a wrong answer or a wrong page: a reducer that
# keeps a row but drops one of its cells or the header above it makes the policy misread).

# %%
display(study.failure_reasons(episodes))

# %% [markdown]
# ## Per site: the development sites and the unseen one
#
# The same table per site. The unseen site's rows are the check of what was chosen on the
# development sites (the anchor reducer's rules and knob, the policy's retry).

# %%
by_site = pd.read_csv(DOCS / "summary_by_site.csv")
cols = ["site", "reducer", "success", "success_lo", "success_hi", "n_episodes", "reduction"]
display(by_site[cols].round(3))

# %% [markdown]
# ## Success relative to full's, on the same tasks
#
# The target is a reducer whose success is at least 95% of full's at a median token
# reduction of at least 80%. The ratio's 95% interval comes from a paired bootstrap over
# tasks; with tens of tasks per site it is wide, so the statement below says what the
# interval supports, not only the point.

# %%
relative = pd.read_csv(DOCS / "relative.csv")
display(relative.round(3))
reduction = summary.set_index("reducer")["reduction"]
for site, part in relative.groupby("site", sort=False):
    ok = part[(part["ratio"] >= 0.95) & part["reducer"].map(reduction).ge(0.8)]
    names = ", ".join(f"{r.reducer} {r.ratio:.0%} [{r.ratio_lo:.0%}, {r.ratio_hi:.0%}]"
                      for r in ok.itertuples())  # fmt: skip
    print(f"{site}: n = {part['n_tasks'].iloc[0]} tasks; at >= 80% reduction and a point "
          f"estimate >= 95% of full's: {names or 'none'}")  # fmt: skip
