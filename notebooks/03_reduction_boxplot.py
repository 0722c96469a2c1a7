# %% [markdown]
# # 03 · Figure 3: token reduction against the size of the original tree
#
# The LineRetriever paper shows, in its Figure 3, box plots of the token reduction per step
# (`1 - |reduced| / |original|`, in tokens) for LineRetriever with its structure-preserving
# filter, grouped by how large the original accessibility tree was. The point of the figure:
# the reduction is not a constant ratio. Large pages (long lists, tables, menus) are mostly
# irrelevant to the next action and shrink a lot; small pages have little to drop.
#
# This notebook rebuilds that figure from the recorded observations, and draws the same
# panel for every other reducer, so the shapes can be compared. Everything is measured on
# the **validation** split (the program reducer was tuned on `train`).
#
# LineRetriever's answers are **replayed** from the response cache shipped in `data/cache/`
# unless an endpoint is configured (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `LRLIB_MODEL`): the
# model that produced them is named in every title. With the embedded
# SmolLM2-135M-Instruct, a 135M-parameter model, the selections show the *pipeline* working,
# not the paper's quality: the paper used far larger retrievers.
#
# **Runs with** the core install and Jupyter (`pip install -e '.[notebooks]'`): no other extra.

# %%
import pandas as pd

import lrlib
from lrlib import settings
from lrlib.eval import evaluation
from lrlib.report import plots, replay, tables
from lrlib.report.run import default_steps

# %% tags=["parameters"]
QUICK = settings.current().quick  # LRLIB_QUICK=1: a few steps, for tests
SPLIT = "validation"
N_STEPS = 12 if QUICK else None  # None: every step of the split
PROMPT, STRATEGY = "paper", "structure"  # the paper's LineRetriever + structure filter
ANSWER = "json"  # the answer format: the embedded model only answers reliably under a schema
BASELINES = [r for r in evaluation.all_reducers() if r != "full"]  # every registered reducer

# %% [markdown]
# ## LineRetriever + structure (the paper's Figure 3)
#
# The steps whose answers are in the cache (the fixed default selection of validation
# steps, `lrlib.report.run.default_steps()`) are replayed; any step without a cached answer is
# skipped and counted, never sent to a model behind your back.

# %%
lr_steps = default_steps(N_STEPS)
lr = replay.run_lineretriever(lr_steps, prompt=PROMPT, strategy=STRATEGY, answer=ANSWER)
print(lr.note())
lr.frame[["tokens_before", "tokens_after", "reduction", "covered"]].describe().round(3)

# %%
fig3_png = plots.reduction_boxplot(
    lr.frame,
    model=lr.model,
    name="fig3_lineretriever_structure",
    title=f"Figure 3: LineRetriever + {STRATEGY}, prompt '{PROMPT}', {ANSWER} answers",
)

# %% [markdown]
# ## The same figure for every reducer
#
# The non-LLM reducers are cheap, so they are evaluated on every step of the split; the
# embedding baseline replays the vectors cached in `data/cache/embeddings` (computing e5
# embeddings for a whole split takes many minutes on a CPU: missing steps are skipped and
# counted unless `LRLIB_OFFLINE=0`). Bottom truncation has a fixed token budget: its reduction is zero on trees below
# the budget and grows with the tree, the same shape as LineRetriever's but blind to where
# the target is. The retrieval baselines (embedding, BM25) keep a fixed number of chunks or
# lines, so their reduction also climbs with tree size. The oracle keeps only the target and
# its ancestors: the upper bound of what the coverage metric can reward.
#
# Every panel carries its uncertainty: the red band is the 95% interval of the median
# reduction and the title gives the evidence coverage (everything the recorded action
# needs is still readable, `lrlib.data.evidence`) and the target coverage, each with its
# interval and n (steps / episodes), all from a bootstrap over whole episodes
# (`lrlib.eval.intervals`; notebook 05 explains how to read them). The table below leads
# with evidence coverage too, with the planning horizon (the targets of the next two
# recorded steps already on the page) beside it. Boxes with a handful of steps show a
# spread, not a trend.

# %%
steps = lrlib.load_steps(split=SPLIT, limit=N_STEPS)
frame, notes = replay.evaluate_cached(BASELINES, steps)  # embeddings: cached ones only
print("\n".join(notes) or "every reducer evaluated on every step")
tables.interval_table(frame)  # 95% intervals (bootstrap over episodes), n = steps/episodes

# %%
both = pd.concat([frame, lr.frame], ignore_index=True)
fig3_all_png = plots.reduction_boxplot(
    both,
    reducers=[lr.label, *BASELINES],
    model=lr.model,
    name="fig3_reduction_by_reducer",
    title=f"Token reduction by original tree size, per reducer ({SPLIT})",
)

# %% [markdown]
# ## Reading the figure
#
# * **Shape.** Budget- and count-based reducers (truncation, top-k chunks) reduce more as
#   the tree grows, by construction: a fixed amount is kept. The paper's point is that
#   LineRetriever's reduction *also* grows with the tree while choosing *what* to keep.
# * **The embedded model.** SmolLM2-135M's selections under the JSON schema are very
#   aggressive (a high median reduction) but they usually miss the target (see the coverage
#   in notebook 05): the box plot measures size, not quality. In the tag format it almost
#   never produces a readable answer, so every step falls back to the full tree (0%).
# * **Small samples.** The LineRetriever panel covers the cached default steps only; some
#   bins hold two steps. The baseline panels use the whole validation split (117 steps in
#   19 episodes): with that many episodes, medians differing by a few points are within
#   each other's intervals; compare reducers on the paired tables of notebook 05.
#
# Median reduction per size bin and reducer (the numbers behind the boxes):

# %%
both.assign(bin=plots.bin_tokens(both["tokens_before"])).pivot_table(
    index="reducer", columns="bin", values="reduction", aggfunc="median", observed=True
).round(2)
