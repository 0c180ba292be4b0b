"""Resolution sweep through the real workflow at smoke scale: derived datasets built once, rows
labelled with their resolution, the scaling table and the figure written, reruns doing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, SMOKE_CONFIG, run_snakemake

pytestmark = pytest.mark.workflow

# The smoke config (later --config entries win), one cheap library, micro only.
# Resolutions are what is tested: no pipelines, no lazy-output diagnostic (jobs of their own;
# the smoke config names pipelines, so they are emptied after it).
CONFIG = (
    "--configfile", str(REPO / "tests/fixtures/without-diagnostics.yaml"),
    *SMOKE_CONFIG, "libraries=[pillow]", "regimes=[micro]", "pipelines=[]",
)  # fmt: skip


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("resolution")
    run_snakemake(workdir, "--cores", "2", *CONFIG, "resolutions=[32,64]")
    return workdir


def _derived(workdir: Path) -> dict[int, Path]:
    manifests = {}
    for path in (workdir / "results/data").glob("*/manifest.json"):
        doc = json.loads(path.read_text())
        if doc.get("resolution"):
            manifests[int(doc["resolution"])] = path
    return manifests


def test_each_resolution_is_a_derived_dataset_with_its_own_key(sweep: Path) -> None:
    derived = _derived(sweep)
    assert sorted(derived) == [32, 64]
    for resolution, manifest in derived.items():
        doc = json.loads(manifest.read_text())
        assert doc["key"].startswith(f"default-24-r{resolution}-")
        assert doc["base_key"].startswith("default-24-") and doc["resize"]["images"] == 24
        assert all(min(f["width"], f["height"]) == resolution for f in doc["files"])
        assert (sweep / "results/data/archives" / f"{doc['key']}.tar").is_file()
        assert (sweep / "results/raw/smoke-test" / doc["key"] / "micro/pillow").is_dir()


def test_rows_carry_resolution_and_their_dataset(sweep: Path) -> None:
    frame = pd.read_csv(sweep / "results/tables/all_results.csv")
    by_res = frame.groupby(frame["resolution"].fillna(0).astype(int))["dataset"].unique()
    assert sorted(by_res.index) == [0, 32, 64]  # 0: the staged images as they are
    assert all(len(keys) == 1 for keys in by_res)
    assert len({keys[0] for keys in by_res}) == 3
    at32 = frame[frame["resolution"] == 32]
    assert (at32["megapixels"] < 32 * 64 / 1e6).all()


def test_scaling_table_and_figure(sweep: Path) -> None:
    table = pd.read_csv(sweep / "results/tables/resolution_scaling.csv")
    flip = table[(table["library"] == "pillow") & (table["transform"] == "HorizontalFlip")]
    assert list(flip["resolutions_ok"]) == ["32;64"]
    assert flip["grows_faster_than_pixels"].notna().all()
    figures = sweep / "results/figures"
    assert (figures / "throughput_vs_resolution.png").stat().st_size > 5000
    assert "megapixels" in (figures / "throughput_vs_resolution.caption.txt").read_text()


def test_rerun_and_a_smaller_sweep_schedule_nothing(sweep: Path) -> None:
    stamps = {p: p.stat().st_mtime_ns for p in _derived(sweep).values()}
    for extra in ("resolutions=[32,64]", "resolutions=[32]"):
        proc = run_snakemake(sweep, "-n", *CONFIG, extra)
        assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    run_snakemake(sweep, "--cores", "1", *CONFIG, "resolutions=[32,64]")
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_a_resize_takes_the_benchmark_slot_as_every_timed_job_does(tmp_path: Path) -> None:
    """A resize reads and writes every image: it must not share the cores of a measurement, so it
    takes the one bench_slot (the default profile's) that timed jobs take."""
    proc = run_snakemake(tmp_path, "-n", *CONFIG, "resolutions=[32,64]")
    jobs = (proc.stdout + proc.stderr).split("\nrule ")
    blocks = {
        rule: [b for b in jobs if b.startswith(f"{rule}:")] for rule in ("resize_dataset", "micro")
    }
    assert len(blocks["resize_dataset"]) == 2 and len(blocks["micro"]) == 3
    for block in blocks["resize_dataset"] + blocks["micro"]:
        assert "bench_slot=1" in block.split("\n\n")[0], block
