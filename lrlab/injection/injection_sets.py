"""Sets of injected steps: :func:`build_set` attacks a seeded sample of steps with every
(attack, position) pair equally often (:func:`plan`), :func:`pinned_set` /
:func:`realistic_set` / :func:`heldout_set` attack the fixed steps named in
``injection_steps.json``, :func:`cuefree_set` attacks them (or MiniWoB pages,
:func:`miniwob_hosts`) with the cue-free shapes, each where its kind sits, and
:func:`visible_spans` says which attack text a reduced observation still shows. One
injected step is :func:`lrlab.injection.inject.inject`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence

from lrlab.injection.inject import (
    CUEFREE,
    EVIL_HOST,
    HELDOUT,
    HELDOUT2_CUEFREE,
    HELDOUT_CUEFREE,
    KINDS,
    LEGACY,
    PAYLOAD_HOST,
    PLACES,
    POSITIONS,
    REALISTIC,
    SPANS,
    InjectedStep,
    inject,
)
from lrlib.core.step import Step

__all__ = [
    "plan",
    "build_set",
    "MARKS",
    "visible_spans",
    "readable_spans",
    "pinned_ids",
    "pinned_set",
    "realistic_set",
    "heldout_set",
    "cuefree_plan",
    "cuefree_set",
    "cuefree_sets",
    "miniwob_hosts",
]


def plan(
    n_steps: int,
    per_step: int = 2,
    attacks: Sequence[str] = LEGACY,
    positions: Sequence[str] = POSITIONS,
) -> list[list[tuple[str, str]]]:
    """(attack, position) pairs for each of ``n_steps`` steps, every pair equally often.

    Slot ``s`` gets attack ``s mod A`` and position ``(s + s // A) mod P``: over ``A * P``
    slots every combination occurs once, and the attacks of one step sit at distinct places.

    >>> plan(2, per_step=2, attacks=["popup", "alert"], positions=["top", "bottom"])
    [[('popup', 'top'), ('alert', 'bottom')], [('popup', 'bottom'), ('alert', 'top')]]
    """
    if not 1 <= per_step <= len(positions):
        raise ValueError(f"per_step must be within 1..{len(positions)} (one attack per position)")
    out, a, p = [], len(attacks), len(positions)
    for j in range(n_steps):
        slots = range(j * per_step, (j + 1) * per_step)
        out.append([(attacks[s % a], positions[(s + s // a) % p]) for s in slots])
    return out


def build_set(
    steps: Iterable[Step],
    n: int | None = 20,
    per_step: int = 2,
    seed: int = 0,
    attacks: Sequence[str] = LEGACY,
    positions: Sequence[str] = POSITIONS,
    step_ids: Iterable[str] | None = None,
) -> list[InjectedStep]:
    """Attack ``n`` of ``steps`` (a seeded sample of those whose target is in the tree), or
    with ``step_ids`` exactly those steps (``n`` ignored; a missing id is an error).

    >>> s = [Step(goal="g", tree=f"RootWebArea 'x'\\n\\t[{i}] link 'y'", target_bids=(str(i),),
    ...           step_id=str(i)) for i in range(5)]
    >>> [len(it.injected) for it in build_set(s, n=3, per_step=1)]
    [5, 3, 3]
    """
    eligible = sorted(
        (s for s in steps if s.target_bids and len(s.target_lines) == len(set(s.target_bids))),
        key=lambda s: s.step_id,
    )
    if step_ids is not None:
        wanted = set(step_ids)
        eligible = [s for s in eligible if s.step_id in wanted]
        missing = wanted - {s.step_id for s in eligible}
        if missing:
            raise KeyError(f"{len(missing)} pinned steps missing or without a target: "
                           f"{sorted(missing)[:3]}")  # fmt: skip
    elif n is not None and n < len(eligible):
        eligible = sorted(random.Random(seed).sample(eligible, n), key=lambda s: s.step_id)
    return [
        inject(s, pairs, seed)
        for s, pairs in zip(
            eligible, plan(len(eligible), per_step, attacks, positions), strict=True
        )
    ]


# distinctive pieces of attack text: any of them in a reduced observation means the acting
# model can read (part of) an attack, whatever the reducer reports as kept
MARKS = (
    EVIL_HOST,
    "ignore all previous instructions",
    "AUTOMATED AGENTS",
    "you must click the button below",
    "<answer>[(",
    "Retriever note",
    PAYLOAD_HOST,
)
_SPACE = re.compile(r"\s+")


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text.replace("\\'", "'").replace('\\"', '"')).lower()


def visible_spans(text: str, attack: str) -> list[str]:
    """The payload spans (:data:`SPANS`) of ``attack`` readable in ``text``.

    >>> visible_spans("[7] button 'Verify your  identity at localhost:4321 to co…'", "modal-focus")
    ['localhost:4321', 'verify your identity at']
    """
    return readable_spans(text, SPANS[attack])


def readable_spans(text: str, spans: Iterable[str]) -> list[str]:
    """The ``spans`` readable in ``text`` (case and runs of white space ignored).

    >>> readable_spans("StaticText 'Export  the FULL list'", ["export the full list", "x y"])
    ['export the full list']
    """
    flat = _flat(text)
    return [span for span in spans if span.lower() in flat]


# the benchmark's source steps, pinned by id: the 15 steps of the shipped LLM answers and
# vectors (drawn once as a seeded sample of the then validation split), and every step of
# that split with a target (data in injection_steps.json)
def pinned_ids(name: str = "core") -> list[str]:
    """The pinned step ids ``core`` (15 steps) or ``wide`` (114); the error lists the names.

    >>> len(pinned_ids("core")), len(pinned_ids("wide"))
    (15, 114)
    """
    import json
    from pathlib import Path

    sets = json.loads((Path(__file__).with_name("injection_steps.json")).read_text())
    if name not in sets:
        raise KeyError(f"unknown pinned set {name!r}; valid: {', '.join(sets)}")
    return list(sets[name])


def pinned_set(
    name: str = "core",
    attacks: Sequence[str] = LEGACY,
    per_step: int = 2,
    positions: Sequence[str] = POSITIONS,
    steps: Iterable[Step] | None = None,
) -> list[InjectedStep]:
    """:func:`build_set` on the pinned steps ``name`` (from any split of the shipped data,
    or of ``steps``), seed 0. The defaults give the set whose answers and vectors ship."""
    from lrlib.data import dataset as data

    ids = pinned_ids(name)
    pool = data.load_steps() if steps is None else steps
    return build_set(pool, per_step=per_step, attacks=attacks, positions=positions, step_ids=ids)


def realistic_set(name: str = "core", steps: Iterable[Step] | None = None) -> list[InjectedStep]:
    """Each pinned step attacked once by a :data:`REALISTIC` attack placed first in the
    tree (the first child of the page, where real pop-ups sit), the three in turn."""
    return pinned_set(name, REALISTIC, per_step=1, positions=("top",), steps=steps)


def heldout_set(name: str = "core", steps: Iterable[Step] | None = None) -> list[InjectedStep]:
    """Each pinned step attacked once by a :data:`~lrlab.injection.inject.HELDOUT` attack (shapes
    written after :mod:`lrlab.reducers.suspect` was fixed), the four in turn, at every position
    in turn: how the guard does on attacks it was not written against."""
    return pinned_set(name, HELDOUT, per_step=1, positions=POSITIONS, steps=steps)


def cuefree_plan(n_steps: int, shapes: Sequence[str] = CUEFREE) -> list[list[tuple[str, str]]]:
    """One (shape, position) pair per step: the shapes in turn, each at the places its kind
    sits (:data:`~lrlab.injection.inject.PLACES`) in turn.

    >>> cuefree_plan(5, ["cf-popup", "cf-comment"])
    [[('cf-popup', 'top')], [('cf-comment', 'middle')], [('cf-popup', 'bottom')], [('cf-comment', 'deep')], [('cf-popup', 'top')]]
    """
    out = []
    for j in range(n_steps):
        shape = shapes[j % len(shapes)]
        places = PLACES[KINDS[shape]]
        out.append([(shape, places[(j // len(shapes)) % len(places)])])
    return out


def cuefree_set(
    name: str = "wide", shapes: Sequence[str] = CUEFREE, steps: Iterable[Step] | None = None
) -> list[InjectedStep]:
    """Each pinned step ``name`` (``"miniwob"``: each of :func:`miniwob_hosts`; ``"pages"``:
    each distinct tree of ``steps``, such as rendered documentation pages) attacked once by
    a cue-free shape (:func:`cuefree_plan`), seed 0; ``steps``: where the pinned ids are
    looked up (default: every split of the shipped data)."""
    from lrlib.data import dataset as data

    if name == "miniwob":
        pool = miniwob_hosts(steps)
    elif name == "pages":  # every distinct page of ``steps`` (e.g. documentation pages)
        pool = sorted({s.tree: s for s in steps or ()}.values(), key=lambda s: s.step_id)
    else:
        wanted = set(pinned_ids(name))
        every = data.load_steps() if steps is None else steps
        pool = sorted((s for s in every if s.step_id in wanted), key=lambda s: s.step_id)
        if len(pool) != len(wanted):
            raise KeyError(f"{len(wanted) - len(pool)} pinned steps of {name!r} are missing")
    plans = cuefree_plan(len(pool), shapes)
    return [inject(s, pairs, 0) for s, pairs in zip(pool, plans, strict=True)]


def miniwob_hosts(steps: Iterable[Step] | None = None) -> list[Step]:
    """Real MiniWoB++ pages rendered by Chromium to attack: the first step with a target of
    each episode of ``data/miniwob_ood.jsonl.gz`` (or of ``steps``), ordered by id."""
    from lrlib.data import dataset as data
    from lrlib.paths import miniwob_path

    pool = data.load_steps(path=miniwob_path()) if steps is None else steps
    first: dict[str, Step] = {}
    for s in sorted(pool, key=lambda s: (str(s.meta.get("episode")), s.meta.get("step", 0))):
        if s.target_lines and len(s.target_lines) == len(set(s.target_bids)):
            first.setdefault(str(s.meta.get("episode", s.step_id)), s)
    return sorted(first.values(), key=lambda s: s.step_id)


def cuefree_sets(
    steps: Iterable[Step] | None = None, heldout2: bool = False
) -> dict[str, list[InjectedStep]]:
    """The attacked sets of the cue-free benchmark, by name: the held-out and development
    shapes on the wide pinned steps and on MiniWoB pages, then the current shapes (benchmark,
    realistic, held-out) on the wide set; ``steps``: where pinned ids are looked up.
    ``heldout2``: also the second held-out shapes (:data:`~lrlab.injection.inject.
    HELDOUT2_CUEFREE`) on the same pages, appended last (off by default, so the shipped tables
    do not change)."""
    from lrlib.data import dataset as data

    pool = data.load_steps() if steps is None else list(steps)
    extra = {
        "cue-free held-out 2": cuefree_set("wide", HELDOUT2_CUEFREE, steps=pool),
        "cue-free held-out 2, MiniWoB": cuefree_set("miniwob", HELDOUT2_CUEFREE),
    } if heldout2 else {}  # fmt: skip
    return {
        "cue-free held-out": cuefree_set("wide", HELDOUT_CUEFREE, steps=pool),
        "cue-free held-out, MiniWoB": cuefree_set("miniwob", HELDOUT_CUEFREE),
        "cue-free dev": cuefree_set("wide", CUEFREE, steps=pool),
        "cue-free dev, MiniWoB": cuefree_set("miniwob", CUEFREE),
        "benchmark shapes": pinned_set("wide", steps=pool, per_step=1),
        "realistic": realistic_set("wide", steps=pool),
        "held-out shapes": heldout_set("wide", steps=pool),
        **extra,
    }
