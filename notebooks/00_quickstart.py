# %% [markdown]
# # 00 · Quickstart: one recorded step through LineRetriever
#
# A web agent sees each page as an accessibility tree (AxTree): thousands of tokens, most of
# them irrelevant to what it does next. **LineRetriever** (Kerboua et al., 2025) puts a
# smaller language model in front of the agent: it gets the task goal, the actions taken so
# far and the *numbered* tree, answers which line ranges the agent needs for its next
# steps, and the tree is pruned to those lines (keeping their ancestors, so the structure
# stays readable). The paper reports 61-73% smaller observations at a success rate close to
# that of the full observation.
#
# This notebook walks one recorded step through that pipeline: the recorded observations,
# the numbered tree, the retriever prompt, the model's answer and the reduced tree, with
# token counts at each stage. Answers are replayed from the response cache in `data/cache/`
# (no network, no model run); the README says how to point lrlib at your own endpoint.
#
# **Runs with** the core install and Jupyter (`pip install -e '.[notebooks]'`): no other extra.

# %%
from IPython.display import Markdown

import lrlib
from lrlib import count_tokens, settings
from lrlib.core.pruning import render
from lrlib.report import plots, replay
from lrlib.report.run import default_steps

# %% tags=["parameters"]
QUICK = settings.current().quick
STEP = 2  # which of the default (cached) validation steps to show
PROMPT, STRATEGY = "paper", "structure"
ANSWER = "json"  # "tags" or "json" (a JSON schema the endpoint enforces)
SHOW_LINES = 25  # lines of the tree to print

# %% [markdown]
# ## The recorded observations
#
# 89 real BrowserGym episodes (WorkArena on ServiceNow, WebArena's shopping admin), imported
# from AgentLab's on-disk layout into one row per step: goal, action history, the tree, and
# the action the agent took next. Steps off the benchmark (the agent wandered to other
# sites) and exact repeats were dropped; episodes are split into `train` and `validation`.

# %%
obs = lrlib.load_observations()
obs.groupby(["benchmark", "split"]).agg(
    steps=("step_id", "size"),
    episodes=("episode", "nunique"),
    median_tokens=("n_tokens", "median"),
    max_tokens=("n_tokens", "max"),
)

# %%
sizes_png = plots.tree_sizes(obs)

# %% [markdown]
# ## One step
#
# A step is what a reducer gets: the goal, the history and the tree. The recorded next
# action tells us which element the agent needed: its line is the **target**.

# %%
step = default_steps()[STEP]
print("goal:   ", step.goal)
print("history:", list(step.history) or "(first step)")
print("next:   ", step.meta["action"], "-> target lines", step.target_lines)
print(f"tree:    {len(step.axtree)} lines, {count_tokens(step.tree):,} tokens (o200k)")

# %%
print("\n".join(render(step.axtree).splitlines()[:SHOW_LINES]))

# %% [markdown]
# ## The retriever prompt
#
# The retriever sees every line with its number, so it can answer with ranges such as
# `[(12, 18), (40, 41)]`. lrlib's default retriever view is `compact`: it drops noise such as
# long `url=` attributes but keeps each line's number, so a selection still maps to the
# original lines. The prompt puts the goal and history first, then the tree, then the
# instructions and the answer format (the page never has the last word). These are the exact
# messages sent for this step:

# %%
retriever = replay.lineretriever(prompt=PROMPT, strategy=STRATEGY, answer=ANSWER)
system, user = retriever.messages(step)
print(system["content"], "\n", "-" * 80)
head, _, rest = user["content"].partition("<observation>")
shown, _, tail = rest.partition("</observation>")
print(head + "<observation>" + "\n".join(shown.splitlines()[:SHOW_LINES]) + "\n...\n" + tail)
print(f"prompt: {count_tokens(system['content']) + count_tokens(user['content']):,} tokens "
      f"(the tree alone: {count_tokens(step.tree):,})")  # fmt: skip

# %% [markdown]
# ## The answer and the reduced tree

# %%
result = replay.safe_reduce(retriever, step)  # offline with no cached answer: labelled fallback
print(f"retriever model: {replay.model_name()} ({replay.mode()})")
print("answer: ", *result.extra.get("answers", []))
print("ranges: ", result.extra.get("selection"), "| failure:", result.failure)

# %%
print(result.text[:3000])

# %%
Markdown(replay.token_summary(step, result))

# %% [markdown]
# The embedded model is SmolLM2-135M-Instruct, chosen because it runs offline on a laptop
# CPU, not for the quality of its selections: it often drops the target (see notebook 05)
# and in the tag answer format it rarely produces an `<answer>` block at all (notebook 02).
# Point lrlib at a capable model to study the method itself.
