# %% [markdown]
# # 01 · Explore: any step, any reducer, any prompt, any pruning strategy
#
# Pick a recorded step, a reducer, a LineRetriever prompt variant and a pruning strategy,
# and see the original tree (kept lines in green, ancestor stubs in grey italics, dropped
# lines dimmed, the next action's target marked by a red bar) next to the reduced tree, under
# a summary of what changed (tokens, lines, targets and evidence kept).
#
# * **Reducers**: LineRetriever (the paper's method), the learned line scorer (the reducer
#   the README recommends) and the baselines: bottom truncation, embedding retrieval, BM25,
#   the program reducer, random, and the oracle (keeps exactly the target and its ancestors).
# * **Prompt variants** (LineRetriever only): `paper`, FocusAgent's `soft`, `restrictive`
#   and `neutral`, and `defender`, which also warns about prompt injection.
# * **Pruning**: `remove` keeps the selected lines only; `structure` (the paper's filter)
#   also keeps their ancestors as `[bid] role` stubs; `bid` / `bid+role` keep every dropped
#   element as a placeholder.
#
# LineRetriever answers are replayed from the cache; a combination that has no cached
# answer (another prompt variant, say) is shown as a labelled fallback to the full tree,
# never sent to a model, unless you configure an endpoint (see the README).
#
# The widget needs a live kernel (run all cells); the static view right below is what it
# shows first. The prompt menu acts on LineRetriever only, the pruning menu on the reducers
# that prune (a menu that does not apply is greyed out; hover it to see why). Previous /
# next step: the buttons, or from the keyboard: click the handle of the `step #` slider,
# then ← / → (elsewhere JupyterLab keeps the arrow keys for moving between cells).
#
# **Runs with** the core install and Jupyter (`pip install -e '.[notebooks]'`): no other extra.

# %%
from functools import partial

from IPython.display import HTML

from lrlab.report import explore
from lrlib import settings
from lrlib.core.prompts import BUILTIN
from lrlib.core.pruning import STRATEGIES
from lrlib.report import replay
from lrlib.report.run import default_steps

# %% tags=["parameters"]
QUICK = settings.current().quick
N_STEPS = 5 if QUICK else None  # steps offered in the step menu (None: the default selection)
REDUCERS = [
    "lineretriever", "learned", "program", "embedding", "bm25", "truncate", "random", "oracle",
]  # fmt: skip
START = ("lineretriever", "paper", "structure")
ANSWER = "json"  # LineRetriever's answer format ("tags" or "json")

# %%
steps = default_steps(N_STEPS)
reduce = explore.Switch(lineretriever=partial(replay.lineretriever, answer=ANSWER))
first = reduce(steps[0], *START)
HTML(explore.side_by_side(steps[0], first, title=replay.describe(START[0])))

# %%
explore.explorer(
    steps, reduce, REDUCERS, list(BUILTIN), list(STRATEGIES), describe=replay.describe, start=START
)
