"""The cpu_dataloader engine with each loader (augbench/workload/loaders.py) in a library env on a
tiny staged dataset: every loader gives ok rows with its loader, throughput, first batch, CPU
utilisation and PSS (every torch env's lock carries torchdata and SPDL: envs/common.in); where
SPDL cannot be imported, its rows are `skipped`, naming the package to install."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, jpeg_manifest, run_engine

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


FORKED_THREADS = """
import threading, torch
from augbench.measuring.engines import skeleton

torch.ones(1000, 1000).sum()  # the parent has used torch's thread pool, as a job's parent has
torch.set_num_threads(1)


def four_threads_first_use_the_pool():
    errors, start = [], threading.Barrier(4)

    def flip():
        start.wait()
        try:
            torch.zeros(3, 256, 256, dtype=torch.uint8).flip(-1)
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=flip) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


failed = [e for _ in range(40) for e in skeleton.in_fresh_fork(four_threads_first_use_the_pool)]
print(len(failed), failed[:1])
"""


def test_threads_in_a_measurement_fork_use_torch_as_in_a_fresh_process(
    torchvision_env: Path,
) -> None:
    """Every measurement runs in a child forked from the job's process (skeleton.in_fresh_fork),
    where torch re-creates its thread pool on first use: racily when a thread loader's threads
    use it first together. The child re-creates it first, so none of 40 children fails."""
    done = subprocess.run(
        [str(torchvision_env), "-c", FORKED_THREADS], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[0] == "0", done.stdout
