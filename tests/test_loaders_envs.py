"""The cpu_dataloader engine with each loader (augbench/workload/loaders.py) in a library env on a
tiny staged dataset: process and thread give ok rows with their loader, throughput, first batch, CPU
utilisation and PSS; spdl gives ok rows where SPDL is installed in the env (torchvision's lock
carries it), else `skipped` rows naming the package to install."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import jpeg_manifest, run_engine

from augbench.workload import loaders

pytestmark = pytest.mark.envs


def test_each_loader_measures_the_decode_rows_or_says_why_not(
    torchvision_env: Path, tmp_path: Path
) -> None:
    manifest = jpeg_manifest(tmp_path, count=8)
    spdl_here = (
        subprocess.run([str(torchvision_env), "-c", "import spdl.pipeline"], check=False).returncode
        == 0
    )
    for name in loaders.NAMES:
        payload = run_engine(
            torchvision_env, "cpu_dataloader", "--library", "torchvision", "--scope", "decode",
            "--workers", "2", "--loader", name, "--manifest", str(manifest), "--num-images", "8",
            "--transforms", "HorizontalFlip", "--batch-size", "4", "--batches-per-run", "2",
            "--num-runs", "3", "--baseline-runs", "1", output=tmp_path / f"{name}.json",
        )  # fmt: skip
        row = payload["results"]["HorizontalFlip"]
        assert row["loader"] == name
        # What thread measures depends on the env (torchdata or the futures pool): recorded.
        assert row["loader_impl"] in (
            (loaders.FUTURES_IMPL, loaders.TORCHDATA_IMPL)
            if name == loaders.THREAD
            else (loaders.impl_of(name),)
        )
        if name == loaders.SPDL and not spdl_here:
            assert row["status"] == "skipped"
            assert row["reason"] == "loader spdl: not installed in this env (PyPI spdl==0.8.0)"
            continue
        assert row["status"] == "ok", row
        assert len(row["throughputs"]) >= 3 and row["first_batch_s"] > 0
        assert row["cpu_utilisation"] > 0 and (row["total_pss_mb"] or row["total_rss_mb"]) > 0
        params = payload["metadata"]["benchmark_params"]
        assert params["loader"] == name
        if name != loaders.DEFAULT:  # its rows only: no baselines
            assert params["baseline_runs"] == 0 and not row.get("bare_loop_throughputs")


def test_spdl_rows_are_skipped_naming_the_package_where_the_env_lacks_it(
    albumentationsx_env: Path, tmp_path: Path
) -> None:
    lacks = subprocess.run([str(albumentationsx_env), "-c", "import spdl"], check=False)
    if lacks.returncode == 0:
        pytest.skip("this env has SPDL")
    payload = run_engine(
        albumentationsx_env, "cpu_dataloader", "--library", "albumentationsx", "--scope",
        "decode", "--workers", "2", "--loader", "spdl", "--manifest",
        str(jpeg_manifest(tmp_path, count=4)), "--num-images", "4", "--transforms",
        "HorizontalFlip", "--batch-size", "2", output=tmp_path / "spdl.json",
    )  # fmt: skip
    (row,) = payload["results"].values()
    assert row["status"] == "skipped" and row["loader"] == "spdl"
    assert row["reason"] == "loader spdl: not installed in this env (PyPI spdl==0.8.0)"
