"""The preflight every engine runs before it times a row: a short timed run of the row's work,
judged by the shared ``SlowTransformPolicy`` (a slow row becomes ``early_stopped`` instead of
taking the job's time). What it records is the same three fields in every engine's rows."""

from __future__ import annotations

import time
from typing import Any, Protocol

from augbench.policy import SlowTransformPolicy


class Samples(Protocol):
    """Anything indexable whose item ``i`` does one sample's work (a map-style dataset)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def fields(items: int, seconds: float) -> dict[str, Any]:
    """The preflight's row fields: how many items, in how many seconds, at what rate."""
    return {
        "preflight_items": items,
        "preflight_seconds": seconds,
        "preflight_throughput": items / seconds if seconds > 0 else None,
    }


def per_sample(samples: Samples, policy: SlowTransformPolicy) -> dict[str, Any]:
    """One untimed sample (lazy initialisation), then up to ``preflight_items`` timed samples in
    this process, stopping once ``preflight_max_seconds`` have passed; the fields and the
    policy's ``verdict`` (None: measure the row)."""
    samples[0]
    items = 0
    start = time.perf_counter()
    for i in range(policy.preflight_items):
        samples[i % len(samples)]
        items += 1
        if time.perf_counter() - start > policy.preflight_max_seconds:
            break
    seconds = time.perf_counter() - start
    return {**fields(items, seconds), "verdict": policy.verdict(items, seconds)}
