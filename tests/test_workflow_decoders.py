"""The decoders table through the real workflow: `cpu_dataloader.decoders` naming decoders besides
`native` plans one decoders job in AlbumentationsX's env, and `aggregate` writes
results/tables/decoders.csv with a row per listed decoder, kept out of the DataLoader's own
tables."""

from __future__ import annotations

import ctypes.util

import pandas as pd
import pytest
from conftest import REPO, library_env, run_snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

DECODERS = ["native", "pil", "opencv", "torchvision", "simplejpeg", "turbojpeg"]


def test_the_decoders_table_is_produced(tmp_path_factory: pytest.TempPathFactory) -> None:
    library_env("albumentationsx")
    workdir = tmp_path_factory.mktemp("decoders")
    run_snakemake(
        workdir, "--cores", "2", "results/tables/decoders.csv",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        "libraries=[albumentationsx]", "regimes=[cpu_dataloader]", "pipelines=[]",
        # No recipe through the DataLoader: the decoders job alone.
        f"cpu_dataloader={{transforms: [], decoders: [{', '.join(DECODERS)}]}}",
    )  # fmt: skip
    table = pd.read_csv(workdir / "results/tables/decoders.csv")
    assert list(table["decoder"]) == DECODERS
    assert set(table["library_env"]) == {"albumentationsx"}
    assert set(table["image_size"]) == {"as staged"}
    turbo_here = ctypes.util.find_library("turbojpeg") is not None
    ok = table[table["status"] == "ok"]
    assert set(ok["decoder"]) == set(DECODERS) - (set() if turbo_here else {"turbojpeg"})
    assert (ok["ci_low"] <= ok["img_s_per_core"]).all()
    assert (ok["img_s_per_core"] <= ok["ci_high"]).all()
    assert (ok["n"] >= 1).all()
    if not turbo_here:
        skipped = table[table["decoder"] == "turbojpeg"].iloc[0]
        assert skipped["status"] == "skipped" and "install libturbojpeg0" in skipped["reason"]
    # Decode-only rows are their own regime: no DataLoader table ranks them.
    tidy = pd.read_csv(workdir / "results/tables/all_results.csv")
    assert set(tidy["regime"]) == {"decoders"}
    throughputs = (workdir / "results/tables/throughputs_cpu_dataloader.csv").read_text()
    assert "simplejpeg" not in throughputs
