"""Kill the aggregate step of the real workflow while it writes its tables: no half-written table
is ever there to read, and --rerun-incomplete rebuilds them. (Killing a benchmark job and resuming
is tests/test_cloud.py::test_sigkilled_job_leaves_no_result_and_the_rerun_recovers_exactly_it.)"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, SMOKE_CONFIG, WorkflowRun, copy_of, run_snakemake

# The session's smoke run, copied: its configuration and machine label.
CONFIG = SMOKE_CONFIG
MACHINE = "smoke-test"
BIG_ROWS = 10_000


def _plant_big_results(workdir: Path) -> Path:
    """A large result file of another dataset on this machine: an input of aggregate (the tables
    keep every dataset) that makes writing all_results.csv take long enough to be killed in."""
    row = {"status": "ok", "supported": True, "early_stopped": False, "median_throughput": 100.0}
    payload = {
        "metadata": {"library": "pillow", "regime": "micro", "dataset": {"name": "big"}},
        "results": {f"T{i:06d}": {**row, "median_throughput": 100.0 + i} for i in range(BIG_ROWS)},
    }
    path = workdir / f"results/raw/{MACHINE}/big-000000000000/micro/pillow/s000.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.workflow
def test_killed_aggregate_leaves_no_half_written_table(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    work = copy_of(smoke_run, tmp_path / "work").workdir
    tables = work / "results/tables"
    before = {p.name: p.read_bytes() for p in tables.glob("*.csv")}
    assert "all_results.csv" in before
    rows_before = len(pd.read_csv(io.BytesIO(before["all_results.csv"])))

    _plant_big_results(work)
    cmd = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(work), "--workflow-profile", str(REPO / "profiles" / "default"),
        "--cores", "2", "aggregate", *CONFIG,
    ]  # fmt: skip

    def partial() -> Path | None:
        for tmp in tables.glob(".*.csv.tmp"):
            try:
                if tmp.stat().st_size > 0:
                    return tmp
            except FileNotFoundError:  # renamed into place between glob and stat
                pass
        return None

    with (tmp_path / "killed.log").open("w") as log:
        # Niced, so that this loop sees the writer's temporary file on a busy machine.
        driver = subprocess.Popen(
            ["nice", "-n", "19", *cmd],
            cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        # Kill once part of a new table is on disk.
        while (victim := partial()) is None:
            assert driver.poll() is None, (tmp_path / "killed.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "aggregate never started writing"
            time.sleep(0.001)
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and aggregate, mid-write
        driver.wait(timeout=30)
    # Snakemake removed the old tables when aggregate started; killed while the new table was
    # being written, readers find either no table or a complete one: the partial data is only
    # in the hidden temporary file, which nothing reads.
    target = tables / victim.name.removeprefix(".").removesuffix(".tmp")
    if victim.exists():  # killed mid-write: the partial table is only the hidden temporary file
        assert victim.stat().st_size > 0 and not target.exists()
    if (tables / "all_results.csv").exists():  # written completely before the kill
        assert len(pd.read_csv(tables / "all_results.csv")) == BIG_ROWS + rows_before
    for path in tables.glob("*.csv"):
        pd.read_csv(path)  # every visible table parses completely

    run_snakemake(work, "--unlock", *CONFIG)
    # --rerun-incomplete rebuilds the tables (figures of 10k transforms are not the point), with no
    # benchmark re-run.
    redo = run_snakemake(work, "--cores", "2", "--rerun-incomplete", "aggregate", *CONFIG)
    assert "rule micro" not in redo.stdout + redo.stderr
    assert {p.name for p in tables.glob("*.csv")} == set(before)
    table = pd.read_csv(tables / "all_results.csv")
    assert len(table) == BIG_ROWS + rows_before
    assert set(table["dataset"]) == {
        "big",
        *pd.read_csv(io.BytesIO(before["all_results.csv"]))["dataset"],
    }
    assert not list(tables.glob(".*.tmp"))  # the rerun's writes replaced the leftover
