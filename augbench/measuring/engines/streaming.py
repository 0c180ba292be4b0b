"""Timing of batch pipelines (GPU DataLoader, DALI): one continuous stream of batches.

A job asks its pipeline for exactly ``plan.total_batches`` batches and times consecutive segments
of that stream, so every repetition starts while the producers (DataLoader workers, DALI threads)
are already busy, the same steady state for both regimes, and no repetition gets a prefetched
head start from idle time before its clock starts:

    first batch (untimed: worker start-up, CUDA/cuDNN initialisation, pipeline build)
    preflight  ceil(preflight_items / batch_size) batches, timed, judged by SlowTransformPolicy
    warm-up    warmup_reps x batches_per_rep batches, untimed
    measured   reps x batches_per_rep batches, one throughput per repetition

``step()`` fetches one batch, applies the GPU part of the recipe and materializes the output;
``sync()`` waits for the device (``torch.cuda.synchronize``); it runs before every clock stop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from augbench.measuring.engines import preflight
from augbench.policy import SlowTransformPolicy


@dataclass(frozen=True)
class StreamPlan:
    batch_size: int
    batches_per_rep: int
    preflight_batches: int
    warmup_reps: int
    reps: int

    @classmethod
    def for_images(
        cls,
        num_images: int,
        batch_size: int,
        *,
        warmup_reps: int,
        reps: int,
        policy: SlowTransformPolicy,
    ) -> StreamPlan:
        """One repetition covers the ``num_images`` selected images once (in full batches)."""
        if num_images < 1 or batch_size < 1:
            raise ValueError(
                f"need num_images >= 1 and batch_size >= 1, got {num_images}, {batch_size}"
            )
        if reps < 1:
            raise ValueError(f"need at least one measured repetition, got {reps}")
        return cls(
            batch_size=batch_size,
            batches_per_rep=math.ceil(num_images / batch_size),
            preflight_batches=math.ceil(policy.preflight_items / batch_size),
            warmup_reps=warmup_reps,
            reps=reps,
        )

    @property
    def total_batches(self) -> int:
        return 1 + self.preflight_batches + (self.warmup_reps + self.reps) * self.batches_per_rep

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_batches": self.total_batches}


@dataclass
class StreamResult:
    throughputs: list[float]
    times: list[float]
    images_per_rep: int
    preflight: dict[str, Any]
    early_stop_reason: str | None = None


def run_stream(
    step: Callable[[], int],
    sync: Callable[[], None],
    plan: StreamPlan,
    policy: SlowTransformPolicy,
    on_progress: Callable[[int], None] | None = None,
) -> StreamResult:
    """Drive ``plan.total_batches`` steps; ``step`` returns how many images its batch held."""
    progress = on_progress or (lambda n: None)

    step()
    sync()
    progress(1)

    start = time.perf_counter()
    items = sum(step() for _ in range(plan.preflight_batches))
    sync()
    seconds = time.perf_counter() - start
    progress(plan.preflight_batches)
    fields = preflight.fields(items, seconds)
    verdict = policy.verdict(items, seconds)
    if verdict is not None:
        return StreamResult([], [], 0, fields, early_stop_reason=verdict)

    for _ in range(plan.warmup_reps * plan.batches_per_rep):
        step()
    sync()

    throughputs: list[float] = []
    times: list[float] = []
    images = 0
    for _ in range(plan.reps):
        start = time.perf_counter()
        images = sum(step() for _ in range(plan.batches_per_rep))
        sync()  # the device has finished every batch of this repetition
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        throughputs.append(images / elapsed)
    # Warm-up and measured batches are reported once at the end: a progress-bar refresh before or
    # between repetitions would be idle time in which the producers could fill their queues ahead
    # of the next clock start.
    progress((plan.warmup_reps + plan.reps) * plan.batches_per_rep)
    return StreamResult(throughputs, times, images, fields)
