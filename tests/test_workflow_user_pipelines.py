"""Users' own pipelines, in their library's own form, through the real workflow at smoke size:
an AlbumentationsX file written by ``A.save`` and a torchvision v2 ``Compose`` named as
``module:attribute``. Each runs as written in the library it is written for (breakdown, whole
and the DataLoader regime), and through the catalog mapping in the others; a step with no
mapping is one `unsupported` row naming it, never dropped."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, library_env, run_snakemake

from augbench.decision import VERDICTS

pytestmark = pytest.mark.workflow

LIBRARIES = ["albumentationsx", "torchvision", "pillow"]
SAVE_SCRIPT = """
import sys
import albumentations as A
from albumentations.pytorch import ToTensorV2
compose = A.Compose([
    A.RandomResizedCrop(size=(224, 224), area_for_downscale="image", p=1.0),
    A.HorizontalFlip(p=0.5),
    A.CoarseDropout(num_holes_range=(1, 4), p=1.0),
    A.Normalize(),
    ToTensorV2(),
])
A.save(compose, sys.argv[1], data_format="yaml")
"""


@pytest.fixture(scope="module")
def user_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = library_env("albumentationsx")
    workdir = tmp_path_factory.mktemp("user-pipelines")
    subprocess.run([str(python), "-c", SAVE_SCRIPT, str(workdir / "my_albx.yaml")], check=True)
    # The torchvision module is imported from the working directory, as a user's would be.
    shutil.copy(REPO / "tests/fixtures/user_pipelines/tv_reference.py", workdir)
    extra = {"pipelines": ["my_albx.yaml", "tv_reference:train_preset"]}
    (workdir / "user.yaml").write_text(yaml.safe_dump(extra))
    run_snakemake(
        workdir, "--cores", "2", "--configfile", "user.yaml",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        f"libraries=[{','.join(LIBRARIES)}]", "regimes=[micro,cpu_dataloader]",
        "--", "answer",  # the pipelines' jobs, tables and answer page only
    )  # fmt: skip
    return workdir


def _whole(workdir: Path) -> pd.DataFrame:
    rows = pd.read_csv(workdir / "results/tables/pipeline_results.csv")
    return rows[rows["step"].isna()].set_index(["pipeline", "regime", "library"])


def test_an_albumentations_file_runs_as_written_and_names_what_others_lack(user_run: Path) -> None:
    whole = _whole(user_run)
    for regime in ("micro", "cpu_dataloader"):
        own = whole.loc[("my_albx", regime, "albumentationsx")]
        assert own["status"] == "ok", own["reason"]
        assert "A.Compose" in own["compose_call"] and "user's own" in own["compose_call"]
        for library in ("torchvision", "pillow"):
            other = whole.loc[("my_albx", regime, library)]
            assert other["status"] == "unsupported", other
            assert (
                "step 3 CoarseDropout" in other["reason"] and "no catalog step" in other["reason"]
            )
    # The breakdown times the user's own step objects, one by one.
    breakdown = pd.read_csv(user_run / "results/tables/pipeline_breakdown.csv")
    mine = breakdown[(breakdown["pipeline"] == "my_albx") & (breakdown["status"] == "ok")]
    assert mine["step"].tolist() == [
        "RandomResizedCrop", "HorizontalFlip", "CoarseDropout", "Normalize", "ToTensor",
    ]  # fmt: skip
    raw = next((user_run / "results/pipelines/raw").glob("*/*/micro/albumentationsx/*.json"))
    row = json.loads(raw.read_text())["results"]["my_albx"]
    assert row["pipeline_native"]["format"] == "albumentations"
    assert 0 < row["harness_vs_bare"] < 10 and row["output_contract"].startswith("torch.Tensor")


def test_a_torchvision_module_runs_as_written_and_maps_to_the_others(user_run: Path) -> None:
    whole = _whole(user_run)
    for regime in ("micro", "cpu_dataloader"):
        for library in LIBRARIES:
            row = whole.loc[("train_preset", regime, library)]
            assert row["status"] == "ok", (regime, library, row["reason"])
        own = whole.loc[("train_preset", regime, "torchvision")]
        assert "v2.Compose" in own["compose_call"] and "user's own" in own["compose_call"]
        # The other libraries run the catalog mapping, antialiased as the user's crop is.
        mapped = whole.loc[("train_preset", regime, "albumentationsx")]
        assert "RandomResizedCrop antialias=True" in mapped["work_contract"]
    resolved = json.loads((user_run / "results/pipelines/resolved/train_preset.json").read_text())
    steps = [s["name"] for s in resolved["pipeline"]["steps"]]
    assert steps == ["RandomResizedCrop", "HorizontalFlip", "Normalize"]


def test_the_answer_page_names_the_users_pipelines_first(user_run: Path) -> None:
    rec = pd.read_csv(user_run / "results/tables/recommendation.csv").set_index("pipeline")
    assert list(rec.index) == ["my_albx", "train_preset"] and rec["yours"].all()
    # Only AlbumentationsX runs the user's A.save file: no runner-up, the others named.
    mine = rec.loc["my_albx"]
    assert mine["status"] == "measured" and mine["library"] == "albumentationsx"
    assert pd.isna(mine["runner_up"]) and "torchvision unsupported" in mine["other_libraries"]
    # The torchvision module runs in all three: a runner-up with a margin and its interval.
    tv = rec.loc["train_preset"]
    assert tv["runner_up"] in LIBRARIES and tv["margin"] >= 1
    # A verdict of the decision rule, at the level its processes achieve, in one sentence.
    assert tv["verdict"] in VERDICTS and 0 <= tv["margin_level"] <= 1
    page = (user_run / "results/analysis/recommendation.md").read_text()
    assert f"| {tv['verdict_text']} |" in page and "| only library (" in page
    # Only the pipelines' jobs ran: no single-transform result.
    assert not (user_run / "results/raw").exists()
