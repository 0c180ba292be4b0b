"""Decoders and loaders as factors through the real workflow: `cpu_dataloader.decoders` and
`cpu_dataloader.loaders` add the decode scope's settings for the recipes and the pipelines
(named <setting>-<decoder>-<loader>), every row names its decoder and loader, and the answer
names the fastest library x decoder x loader with its gain over the library's own decode in
worker processes."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import REPO, library_env, run_snakemake

from augbench.analysis import feeds

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_decoders_and_loaders_reach_the_rows_and_the_answer(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    library_env("albumentationsx")
    workdir = tmp_path_factory.mktemp("feeds")
    run_snakemake(
        workdir, "--cores", "2", "results/tables/recommendation.csv",
        "results/tables/all_results.csv",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        "libraries=[albumentationsx]", "regimes=[cpu_dataloader]",
        "pipelines=[config/pipelines/train_light.yaml]",
        "cpu_dataloader={transforms: [HorizontalFlip], scopes: [decode], workers: [1], "
        "decoders: [native, simplejpeg], loaders: [process, thread]}",
        "pipeline_runs={dataloader_scopes: [decode], dataloader_workers: [1], breakdown: false}",
    )  # fmt: skip
    raw = workdir / "results/raw/smoke-test"
    names = sorted(p.name for p in raw.glob("*/cpu_dataloader/albumentationsx/decode-w1*.json"))
    assert names == [
        "decode-w1-s000.json", "decode-w1-simplejpeg-s000.json",
        "decode-w1-simplejpeg-thread-s000.json", "decode-w1-thread-s000.json",
    ]  # fmt: skip
    piped_raw = workdir / "results/pipelines/raw/smoke-test"
    piped = sorted(p.name for p in piped_raw.glob("*/cpu_dataloader/albumentationsx/*.json"))
    assert piped == [
        "decode-w1-simplejpeg-thread.json", "decode-w1-simplejpeg.json",
        "decode-w1-thread.json", "decode-w1.json",
    ]  # fmt: skip
    tidy = pd.read_csv(workdir / "results/tables/all_results.csv")
    dl = tidy[tidy["regime"] == "cpu_dataloader"]
    assert set(zip(dl["decoder"], dl["loader"], strict=True)) == {
        ("native", "process"), ("simplejpeg", "process"),
        ("native", "thread"), ("simplejpeg", "thread"),
    }  # fmt: skip
    assert (dl["status"] == "ok").all(), dl[dl["status"] != "ok"][["transform", "reason"]]
    answer = pd.read_csv(workdir / "results/tables/recommendation.csv")
    (row,) = answer.to_dict("records")
    assert (row["decoder"], row["loader"]) == ("native", "process")  # the library ranking's
    assert set(feeds.COLUMNS) <= set(answer.columns)
    assert row["feed_library"] == "albumentationsx"
    assert (row["feed_decoder"], row["feed_loader"]) in {
        ("native", "process"), ("simplejpeg", "process"),
        ("native", "thread"), ("simplejpeg", "thread"),
    }  # fmt: skip
    assert row["feed_gain"] >= 1.0 and isinstance(row["feed_answer"], str)
    page = (workdir / "results/analysis/recommendation.md").read_text()
    assert "fastest decoder x loader" in page
