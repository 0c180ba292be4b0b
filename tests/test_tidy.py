"""Reading result files: ours and the common format written by other benchmarks."""

from __future__ import annotations

from pathlib import Path

from augbench.analysis import tidy
from augbench.analysis.cells import decoded

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


def _loader_file(
    path: Path, epochs: list[float], faults: float, stamp: str, workers: int = 2, **row: object
) -> None:
    """A cpu_dataloader result file of one recipe (the fields the tables read)."""
    import json
    import statistics

    path.parent.mkdir(parents=True, exist_ok=True)
    median = statistics.median(epochs)
    result = {
        "status": "ok", "median_throughput": median, "throughputs": epochs,
        "steady_throughput": median * 1.02, "steady_throughputs": [v * 1.02 for v in epochs],
        "ci_low": min(epochs), "ci_high": max(epochs), "ci_method": "order statistic",
        "minor_faults_per_image": faults, "output_pages": 147, "workers": workers, **row,
    }  # fmt: skip
    meta = {
        "regime": "cpu_dataloader", "scope": "decode", "library": "pillow", "machine": "m",
        "benchmark_params": {"workers": workers, "batch_size": 4},
        "system_info": {"timestamp": stamp}, "dataset": {"key": "d"},
    }  # fmt: skip
    path.write_text(json.dumps({"metadata": meta, "results": {"GaussianBlur": result}}))


def test_a_jobs_runs_are_one_row_with_the_interval_over_its_processes(tmp_path: Path) -> None:
    """Three runs of one cpu_dataloader job (``-run2``, ``-run3``: cpu_dataloader.runs): one
    tidy row, the median of the runs' medians with its order-statistic interval over the three
    runs as processes ([min, max] at its achieved 75 %), each run's epochs kept apart, the
    most-faulting run's faults; a failed run is named, not pooled. A job of one run keeps its
    own row, one process: no decided interval (level 0)."""
    folder = tmp_path / "raw/m/d/cpu_dataloader/pillow"
    runs = ([290.0, 300.0, 310.0], [250.0, 260.0, 270.0], [330.0, 340.0, 350.0])
    for k, (epochs, faults) in enumerate(zip(runs, (150.0, 420.0, 160.0), strict=True), 1):
        suffix = "" if k == 1 else f"-run{k}"
        _loader_file(folder / f"decode-w2-s000{suffix}.json", epochs, faults, f"t{k}")
    _loader_file(folder / "decode-w2-s000-run4.json", [1.0], 0.0, "t4", status="error",
                 reason="the loader died")  # fmt: skip
    _loader_file(folder / "decode-w0-s000.json", [100.0, 101.0, 102.0], 140.0, "t1", workers=0)
    frame = tidy.load([tmp_path / "raw"]).set_index("workers")
    assert len(frame) == 2
    pooled, single = frame.loc[2], frame.loc[0]
    everything = [v for epochs in runs for v in epochs]
    assert pooled["runs"] == 3 and single["runs"] == 1
    assert pooled["median_throughput"] == 300.0
    assert (pooled["ci_low"], pooled["ci_high"]) == (260.0, 340.0)
    assert pooled["ci_method"] == "order statistics of 3 processes' medians, achieved level"
    assert pooled["ci_level"] == 0.75
    assert (pooled["throughput_median"], pooled["throughput_level"]) == (300.0, 0.75)
    assert (pooled["throughput_low"], pooled["throughput_high"], pooled["processes"]) == (
        260.0,
        340.0,
        3,
    )
    assert sorted(decoded(pooled["throughputs"])) == sorted(everything)
    assert decoded(pooled["throughputs_by_run"]) == [list(r) for r in runs]
    assert pooled["steady_ci_method"] == pooled["ci_method"]
    assert pooled["num_successful_runs"] == 9
    assert pooled["minor_faults_per_image"] == 160.0
    assert pooled["most_minor_faults_per_image"] == 420.0
    assert pooled["runs_not_ok"] == "run 4: error (the loader died)"
    assert single["median_throughput"] == 101.0 and single["ci_method"] == "order statistic"
    assert (single["throughput_median"], single["throughput_level"], single["processes"]) == (
        101.0,
        0.0,
        1,
    )
