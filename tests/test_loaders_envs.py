"""The cpu_dataloader engine with each loader (augbench/workload/loaders.py) in a library env on a
tiny staged dataset: every loader gives ok rows with its loader, throughput, first batch, CPU
utilisation and PSS (every torch env's lock carries torchdata and SPDL: envs/common.in); where
SPDL cannot be imported, its rows are `skipped`, naming the package to install."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import jpeg_manifest, run_engine

from augbench.workload import loaders

pytestmark = pytest.mark.envs


def test_each_loader_measures_the_decode_rows_or_says_why_not(
    torchvision_env: Path, tmp_path: Path
) -> None:
    manifest = jpeg_manifest(tmp_path, count=8)
    for name in loaders.NAMES:
        payload = run_engine(
            torchvision_env, "cpu_dataloader", "--library", "torchvision", "--scope", "decode",
            "--workers", "2", "--loader", name, "--manifest", str(manifest), "--num-images", "8",
            "--transforms", "HorizontalFlip", "--batch-size", "4", "--batches-per-run", "2",
            "--num-runs", "3", "--baseline-runs", "1", output=tmp_path / f"{name}.json",
        )  # fmt: skip
        row = payload["results"]["HorizontalFlip"]
        assert row["loader"] == name
        # thread measures torchdata's mapper: the lock carries torchdata.
        expected = loaders.TORCHDATA_IMPL if name == loaders.THREAD else loaders.impl_of(name)
        assert row["loader_impl"] == expected
        assert row["status"] == "ok", row
        assert len(row["throughputs"]) >= 3 and row["first_batch_s"] > 0
        assert row["cpu_utilisation"] > 0 and (row["total_pss_mb"] or row["total_rss_mb"]) > 0
        params = payload["metadata"]["benchmark_params"]
        assert params["loader"] == name
        if name != loaders.DEFAULT:  # its rows only: no baselines
            assert params["baseline_runs"] == 0 and not row.get("bare_loop_throughputs")


def test_spdl_measures_another_library_and_is_skipped_naming_the_package_where_missing(
    albumentationsx_env: Path, tmp_path: Path
) -> None:
    """AlbumentationsX's env has SPDL too (ok rows); with SPDL not importable the same job writes
    its rows ``skipped`` with one line naming the PyPI pin."""
    manifest = str(jpeg_manifest(tmp_path, count=4))
    args = [
        "--library", "albumentationsx", "--scope", "decode", "--workers", "2", "--loader",
        "spdl", "--manifest", manifest, "--num-images", "4", "--transforms", "HorizontalFlip",
        "--batch-size", "2",
    ]  # fmt: skip
    payload = run_engine(
        albumentationsx_env, "cpu_dataloader", *args, output=tmp_path / "spdl.json"
    )
    (row,) = payload["results"].values()
    assert row["status"] == "ok" and row["loader"] == "spdl", row
    # SPDL made unimportable in the job and every process it starts: an env without it.
    hidden = run_engine(
        albumentationsx_env, "cpu_dataloader", *args, output=tmp_path / "hidden.json",
        hide=("spdl",),
    )  # fmt: skip
    (row,) = hidden["results"].values()
    assert row["status"] == "skipped" and row["loader"] == "spdl"
    assert row["reason"] == "loader spdl: not installed in this env (PyPI spdl==0.8.0)"
