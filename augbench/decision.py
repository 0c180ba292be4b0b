"""The interval and the decision rule of every ranked row and every decided margin.

The unit of a value is ONE PROCESS: a fresh interpreter's measurement (its median, or its single
value), never an epoch or a pyperf value inside one process. Values from one process share that
process's allocator history, page placement and clock; only values from separate processes carry
the spread between processes, and that spread is what moves a row from one run to the next.

- ``median_interval``: the distribution-free order-statistic interval of the median of ``n``
  independent process values, [x_(k), x_(n+1-k)], with the largest k whose exact coverage under
  the binomial(n, 1/2) law reaches the level asked for (policy.INTERVAL_LEVEL, 0.95: above the
  0.90 a call needs, so that equal work is called different well under 10 % of the time). With
  too few values for that level it is [min, max] at its (lower) achieved coverage: n = 3: 75 %,
  4: 87.5 %, 5: 93.75 %.
- ``ratio_interval``: the ratio a/b of two libraries' process values. The point is the ratio of the
  medians; the interval is the exact distribution-free (Mann-Whitney) interval of the shift of
  log(a) against log(b): [D_(k), D_(N+1-k)] of the N = n_a * n_b pairwise differences
  log a_i - log b_j, with the largest k whose coverage under the exact null distribution of the
  Mann-Whitney U statistic (counted, not approximated) reaches the level; exponentiated.
- ``verdict``: "faster" or "slower" when the ratio's interval excludes 1, "no clear winner" when
  it holds 1, and "not decided" when its achieved level is below policy.DECISION_LEVEL (0.90).

Every interval carries its ACHIEVED coverage (``level``), never the nominal one. Pure standard
library: it runs in the benchmarked libraries' environments and in the driver alike.

Bad input: non-finite values (NaN, inf: a process that produced no value) are left out and ``n``
counts the values used. No value at all gives NaN bounds at level 0 (never decided). A ratio needs
positive values: a zero or negative throughput raises ValueError naming it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from augbench.policy import DECISION_LEVEL, INTERVAL_LEVEL

FASTER = "faster"
SLOWER = "slower"
NO_CLEAR_WINNER = "no clear winner"
NOT_DECIDED = "not decided"
VERDICTS: tuple[str, ...] = (FASTER, SLOWER, NO_CLEAR_WINNER, NOT_DECIDED)


@dataclass(frozen=True)
class MedianInterval:
    """The median of ``n`` process values and its interval [low, high] at ACHIEVED ``level``."""

    median: float
    low: float
    high: float
    level: float
    n: int

    def fields(self, prefix: str) -> dict[str, Any]:
        """``<prefix>_median``, ``_low``, ``_high``, ``_level`` and ``processes``."""
        return {
            f"{prefix}_median": self.median,
            f"{prefix}_low": self.low,
            f"{prefix}_high": self.high,
            f"{prefix}_level": self.level,
            "processes": self.n,
        }


@dataclass(frozen=True)
class RatioInterval:
    """The ratio of medians a/b and the interval of the log-scale shift at ACHIEVED ``level``."""

    ratio: float
    low: float
    high: float
    level: float
    n_a: int
    n_b: int

    def fields(self, prefix: str = "margin", level: float = DECISION_LEVEL) -> dict[str, Any]:
        """``margin``, ``margin_low``, ``margin_high``, ``margin_level`` and ``verdict``."""
        return {
            prefix: self.ratio,
            f"{prefix}_low": self.low,
            f"{prefix}_high": self.high,
            f"{prefix}_level": self.level,
            "verdict": verdict(self, level),
        }


def _finite(values: Iterable[float]) -> list[float]:
    out = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x):
            out.append(x)
    return out


def median_coverage(n: int, k: int) -> float:
    """Exact coverage of [x_(k), x_(n+1-k)] (1-based) for the median of ``n`` independent values:
    1 - 2 P(X <= k-1), X ~ binomial(n, 1/2)."""
    if n < 1 or not 1 <= k <= (n + 1) // 2:
        return 0.0
    tail = sum(math.comb(n, i) for i in range(k)) / 2**n
    return max(0.0, 1.0 - 2.0 * tail)


def median_rank(n: int, level: float = INTERVAL_LEVEL) -> tuple[int, float]:
    """The largest 1-based k whose interval [x_(k), x_(n+1-k)] reaches ``level``, and its
    coverage; k = 1 ([min, max]) with its lower coverage when none does."""
    best = (1, median_coverage(n, 1))
    for k in range(2, (n + 1) // 2 + 1):
        coverage = median_coverage(n, k)
        if coverage < level:
            break
        best = (k, coverage)
    return best


def median_interval(values: Iterable[float], level: float = INTERVAL_LEVEL) -> MedianInterval:
    """The order-statistic interval of the median of independent process values (module doc)."""
    clean = sorted(_finite(values))
    n = len(clean)
    if n == 0:
        return MedianInterval(math.nan, math.nan, math.nan, 0.0, 0)
    k, coverage = median_rank(n, level)
    return MedianInterval(statistics.median(clean), clean[k - 1], clean[n - k], coverage, n)


@lru_cache(maxsize=256)
def mann_whitney_counts(n_a: int, n_b: int) -> tuple[int, ...]:
    """How many of the C(n_a + n_b, n_a) equally likely orderings give U = 0, 1, ..., n_a * n_b
    under the null hypothesis: the coefficients of the Gaussian binomial coefficient
    prod_{i=1..n_a} (1 - q^(n_b+i)) / (1 - q^i), counted in integers."""
    if n_a < 0 or n_b < 0:
        raise ValueError(f"sample sizes must be >= 0, got {n_a} and {n_b}")
    size = n_a * n_b + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n_a + 1):
        # multiply by (1 - q^(n_b + i)) ...
        shift = n_b + i
        for u in range(size - 1, shift - 1, -1):
            poly[u] -= poly[u - shift]
        # ... and divide by (1 - q^i) (exact: the quotient is a polynomial)
        for u in range(i, size):
            poly[u] += poly[u - i]
    return tuple(poly)


def ratio_coverage(n_a: int, n_b: int, k: int) -> float:
    """Exact coverage of [D_(k), D_(N+1-k)] of the N = n_a * n_b pairwise differences:
    1 - 2 P(U <= k-1) under the exact Mann-Whitney null distribution."""
    total_pairs = n_a * n_b
    if total_pairs < 1 or not 1 <= k <= (total_pairs + 1) // 2:
        return 0.0
    counts = mann_whitney_counts(n_a, n_b)
    tail = sum(counts[:k]) / math.comb(n_a + n_b, n_a)
    return max(0.0, 1.0 - 2.0 * tail)


def ratio_rank(n_a: int, n_b: int, level: float = INTERVAL_LEVEL) -> tuple[int, float]:
    """The largest 1-based k whose interval [D_(k), D_(N+1-k)] reaches ``level``, and its
    coverage; k = 1 ([min, max] of the differences) with its lower coverage when none does."""
    total_pairs = n_a * n_b
    counts = mann_whitney_counts(n_a, n_b)
    orderings = math.comb(n_a + n_b, n_a)
    best = (1, ratio_coverage(n_a, n_b, 1))
    tail = counts[0]
    for k in range(2, (total_pairs + 1) // 2 + 1):
        tail += counts[k - 1]
        coverage = 1.0 - 2.0 * tail / orderings
        if coverage < level:
            break
        best = (k, coverage)
    return best


def _positive(values: Iterable[float], side: str) -> list[float]:
    clean = _finite(values)
    bad = [v for v in clean if v <= 0]
    if bad:
        raise ValueError(
            f"ratio_interval: {side} has {len(bad)} value(s) <= 0 (first: {bad[0]!r}); "
            "a ratio of throughputs needs positive values"
        )
    return clean


def ratio_interval(
    a_values: Iterable[float], b_values: Iterable[float], level: float = INTERVAL_LEVEL
) -> RatioInterval:
    """The ratio of medians a/b and the exact Mann-Whitney interval of the log-scale shift."""
    a = _positive(a_values, "a")
    b = _positive(b_values, "b")
    n_a, n_b = len(a), len(b)
    if not n_a or not n_b:
        return RatioInterval(math.nan, math.nan, math.nan, 0.0, n_a, n_b)
    ratio = statistics.median(a) / statistics.median(b)
    log_b = [math.log(y) for y in b]
    diffs = sorted(math.log(x) - ly for x in a for ly in log_b)
    k, coverage = ratio_rank(n_a, n_b, level)
    low, high = math.exp(diffs[k - 1]), math.exp(diffs[len(diffs) - k])
    return RatioInterval(ratio, low, high, coverage, n_a, n_b)


def verdict(r: RatioInterval, level: float = DECISION_LEVEL) -> str:
    """a against b: "faster" (low > 1), "slower" (high < 1), "no clear winner" (holds 1), or
    "not decided" when the achieved level is below ``level`` or there is no interval."""
    if not (r.level >= level) or not (math.isfinite(r.low) and math.isfinite(r.high)):
        return NOT_DECIDED
    if r.low > 1.0:
        return FASTER
    if r.high < 1.0:
        return SLOWER
    return NO_CLEAR_WINNER


def processes_needed(level: float = DECISION_LEVEL) -> int:
    """The fewest process values whose median interval reaches ``level`` (5 at 90 %)."""
    n = 1
    while median_coverage(n, 1) < level:
        n += 1
    return n


def processes_needed_per_side(level: float = DECISION_LEVEL) -> int:
    """The fewest process values per library (equal on both sides) whose ratio interval
    reaches ``level`` (3 at 90 %)."""
    n = 1
    while ratio_coverage(n, n, 1) < level:
        n += 1
    return n
