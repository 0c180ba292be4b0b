"""The stopping rule every engine shares (augbench/measuring/stopping.py) and the intervals it and
every row use (augbench/intervals.py): the interval of the median, of ratios, and percentiles the
sample supports."""

from __future__ import annotations

import math
import random

import pytest

from augbench.intervals import (
    median_interval,
    order_statistic_ranks,
    paired_ratio_interval,
    percentiles,
    process_median_interval,
    ratio_interval,
)
from augbench.measuring.stopping import (
    StoppingRule,
    breakdown_passes,
    breakdown_value_bounds,
    epoch_batches,
    expected_values,
    relative_ci,
)
from augbench.policy import RELATIVE_CI_TARGET
from augbench.results import summarize_throughputs


def test_the_median_interval_is_the_order_statistic_one() -> None:
    # n = 10: [x(2), x(9)] covers the median with probability 1 - 2 P(B(10, 1/2) <= 1) = 97.9 %.
    lo, hi, coverage = order_statistic_ranks(10)
    assert (lo, hi) == (1, 8) and coverage == pytest.approx(1 - 2 * 11 / 1024)
    interval = median_interval([float(v) for v in range(1, 11)])
    assert (interval.low, interval.high, interval.estimate) == (2.0, 9.0, 5.5)
    # Fewer than 6 values: [min, max] and the level it covers, never a made-up 95 %.
    small = median_interval([90.0, 100.0, 110.0, 100.0])
    assert (small.low, small.high, small.level) == (90.0, 110.0, pytest.approx(0.875))
    assert relative_ci([90.0, 100.0, 110.0, 100.0]) == pytest.approx(0.1)
    assert relative_ci([5.0]) is None
    assert relative_ci([3.0, 3.0, 3.0]) == 0.0


def test_the_order_statistic_interval_covers_the_median_as_often_as_it_says() -> None:
    rng = random.Random(7)
    n, trials, hits = 12, 2000, 0
    for _ in range(trials):  # a skewed distribution whose median is log(2)
        values = [rng.expovariate(1.0) for _ in range(n)]
        interval = median_interval(values)
        hits += interval.low <= math.log(2) <= interval.high
    _, _, coverage = order_statistic_ranks(n)
    assert abs(hits / trials - coverage) < 0.025


def test_several_processes_put_their_spread_in_the_interval() -> None:
    # Three processes that each agree with themselves but not with each other: the values'
    # own interval is narrow, the bootstrap over processes is not.
    groups = [[100.0, 100.5, 99.5], [110.0, 110.5, 109.5], [90.0, 90.5, 89.5]]
    pooled = [v for g in groups for v in g]
    over_processes = process_median_interval(groups)
    assert over_processes.method.startswith("bootstrap over 3 processes")
    assert over_processes.low <= 90.5 and over_processes.high >= 109.5
    assert process_median_interval(groups) == over_processes  # seeded by the values
    two = process_median_interval(groups[:2])
    assert "too few processes" in two.method and two.n == 6
    assert median_interval(pooled).estimate == over_processes.estimate


def test_ratio_intervals() -> None:
    a = median_interval([100.0, 102.0, 98.0, 101.0, 99.0, 100.0])
    b = median_interval([50.0, 51.0, 49.0, 50.0, 50.0, 52.0])
    ratio = ratio_interval(a, b)
    assert ratio.estimate == pytest.approx(2.0)
    assert ratio.low < 2.0 < ratio.high
    # Wider than either side alone (errors add), narrower than their worst-case ends.
    assert ratio.low > 98.0 / 52.0 and ratio.high < 102.0 / 49.0
    assert not ratio.overlaps(ratio_interval(b, a))
    paired = paired_ratio_interval([1.0, 1.1, 0.9, 1.05, 0.95, 1.0])
    assert paired.low == 0.9 and paired.high == 1.1 and "paired" in paired.method


def test_percentiles_only_where_the_sample_reaches_them() -> None:
    twelve = percentiles([float(v) for v in range(12)])
    assert twelve == {"n": 12, "p50": 5.0, "max": 11.0}  # no p95 of 12 values, no p99
    assert "p95" in percentiles(range(20)) and "p99" not in percentiles(range(20))
    assert percentiles(range(100))["p99"] == 98


def test_rule_stops_at_target_but_not_before_minimum_or_after_maximum() -> None:
    rule = StoppingRule(min_values=3, max_values=6, target=0.05)
    assert not rule.done([100.0, 100.0])  # below the minimum even though identical
    assert rule.done([100.0, 100.0, 100.0])
    assert not rule.done([100.0, 150.0, 60.0])  # wide interval: go on
    assert rule.done([100.0, 150.0, 60.0, 100.0, 150.0, 60.0])  # the maximum ends it
    with pytest.raises(ValueError):
        StoppingRule(min_values=4, max_values=2)


def test_the_rule_looks_only_at_block_boundaries() -> None:
    # A lucky run of identical values after the minimum does not end the row mid-block.
    rule = StoppingRule(min_values=3, max_values=12, target=0.05)
    noisy = [100.0, 150.0, 60.0]
    assert not rule.done(noisy)
    assert not rule.done([*noisy, 100.0, 100.0])  # 5 values: not a boundary (3, 6, 9)
    assert rule.looks_at(6) and not rule.looks_at(5) and rule.looks_at(9)
    assert StoppingRule(4, 20, block=2).looks_at(6)


def test_longer_values_are_expected_to_stop_sooner() -> None:
    """A measured row's jitter is of a fixed size: the same spreads, on values that last longer,
    stop at the first look; on short ones they run to the maximum. Without spreads: the maximum.
    A look that also needs a companion's ratios (a ratio of two values spreads wider) stops later,
    and each count is one the rule can stop at."""
    rule = StoppingRule(min_values=3, max_values=6, target=0.05)
    spreads = [0.004, 0.01, 0.03]  # seconds: relative interval at 3 values x value length
    assert expected_values(rule, spreads, 10.0) == 3
    assert expected_values(rule, spreads, 0.01) == 6
    assert expected_values(rule, [], 10.0) == 6
    counts = [expected_values(rule, spreads, length) for length in (0.05, 0.2, 0.6, 2.0)]
    assert counts == sorted(counts, reverse=True) and 3 < counts[1] < 6
    assert expected_values(rule, spreads, 0.2, paired_below=4) > counts[1]
    # One spread: the count is the first look whose interval, scaled from the first, is on target.
    long_rule = StoppingRule(min_values=3, max_values=30, target=0.05)
    count = expected_values(long_rule, [0.055], 1.0)
    assert long_rule.looks_at(int(count)) and 3 < count < 30


def test_every_summarized_row_states_its_precision() -> None:
    row = summarize_throughputs([100.0, 102.0, 98.0], [1.0, 0.98, 1.02])
    assert row["relative_ci"] == pytest.approx(relative_ci([100.0, 102.0, 98.0]))
    assert row["relative_ci_target"] == RELATIVE_CI_TARGET
    assert (row["ci_low"], row["ci_high"]) == (98.0, 102.0)
    assert row["ci_level"] == pytest.approx(0.75) and "3 values" in row["ci_method"]
    grouped = summarize_throughputs([1.0, 2.0, 3.0, 4.0], [1.0] * 4, [[1.0, 2.0], [3.0, 4.0]])
    assert "2 processes" in grouped["ci_method"]


def test_the_engines_counts() -> None:
    # DataLoader windows hold a whole number of batches per worker.
    assert epoch_batches(3, 2) == 4 and epoch_batches(3, 0) == 3
    assert epoch_batches(50, 16) == 64
    # The breakdown times whole processes of values, each after its warm-up.
    assert breakdown_value_bounds(5, 9, 2) == (6, 10)
    # Its first look spans two processes where the maximum allows: one process's values spread
    # less than several processes' do.
    assert breakdown_value_bounds(2, 8, 2) == (4, 8)
    assert breakdown_value_bounds(1, 1, 1) == (1, 1) and breakdown_value_bounds(2, 2, 2) == (2, 2)
    assert breakdown_value_bounds(3, 5, 1) == (3, 5) and breakdown_value_bounds(1, 5, 1) == (2, 5)
    assert breakdown_passes(6, 1, 2) == 9
