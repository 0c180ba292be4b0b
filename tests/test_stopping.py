"""The stopping rule every engine shares (augbench/stopping.py)."""

from __future__ import annotations

import math

import pytest

from augbench.policy import RELATIVE_CI_TARGET
from augbench.results import summarize_throughputs
from augbench.stopping import StoppingRule, relative_ci


def test_relative_ci_matches_the_t_interval() -> None:
    # mean 100, sd 10, n 4: half-width = 3.182 * 10 / 2 = 15.91
    values = [90.0, 100.0, 110.0, 100.0]
    sd = math.sqrt(200 / 3)
    assert relative_ci(values) == pytest.approx(3.182 * sd / 2 / 100)
    assert relative_ci([5.0]) is None
    assert relative_ci([3.0, 3.0, 3.0]) == 0.0


def test_rule_stops_at_target_but_not_before_minimum_or_after_maximum() -> None:
    rule = StoppingRule(min_values=3, max_values=6, target=0.05)
    assert not rule.done([100.0, 100.0])  # below the minimum even though identical
    assert rule.done([100.0, 100.0, 100.0])
    assert not rule.done([100.0, 150.0, 60.0])  # wide interval: go on
    assert rule.done([100.0, 150.0, 60.0, 100.0, 150.0, 60.0])  # the maximum ends it
    with pytest.raises(ValueError):
        StoppingRule(min_values=4, max_values=2)


def test_every_summarized_row_states_its_precision() -> None:
    row = summarize_throughputs([100.0, 102.0, 98.0], [1.0, 0.98, 1.02])
    assert row["relative_ci"] == pytest.approx(relative_ci([100.0, 102.0, 98.0]))
    assert row["relative_ci_target"] == RELATIVE_CI_TARGET
