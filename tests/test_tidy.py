"""Reading result files: ours and the common format written by other benchmarks."""

from __future__ import annotations

from pathlib import Path

from augbench.analysis import tidy

FIXTURES = Path(__file__).parent / "fixtures"


def test_external_result_file_reads_without_code_changes() -> None:
    frame = tidy.load([FIXTURES / "external-results"])
    assert len(frame) == 24
    assert set(frame["library"]) == {"pillow"}
    assert set(frame["regime"]) == {"micro"}
    assert set(frame["status"]) == {"ok"}
    assert frame["machine"].iloc[0].startswith("external-darwin-arm64")
    resize = frame[frame["transform"] == "Resize"].iloc[0]
    assert resize["median_throughput"] > 1000
    assert resize["library_version"] == "12.2.0"
