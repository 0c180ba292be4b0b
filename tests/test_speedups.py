"""Aggregation math on fixed inputs."""

from __future__ import annotations

import json
import math
import statistics

import pandas as pd
import pytest
from synthetic import row

from augbench.analysis import runs, speedups


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
    # One process per row: the ratio has no interval that reaches the level.
    assert out.loc["a", "speedup_level"] == 0.0
    assert math.isnan(out.loc["a", "speedup_low"]) and math.isnan(out.loc["a", "speedup_high"])
    assert out.loc["a", "versus_fastest_other"] == "not decided"
    assert out.loc["a", "processes"] == 1 and out.loc["a", "throughput_level"] == 0.0
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


def processes(tidy: pd.DataFrame, groups: dict[str, list[list[float]]]) -> pd.DataFrame:
    """The rows of ``tidy`` measured by the processes ``groups`` gives per library."""
    by_library = tidy["library"].map(groups)
    return tidy.assign(
        throughputs_by_process=by_library.map(json.dumps),
        throughputs=by_library.map(lambda g: json.dumps([v for p in g for v in p])),
        median_throughput=by_library.map(lambda g: statistics.median(map(statistics.median, g))),
    )


def test_a_speedup_is_decided_over_processes_at_its_achieved_level() -> None:
    tidy = frame([("Flip", "a", "ok", 0.0, 0.0), ("Flip", "b", "ok", 0.0, 0.0)])
    apart = processes(
        tidy,
        {
            "a": [[200.0, 210.0], [190.0, 195.0], [220.0, 230.0]],
            "b": [[100.0, 99.0], [110.0, 112.0], [105.0, 101.0]],
        },
    )
    out = speedups.compute(apart).set_index("library")
    # 3 x 3 processes: [min, max] of the nine ratios of process medians, at 1 - 2/20.
    assert out.loc["a", "speedup_level"] == pytest.approx(0.9)
    assert out.loc["a", "speedup_low"] == pytest.approx(192.5 / 111.0)
    assert out.loc["a", "speedup_high"] == pytest.approx(225.0 / 99.5)
    assert out.loc["a", "versus_fastest_other"] == "faster"
    assert out.loc["b", "versus_fastest_other"] == "slower"
    assert out.loc["a", "throughput_median"] == 205.0
    assert (out.loc["a", "throughput_low"], out.loc["a", "throughput_high"]) == (192.5, 225.0)
    assert out.loc["a", "throughput_level"] == pytest.approx(0.75)
    assert out.loc["a", "processes"] == 3
    close = processes(
        tidy,
        {"a": [[100.0], [104.0], [98.0], [101.0]], "b": [[99.0], [103.0], [100.0], [102.0]]},
    )
    assert set(speedups.compute(close)["versus_fastest_other"]) == {"no clear winner"}
    few = processes(tidy, {"a": [[200.0], [210.0]], "b": [[100.0], [101.0]]})
    assert set(speedups.compute(few)["versus_fastest_other"]) == {"not decided"}


def test_a_row_under_load_leaves_its_margin_undecided() -> None:
    tidy = frame([("Flip", "a", "ok", 0.0, 0.0), ("Flip", "b", "ok", 0.0, 0.0)])
    apart = processes(tidy, {"a": [[200.0], [210.0], [205.0]], "b": [[100.0], [101.0], [99.0]]})
    loud = apart.assign(under_load=[False, True])
    out = speedups.compute(loud).set_index("library")
    assert out.loc["a", "speedup_level"] == pytest.approx(0.9)
    assert out.loc["a", "versus_fastest_other"] == "not decided"
    fields = speedups.margin_fields(loud.iloc[0], loud.iloc[1])
    assert fields["verdict"] == "not decided"
    assert fields["margin_note"] == "measured under load: b"
    assert speedups.margin_fields(apart.iloc[0], apart.iloc[1])["verdict"] == "faster"


def test_process_values_come_from_what_the_row_records() -> None:
    # micro's pyperf processes: values listed process by process
    pyperf = {"throughputs": "[1, 2, 3, 10, 11, 12]", "pyperf_processes": 2}
    assert runs.process_values(pyperf) == [2.0, 11.0]
    # uneven: cannot be split, one process
    assert runs.process_values({"throughputs": "[1, 2, 3]", "pyperf_processes": 2}) == [2.0]
    assert runs.process_values({"process_throughputs": "[5, 6]", "throughputs": "[1]"}) == [5, 6]
    assert runs.process_values({"throughputs": "[]", "median_throughput": 7.0}) == [7.0]
    assert runs.process_values({"throughputs": None, "median_throughput": None}) == []


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
