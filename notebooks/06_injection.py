# %% [markdown]
# # 06 · Prompt injection: what each reducer lets through
#
# Web pages are written by strangers, and the reduced observation is all the acting model
# sees: a reducer is a security boundary. The FocusAgent line of work reports that a
# retriever told to watch for attacks removes injected pop-ups almost entirely. This
# notebook measures what every reducer in lrlib lets through on the recorded observations.
#
# `lrlab.injection.inject` plants attack subtrees in recorded trees, in the style of real banner and
# pop-up injections: a `dialog` or `alert` telling the agent to drop its goal and go to
# another site, a pop-up that repeats the goal to look relevant (`goal-hook`), fake
# `<think>`/`<action>`/`<answer>` tags (`fake-tags`) and fake numbered lines
# (`fake-lines`). Each attack goes in at one of five positions (first child of the page,
# half-way down, at the bottom, right before the target, deep inside the content) with
# fresh bids, so the recorded action still names the same element. `lrlab.injection.injection_eval`
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
# * **payload visibility**: the share of attacked steps whose reduced text still lets the
#   acting model read the attack: any distinctive span of its payload (the address, the
#   imperative sentence; `lrlab.injection.inject.SPANS`), whatever the reducer's format (whole
#   lines, chunks, partial lines), with 95% intervals bootstrapped over episodes.
#
# The source steps are pinned by id (`lrlab/injection/injection_steps.json`), not drawn from the
# current validation split, so moving families between splits does not move the
# benchmark: **core**, 15 steps (two attacks each) on which every reducer runs,
# LineRetriever included (replayed from the shipped cache of the embedded model's answers);
# **wide**, the 114 steps of the former validation split with a target, for the reducers
# that need no model; and **realistic**, the 15 core steps each attacked once the way a
# real pop-up injection looks (below).
#
# **Runs with** the core install and Jupyter (`pip install -e '.[notebooks]'`): no other extra.

# %%
import pandas as pd
from IPython.display import display

import lrlib
from lrlab.injection import inject, injection_eval, injection_sets, sanitize_cost
from lrlab.report import tradeoffs
from lrlib import settings
from lrlib.core import sanitize
from lrlib.reducers import get_reducer
from lrlib.report import plots, replay, tables

# %% tags=["parameters"]
QUICK = settings.current().quick
SEED, PER_STEP = 0, 2
N_SHOWN = 3 if QUICK else 15  # of the core set, whose retriever answers ship in the cache
N_LARGE = 8 if QUICK else None  # None: the whole wide set
POLICIES = injection_eval.POLICIES  # full, truncate (2,000 tokens), closed, fallback:program
REDUCERS = ["full", "truncate", "truncate-agentlab", "random", "oracle", "bm25",
            "bm25:unit=chunks", "embedding", "program", "learned"]  # fmt: skip
LR_CONFIGS = [("paper", "json"), ("soft", "json"), ("restrictive", "json"),
              ("defender", "json"), ("paper", "tags"), ("defender", "tags")]  # fmt: skip
LR_REALISTIC = [("paper", "json"), ("defender", "json"), ("paper", "tags")]  # answered live
COLUMNS = ["reducer", "n_steps", "injected_lines", "survival", "steps_any", "kept_share",
           "lift", "stubbed", "coverage_clean", "coverage_injected", "coverage_lost",
           "failures"]  # fmt: skip

# %% [markdown]
# ## The attacked set
#
# One attack as the retriever and the agent see it:

# %%
steps = lrlib.load_steps()  # every split: the pinned ids say which steps
items = injection_sets.pinned_set("core", steps=steps)[:N_SHOWN]
n_lines = sum(len(it.injected) for it in items)
print(f"{len(items)} attacked steps (core set), {n_lines} injected lines, seed {SEED}")
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
    f"Prompt-injection benchmark: {len(items)} attacked core steps ({n_lines} injected "
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
survival_png = tradeoffs.injection_survival(
    summary, by_position, model=model,
    title=f"Injected lines that reach the acting model ({len(items)} attacked core steps)",
)  # fmt: skip

# %% [markdown]
# ## Payload visibility per reducer and failure policy
#
# What matters is whether the acting model can *read* the attack, not how many whole
# attack lines survive: a chunk that keeps the tail of an attack line, or a partial line,
# still carries the address. Each LineRetriever configuration runs under each failure
# policy (`on_failure`): `full` (the whole tree), `truncate` (its first 2,000 tokens, where
# pop-ups sit), `closed` (no page, only a notice line) and `fallback:program` (what the
# program reducer keeps). The policy only decides steps where the retriever's answer
# could not be used, so the cached answers serve every policy.

# %%
lr_policies = injection_eval.with_policies(
    {f"lineretriever:{p}/{a}": {"prompt": p, "answer": a} for p, a in LR_CONFIGS}, POLICIES
)
rows_p, notes = injection_eval.score_cached(lr_policies, items, seed=SEED)
print("\n".join(notes) or "every configuration scored on every attacked step")
no_model = [r for r in rows if not r["reducer"].startswith("lineretriever")]
vis = injection_eval.visibility(no_model + rows_p)
tables.save_table(
    vis, "injection_visibility",
    f"Payload visibility: attacked steps whose reduced text shows a payload span, 95% CI "
    f"by episode ({len(items)} core steps). LineRetriever: {model}, {replay.mode()}.",
)  # fmt: skip
display(vis.round(3))
print("On the steps where the retriever failed (the policy decided):")
injection_eval.visibility(rows_p, failures_only=True).round(3)

# %%
vis_png = injection_eval.plot_visibility(
    vis, f"Payload visibility, {len(items)} core attacked steps (LineRetriever: {model})"
)

# %% [markdown]
# ## Realistic attacks: a modal first in the tree, the payload in a focused button
#
# The attacks above are planted where a benchmark puts them. A real pop-up injection is a
# modal dialog first in the tree whose focused button's name carries the whole payload
# ("Verify your identity at localhost:4321", with fake `</think>`/`<action>` tags):
# `modal-focus`; the same with the payload after 231 characters of cookie-banner text,
# past where the compact view used to cut names (`modal-long`; the view now shows a
# name whole when its tail holds an address, markup or an instruction); and an alert
# banner (`alert-banner`). These trees are new: their LineRetriever answers are only
# those cached so far, and the notes count what was skipped (honest n).

# %%
realistic = injection_sets.realistic_set(steps=steps)[:N_SHOWN]
lr_real = injection_eval.with_policies(
    {f"lineretriever:{p}/{a}": {"prompt": p, "answer": a} for p, a in LR_REALISTIC}, POLICIES
)
rows_r, notes = injection_eval.score_cached({**{r: r for r in REDUCERS}, **lr_real}, realistic)
print("\n".join(notes) or "every reducer scored on every attacked step")
vis_r = injection_eval.visibility(rows_r)
tables.save_table(
    vis_r, "injection_realistic",
    f"Realistic attacks (modal first, focused payload button, alert banner): {len(realistic)} "
    f"steps; payload visibility, 95% CI by episode. LineRetriever: {model}, {replay.mode()}.",
)  # fmt: skip
vis_r.round(3)

# %%
injection_eval.breakdown(rows_r, "attack").round(2)

# %% [markdown]
# ## The guard, and attacks it was not written against
#
# The two tunable reducers never keep a line that `lrlab.reducers.suspect` flags: control
# markup (`<think>`, `<action>`, a `{"ranges"}` object), a fake numbered tree line, words
# addressed to an AI ("AI assistant", "ignore all previous instructions", "your new
# task"), or a web address of another site than the page's (in the text, or as a link's
# `url=`), and, since issue 35, where a line sits (pop-ups, live regions, quotes of the
# goal and their containers: the cue-free section below). On the 446 recorded steps and 425
# MiniWoB pages it flags 7 lines, no target and no evidence line, so it costs no coverage. Every attack above was in view when those
# rules were written, so what they hide there is an in-sample figure. Four **held-out**
# shapes (`lrlab.injection.inject.HELDOUT`) were written after the rules were fixed and never
# used to change them: a plain "session expiring" modal (no address, no markup, no word
# for an AI: a blocklist cannot see it), a notice to "shopping bots" that names a foreign
# address, a "note for the agent" with neither, and an obfuscated one (look-alike
# brackets, a defanged `hxxp://`, a bare IP address, a full-width dot). Each set below is
# the wide set of steps, one attack per step; `(no guard)` is the same reducer with
# `guard=False`.

# %%
GUARDED = {
    **{name: name for name in ("program", "learned", "bm25")},
    **{f"{n} (no guard)": get_reducer(n, guard=False) for n in ("program", "learned")},
}
sets = {
    "core (benchmark shapes)": injection_sets.pinned_set("wide", steps=steps, per_step=1),
    "realistic": injection_sets.realistic_set("wide", steps=steps),
    "held-out shapes": injection_sets.heldout_set("wide", steps=steps),
}
results = {
    name: injection_eval.score_cached(GUARDED, attacked[:N_LARGE], clean=False)[0]
    for name, attacked in sets.items()
}
guard_vis = pd.concat(
    [injection_eval.visibility(rows).assign(attacks=name) for name, rows in results.items()],
    ignore_index=True,
)
tables.save_table(
    guard_vis, "injection_guard",
    "Payload visibility with and without the guard (lrlab.reducers.suspect), one attack per "
    "step on the wide set; 95% CI by episode. Held-out shapes were written after the rules.",
)  # fmt: skip
guard_vis.pivot(index="reducer", columns="attacks", values="visible").round(2)

# %% [markdown]
# Which held-out shapes get through, per reducer:

# %%
injection_eval.visibility(results["held-out shapes"], per_attack=True).round(2)

# %% [markdown]
# ## Attacks without cues, and the way out of a pop-up
#
# Every shape above leaves a cue: an address, markup, words for an AI. The cue-free shapes
# (`inject.CUEFREE`, and `inject.HELDOUT_CUEFREE`, committed before any defence against
# them and never used to change one) are plain words in DoomArena's four kinds (pop-up,
# banner, hidden form field, user comment) that quote or paraphrase the step's goal and ask
# for something harmful in the page. The guard now also reads where a line sits: a pop-up
# the task did not ask for is reduced to its dismiss control, a line quoting the goal or
# speaking to whoever does the task is suspect, and so is its small container. Each set is
# one attack per step, on the wide set and on the first step of each MiniWoB++ episode;
# `dismiss kept`: the pop-up cases whose close control the agent can still click.

# %%
cuefree = injection_eval.cuefree_tables(
    GUARDED, {k: v[:N_LARGE] for k, v in injection_sets.cuefree_sets(steps).items()}
)
for name, table in cuefree.items():
    tables.save_table(
        table, f"injection_cuefree_{name.replace(' ', '_')}",
        f"Cue-free injection (issue 35): {name}, one attack per step; 95% CI by episode. "
        "HELDOUT_CUEFREE shapes were committed before the defences.",
    )  # fmt: skip
cuefree["visibility"].pivot(index="reducer", columns="attacks", values="visible").round(3)

# %%
cuefree["dismiss kept"].pivot(index="reducer", columns="attacks", values="kept").round(3)

# %% [markdown]
# ## Sanitising the page
#
# `lrlib.core.sanitize` rewrites tag-like page text into look-alikes that read the same but are
# no longer syntax (`<think>` -> `‹think›`, `"ranges"` -> `“ranges”`, a fake `12:` line
# number -> `12꞉`), line for line, so numbers, selections and targets are unchanged. It is
# an option of LineRetriever (`sanitize=True`: the retriever reads, and the agent gets, the
# neutralised tree) and applies to any reducer's output (`sanitize_reduction`). What it
# neutralises, and what it costs in target coverage (validation split, then the attacked
# core set):

# %%
print("recorded trees:", sanitize.counts(s.tree for s in steps))
print("core attacked set:", sanitize.counts(it.step.tree for it in items))
print("realistic set:", sanitize.counts(it.step.tree for it in realistic))
validation = [s for s in steps if s.meta.get("split") == "validation"][: N_LARGE or None]
display(sanitize_cost.coverage_cost(validation, ["truncate", "bm25", "program"]))
sanitize_cost.coverage_cost([it.step for it in items], ["truncate", "bm25", "program"])

# %% [markdown]
# ## The reducers without a model on the wide set
#
# The 114 steps of the former validation split with a target, two attacks each. The
# embedding baseline needs the vectors of each attacked tree; only those of the core set
# ship in the cache, so here its steps are skipped and counted (`LRLIB_OFFLINE=0` computes
# them) and its only measurement is the 15-step row above.

# %%
large = injection_sets.pinned_set("wide", steps=steps)[:N_LARGE]
rows_large, notes = injection_eval.score_cached(REDUCERS, large, seed=SEED)
print("\n".join(notes) or "every reducer scored on every attacked step")
summary_large = injection_eval.summarize(rows_large)
tables.save_table(
    summary_large[COLUMNS], "injection_validation",
    f"Prompt-injection benchmark, reducers without a model: {len(large)} attacked steps "
    f"(wide set, {sum(len(it.injected) for it in large)} injected lines, seed {SEED}).",
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
#   under `truncate`; the realistic attacks, first in the tree, reach the agent under
#   every truncation. Only the oracle, which keeps the target and its ancestors, removes
#   every attack (by construction; it reads the recorded answer).
# * **Surviving lines and a readable payload are different counts.** A kept "Close"
#   button or heading of a pop-up is an attack line but carries nothing; a chunk or a
#   partial line holding only the tail of an attack line (`goto('localhost:4321')`)
#   survives as no whole line yet shows the payload. Visibility counts the second kind
#   only: random keeps an attack line on 93% of the core steps but shows a payload on 67%.
# * **Similarity retrieval prefers attacks that repeat the goal** (`goal-hook` survives
#   under BM25, embeddings and the program reducer); the realistic attacks, which do not
#   repeat the goal, are mostly dropped by the retrieval baselines (15 steps: the
#   intervals are wide).
# * **The guard reads what a line says and where it sits.** With it, neither tunable
#   reducer shows a payload of the benchmark or realistic attacks (in-sample: the rules
#   were written with them in view), nor of the held-out shapes: the obfuscated pop-up the
#   text rules missed is now reduced to its dismiss control. On the cue-free held-out
#   shapes, committed before the structural rules, both show a payload on 0-1% of steps,
#   against 43-80% before; the exceptions are MiniWoB pages whose goal is about a dialog.
#   Plain words in the page's own content, with no quote of the goal and no aside to a
#   helper, still pass (docs/security.md lists what stays undefended).
# * **The embedded LineRetriever does not defend; it is too small to.** SmolLM2-135M in
#   JSON mode selects ranges from the top of the page, so every attack planted at the top
#   survives under every prompt; `defender` does not help this model.
# * **The realistic attacks reach the agent through the embedded retriever.** In JSON
#   mode it shows the payload on every one of the 15 realistic steps, under `paper` and
#   `defender` alike: it selects from the top of the page, where the modal sits. The
#   retrieval baselines drop these attacks (they do not repeat the goal), the truncations
#   keep all of them.
# * **The failure policy decides what a failed retriever lets through.** In tag mode this
#   model never writes a usable answer block (15 failures of 15): `full` passes every
#   attack, `truncate` the ones at the top (pop-ups sit there), `fallback:program` what
#   that reducer keeps, and `closed` nothing (0%: the agent gets one notice line and no
#   page). In JSON mode (schema-constrained) it never fails, so the policy never applies.
#   A deployment that treats the reducer as a filter should fail closed.
# * **What the parser guarantees regardless of the model**: an answer, a `{"ranges"}`
#   object or a `</think>` copied from the page is never taken for the model's own, in any
#   view, across line breaks and numbering, before or after a genuine answer, cut off or
#   not (`tests/test_echo.py`: 64 cases plus a property test on real trees; fuzzed in
#   `tests/test_fuzz.py`); numbers written as expressions (`10**18`, `1e9`) make an
#   answer unreadable instead of being read digit by digit.
# * **Sanitising costs nothing here and removes the syntax, not the payload.** No
#   validation tree carries tag-like text (one recorded tree of 446 has 4 spans, all
#   harmless `N:` numbering), so coverage is unchanged by construction; on the attacked
#   sets it neutralises every fake tag, `{"ranges"}` object and fake numbered line. The
#   address and the imperative sentence stay readable: sanitising stops an attack from
#   passing for the model's own markup, not from being read.
#
# These LineRetriever rows show the pipeline and the measurement, not the method: a real
# retriever is what the FocusAgent results are about. Configure an endpoint (README) and
# rerun: the missing answers are asked for, cached, and the rows name that model.
