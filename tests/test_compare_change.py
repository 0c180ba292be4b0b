"""The regression comparison's decided change (augbench.analysis.compare): new / base over both
rows' process values, with the verdict of augbench.decision."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from synthetic import row

from augbench.analysis import compare


def rows(by_library: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            row(
                library=library,
                transform="Flip",
                median_throughput=sorted(values)[len(values) // 2],
                std_throughput=0.0,
                throughputs=json.dumps(values),
                process_throughputs=json.dumps(values),
            )
            for library, values in by_library.items()
        ]
    )


def test_a_change_is_decided_over_processes() -> None:
    base = rows({"a": [100.0, 101.0, 99.0, 102.0, 98.0], "b": [50.0, 51.0, 49.0]})
    new = rows({"a": [80.0, 81.0, 79.0, 82.0, 78.0], "b": [50.5, 49.5]})
    table = compare.compare(base, new).set_index("library")
    assert table.loc["a", "flag"] == "regression"
    assert table.loc["a", "change_verdict"] == "slower"
    assert table.loc["a", "change_level"] == pytest.approx(1 - 8 / 252)  # built at 95 %
    assert table.loc["a", "change_high"] < 1.0
    # three processes against two cannot reach the level
    assert table.loc["b", "change_verdict"] == "not decided"
