"""The decision interval and rule (augbench.decision): exact achieved levels, checked against
counting by hand, and the behaviour on degenerate input."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from augbench import decision, policy
from augbench.decision import (
    FASTER,
    NO_CLEAR_WINNER,
    NOT_DECIDED,
    SLOWER,
    RatioInterval,
    mann_whitney_counts,
    median_interval,
    ratio_interval,
    verdict,
)


def brute_force_counts(n_a: int, n_b: int) -> tuple[int, ...]:
    """U's null distribution by enumerating every placement of the a sample among a + b ranks."""
    counts = [0] * (n_a * n_b + 1)
    for a_ranks in itertools.combinations(range(n_a + n_b), n_a):
        b_ranks = [r for r in range(n_a + n_b) if r not in a_ranks]
        counts[sum(1 for x in a_ranks for y in b_ranks if x > y)] += 1
    return tuple(counts)


def test_level_is_the_policy_fact():
    assert decision.DECISION_LEVEL == policy.DECISION_LEVEL == policy.ANSWER_MIN_INTERVAL_LEVEL
    assert decision.DECISION_LEVEL == 0.9


@pytest.mark.parametrize("n_a,n_b", [(a, b) for a in range(7) for b in range(7)])
def test_mann_whitney_counts_match_enumeration(n_a, n_b):
    assert mann_whitney_counts(n_a, n_b) == brute_force_counts(n_a, n_b)
    assert sum(mann_whitney_counts(n_a, n_b)) == math.comb(n_a + n_b, n_a)


def test_five_values_median_interval_is_min_max_at_15_16():
    mi = median_interval([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (mi.median, mi.low, mi.high, mi.n) == (3.0, 1.0, 5.0, 5)
    assert mi.level == pytest.approx(1 - 2 / 32) == pytest.approx(0.9375)


@pytest.mark.parametrize("n,level", [(3, 0.75), (4, 0.875), (5, 0.9375), (6, 0.96875)])
def test_too_few_values_give_min_max_at_their_lower_level(n, level):
    mi = median_interval(range(1, n + 1))
    assert (mi.low, mi.high) == (1, n)
    assert mi.level == pytest.approx(level)


def test_more_values_narrow_the_median_interval_to_the_largest_rank_reaching_the_level():
    values = list(range(1, 21))
    mi = median_interval(values)
    # by hand: P(binomial(20, 1/2) <= k-1) <= 0.05 for k - 1 <= 5 (0.0207), not 6 (0.0577)
    tail = sum(math.comb(20, i) for i in range(6)) / 2**20
    assert (mi.low, mi.high) == (6, 15)
    assert mi.level == pytest.approx(1 - 2 * tail)
    assert mi.level >= 0.9


def test_five_by_five_ratio_interval_by_counting():
    # U <= 4 happens in 1 + 1 + 2 + 3 + 5 = 12 of C(10, 5) = 252 orderings: 1 - 24/252 at 0.90;
    # U <= 2 in 1 + 1 + 2 = 4: 1 - 8/252 = 0.968, the interval built at the level asked for (0.95)
    counts = brute_force_counts(5, 5)
    assert sum(counts[:5]) == 12
    assert sum(counts[:3]) == 4
    a = [10.0, 11.0, 12.0, 13.0, 14.0]
    b = [5.0, 5.5, 6.0, 6.5, 7.0]
    diffs = sorted(math.log(x) - math.log(y) for x in a for y in b)
    at_90 = ratio_interval(a, b, 0.90)
    assert at_90.level == pytest.approx(1 - 24 / 252) == pytest.approx(0.905, abs=5e-4)
    assert at_90.low == pytest.approx(math.exp(diffs[4]))
    assert at_90.high == pytest.approx(math.exp(diffs[-5]))
    r = ratio_interval(a, b)
    assert r.level == pytest.approx(1 - 8 / 252)
    assert (r.n_a, r.n_b) == (5, 5)
    assert r.low == pytest.approx(math.exp(diffs[2]))
    assert r.high == pytest.approx(math.exp(diffs[-3]))
    assert r.ratio == pytest.approx(12.0 / 6.0)
    assert verdict(r) == FASTER


def test_intervals_are_built_above_the_level_a_call_needs():
    assert policy.INTERVAL_LEVEL > policy.DECISION_LEVEL
    # 3 against 3 never reach the level asked for; [min, max] still reaches the one a call needs
    assert decision.ratio_rank(3, 3) == (1, pytest.approx(0.9))
    assert decision.ratio_rank(4, 4) == (1, pytest.approx(1 - 2 / 70))


def test_three_by_three_is_the_fewest_that_decides():
    assert decision.processes_needed_per_side() == 3
    assert decision.processes_needed() == 5
    r = ratio_interval([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])
    assert r.level == pytest.approx(1 - 2 / 20)
    assert verdict(r) == SLOWER
    assert verdict(ratio_interval([1.0, 1.1], [2.0, 2.1])) == NOT_DECIDED


def test_overlapping_samples_are_no_clear_winner():
    r = ratio_interval([1.0, 1.2, 1.4, 1.1, 1.3], [1.05, 1.25, 1.15, 1.35, 1.0])
    assert r.level >= 0.9
    assert r.low < 1 < r.high
    assert verdict(r) == NO_CLEAR_WINNER


def test_verdict_needs_the_asked_level():
    r = RatioInterval(2.0, 1.5, 2.5, 0.875, 4, 1)
    assert verdict(r) == NOT_DECIDED
    assert verdict(r, level=0.8) == FASTER


def test_ratio_interval_is_scale_invariant_and_antisymmetric():
    rng = random.Random(3)
    a = [rng.lognormvariate(0, 0.3) for _ in range(6)]
    b = [rng.lognormvariate(0.2, 0.3) for _ in range(4)]
    ab, ba = ratio_interval(a, b), ratio_interval(b, a)
    assert ab.level == pytest.approx(ba.level)
    assert ab.low == pytest.approx(1 / ba.high)
    assert ab.high == pytest.approx(1 / ba.low)
    scaled = ratio_interval([7 * x for x in a], [7 * y for y in b])
    assert (scaled.low, scaled.high) == pytest.approx((ab.low, ab.high))


def test_empty_input_is_never_decided():
    mi = median_interval([])
    assert mi.n == 0 and mi.level == 0.0 and math.isnan(mi.median)
    r = ratio_interval([], [1.0, 2.0])
    assert math.isnan(r.ratio) and r.level == 0.0 and (r.n_a, r.n_b) == (0, 2)
    assert verdict(r) == NOT_DECIDED


def test_one_value_is_its_own_median_at_level_zero():
    mi = median_interval([4.0])
    assert (mi.median, mi.low, mi.high, mi.level, mi.n) == (4.0, 4.0, 4.0, 0.0, 1)
    r = ratio_interval([4.0], [2.0])
    assert (r.ratio, r.low, r.high, r.level) == (2.0, 2.0, 2.0, 0.0)
    assert verdict(r) == NOT_DECIDED


def test_non_finite_values_are_left_out_and_counted_out():
    mi = median_interval([1.0, math.nan, 2.0, math.inf, 3.0, None, "x"])
    assert (mi.n, mi.median, mi.low, mi.high) == (3, 2.0, 1.0, 3.0)
    r = ratio_interval([2.0, math.nan, 2.2, 2.4], [1.0, 1.1, 1.2])
    assert (r.n_a, r.n_b) == (3, 3)


def test_zeros_are_values_of_a_median_but_refused_by_a_ratio():
    mi = median_interval([0.0, 0.0, 5.0])
    assert mi.median == 0.0 and mi.low == 0.0
    with pytest.raises(ValueError, match="a has 1 value"):
        ratio_interval([0.0, 1.0, 2.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="b has 1 value"):
        ratio_interval([1.0, 1.0, 1.0], [1.0, -2.0, 1.0])


def test_fields_carry_the_page_columns():
    mi = median_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mi.fields("throughput") == {
        "throughput_median": 3.0,
        "throughput_low": 1.0,
        "throughput_high": 5.0,
        "throughput_level": 0.9375,
        "processes": 5,
    }
    fields = ratio_interval([3.0, 3.1, 3.2], [1.0, 1.1, 1.2]).fields()
    assert set(fields) == {"margin", "margin_low", "margin_high", "margin_level", "verdict"}
    assert fields["verdict"] == FASTER
