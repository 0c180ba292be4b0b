"""The sweep estimate's arithmetic, on a result file and benchmark timing with known numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from augbench import cost


def _local_run(root: Path) -> Path:
    raw = root / "results/raw/laptop/micro/pillow"
    raw.mkdir(parents=True)
    params = {"num_images": 10, "processes": 1, "values": 2, "warmups": 1}
    rows = {
        # 30 timed images at 100 img/s = 0.3 s; the other 1.0 s of its 1.3 s is process overhead.
        "HorizontalFlip": {"status": "ok", "median_throughput": 100.0, "wall_seconds": 1.3},
        "ColorJitter": {"status": "unsupported", "reason": "no hue"},
        "Rotate": {"status": "early_stopped", "reason": "slow", "wall_seconds": 4.0},
    }
    (raw / "s000.json").write_text(
        json.dumps({"metadata": {"benchmark_params": params}, "results": rows})
    )
    bench = root / "benchmarks/laptop/micro/pillow"
    bench.mkdir(parents=True)
    # 7.3 s in all: 5.3 s in the transforms' processes, 2.0 s of job overhead.
    (bench / "s000.tsv").write_text("s\th:m:s\tmax_rss\n7.3\t0:00:07\t100\n")
    return root


def test_estimate_scales_measured_work_and_keeps_overheads(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    model = models[("micro", "pillow")]
    assert model.job_overhead_s == pytest.approx(2.0)
    target = {
        "regimes": ["micro"],
        "libraries": ["pillow"],
        "transforms": ["HorizontalFlip", "ColorJitter", "Rotate", "Affine"],
        "num_images": 100,
        "micro": {"processes": 2, "values": 3, "warmups": 1, "shard_size": 2},
        "cloud": {
            "regimes": {"micro": {"machine_type": "c3-standard-4"}},
            "prices_usd_per_hour": {"c3-standard-4": 0.36},
        },
    }
    (micro,), missing = cost.estimate(target, models, vm_start_s=60.0)
    assert missing == []
    # 800 timed images at 100 img/s + 2 processes x 1.0 s = 10 s per measured transform.
    flip, jitter, rotate = 10.0, 0.0, 4.0
    affine = 10.0  # not in the local run: the library's typical measured transform
    assert micro.jobs == 2
    assert micro.job_seconds == pytest.approx([60 + 2 + flip + jitter, 60 + 2 + rotate + affine])
    assert micro.usd == pytest.approx(sum(micro.job_seconds) / 3600 * 0.36)


def test_missing_measurements_are_reported_not_dropped(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    target = {
        "regimes": ["micro", "dali"],
        "libraries": ["pillow", "kornia"],
        "transforms": ["HorizontalFlip"],
        "num_images": 10,
        "micro": {"processes": 1, "values": 1, "warmups": 0, "shard_size": 1},
        "cloud": {"regimes": {"micro": {"machine_type": "x-1"}}, "prices_usd_per_hour": {}},
    }
    _, missing = cost.estimate(target, models, vm_start_s=0.0)
    assert any(m.startswith("micro/kornia") for m in missing)
    assert any("no price for x-1" in m for m in missing)
    assert any(m.startswith("dali") for m in missing)


def test_estimate_command_without_a_local_run_says_what_to_do(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "workflow/scripts/estimate_cost.py"), "--from", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "run the workflow locally first" in proc.stderr


def test_estimate_command_prints_the_paper_sweep(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "workflow/scripts/estimate_cost.py"), "--preset", "paper",
         "--from", str(_local_run(tmp_path))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "micro" in proc.stdout and "c3-standard-4" in proc.stdout
    assert "USD" in proc.stdout and "prices:" in proc.stdout
    assert "not estimated: micro/albumentationsx" in proc.stdout
