"""A DataLoader row measured in several fresh processes (--processes): one value per process, the
row's interval over them (augbench.decision), a failed process named, and sized windows."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from augbench.measuring.engines.dataloader import processes
from augbench.measuring.stopping import MAX_WINDOW_BATCHES, window_batches
from augbench.results import ok_row
from tests.conftest import env_python, jpeg_manifest, run_engine


def process_row(epochs: list[float], **extra: object) -> dict:
    return ok_row(epochs, [64 / v for v in epochs], warmup_iterations=1, **extra)


def test_a_row_holds_one_value_per_process_and_their_interval() -> None:
    first = process_row([100.0, 104.0], steady_throughputs=[110.0], minor_faults_per_image=10.0)
    later = [
        {"rows": {"r": processes.process_fields(process_row([v, v + 2.0]))}}
        for v in (80.0, 90.0, 120.0, 130.0)
    ]
    row = processes.merged(first, later, "r")
    # Each process's median epoch: 102, 81, 91, 121, 131.
    assert row["process_throughputs"] == [102.0, 81.0, 91.0, 121.0, 131.0]
    assert row["median_throughput"] == row["process_median"] == 102.0
    # Five processes: [min, max] at 93.75 %, the level achieved.
    assert (row["ci_low"], row["ci_high"]) == (81.0, 131.0)
    assert row["ci_level"] == row["process_level"] == pytest.approx(0.9375)
    assert row["processes"] == 5 and len(row["throughputs"]) == 10
    assert row["throughputs_by_process"][0] == [100.0, 104.0]
    assert row["process_steady_throughputs"] == [110.0]
    assert "processes_not_ok" not in row


def test_a_failed_later_process_is_named_and_the_others_kept() -> None:
    first = process_row([100.0])
    later = [
        {"rows": {"r": processes.process_fields(process_row([90.0]))}},
        {"error": "process 3's fresh interpreter was killed by signal 9 before writing"},
    ]
    row = processes.merged(first, later, "r")
    assert row["process_throughputs"] == [100.0, 90.0]
    assert "process 3: error (process 3's fresh interpreter was killed" in row["processes_not_ok"]


def test_a_row_not_ok_in_the_first_process_is_kept_as_it_is() -> None:
    first = {"status": "unsupported", "reason": "no such step", "throughputs": []}
    assert processes.merged(first, [{"rows": {}}], "r") is first


def test_a_window_lasts_about_the_seconds_asked_in_whole_rounds() -> None:
    # 100 img/s per process, 2 workers on 2 cores: 200 img/s, 1 s = 200 images = 7 batches of
    # 32, rounded up to 8 (a whole number per worker).
    assert window_batches(1.0, 100.0, 32, 2, 2, 2) == 8
    # Never fewer than batches_per_run, never more than the cap.
    assert window_batches(0.01, 100.0, 32, 4, 2, 2) == 4
    assert window_batches(600.0, 1e6, 32, 2, 2, 2) == MAX_WINDOW_BATCHES
    # 0 s or no rate: batches_per_run, as without sizing.
    assert window_batches(0.0, 100.0, 32, 3, 2, 2) == 4
    assert window_batches(1.0, 0.0, 32, 2, 0, 2) == 2


def test_the_engine_measures_every_row_in_fresh_processes(tmp_path: Path) -> None:
    manifest = jpeg_manifest(tmp_path, count=4)
    payload = run_engine(
        env_python("pillow"), "cpu_dataloader", "--library", "pillow",
        "--transforms", "HorizontalFlip,Rotate", "--manifest", str(manifest),
        "--num-images", "4", "--scope", "decode", "--workers", "0", "--batch-size", "2",
        "--batches-per-run", "1", "--num-runs", "1", "--baseline-runs", "0",
        "--processes", "3", "--window-seconds", "0.05",
        output=tmp_path / "out.json",
    )  # fmt: skip
    assert payload["metadata"]["benchmark_params"]["processes"] == 3
    for row in payload["results"].values():
        assert row["status"] == "ok", row.get("reason")
        assert len(row["process_throughputs"]) == 3 == row["processes"]
        assert row["ci_level"] == pytest.approx(0.75)  # three processes: [min, max] at 75 %
        assert len(row["minor_faults_per_image_by_process"]) == 3


def test_a_window_sized_by_time_sizes_the_decode_floor_beside_it(tmp_path: Path) -> None:
    """A decode row with baselines whose timed epoch is sized by time (more batches than
    --batches-per-run) times its decode floor over as many files: each arm decodes one epoch."""
    manifest = jpeg_manifest(tmp_path, count=4)
    payload = run_engine(
        env_python("pillow"), "cpu_dataloader", "--library", "pillow",
        "--transforms", "HorizontalFlip", "--manifest", str(manifest), "--num-images", "4",
        "--scope", "decode", "--workers", "0", "--batch-size", "2", "--batches-per-run", "1",
        "--num-runs", "2", "--baseline-runs", "2", "--window-seconds", "0.05",
        output=tmp_path / "out.json",
    )  # fmt: skip
    (row,) = payload["results"].values()
    assert row["status"] == "ok", row.get("reason")
    assert row["window_batches"] > 1  # sized by time, beyond --batches-per-run
    assert len(row["decode_floor_throughputs"]) == 2


def test_the_default_preset_measures_each_ranked_row_in_five_processes() -> None:
    import yaml

    from augbench.planning import sweep
    from augbench.planning.config import deep_merge, resolve

    repo = Path(__file__).resolve().parents[1]
    base = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    s = sweep.Sweep(resolve(deep_merge(base, {"preset": "default", "machine": "m"}), repo), "d")
    flags = {}
    for job in s.jobs():
        if job.rule in ("pipeline_dataloader", "pipeline_breakdown"):
            words = sweep.engine_command(s, job.kind, s.wildcards_of(job)).split()
            flags[job.rule] = dict(itertools.pairwise(words))
    loader = flags["pipeline_dataloader"]
    assert (loader["--processes"], loader["--window-seconds"], loader["--num-runs"]) == (
        "5",
        "0.5",
        "1",
    )
    # The one-thread breakdown is left out (the 5-minute budget); turned on, it runs one value
    # per process, 5 values: 5 rounds, each a process of each kind of pass.
    assert "pipeline_breakdown" not in flags
    assert not any(job.rule == "cpu_dataloader" for job in s.jobs())  # pipelines only
    on = resolve(
        deep_merge(
            base, {"preset": "default", "machine": "m", "pipeline_runs": {"breakdown": True}}
        ),
        repo,
    )
    s = sweep.Sweep(on, "d")
    job = next(j for j in s.jobs() if j.rule == "pipeline_breakdown")
    breakdown = dict(
        itertools.pairwise(sweep.engine_command(s, job.kind, s.wildcards_of(job)).split())
    )
    assert (breakdown["--values-per-process"], breakdown["--min-values"]) == ("1", "5")
