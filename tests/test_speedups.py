"""Aggregation math on fixed inputs."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from synthetic import row

from augbench.analysis import speedups


def frame(rows: list[tuple[str, str, str, float | None, float | None]]) -> pd.DataFrame:
    """Tidy micro rows of one group from (transform, library, status, median, half-width of
    the median's interval); a row that is not ok has the reason "why <status>"."""
    return pd.DataFrame(
        [
            row(
                transform=transform,
                library=library,
                status=status,
                reason="" if status == "ok" else f"why {status}",
                median_throughput=median,
                ci_low=None if median is None else median - width,
                ci_high=None if median is None else median + width,
            )
            for transform, library, status, median, width in rows
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
    # The ratio's interval: both medians' relative errors in quadrature (c has none).
    assert out.loc["a", "speedup_low"] == pytest.approx(2.0 * 270 / 300)
    assert out.loc["a", "speedup_high"] == pytest.approx(2.0 * 330 / 300)
    assert out.loc["a", "versus_fastest_other"] == "faster"
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


def test_overlapping_intervals_are_a_tie_and_foreign_rows_use_their_values() -> None:
    tidy = frame([("Flip", "a", "ok", 100.0, 8.0), ("Flip", "b", "ok", 96.0, 8.0)])
    out = speedups.compute(tidy).set_index("library")
    assert out.loc["a", "speedup"] == pytest.approx(100 / 96)
    assert set(out["versus_fastest_other"]) == {"tie"}
    # A row without its own interval (another tool's file): the order statistics of its values.
    foreign = tidy.assign(
        ci_low=None,
        ci_high=None,
        median_throughput=[100.0, 50.0],
        throughputs=["[90, 100, 110]", "[40, 50, 60]"],
    )
    out = speedups.compute(foreign).set_index("library")
    assert 1.0 < out.loc["a", "speedup_low"] < 2.0 < out.loc["a", "speedup_high"]
    assert out.loc["a", "versus_fastest_other"] == "faster"
    assert out.loc["a", "speedup_level"] == pytest.approx(0.75)


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
