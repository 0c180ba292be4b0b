"""Slow-transform and thread policy."""

from __future__ import annotations

import pytest

from augbench.policy import THREAD_ENV_VARS, SlowTransformPolicy, ThreadPolicy


def test_defaults_are_the_documented_numbers() -> None:
    policy = SlowTransformPolicy()
    assert policy.preflight_items == 10
    assert policy.max_seconds_per_item == 0.05
    assert policy.preflight_max_seconds == 60.0


@pytest.mark.parametrize(
    ("items", "seconds", "stopped"),
    [
        (10, 0.49, False),  # 0.049 s/img: just under the threshold
        (10, 0.50, True),  # exactly 0.05 s/img (20 img/s) is slow
        (10, 5.0, True),
        (3, 61.0, True),  # preflight time limit, whatever the rate
    ],
)
def test_verdict_threshold(items: int, seconds: float, stopped: bool) -> None:
    verdict = SlowTransformPolicy().verdict(items, seconds)
    assert (verdict is not None) is stopped
    if stopped:
        assert "s/item" in verdict or "limit" in verdict


def test_disable_slow_skip_turns_the_policy_off() -> None:
    policy = SlowTransformPolicy.from_config({"disable_slow_skip": True})
    assert policy.verdict(10, 100.0) is None


def test_config_overrides_policy_numbers() -> None:
    policy = SlowTransformPolicy.from_config({"policy": {"max_seconds_per_item": 0.2}})
    assert policy.verdict(10, 1.0) is None
    assert policy.verdict(10, 2.0) is not None


def test_thread_policy_environment_and_shell_prefix() -> None:
    policy = ThreadPolicy(threads=1)
    env = policy.environment()
    assert set(env) == set(THREAD_ENV_VARS)
    assert all(v == "1" for v in env.values())
    assert "OMP_NUM_THREADS=1" in policy.shell_prefix()
