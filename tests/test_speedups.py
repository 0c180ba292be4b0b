"""Aggregation math on fixed inputs."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from synthetic import row

from augbench.analysis import speedups


def frame(rows: list[tuple[str, str, str, float | None, float | None]]) -> pd.DataFrame:
    """Tidy micro rows of one group from (transform, library, status, median, std); a row that
    is not ok has the reason "why <status>"."""
    return pd.DataFrame(
        [
            row(
                transform=transform,
                library=library,
                status=status,
                reason="" if status == "ok" else f"why {status}",
                median_throughput=median,
                std_throughput=std,
            )
            for transform, library, status, median, std in rows
        ]
    )


def test_speedup_is_against_the_fastest_other_ok_library() -> None:
    tidy = frame(
        [
            ("Flip", "a", "ok", 300.0, 30.0),
            ("Flip", "b", "ok", 100.0, 10.0),
            ("Flip", "c", "ok", 150.0, 0.0),
            ("Flip", "d", "early_stopped", None, None),
        ]
    )
    out = speedups.compute(tidy).set_index("library")
    assert out.loc["a", "speedup"] == pytest.approx(2.0)
    assert out.loc["a", "fastest_other_library"] == "c"
    assert bool(out.loc["a", "is_fastest"])
    assert out.loc["b", "speedup"] == pytest.approx(100 / 300)
    assert out.loc["c", "speedup"] == pytest.approx(0.5)
    # The interval spans ±1 sd on both sides.
    assert out.loc["a", "speedup_low"] == pytest.approx(270 / 150)
    assert out.loc["a", "speedup_high"] == pytest.approx(330 / 150)
    # Non-ok rows stay visible, with their reason and no speedup.
    assert out.loc["d", "status"] == "early_stopped"
    assert out.loc["d", "reason"] == "why early_stopped"
    assert math.isnan(out.loc["d", "speedup"])


def test_no_competitor_gives_na_and_non_ok_rows_never_compete() -> None:
    tidy = frame([("Jit", "a", "ok", 50.0, 1.0), ("Jit", "b", "unsupported", None, None)])
    out = speedups.compute(tidy).set_index("library")
    assert math.isnan(out.loc["a", "speedup"])
    assert out.loc["a", "fastest_other_library"] == ""
    assert out.loc["b", "status"] == "unsupported"


def test_interval_upper_bound_is_infinite_when_competitor_sd_reaches_zero() -> None:
    low, high = speedups.speedup_interval(10.0, 1.0, 5.0, 5.0)
    assert low == pytest.approx(0.9)
    assert math.isinf(high)


def test_throughput_table_keeps_every_transform_and_library() -> None:
    tidy = frame([("A", "x", "ok", 10.0, 0.0), ("A", "y", "error", None, None)])
    wide = speedups.throughput_table(tidy)
    assert list(wide["transform"]) == ["A"]
    assert wide.loc[0, "x"] == 10.0
    assert math.isnan(wide.loc[0, "y"])


def test_coverage_counts_with_denominators() -> None:
    tidy = frame(
        [
            ("A", "x", "ok", 1.0, 0.0),
            ("B", "x", "unsupported", None, None),
            ("C", "x", "early_stopped", None, None),
        ]
    )
    cov = speedups.coverage(tidy).set_index("library")
    assert cov.loc["x", "coverage"] == "1/3"
    assert cov.loc["x", "unsupported"] == 1
