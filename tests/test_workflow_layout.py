"""The real workflow on the input-layout pieces: the micro layout variant (native and contiguous
shards of torchvision, native only for AlbumentationsX), the input and output layout recorded
with every row, and the lazy-output diagnostic's table, flags and summary section."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, raw_dir, run_snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

MACHINE = "layout-test"
CONFIG = (
    "--config",
    "preset=smoke",
    f"machine={MACHINE}",
    f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
    "libraries=[albumentationsx,torchvision]",
    "regimes=[micro]",
    "transforms=[HorizontalFlip,RandomCrop224]",
)
# Nested numbers need YAML (--config passes them as strings).
CONFIGFILE = (
    "micro: {layouts: [native, contiguous]}\nlazy_outputs: {num_images: 4, repeats: 2}\n"
    "pipelines: []\n"  # layouts and the lazy-output diagnostic are tested, not the pipelines
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("layout")
    (workdir / "layout.yaml").write_text(CONFIGFILE)
    # What the tests read (the figures are tested on the session's smoke run).
    targets = [
        f"results/{name}"
        for name in (
            "tables/speedups_micro.csv",
            "tables/all_results.csv",
            "analysis/lazy_outputs.csv",
            "analysis/lazy_outputs.md",
            "analysis/summary.md",
        )
    ]
    run_snakemake(workdir, "--cores", "2", *targets, "--configfile", "layout.yaml", *CONFIG)
    return workdir


def _rows(path: Path) -> tuple[dict, dict]:
    payload = json.loads(path.read_text())
    return payload["metadata"], payload["results"]


def test_layout_variant_shards_and_recorded_layouts(run: Path) -> None:
    raw = raw_dir(run, MACHINE, "micro")
    assert sorted(p.name for p in (raw / "torchvision").glob("*.json")) == [
        "contiguous-s000.json",
        "s000.json",
    ]
    assert [p.name for p in (raw / "albumentationsx").glob("*.json")] == ["s000.json"]
    meta, rows = _rows(raw / "torchvision/s000.json")
    assert meta["layout"] == "native" and not meta.get("variant")
    flip = rows["HorizontalFlip"]
    assert flip["status"] == "ok", flip
    assert flip["input_layout"]["memory_format"] == "channels_last"
    assert flip["input_layout"]["strides"][0] == 1
    assert flip["output_layout"]["memory_format"] == "channels_last"
    assert flip["materialize_copies"] is False  # an owned channels-last output is not relaid
    crop = rows["RandomCrop224"]
    assert crop["output_shares_input_memory"] and crop["materialize_copies"]
    meta, rows = _rows(raw / "torchvision/contiguous-s000.json")
    assert meta["layout"] == "contiguous" and meta["variant"] == "contiguous-input"
    assert rows["HorizontalFlip"]["input_layout"]["memory_format"] == "contiguous"
    _, rows = _rows(raw / "albumentationsx/s000.json")
    assert rows["HorizontalFlip"]["input_layout"]["memory_format"] == "contiguous"
    assert rows["HorizontalFlip"]["materialize_copies"] is True  # a negative-stride view


def test_speedups_never_mix_layouts(run: Path) -> None:
    table = pd.read_csv(run / "results/tables/speedups_micro.csv", keep_default_na=False)
    contiguous = table[table["variant"] == "contiguous-input"]
    assert set(contiguous["library"]) == {"torchvision"}
    assert (contiguous["speedup"].astype(str).isin(["", "nan"])).all()  # no competitor
    tidy = pd.read_csv(run / "results/tables/all_results.csv", keep_default_na=False)
    assert set(tidy["layout"]) == {"native", "contiguous"}


def test_lazy_output_table_flags_and_summary(run: Path) -> None:
    lazy = pd.read_csv(run / "results/analysis/lazy_outputs.csv")
    assert set(lazy["library"]) == {"albumentationsx", "torchvision"}
    assert set(lazy["transform"]) == {"HorizontalFlip", "RandomCrop224"}
    flips = lazy[lazy["transform"] == "HorizontalFlip"].set_index("library")
    row = flips.loc["albumentationsx"]
    assert row["shares_input_memory"] and row["output_memory_format"] == "strided"
    assert json.loads(row["output_strides"])[1] < 0
    assert not row["same_object_twice"]
    assert row["call_us"] > 0 and row["call_materialize_us"] > 0
    assert not flips.loc["torchvision", "materialize_copies"]
    page = (run / "results/analysis/lazy_outputs.md").read_text()
    summary = (run / "results/analysis/summary.md").read_text()
    assert "Rows dominated by materialization" in summary
    for _, r in lazy[lazy["materialize_dominates"].astype(bool)].iterrows():
        line = f"| {r['library']} | {r['transform']} |"
        assert line in page and line in summary
