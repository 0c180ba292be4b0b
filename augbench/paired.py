"""Ratios of interleaved measurements, and the decode-composition expectation.

Pure Python (no numpy, torch or pandas): the cpu_dataloader engine uses it inside every library
env and the analysis uses it on the tidy table, so both compute the same numbers.

Two loaders timed epoch by epoch in alternating order (A B, B A, A B ...) see the same machine
state within one round; the ratio of the two epochs of a round cancels whatever the machine did
in that round (another tenant, a frequency change). The median of those paired ratios is robust
to a single disturbed round, where the ratio of the two medians is not: each median may come
from a different round.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PairedRatio:
    """``median`` of ``ratios`` (numerator epoch i / denominator epoch i), with their range."""

    ratios: list[float]
    median: float | None
    low: float | None
    high: float | None

    @property
    def pairs(self) -> int:
        return len(self.ratios)


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> PairedRatio:
    """Median of the ratios of epoch i of one series to epoch i of the other.

    Only the rounds both series took part in are paired (the first min(len) values); pairs with
    a non-positive or non-finite term are dropped. No pair: every field is None / empty.
    """
    ratios = [
        n / d
        for n, d in zip(numerators, denominators, strict=False)
        if d > 0 and math.isfinite(n) and math.isfinite(d)
    ]
    if not ratios:
        return PairedRatio([], None, None, None)
    return PairedRatio(ratios, statistics.median(ratios), min(ratios), max(ratios))


def composition_expectation(decode_floor: float, memory: float) -> float:
    """Decode-scope throughput expected when decoding and the recipe simply add up.

    ``decode_floor`` is decoding alone in as many processes as the row's workers can run in
    parallel (P = min(workers, cores), 1 for workers=0) and ``memory`` the same recipe on
    pre-decoded images at the same worker count, so 1 / (1/floor + 1/memory) = P / (1/d + 1/m)
    with d and m the per-process rates: the workers that can run in parallel times one worker's
    composed rate. NaN when a term is missing or not positive.
    """
    if not (decode_floor > 0 and memory > 0):
        return math.nan
    return 1.0 / (1.0 / decode_floor + 1.0 / memory)
