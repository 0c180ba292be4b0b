"""Confidence intervals of the statistics the product reports: the median of a row's values and
ratios of medians.

Pure Python (no numpy, torch or pandas): the engines compute a row's interval inside every library
env, and the analysis computes ratio intervals from the rows' own intervals, so both agree.

- **The median of one process's values** (a DataLoader row's epochs, a training row's blocks):
  the distribution-free order-statistic interval [x_(k), x_(n-k+1)], the narrowest whose coverage
  under the binomial(n, 1/2) law is at least the level asked for. With fewer than 6 values no
  such interval reaches 95 %: the interval is then [min, max] and ``level`` says what it covers
  (n = 5: 93.8 %, 4: 87.5 %, 3: 75 %). The values are treated as exchangeable: they come from one
  process, so the interval says nothing of how another process would differ (``method`` says so).
- **The median of values from several processes** (micro's pyperf processes, the pipeline
  breakdown's fresh processes): with at least ``MIN_PROCESSES_FOR_BOOTSTRAP`` processes a
  two-stage bootstrap (processes drawn with replacement, then values within each drawn process),
  percentile interval; the between-process spread is then inside the interval. With fewer
  processes: the order-statistic interval of all values, labelled as such.
- **A ratio of two independent medians** (a speedup, an allocator effect measured in separate
  jobs): the two intervals combined on the log scale (independent errors add in quadrature), at
  the lower of the two levels.
- **A median of paired ratios** (two arms timed in the same rounds): the order-statistic interval
  of the per-round ratios.

Every interval records its ``level`` and ``method``: a reader can see what it covers.

These intervals describe a row and set how long it is measured (augbench.measuring.stopping). What
is ranked and what a margin calls are decided by augbench.decision over one value per process, at
the level that achieves (docs/methodology.md, "Deciding").
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from augbench.result_format import MEDIAN_THROUGHPUT

LEVEL = 0.95
# The fewest processes whose spread a bootstrap over processes can say anything about; with fewer,
# the interval is over values (and says so).
MIN_PROCESSES_FOR_BOOTSTRAP = 3
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """``low`` <= ``estimate`` <= ``high`` at coverage ``level`` (None: no interval), by
    ``method``, from ``n`` values (of ``processes`` processes where known)."""

    estimate: float
    low: float | None
    high: float | None
    level: float | None
    method: str
    n: int
    processes: int | None = None

    @property
    def relative_half_width(self) -> float | None:
        """The wider side of the interval over the estimate: the row's precision."""
        if self.low is None or self.high is None:
            return None
        if not self.estimate > 0:
            return math.inf
        return max(self.high - self.estimate, self.estimate - self.low) / self.estimate

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a point (no interval: treated as overlapping)."""
        if None in (self.low, self.high, other.low, other.high):
            return True
        return not (self.high < other.low or other.high < self.low)  # type: ignore[operator]

    def excludes(self, low: float, high: float) -> bool:
        """Whether the whole interval lies outside [low, high] (no interval: False)."""
        if self.low is None or self.high is None:
            return False
        return self.high < low or self.low > high

    def fields(self, prefix: str = "") -> dict[str, Any]:
        """The interval as row fields: ``<prefix>ci_low``, ``ci_high``, ``ci_level``,
        ``ci_method``."""
        return {
            f"{prefix}ci_low": self.low,
            f"{prefix}ci_high": self.high,
            f"{prefix}ci_level": self.level,
            f"{prefix}ci_method": self.method,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _binomial_half_tail(n: int, k: int) -> float:
    """P(X <= k) for X ~ binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def order_statistic_ranks(n: int, level: float = LEVEL) -> tuple[int, int, float]:
    """0-based ranks (lo, hi) of the narrowest symmetric order-statistic interval of the median
    of ``n`` values reaching ``level``, and its exact coverage; [0, n-1] when none does."""
    best = (0, n - 1, 1.0 - 2.0 * 0.5**n)
    for k in range(1, n // 2 + 1):
        # The interval [x_(k+1), x_(n-k)] (1-based) misses the median with probability
        # 2 P(X <= k) where X counts values below it.
        coverage = 1.0 - 2.0 * _binomial_half_tail(n, k)
        if coverage < level:
            break
        best = (k, n - 1 - k, coverage)
    return best


def median_interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """The order-statistic interval of the median of ``values`` (see the module doc)."""
    clean = sorted(v for v in values if math.isfinite(v))
    n = len(clean)
    if n == 0:
        return Interval(math.nan, None, None, None, "no values", 0)
    estimate = statistics.median(clean)
    if n == 1:
        return Interval(estimate, None, None, None, "one value: no interval", 1)
    lo, hi, coverage = order_statistic_ranks(n, level)
    return Interval(estimate, clean[lo], clean[hi], coverage, f"order statistics of {n} values", n)


def _seed(groups: Sequence[Sequence[float]]) -> int:
    """A seed from the values themselves: the same values always give the same interval."""
    digest = hashlib.sha256(repr([list(g) for g in groups]).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def process_median_interval(
    groups: Sequence[Sequence[float]],
    level: float = LEVEL,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Interval:
    """The interval of the median of all values of ``groups`` (one list per process): a two-stage
    bootstrap with at least MIN_PROCESSES_FOR_BOOTSTRAP processes, else the order-statistic
    interval of the pooled values."""
    groups = [[v for v in g if math.isfinite(v)] for g in groups]
    groups = [g for g in groups if g]
    pooled = [v for g in groups for v in g]
    if len(groups) < MIN_PROCESSES_FOR_BOOTSTRAP:
        single = median_interval(pooled, level)
        where = "one process" if len(groups) == 1 else f"{len(groups)} processes"
        return Interval(
            single.estimate,
            single.low,
            single.high,
            single.level,
            f"{single.method}, {where} (too few processes for their spread)",
            single.n,
            len(groups),
        )
    rng = random.Random(_seed(groups))
    medians = []
    for _ in range(resamples):
        drawn: list[float] = []
        for _ in groups:
            group = groups[rng.randrange(len(groups))]
            drawn.extend(group[rng.randrange(len(group))] for _ in group)
        medians.append(statistics.median(drawn))
    medians.sort()
    tail = (1.0 - level) / 2.0
    low = medians[max(0, math.floor(tail * resamples))]
    high = medians[min(resamples - 1, math.ceil((1.0 - tail) * resamples) - 1)]
    estimate = statistics.median(pooled)
    return Interval(
        estimate,
        min(low, estimate),
        max(high, estimate),
        level,
        f"bootstrap over {len(groups)} processes ({len(pooled)} values)",
        len(pooled),
        len(groups),
    )


def ratio_interval(numerator: Interval, denominator: Interval) -> Interval:
    """The interval of numerator.estimate / denominator.estimate for independent estimates: the
    relative errors of each side combined in quadrature on the log scale, at the lower level."""
    if not (numerator.estimate > 0 and denominator.estimate > 0):
        return Interval(math.nan, None, None, None, "a side without a positive estimate", 0)
    ratio = numerator.estimate / denominator.estimate
    sides = (numerator.low, numerator.high, denominator.low, denominator.high)
    if any(v is None or not v > 0 for v in sides):
        return Interval(ratio, None, None, None, "a side without an interval", 0)
    n_low, n_high, d_low, d_high = (float(v) for v in sides)  # type: ignore[arg-type]
    down = math.hypot(math.log(numerator.estimate / n_low), math.log(d_high / denominator.estimate))
    up = math.hypot(math.log(n_high / numerator.estimate), math.log(denominator.estimate / d_low))
    levels = [lv for lv in (numerator.level, denominator.level) if lv is not None]
    return Interval(
        ratio,
        ratio * math.exp(-down),
        ratio * math.exp(up),
        min(levels) if levels else None,
        "ratio of independent medians: log-scale errors in quadrature",
        min(numerator.n, denominator.n),
    )


def paired_ratio_interval(ratios: Sequence[float], level: float = LEVEL) -> Interval:
    """The order-statistic interval of the median of per-round ratios of two arms timed in the
    same rounds (the rounds' shared machine state cancels in each ratio)."""
    single = median_interval(ratios, level)
    return Interval(
        single.estimate,
        single.low,
        single.high,
        single.level,
        f"paired: {single.method} (one ratio per round)",
        single.n,
    )


def from_fields(row: dict[str, Any], estimate_key: str = MEDIAN_THROUGHPUT) -> Interval:
    """A row's interval back from its fields (``ci_low``, ``ci_high``, ``ci_level``)."""

    def num(key: str) -> float | None:
        value = row.get(key)
        try:
            value = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return value if math.isfinite(value) else None

    estimate = num(estimate_key)
    return Interval(
        estimate if estimate is not None else math.nan,
        num("ci_low"),
        num("ci_high"),
        num("ci_level"),
        str(row.get("ci_method") or ""),
        int(num("num_successful_runs") or 0),
    )


def percentiles(values: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, Any]:
    """``n``, ``max`` and each ``p<q>`` the sample supports (nearest rank): a percentile q needs
    at least 100 / (100 - q) values, so that some value lies above it (p95 from 20 values, p99
    from 100); below that the sample's ``max`` is all there is to say of its tail."""
    ordered = sorted(v for v in values if math.isfinite(v))
    n = len(ordered)
    out: dict[str, Any] = {"n": n}
    if not n:
        return out
    for q in points:
        if n * (100 - q) >= 100:
            rank = max(1, min(n, math.ceil(q / 100 * n)))
            out[f"p{q}"] = ordered[rank - 1]
    out["max"] = ordered[-1]
    return out
