"""When a repeated measurement is precise enough to stop: one rule for every timing engine.

A row's precision is the half-width of the 95 % confidence interval of its mean throughput,
relative to the mean (Student's t, the values treated as independent). Engines repeat a
measurement until that is at most ``policy.RELATIVE_CI_TARGET`` or until their configured maximum
number of values, never fewer than their minimum; every row records what it reached, and the
summary flags rows that stopped above the target.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from augbench.policy import MICRO_MAX_LOOPS, MICRO_MIN_VALUE_SECONDS, RELATIVE_CI_TARGET

# Two-sided 97.5 % quantiles of Student's t by degrees of freedom (standard table values);
# beyond 30 degrees of freedom the normal quantile is within 2 % of t.
_T_975: dict[int, float] = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    25: 2.060,
    30: 2.042,
}
_Z_975 = 1.960


def t_quantile_975(dof: int) -> float:
    """The 97.5 % quantile of Student's t with ``dof`` degrees of freedom (table, rounded up to
    the next tabulated row below, i.e. conservatively)."""
    if dof < 1:
        raise ValueError("need at least one degree of freedom")
    if dof > 30:
        return _Z_975
    return _T_975[max(k for k in _T_975 if k <= dof)]


def relative_ci(values: Sequence[float]) -> float | None:
    """Half-width of the 95 % CI of the mean over the mean; None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return math.inf
    half = t_quantile_975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return half / mean


@dataclass(frozen=True)
class StoppingRule:
    """Take at least ``min_values`` and at most ``max_values``; stop earlier once the relative CI
    is at most ``target``."""

    min_values: int
    max_values: int
    target: float = RELATIVE_CI_TARGET

    def __post_init__(self) -> None:
        if self.min_values < 1 or self.max_values < self.min_values:
            raise ValueError(f"bad stopping bounds {self.min_values}..{self.max_values}")

    def done(self, values: Sequence[float]) -> bool:
        if len(values) >= self.max_values:
            return True
        if len(values) < self.min_values:
            return False
        ci = relative_ci(values)
        return ci is not None and ci <= self.target


def passes_per_value(seconds_per_image: float, num_images: int) -> int:
    """Passes over the images per timed value, so that one value lasts at least
    ``MICRO_MIN_VALUE_SECONDS`` (pyperf's own loop calibration targets the same): a fast
    transform's value is then not a handful of milliseconds at the mercy of one interrupt."""
    per_pass = max(seconds_per_image * num_images, 1e-9)
    return max(1, min(MICRO_MAX_LOOPS, math.ceil(MICRO_MIN_VALUE_SECONDS / per_pass)))
