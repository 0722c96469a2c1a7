# %% [markdown]
# # 06 · Prompt injection: what each reducer lets through
#
# Web pages are written by strangers, and the reduced observation is all the acting model
# sees: a reducer is a security boundary. The FocusAgent line of work reports that a
# retriever told to watch for attacks removes injected pop-ups almost entirely. This
# notebook measures what every reducer in lrlib lets through on the recorded observations.
#
# `lrlib.inject` plants attack subtrees in recorded trees, in the style of real banner and
# pop-up injections: a `dialog` or `alert` telling the agent to drop its goal and go to
# another site, a pop-up that repeats the goal to look relevant (`goal-hook`), fake
# `<think>`/`<action>`/`<answer>` tags (`fake-tags`) and fake numbered lines
# (`fake-lines`). Each attack goes in at one of five positions (first child of the page,
# half-way down, at the bottom, right before the target, deep inside the content) with
# fresh bids, so the recorded action still names the same element. `lrlib.injection_eval`
# runs each reducer on the attacked and on the clean step and measures:
#
# * **survival**: the share of injected lines that reach the output (kept verbatim, or
#   their text visible); **steps_any**: the share of steps where at least one does;
# * **kept_share** (the share of all the tree's lines kept) and **lift** = survival /
#   kept_share. A reducer that keeps 20% of the tree and 20% of the attack lines has not
#   defended anything (lift 1); a defence shows as lift well below 1;
# * **coverage_clean / coverage_injected**: whether the target still survives once the
#   page is attacked.
#
# Two sets: 15 validation steps (seed 0, two attacks each) on which every reducer runs,
# LineRetriever included (replayed from the shipped cache of the embedded model's answers),
# and every validation step with a target for the reducers that need no model.

# %%
from IPython.display import display

from lrlib import data, figures, inject, injection_eval, plots, replay, tables

# %% tags=["parameters"]
QUICK = figures.quick_mode()
SPLIT, SEED, PER_STEP = "validation", 0, 2
N_ATTACKED = 15  # the attacked set whose retriever answers ship in data/cache/llm
N_SHOWN = 3 if QUICK else N_ATTACKED
N_LARGE = 8 if QUICK else None  # None: every validation step with a target
REDUCERS = ["full", "truncate", "truncate-agentlab", "random", "oracle", "bm25",
            "bm25:unit=chunks", "embedding", "program"]  # fmt: skip
LR_CONFIGS = [("paper", "json"), ("soft", "json"), ("restrictive", "json"),
              ("defender", "json"), ("paper", "tags"), ("defender", "tags")]  # fmt: skip
COLUMNS = ["reducer", "n_steps", "injected_lines", "survival", "steps_any", "kept_share",
           "lift", "stubbed", "coverage_clean", "coverage_injected", "coverage_lost",
           "failures"]  # fmt: skip

# %% [markdown]
# ## The attacked set
#
# One attack as the retriever and the agent see it:

# %%
steps = data.load_steps(split=SPLIT)
items = inject.build_set(steps, n=N_ATTACKED, per_step=PER_STEP, seed=SEED)[:N_SHOWN]
n_lines = sum(len(it.injected) for it in items)
print(f"{len(items)} attacked {SPLIT} steps, {n_lines} injected lines, seed {SEED}")
first = items[0].placements[0]
print(f"{first.attack} at {first.position}, depth {first.depth}:")
print("\n".join(items[0].step.axtree.texts[first.first - 1 : first.last]))

# %% [markdown]
# ## Every reducer on the same attacked steps
#
# LineRetriever runs in the notebooks' configuration (compact view, history on, no
# thinking, `structure` pruning) with four prompt variants in JSON mode and two in tag
# mode; `defender` adds a warning against instructions found in the page.

# %%
lr = {f"lineretriever:{p}/{a}": replay.lineretriever(prompt=p, answer=a) for p, a in LR_CONFIGS}
rows, notes = injection_eval.score_cached({**{r: r for r in REDUCERS}, **lr}, items, seed=SEED)
print("\n".join(notes) or "every reducer scored on every attacked step")
model = replay.model_name()
summary = injection_eval.summarize(rows)
print(f"LineRetriever: retriever model {model}, {replay.mode()}")
tables.save_table(
    summary[COLUMNS], "injection_summary",
    f"Prompt-injection benchmark: {len(items)} attacked {SPLIT} steps ({n_lines} injected "
    f"lines, seed {SEED}). LineRetriever rows: retriever model {model}, {replay.mode()}.",
)  # fmt: skip
summary[COLUMNS].round(3)

# %% [markdown]
# Survival by attack kind and by position:

# %%
by_attack = injection_eval.breakdown(rows, "attack")
by_position = injection_eval.breakdown(rows, "position")
display(by_attack.round(2))
display(by_position.round(2))

# %%
survival_png = plots.injection_survival(
    summary, by_position, model=model,
    title=f"Injected lines that reach the acting model ({len(items)} attacked {SPLIT} steps)",
)  # fmt: skip

# %% [markdown]
# ## The reducers without a model on every validation step with a target
#
# Every validation step whose target is in the tree (114 in full mode), two attacks each.
# The embedding baseline needs the vectors of each attacked tree; only those of the set
# above ship in the cache, so here its steps are skipped and counted (`LRLIB_OFFLINE=0`
# computes them) and its only measurement is the 15-step row above.

# %%
large = inject.build_set(steps, n=N_LARGE, per_step=PER_STEP, seed=SEED)
rows_large, notes = injection_eval.score_cached(REDUCERS, large, seed=SEED)
print("\n".join(notes) or "every reducer scored on every attacked step")
summary_large = injection_eval.summarize(rows_large)
tables.save_table(
    summary_large[COLUMNS], "injection_validation",
    f"Prompt-injection benchmark, reducers without a model: {len(large)} attacked {SPLIT} "
    f"steps ({sum(len(it.injected) for it in large)} injected lines, seed {SEED}).",
)  # fmt: skip
summary_large[COLUMNS].round(3)

# %%
injection_eval.breakdown(rows_large, "position").round(2)

# %% [markdown]
# ## Reading it
#
# * **Most reducers let attacks through in proportion to what they keep.** Lift sits near
#   1 for random and the truncations: a pop-up is just more page. Truncation decides by
#   position alone: an attack at the top always survives, one at the bottom never does
#   under `truncate`. Only the oracle, which keeps the target and its ancestors, removes
#   every attack (by construction; it reads the recorded answer).
# * **Similarity retrieval prefers attacks.** BM25 (lift 1.58 on the 15 steps, 1.63 on the
#   114), BM25 over chunks (1.43) and the program reducer (1.26) keep injected lines more
#   often than page lines, and the `goal-hook` attack, a pop-up that repeats the goal,
#   survives whole under BM25, embedding retrieval and the program reducer: what matches
#   the goal is exactly what such an attack is written to match.
# * **The embedded LineRetriever does not defend; it is too small to.** SmolLM2-135M in
#   JSON mode selects ranges from the top of the page: every attack planted at the top
#   survives under every prompt, and lift stays between 0.89 and 1.10, i.e. it ignores
#   what the lines say. The `defender` prompt, which warns about instructions in the page,
#   does not help this model: it keeps more of the tree than `paper` (61% against 38% of
#   lines) and so lets more attack lines through (54% against 36%). Fifteen steps cannot
#   separate lifts of 0.89 and 0.96.
# * **Tag mode falls back to the full tree.** This model never writes an answer block
#   (15 failures of 15), so the failure policy passes the whole tree and every attack
#   with it. A fallback that keeps the agent working is the opposite of a safe one: a
#   deployment that treats the reducer as a filter should fail closed.
# * **Attacks cost target coverage where they push the target out.** The truncations lose
#   targets pushed below their budget (`truncate-agentlab`: 18 of 114 steps), BM25 over
#   chunks and random lose some to the extra text; the program reducer and the oracle keep
#   every target. The tiny model's JSON selections rarely hold the target, attacked or not.
# * **What the parser guarantees regardless of the model**: a fake `<answer>` block in the
#   page that the model echoes while thinking is never read as its answer
#   (`tests/test_inject.py`, fuzzed in `tests/test_fuzz.py`).
#
# These LineRetriever rows show the pipeline and the measurement, not the method: a real
# retriever is what the FocusAgent results are about. Configure an endpoint (README) and
# rerun: the missing answers are asked for, cached, and the rows name that model.
