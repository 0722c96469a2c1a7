"""LineRetriever's failure policy (which reducer, if any, answers when the model's does
not) and what a LineRetriever result records of its model calls (``usage``, ``extra``).
The policies are described in :mod:`lrlib.reducers.lineretriever`.

>>> failure_reducer("closed", None) is None, CLOSED_NOTICE.format(reason="timeout")[:33]
(True, '[observation withheld: the page f')
"""

from __future__ import annotations

from typing import Any

from lrlib.core.selection import Selection
from lrlib.llm.client import Completion, LLMClient

FAILURE_POLICIES = ("full", "truncate", "closed", "fallback:<reducer>")
CLOSED_NOTICE = (
    "[observation withheld: the page filter failed ({reason}); no page content is shown. "
    "Do not act on this page; retry or stop.]"
)


def failure_reducer(policy: str, budget: int | None) -> Any:
    """The reducer behind ``fallback:<name>`` (None for the other policies); the error of a
    bad policy lists the valid ones."""
    from lrlib.reducers.registry import get_reducer, list_reducers

    if policy in ("full", "closed"):
        return None
    if policy == "truncate":
        if not budget:
            raise ValueError("on_failure='truncate' needs budget=<tokens>")
        return None
    name = policy.removeprefix("fallback:")
    valid = [
        r for r in list_reducers() if r not in ("lineretriever", "oracle")
    ]  # oracle: reads the answer
    if not policy.startswith("fallback:") or name not in valid:
        raise ValueError(
            f"unknown on_failure {policy!r}; valid: full, truncate, closed, "
            + ", ".join(f"fallback:{r}" for r in valid)
        )
    extra = {"budget": budget} if budget and name.startswith("truncate") else {}
    return get_reducer(name, **extra)


def record_usage(
    answered: list[tuple[tuple[int, int], Completion]],
    wall: float,
    client: LLMClient,
    prompt: str,
    prompt_hash: str,
) -> dict[str, Any]:
    """``usage`` of a LineRetriever result: tokens, latency and calls over its windows' answers."""
    completions = [c for _, c in sorted(answered, key=lambda wc: wc[0])]

    def total(field: str) -> int | None:
        values = [getattr(c, field) for c in completions]
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return {
        "prompt_tokens": total("prompt_tokens"),
        "completion_tokens": total("completion_tokens"),
        "cached_tokens": total("cached_tokens"),
        "llm_latency_s": round(sum(c.latency_s for c in completions), 4),
        "wall_s": wall,
        "calls": len(completions),
        "from_cache": bool(completions) and all(c.from_cache for c in completions),
        "model": client.model,
        "served_model": completions[0].model if completions else None,
        "endpoint": client.endpoint.kind,
        "prompt": prompt,
        "prompt_hash": prompt_hash,
    }


def record_extra(
    answered: list[tuple[tuple[int, int], Completion]],
    windows: list[tuple[int, int]],
    selection: Selection | None,
) -> dict[str, Any]:
    """``extra`` of a LineRetriever result: its windows, selection and raw answers."""
    completions = [c for _, c in sorted(answered, key=lambda wc: wc[0])]
    return {
        "windows": [list(w) for w in windows],
        "selection": [list(r) for r in selection.ranges] if selection else None,
        "answer_truncated": bool(selection and selection.truncated),
        "answers": [c.text for c in completions],
        "finish_reasons": [c.finish_reason for c in completions],
    }
