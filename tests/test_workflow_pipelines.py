"""The real workflow at the smoke preset runs the shipped user pipelines (config/pipelines/) at
tiny size: a per-step breakdown per library (micro, one thread) and each pipeline as the recipe of
the cpu_dataloader regime, with their tables, the breakdown figure and the report.

No timed assertion: the sum-of-steps / whole ratio is checked for being recorded and flagged
consistently, not for its value (smoke passes are a few images on a shared machine)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import REPO, SMOKE_CONFIG, WorkflowRun

from augbench import matrix
from augbench.config import resolve
from augbench.policy import PIPELINE_STEP_SUM_TOLERANCE

pytestmark = pytest.mark.workflow

SMOKE = resolve(
    {
        "preset": "smoke",
        "machine": "smoke-test",
        "dataset": {"archive": None},
        "libraries": list(matrix.LIBRARIES),
        "regimes": ["micro", "cpu_dataloader"],
        "envs": {},
        # The workflow reads config/config.yaml first: its `pipelines` list is the shipped one.
        "pipelines": yaml.safe_load((REPO / "config/config.yaml").read_text())["pipelines"],
    },
    REPO,
)
PIPELINES = [p["name"] for p in SMOKE["pipeline_definitions"]]
RUNS = SMOKE["pipeline_runs"]
CPU_LIBRARIES = matrix.libraries_for("micro", list(matrix.LIBRARIES))


def _results(run: WorkflowRun) -> pd.DataFrame:
    return pd.read_csv(run.workdir / "results/tables/pipeline_results.csv")


def test_every_library_regime_and_pipeline_has_a_row(smoke_run: WorkflowRun) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]
    assert {"imagenet_train", "highres_segmentation", "train_light"} <= set(PIPELINES)
    rows = _results(smoke_run)
    whole = rows[rows["step"].isna()]
    assert (whole["transform"] == whole["pipeline"]).all()  # the row contract
    assert set(whole["variant"]) == {"pipeline"}
    micro = whole[whole["regime"] == "micro"]
    assert set(zip(micro["library"], micro["pipeline"], strict=True)) == {
        (lib, p) for lib in CPU_LIBRARIES for p in PIPELINES
    }
    loader = whole[whole["regime"] == "cpu_dataloader"]
    expected = {
        (lib, scope, workers, p)
        for lib in CPU_LIBRARIES
        for scope in RUNS["dataloader_scopes"]
        for workers in RUNS["dataloader_workers"]
        for p in PIPELINES
    }
    keys = zip(
        loader["library"], loader["scope"], loader["workers"], loader["pipeline"], strict=True
    )
    assert set(keys) == expected
    assert len(loader) == len(expected)
    # Pipelines never enter the single-transform tables.
    tidy = pd.read_csv(smoke_run.workdir / "results/tables/all_results.csv")
    assert not set(tidy["transform"]) & set(PIPELINES)


def test_missing_steps_and_targets_are_named(smoke_run: WorkflowRun) -> None:
    rows = _results(smoke_run)
    whole = rows[rows["step"].isna()].set_index(["regime", "library", "pipeline"])
    for regime in ("micro", "cpu_dataloader"):
        pillow = whole.loc[(regime, "pillow", "imagenet_train")]
        pillow = pillow.iloc[0] if isinstance(pillow, pd.DataFrame) else pillow
        assert pillow["status"] == "unsupported" and "ColorJitter" in pillow["reason"]
        tv = whole.loc[(regime, "torchvision", "highres_segmentation")]
        tv = tv.iloc[0] if isinstance(tv, pd.DataFrame) else tv
        assert tv["status"] == "unsupported" and "PadIfNeeded" in tv["reason"]
        kornia = whole.loc[(regime, "kornia", "highres_segmentation")]
        kornia = kornia.iloc[0] if isinstance(kornia, pd.DataFrame) else kornia
        assert kornia["status"] == "skipped" and "mask" in kornia["reason"]
    # A pipeline every library maps runs everywhere.
    light = rows[(rows["pipeline"] == "train_light") & rows["step"].isna()]
    assert set(light["status"]) == {"ok"}, light[["library", "regime", "reason"]]


def test_breakdown_table_sums_and_flags(smoke_run: WorkflowRun) -> None:
    table = pd.read_csv(smoke_run.workdir / "results/tables/pipeline_breakdown.csv")
    ok = table[table["status"] == "ok"]
    assert len(ok)
    for (lib, name), steps in ok.groupby(["library", "pipeline"]):
        assert steps["step_index"].tolist() == list(range(len(steps))), (lib, name)
        assert steps["share"].sum() == pytest.approx(1.0, abs=1e-6)
        ratio = steps["step_sum_ratio"].iloc[0]
        within = abs(ratio - 1.0) <= PIPELINE_STEP_SUM_TOLERANCE
        assert steps["step_sum_within_tolerance"].iloc[0] == within
        assert steps["ms_per_image"].sum() == pytest.approx(
            ratio * steps["pipeline_ms_per_image"].iloc[0], rel=0.5
        )
    imagenet = ok[ok["pipeline"] == "imagenet_train"]
    assert imagenet.groupby("library")["step"].apply(list).iloc[0] == [
        "RandomResizedCrop",
        "HorizontalFlip",
        "ColorJitter",
        "Normalize+ToTensor",
    ]
    summary = (smoke_run.workdir / "results/analysis/summary.md").read_text()
    assert "## Pipeline breakdowns: do the steps sum to the pipeline?" in summary


def test_raw_breakdown_rows_follow_the_contract(smoke_run: WorkflowRun) -> None:
    raw = sorted((smoke_run.workdir / "results/pipelines/raw/smoke-test").glob("*/micro/*/*.json"))
    assert len(raw) == len(CPU_LIBRARIES)
    payload = json.loads(next(p for p in raw if "albumentationsx" in p.parts).read_text())
    meta = payload["metadata"]
    assert meta["regime"] == "micro" and meta["thread_settings"]["policy"]["threads"] == 1
    assert any("step" in r for r in payload["results"].values())
    for row in payload["results"].values():
        assert row["pipeline"] in PIPELINES
        if "step" in row:
            assert isinstance(row["step_index"], int) and row["variant"] == "pipeline-step"


def test_speedup_table_per_pipeline_is_labelled_by_regime(smoke_run: WorkflowRun) -> None:
    for name in PIPELINES:
        table = pd.read_csv(smoke_run.workdir / f"results/tables/speedups_pipeline_{name}.csv")
        assert set(table["pipeline"]) == {name}
        assert set(table["regime"]) == {"micro", "cpu_dataloader"}
        assert table["regime_label"].str.contains("pipeline").all()
        for _, group in table[table["status"] == "ok"].groupby("regime_label"):
            assert group["is_fastest"].sum() == 1


def test_breakdown_figure_is_in_the_report(smoke_run: WorkflowRun) -> None:
    analysis = smoke_run.workdir / "results/analysis"
    assert (analysis / "pipeline_breakdown.png").stat().st_size > 1000
    caption = (analysis / "pipeline_breakdown.caption.txt").read_text()
    assert "Regime: micro, one thread" in caption and "imagenet_train" in caption
    report = smoke_run.workdir / "pipelines-report.html"
    smoke_run.snakemake("--report", str(report), *SMOKE_CONFIG)
    text = report.read_text()
    assert "pipeline_breakdown.png" in text and "Per-step cost of each pipeline" in text
