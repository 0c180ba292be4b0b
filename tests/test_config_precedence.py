"""Which value wins, lowest first: the preset, config/config.yaml, a --configfile, --config.

config/config.yaml names no library or regime, so `preset=paper` plans every library in every
regime it reports unless the user names others in their own config file or on the command line.
The workflow tests are real `snakemake -n` plans on a paper preset shrunk to one transform.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import snakemake_runner
import yaml
from conftest import OFFLINE_ENV, REPO

from augbench.planning.config import resolve

PAPER_REGIMES = ["micro", "cpu_dataloader", "gpu_dataloader", "dali", "training"]
# The paper preset at one transform and no resolution sweep: the same rules, seconds to plan.
SMALL = ("transforms=[HorizontalFlip]", "resolutions=[]",
         "cpu_dataloader={'transforms': [HorizontalFlip], 'sweep_transforms': null}")  # fmt: skip
GPU_RULES = {"gpu_dataloader", "dali", "dali_cpu", "training"}


def test_config_yaml_names_no_library_or_regime_so_the_preset_decides() -> None:
    shipped = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert "libraries" not in shipped and "regimes" not in shipped
    paper = resolve({**shipped, "preset": "paper"}, REPO)
    assert paper["libraries"] == ["albumentationsx", "torchvision", "kornia", "pillow", "dali"]
    assert set(PAPER_REGIMES) <= set(paper["regimes"])
    assert set(paper["dali"]["variants"]) == {"dali-gpu", "dali-cpu"}
    default = resolve({**shipped, "preset": "default"}, REPO)
    assert default["regimes"] == ["micro", "cpu_dataloader"]


def test_a_user_value_replaces_the_presets_list_and_merges_into_its_blocks() -> None:
    shipped = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    mine = resolve({**shipped, "preset": "paper", "regimes": ["micro"],
                    "cpu_dataloader": {"workers": [0, 2]}}, REPO)  # fmt: skip
    assert mine["regimes"] == ["micro"]
    assert mine["cpu_dataloader"]["workers"] == [0, 2]
    assert mine["cpu_dataloader"]["batch_size"] == 32  # the preset's, kept beside the override


def _planned(workdir: Path, *args: str) -> dict[str, int]:
    """Jobs per rule of a `snakemake -n` plan."""
    proc = snakemake_runner.run(
        ["--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "-n", *args],
        workdir, {**os.environ, **OFFLINE_ENV}, timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    stats = out.split("Job stats:", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}


@pytest.mark.workflow
def test_paper_plans_every_regime_and_own_files_and_command_line_narrow_it(
    tmp_path: Path,
) -> None:
    paper = _planned(tmp_path, "--config", "preset=paper", *SMALL)
    assert GPU_RULES | {"micro", "cpu_dataloader", "pipeline_dataloader"} <= set(paper)
    mine = tmp_path / "mine.yaml"
    mine.write_text("regimes: [micro, dali]\n")
    own_file = _planned(tmp_path, "--configfile", str(mine), "--config", "preset=paper", *SMALL)
    assert {"micro", "dali", "dali_cpu"} <= set(own_file)
    assert not {"cpu_dataloader", "gpu_dataloader", "training"} & set(own_file)
    # --config over --configfile over the preset.
    line = _planned(
        tmp_path, "--configfile", str(mine), "--config", "preset=paper", "regimes=[dali]", *SMALL
    )
    assert {"dali", "dali_cpu"} <= set(line) and "micro" not in line


@pytest.mark.workflow
def test_the_paper_plan_under_the_cloud_profile_has_the_gpu_regimes(
    tmp_path: Path, gcs_emulator: str
) -> None:
    """`snakemake -n --workflow-profile profiles/googlebatch --config preset=paper`, with the GCS
    emulator as the bucket: GPU DataLoader, DALI (both backends) and training jobs are planned."""
    from google.cloud import storage

    os.environ["STORAGE_EMULATOR_HOST"] = gcs_emulator
    try:
        storage.Client(project="test").create_bucket("augbench-plan")
    finally:
        del os.environ["STORAGE_EMULATOR_HOST"]
    proc = snakemake_runner.run(
        ["--snakefile", str(REPO / "Snakefile"),
         "--directory", str(tmp_path), "-n",
         "--workflow-profile", str(REPO / "profiles" / "googlebatch"),
         "--default-storage-prefix", "gs://augbench-plan/sweep", "--storage-gcs-project", "test",
         "--config", "preset=paper", *SMALL],
        tmp_path, {**os.environ, **OFFLINE_ENV, "STORAGE_EMULATOR_HOST": gcs_emulator},
        timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    stats = out.split("Job stats:", 1)[1]
    planned = {m[1] for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}
    assert GPU_RULES | {"micro", "cpu_dataloader"} <= planned
