"""Results know their dataset, on the real workflow: two archives of the same name side by side,
switching back schedules nothing, and a missing archive (local or gs://) stops the workflow before
any job runs."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest
from conftest import OFFLINE_ENV, REPO, run_snakemake

from augbench.planning.dataset import build_default_archive, sha256_file

LOCAL_ENVS = f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}"
CONFIG = (
    "preset=smoke", "machine=ds-test", LOCAL_ENVS, "libraries=[pillow,albumentationsx]",
    "regimes=[micro]", "transforms=[HorizontalFlip]",
)  # fmt: skip
# Datasets are what is tested: no pipelines, no lazy-output diagnostic (jobs of their own).
WITHOUT_DIAGNOSTICS = ("--configfile", str(REPO / "tests/fixtures/without-diagnostics.yaml"))
# What the test reads (the figures are tested on the session's smoke run).
TARGETS = (
    "results/tables/all_results.csv",
    "results/tables/speedups_micro.csv",
    "results/tables/coverage.csv",
    "results/analysis/summary.md",
)


def _run(workdir: Path, archive: Path, *extra: str, check: bool = True):
    return run_snakemake(
        workdir, "--cores", "2", *extra, *TARGETS, *WITHOUT_DIAGNOSTICS, "--config", *CONFIG,
        f"dataset={{'archive': '{archive}'}}", check=check,
    )  # fmt: skip


@pytest.mark.workflow
@pytest.mark.slow
def test_two_datasets_sit_side_by_side_and_switching_back_runs_nothing(tmp_path: Path) -> None:
    # Same file name, different content: only the content hash tells them apart.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = Path(build_default_archive(tmp_path / "a/photos.tar", 12, seed=0)["path"])
    b = Path(build_default_archive(tmp_path / "b/photos.tar", 12, seed=1)["path"])
    key_a, key_b = (f"photos-{sha256_file(p)[:12]}" for p in (a, b))
    assert key_a != key_b
    work = tmp_path / "work"
    work.mkdir()

    _run(work, a)
    raw_a = sorted((work / "results/raw/ds-test" / key_a).rglob("*.json"))
    assert len(raw_a) == 2  # pillow and albumentationsx, one shard each
    first = {p: p.read_bytes() for p in raw_a}

    _run(work, b)
    assert len(list((work / "results/raw/ds-test" / key_b).rglob("*.json"))) == 2
    assert {p: p.read_bytes() for p in raw_a} == first  # A's results untouched

    back = _run(work, a)
    assert "Nothing to be done" in back.stdout + back.stderr
    assert {p: p.read_bytes() for p in raw_a} == first

    # Staged data: one folder per key, each manifest with its archive's full sha256.
    for key, archive in ((key_a, a), (key_b, b)):
        manifest = pd.read_json(work / f"results/data/{key}/manifest.json", typ="series")
        assert manifest["archive_sha256"] == sha256_file(archive)
        assert manifest["key"] == key and manifest["name"] == "photos"

    table = pd.read_csv(work / "results/tables/all_results.csv")
    assert set(table["dataset"]) == {key_a, key_b}
    assert set(table["dataset_sha256"]) == {sha256_file(a), sha256_file(b)}
    assert set(table["dataset_images"]) == {12}
    # Speedups compare libraries within one dataset only.
    speedups = pd.read_csv(work / "results/tables/speedups_micro.csv")
    for _, rows in speedups[speedups["status"] == "ok"].groupby("dataset"):
        assert set(rows["library"]) == {"pillow", "albumentationsx"}
    ok = speedups[speedups["status"] == "ok"]
    assert (ok.groupby(["dataset", "transform"]).size() == 2).all()
    coverage = pd.read_csv(work / "results/tables/coverage.csv")
    assert set(coverage["dataset"]) == {key_a, key_b}
    summary = (work / "results/analysis/summary.md").read_text()
    assert f"## ds-test: micro · dataset {key_a}" in summary
    assert f"## ds-test: micro · dataset {key_b}" in summary


@pytest.mark.workflow
def test_missing_local_archive_fails_before_any_job(tmp_path: Path) -> None:
    proc = _run(tmp_path, tmp_path / "nope/x.tar", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"dataset archive not found: {tmp_path / 'nope/x.tar'}" in out
    assert "Nothing to be done" not in out
    assert not (tmp_path / "results").exists() and not (tmp_path / "logs").exists()


@pytest.mark.workflow
def test_missing_gcs_object_fails_before_any_job(
    gcs_emulator: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"STORAGE_EMULATOR_HOST": gcs_emulator, **OFFLINE_ENV}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    from google.cloud import storage

    bucket = storage.Client(project="test").create_bucket("augbench-ds")
    archive = tmp_path / "there.tar"
    build_default_archive(archive, 12)
    bucket.blob("data/there.tar").upload_from_filename(str(archive))
    gcs = (
        "--default-storage-provider", "gcs", "--default-storage-prefix", "gs://augbench-ds/w",
        "--storage-gcs-project", "test",
    )  # fmt: skip

    missing = run_snakemake(
        tmp_path, "-n", *gcs, "--config", *CONFIG,
        "dataset={'archive': 'gs://augbench-ds/data/gone.tar'}", env=env, check=False,
    )  # fmt: skip
    out = missing.stdout + missing.stderr
    assert missing.returncode != 0
    assert "dataset archive not found: gs://augbench-ds/data/gone.tar" in out

    # An existing object is keyed by its name and the md5 the bucket reports (no download).
    present = run_snakemake(
        tmp_path, "-n", *gcs, "--config", *CONFIG,
        "dataset={'archive': 'gs://augbench-ds/data/there.tar'}", env=env,
    )  # fmt: skip
    key = f"there-{hashlib.md5(archive.read_bytes()).hexdigest()[:12]}"
    assert f"results/raw/ds-test/{key}/micro/pillow/s000.json" in present.stdout
