"""The allocator as a sweep dimension, through the real workflow at smoke size (issue 28's check):
with ``allocators=[glibc,mimalloc,jemalloc]`` AlbumentationsX's micro, pipeline breakdown and
pipeline DataLoader jobs run once per setting, each in its own files; the mimalloc rows prove
mimalloc was loaded (the library mapped into the timed process, its version read from it); a
setting this machine lacks is a `skipped` row per transform with the reason, never a failed run;
the allocator-effect tables pair every setting's row with glibc's, and the figure is drawn."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, run_snakemake

from augbench.measuring import allocator

pytestmark = pytest.mark.workflow

JEMALLOC_HERE = any(os.path.exists(p) for p in allocator.JEMALLOC_PATHS)


@pytest.fixture(scope="module")
def allocator_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("allocators")
    run_snakemake(
        workdir, "--cores", "2",
        # What the tests read: the tables, the figures and the pipelines' allocator figure.
        *(f"results/tables/{t}.csv" for t in ("all_results", "speedups_micro",
                                              "allocator_effect", "allocator_effect_pipelines")),
        "results/figures", "results/analysis/allocator_effect_pipelines.png",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        "libraries=[albumentationsx]", "regimes=[micro,cpu_dataloader]",
        "allocators=[glibc,mimalloc,jemalloc]",
        # One DataLoader setting per worker count is enough to pair each setting with glibc's.
        "cpu_dataloader={scopes: [memory], transforms: [HorizontalFlip]}",
        "pipeline=config/pipelines/highres_segmentation.yaml",
        "lazy_outputs={enabled: false}",
    )  # fmt: skip
    return workdir


def _raw(workdir: Path, folder: str) -> dict:
    found = list((workdir / "results/raw/smoke-test").glob(f"*/micro/{folder}/s000.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def test_each_setting_has_its_own_files_and_mimalloc_is_loaded(allocator_run: Path) -> None:
    glibc = _raw(allocator_run, "albumentationsx")
    mimalloc = _raw(allocator_run, "albumentationsx+mimalloc")
    assert glibc["metadata"]["allocator"]["name"] == "glibc"
    assert glibc["metadata"]["allocator_setting"] == "glibc"
    loaded = mimalloc["metadata"]["allocator"]
    assert loaded["name"] == "mimalloc" and "libmimalloc" in loaded["library"]
    assert loaded["version"].startswith("3.") and loaded["env"]["LD_PRELOAD"] == loaded["library"]
    for row in mimalloc["results"].values():
        assert row["status"] == "ok" and row["process_allocator"] == "mimalloc"
    pipelines = list((allocator_run / "results/pipelines/raw/smoke-test").glob("*/*/*/*.json"))
    assert {p.parent.name for p in pipelines} == {
        "albumentationsx",
        "albumentationsx+mimalloc",
        "albumentationsx+jemalloc",
    }


@pytest.mark.skipif(JEMALLOC_HERE, reason="jemalloc is installed here: nothing is skipped")
def test_a_setting_this_machine_lacks_is_skipped_rows_with_the_reason(allocator_run: Path) -> None:
    skipped = _raw(allocator_run, "albumentationsx+jemalloc")
    assert skipped["metadata"]["allocator_setting"] == "jemalloc"
    for row in skipped["results"].values():
        assert row["status"] == "skipped" and "jemalloc is not installed" in row["reason"]
    tidy = pd.read_csv(allocator_run / "results/tables/all_results.csv")
    rows = tidy[tidy["allocator_setting"] == "jemalloc"]
    assert set(rows["status"]) == {"skipped"} and set(rows["regime"]) == {"micro", "cpu_dataloader"}
    assert len(rows[rows["regime"] == "micro"]) == 3


def test_the_tidy_rows_keep_settings_apart(allocator_run: Path) -> None:
    tidy = pd.read_csv(allocator_run / "results/tables/all_results.csv")
    ok = tidy[tidy["status"] == "ok"]
    assert set(ok["allocator_setting"]) == {"glibc", "mimalloc"}
    assert set(ok.loc[ok["allocator_setting"] == "mimalloc", "allocator"]) == {"mimalloc"}
    variants = ok.groupby("allocator_setting")["variant"].apply(lambda v: set(v.fillna("")))
    assert variants["glibc"] == {""} and variants["mimalloc"] == {"allocator mimalloc"}
    speedups = pd.read_csv(allocator_run / "results/tables/speedups_micro.csv")
    # Each setting ranked on its own (jemalloc's skipped rows listed, never ranked).
    variants = set(speedups["variant"].fillna(""))
    assert (
        {"", "allocator mimalloc"} <= variants <= {"", "allocator mimalloc", "allocator jemalloc"}
    )


def test_the_allocator_effect_tables_pair_each_setting_with_glibc(allocator_run: Path) -> None:
    effect = pd.read_csv(allocator_run / "results/tables/allocator_effect.csv")
    assert set(effect["regime"]) == {"micro", "cpu_dataloader"}
    effect = effect[effect["regime"] == "micro"]
    mimalloc = effect[effect["setting"] == "mimalloc"]
    assert set(mimalloc["transform"]) == {"HorizontalFlip", "GaussianBlur", "ColorJitter"}
    assert (mimalloc["time_vs_glibc"] > 0).all() and (mimalloc["allocator"] == "mimalloc").all()
    ratio = mimalloc["glibc_ms_per_image"] / mimalloc["setting_ms_per_image"]
    assert (abs(ratio - 1 / mimalloc["time_vs_glibc"]) < 1e-6).all()
    if not JEMALLOC_HERE:
        jemalloc = effect[effect["setting"] == "jemalloc"]
        assert len(jemalloc) == 3 and set(jemalloc["status"]) == {"skipped"}
        assert jemalloc["time_vs_glibc"].isna().all()
    pipelines = pd.read_csv(allocator_run / "results/tables/allocator_effect_pipelines.csv")
    whole = pipelines[(pipelines["setting"] == "mimalloc") & pipelines["step"].isna()]
    assert set(whole["regime"]) == {"micro", "cpu_dataloader"}
    assert set(whole["transform"]) == {"highres_segmentation"}
    assert (whole["time_vs_glibc"] > 0).all()
    figures = [
        allocator_run / "results/figures/allocator_effect.png",
        allocator_run / "results/analysis/allocator_effect_pipelines.png",
    ]
    assert all(f.stat().st_size > 0 for f in figures)
    caption = (
        allocator_run / "results/analysis/allocator_effect_pipelines.caption.txt"
    ).read_text()
    assert "highres_segmentation" in caption
