"""The two forks beside their originals through the real workflow at smoke size: Albumentations
2.0.8 (MIT) beside AlbumentationsX, Pillow-SIMD (compiled from source) beside Pillow, in micro and
cpu_dataloader. And what an env that cannot be built costs: Pillow-SIMD without a C compiler
loses only its own rows, with --keep-going and without, and the next run, with its env built,
measures them, leaving the other libraries' rows as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import NETWORK_GUARD_LOG, REPO, library_env, run_snakemake

from augbench.policy import NETWORK_GUARD_ENV_VAR

pytestmark = pytest.mark.workflow

LIBRARIES = ["albumentations_mit", "pillow_simd", "albumentationsx", "pillow"]
BROKEN_COMPILER = {"CC": "/nonexistent/cc"}


def settings(envs: Path) -> tuple[str, ...]:
    return (
        # What the tests read: the raw rows, the tidy table and the summary (no figures).
        "--cores", "2", "results/analysis/summary.md", "results/tables/all_results.csv",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{envs}'}}",
        f"libraries=[{','.join(LIBRARIES)}]", "regimes=[micro,cpu_dataloader]",
        "transforms=[HorizontalFlip]",
        "cpu_dataloader={scopes: [memory], workers: [0], transforms: [HorizontalFlip]}",
        # No pipelines and no lazy-output diagnostic: the shared smoke run covers both.
        "pipelines=[]", "lazy_outputs={enabled: false}",
    )  # fmt: skip


def rows(workdir: Path) -> list[tuple[str, str, str, dict]]:
    """(regime, library, transform, row) of every raw result file."""
    found = []
    for path in sorted((workdir / "results/raw/smoke-test").glob("*/*/*/*.json")):
        regime, library = path.parts[-3], path.parts[-2]
        for name, row in json.loads(path.read_text())["results"].items():
            found.append((regime, library, name, row))
    return found


def result_times(workdir: Path, libraries: list[str]) -> dict[Path, int]:
    return {
        p: p.stat().st_mtime_ns
        for lib in libraries
        for p in (workdir / "results/raw/smoke-test").glob(f"*/*/{lib}/*.json")
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    workdir = tmp_path_factory.mktemp("forks")
    # The run's venvs are the tests' shared ones (built once), but Pillow-SIMD's is missing: the
    # run must build it, and without a compiler it cannot.
    envs = workdir / "venvs"
    envs.mkdir()
    for library in LIBRARIES:
        library_env(library)
        if library != "pillow_simd":
            (envs / library).symlink_to(REPO / ".venvs" / library)
    # Every benchmark process records (and refuses) any connection that would leave the machine:
    # albumentations 2.0.8 asks PyPI for a newer release on import unless told not to.
    guard = {NETWORK_GUARD_ENV_VAR: str(workdir / NETWORK_GUARD_LOG)}
    broken = run_snakemake(workdir, *settings(envs), env={**BROKEN_COMPILER, **guard})
    after_broken = {
        "output": broken.stdout + broken.stderr,
        "rows": rows(workdir),
        "marker": json.loads((workdir / "results/envs/pillow_simd.json").read_text()),
        "table": pd.read_csv(workdir / "results/tables/all_results.csv"),
        "others": result_times(workdir, ["albumentations_mit", "albumentationsx", "pillow"]),
    }
    kept_going = run_snakemake(workdir, *settings(envs), "--keep-going", env=BROKEN_COMPILER)
    after_kept_going = {
        "output": kept_going.stdout + kept_going.stderr,
        "marker": json.loads((workdir / "results/envs/pillow_simd.json").read_text()),
        "others": result_times(workdir, ["albumentations_mit", "albumentationsx", "pillow"]),
    }
    # With a compiler the build succeeds (the shared venv is that build, made by the workflow's
    # own provisioning above: compiling it a second time here would only cost the tests time).
    (envs / "pillow_simd").symlink_to(REPO / ".venvs" / "pillow_simd")
    fixed = run_snakemake(workdir, *settings(envs))
    return {
        "workdir": workdir,
        "broken": after_broken,
        "kept_going": after_kept_going,
        "fixed": {
            "output": fixed.stdout + fixed.stderr,
            "rows": rows(workdir),
            "marker": json.loads((workdir / "results/envs/pillow_simd.json").read_text()),
            "others": result_times(workdir, ["albumentations_mit", "albumentationsx", "pillow"]),
        },
    }


def test_a_library_whose_env_cannot_be_built_loses_only_its_rows(runs: dict) -> None:
    broken = runs["broken"]
    line = "no C compiler was found (/nonexistent/cc); install the Debian package build-essential"
    assert line in broken["output"]
    assert broken["marker"]["status"] == "failed" and line in broken["marker"]["reason"]
    measured = {(regime, lib) for regime, lib, _, row in broken["rows"] if row["status"] == "ok"}
    for lib in ("albumentations_mit", "albumentationsx", "pillow"):
        assert {("micro", lib), ("cpu_dataloader", lib)} <= measured, lib
    simd = [
        (regime, name, row) for regime, lib, name, row in broken["rows"] if lib == "pillow_simd"
    ]
    assert {regime for regime, _, _ in simd} == {"micro", "cpu_dataloader"}
    assert {name for regime, name, _ in simd if regime == "micro"} == {"HorizontalFlip"}
    for _, _, row in simd:
        assert row["status"] == "env_failed" and line in row["reason"]
    # The tables keep them, with their reason.
    table = broken["table"]
    failed = table[table["library"] == "pillow_simd"]
    assert len(failed) and set(failed["status"]) == {"env_failed"}


def test_the_failed_build_is_tried_again_and_nothing_else_reruns(runs: dict) -> None:
    broken, kept_going = runs["broken"], runs["kept_going"]
    assert kept_going["marker"]["status"] == "failed"
    assert kept_going["marker"]["failed_at"] > broken["marker"]["failed_at"]  # tried again
    assert (
        "rule build_env" in kept_going["output"] and "library=pillow_simd" in kept_going["output"]
    )
    assert kept_going["others"] == broken["others"]


def test_with_a_compiler_the_simd_build_is_measured_and_proven(runs: dict) -> None:
    fixed = runs["fixed"]
    assert fixed["marker"]["status"] == "ok"
    assert fixed["others"] == runs["broken"]["others"]  # nobody else was measured again
    simd = [(regime, row) for regime, lib, _, row in fixed["rows"] if lib == "pillow_simd"]
    assert simd and all(row["status"] == "ok" for _, row in simd), simd
    for path in (runs["workdir"] / "results/raw/smoke-test").glob("*/*/pillow_simd/*.json"):
        meta = json.loads(path.read_text())["metadata"]
        proof = meta["library_provenance"]
        assert proof["imported_from"] == "pillow-simd 12.1.1.post0"
        assert proof["build_flags"] == "-mavx2" and proof["avx2_instructions"] > 0
        assert meta["library_versions"]["pillow-simd"] == "12.1.1.post0"
        assert "pillow" not in meta["library_versions"]


def test_every_pillow_row_has_its_simd_twin_and_the_summary_compares_them(runs: dict) -> None:
    fixed = runs["fixed"]
    by_lib: dict[str, set] = {}
    for regime, lib, name, row in fixed["rows"]:
        if row["status"] == "ok":
            by_lib.setdefault(lib, set()).add((regime, name))
    assert by_lib["pillow"] == by_lib["pillow_simd"]
    assert by_lib["albumentations_mit"] == by_lib["albumentationsx"]
    summary = (runs["workdir"] / "results/analysis/summary.md").read_text()
    assert "## Forks and drop-in builds beside their originals" in summary
    assert "### Pillow-SIMD / Pillow: smoke-test: micro" in summary
    assert "### Albumentations 2.0.8 (MIT) / AlbumentationsX: smoke-test: micro" in summary


def test_no_process_of_the_forks_connects_outside(runs: dict) -> None:
    lines = (runs["workdir"] / NETWORK_GUARD_LOG).read_text().splitlines()
    found = [json.loads(line) for line in lines if line.strip()]
    mit = [r for r in found if "--library albumentations_mit" in " ".join(r.get("argv") or [])]
    assert mit, "no guarded albumentations_mit process"
    refused = [r for r in found if r["event"] != "installed"]
    assert not refused, refused


def test_the_mit_rows_say_which_release_and_licence(runs: dict) -> None:
    paths = (runs["workdir"] / "results/raw/smoke-test").glob("*/*/albumentations_mit/*.json")
    for path in paths:
        meta = json.loads(path.read_text())["metadata"]
        assert meta["library_versions"]["albumentations"] == "2.0.8"
        assert "MIT" in meta["library_provenance"]["license"]
