"""The loaders through the real workflow: `cpu_dataloader.loaders` naming thread and spdl adds
the decode settings measured with each, named after the loader, beside the process rows of a
run without them; every cpu_dataloader row of all_results.csv and of the throughput table
carries its loader, and results/tables/loaders.csv divides each thread or spdl row by its
process row (torchvision's env carries torchdata and SPDL: every row is ok)."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import REPO, library_env, raw_dir, run_snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_rows_per_loader_and_the_loaders_table(tmp_path_factory: pytest.TempPathFactory) -> None:
    library_env("torchvision")  # synced to its lock before the run
    workdir = tmp_path_factory.mktemp("loaders")
    run_snakemake(
        workdir, "--cores", "2", "results/tables/loaders.csv",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        "libraries=[torchvision]", "regimes=[cpu_dataloader]", "pipelines=[]",
        "cpu_dataloader={transforms: [HorizontalFlip], scopes: [decode], workers: [2], "
        "loaders: [process, thread, spdl]}",
    )  # fmt: skip
    files = sorted(
        p.name for p in (raw_dir(workdir, "smoke-test", "cpu_dataloader")).rglob("*.json")
    )
    assert files == [
        "decode-w2-s000.json",
        "decode-w2-spdl-s000.json",
        "decode-w2-thread-s000.json",
    ]
    tidy = pd.read_csv(workdir / "results/tables/all_results.csv")
    rows = tidy[tidy["regime"] == "cpu_dataloader"]
    assert sorted(rows["loader"]) == ["process", "spdl", "thread"]
    assert set(rows["status"]) == {"ok"}
    throughputs = pd.read_csv(workdir / "results/tables/throughputs_cpu_dataloader.csv")
    assert sorted(throughputs["loader"]) == ["process", "spdl", "thread"]
    table = pd.read_csv(workdir / "results/tables/loaders.csv")
    assert list(table["loader"]) == ["thread", "spdl"]
    thread = table.iloc[0]
    assert thread["status"] == "ok" and thread["ratio_vs_process"] > 0
    spdl = table.iloc[1]
    assert spdl["status"] == "ok" and spdl["ratio_vs_process"] > 0
