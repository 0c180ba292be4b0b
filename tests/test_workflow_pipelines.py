"""The real workflow at the smoke preset runs the shipped user pipelines (config/pipelines/) at
tiny size: a per-step breakdown per library (micro, one thread), each pipeline as the recipe of
the cpu_dataloader regime and through the GPU DataLoader and DALI engines (rows `skipped` without
CUDA, or naming the step the GPU path lacks), with their tables, the breakdown figure and the
report.

No timed assertion: the harness / bare check and the composition effect are checked for being
recorded and flagged consistently, not for their values (smoke passes are a few images on a
shared machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import (
    SMOKE_CONFIG,
    SMOKE_LIBRARIES,
    SMOKE_PIPELINES,
    WorkflowRun,
    copy_of,
    smoke_settings,
)

from augbench.cuda_env import SKIP_NO_CUDA
from augbench.planning import regimes
from augbench.policy import PIPELINE_HARNESS_TOLERANCE

pytestmark = pytest.mark.workflow

SMOKE = smoke_settings(
    SMOKE_LIBRARIES,
    ["micro", "cpu_dataloader", "gpu_dataloader", "dali"],
    pipelines=list(SMOKE_PIPELINES),
)
PIPELINES = [p["name"] for p in SMOKE["pipeline_definitions"]]
RUNS = SMOKE["pipeline_runs"]
CPU_LIBRARIES = regimes.libraries_for("micro", SMOKE_LIBRARIES)
GPU_LIBRARIES = regimes.libraries_for("gpu_dataloader", SMOKE_LIBRARIES)


COMPOSE_CALLS = {
    "albumentationsx": "A.Compose",
    "torchvision": "v2.Compose",
    "kornia": "K.AugmentationSequential",
    "pillow": "function chain",
}


def _results(run: WorkflowRun) -> pd.DataFrame:
    return pd.read_csv(run.workdir / "results/tables/pipeline_results.csv")


def test_every_library_regime_and_pipeline_has_a_row(smoke_run: WorkflowRun) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]
    assert {"imagenet_train", "highres_segmentation", "train_light"} <= set(PIPELINES)
    rows = _results(smoke_run)
    whole = rows[rows["step"].isna()]
    assert (whole["transform"] == whole["pipeline"]).all()  # the row contract
    # One comparison group per regime's variant: plain "pipeline" on the CPU, the randomness mode
    # or DALI variant appended in the GPU regimes (never ranked across them).
    assert all(str(v).startswith("pipeline") for v in whole["variant"])
    cpu = whole[whole["regime"].isin(["micro", "cpu_dataloader"])]
    assert set(cpu["variant"]) == {"pipeline"}
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


def test_the_answer_page_has_every_pipeline_and_says_what_was_not_measured(
    smoke_run: WorkflowRun,
) -> None:
    rec = pd.read_csv(smoke_run.workdir / "results/tables/recommendation.csv")
    assert list(rec["pipeline"]) == PIPELINES and not rec["yours"].any()
    measured = rec[rec["status"] == "measured"]
    assert len(measured) >= len(PIPELINES) - 1, rec[["pipeline", "why"]]
    assert set(measured["library"]) <= set(CPU_LIBRARIES)
    assert (measured["img_per_s"] > 0).all() and (measured["usd_per_million_images"] > 0).all()
    # The smoke preset runs the pipelines' DataLoader rows on decoded images only: ranked there,
    # and the starvation answer says it has no end-to-end rows instead of guessing.
    assert set(measured["regime"]) == {"cpu_dataloader"}
    assert measured["fed_answer"].str.startswith("not measured: no end-to-end").all()
    assert all(isinstance(w, str) and w for w in rec.loc[rec["status"] != "measured", "why"])
    summary = (smoke_run.workdir / "results/analysis/summary.md").read_text()
    answer = summary.split("## The answer", 1)[1].split("\n## ", 1)[0]
    assert all(f"| {name} |" in answer for name in PIPELINES)
    assert "nan" not in answer.lower()
    page = (smoke_run.workdir / "results/analysis/recommendation.md").read_text()
    assert page.startswith("# The answer")
    # Printed at the end of the run.
    assert "Recommendation (every column: results/tables/recommendation.csv):" in smoke_run.output


def test_missing_steps_and_targets_are_named(smoke_run: WorkflowRun) -> None:
    rows = _results(smoke_run)
    whole = rows[rows["step"].isna()].set_index(["regime", "library", "pipeline"])
    # (Pillow's missing ColorJitter in imagenet_train_colorjitter, not in the smoke run's three
    # pipelines: tests/test_pipelines.py::test_a_library_lacking_a_step_or_target_names_it.)
    for regime in ("micro", "cpu_dataloader"):
        tv = whole.loc[(regime, "torchvision", "highres_segmentation")]
        tv = tv.iloc[0] if isinstance(tv, pd.DataFrame) else tv
        assert tv["status"] == "unsupported" and "PadIfNeeded" in tv["reason"]
        # Equal work: the reference preset antialiases its crop (Kornia cannot), the trio does
        # not (Pillow cannot): one row each naming the step and why.
        kornia = whole.loc[(regime, "kornia", "imagenet_train")]
        kornia = kornia.iloc[0] if isinstance(kornia, pd.DataFrame) else kornia
        assert kornia["status"] == "unsupported" and "antialias" in kornia["reason"]
        pil_light = whole.loc[(regime, "pillow", "train_light")]
        pil_light = pil_light.iloc[0] if isinstance(pil_light, pd.DataFrame) else pil_light
        assert pil_light["status"] == "unsupported" and "antialias" in pil_light["reason"]
        # The mask travels through AlbumentationsX's and Kornia's own joint APIs.
        for library in ("albumentationsx", "kornia"):
            seg = whole.loc[(regime, library, "highres_segmentation")]
            seg = seg.iloc[0] if isinstance(seg, pd.DataFrame) else seg
            assert seg["status"] == "ok", (regime, library, seg["reason"])
    # A pipeline a library maps runs there.
    light = rows[(rows["pipeline"] == "train_light") & rows["step"].isna()]
    light = light[light["regime"].isin(["micro", "cpu_dataloader"])]
    light = light[light["library"] != "pillow"]
    assert set(light["status"]) == {"ok"}, light[["library", "regime", "reason"]]
    imagenet = rows[(rows["pipeline"] == "imagenet_train") & rows["step"].isna()]
    imagenet = imagenet[imagenet["regime"].isin(["micro", "cpu_dataloader"])]
    imagenet = imagenet[imagenet["library"] != "kornia"]
    assert set(imagenet["status"]) == {"ok"}, imagenet[["library", "regime", "reason"]]


def _raw_pipeline_rows(run: WorkflowRun, regime: str) -> dict[str, dict[str, dict]]:
    """{result file stem: {pipeline: row}} of one regime's raw pipeline results."""
    root = run.workdir / "results/pipelines/raw/smoke-test"
    return {
        path.stem: json.loads(path.read_text())["results"]
        for path in sorted(root.glob(f"*/{regime}/*/*.json"))
    }


def test_gpu_regimes_have_pipeline_rows_skipped_or_naming_the_step(
    smoke_run: WorkflowRun,
) -> None:
    """Every pipeline gets rows in gpu_dataloader and dali: without CUDA `skipped` with the
    no-CUDA reason; a step or target the GPU path lacks is one row naming it; dali-cpu runs."""
    rows = _results(smoke_run)
    whole = rows[rows["step"].isna()]
    gpu = whole[whole["regime"] == "gpu_dataloader"]
    assert set(zip(gpu["library"], gpu["pipeline"], strict=True)) == {
        (lib, p) for lib in GPU_LIBRARIES for p in PIPELINES
    }
    assert (gpu["variant"] == "pipeline-" + gpu["randomness"]).all()
    assert (gpu["transform"] == gpu["pipeline"]).all()
    by = gpu.set_index(["library", "pipeline"])
    for (lib, name), row in by.iterrows():
        if name == "highres_segmentation" and lib == "torchvision":  # lacks PadIfNeeded
            assert row["status"] == "unsupported", (lib, row["reason"])
            assert "PadIfNeeded" in row["reason"], (lib, row["reason"])
        elif name.startswith("imagenet_train") and lib == "kornia":  # no antialiased crop
            assert row["status"] == "unsupported" and "antialias" in row["reason"], row
        else:  # Kornia carries the segmentation pipeline's mask on the GPU too
            assert row["status"] == "ok" or row["reason"] == SKIP_NO_CUDA, (lib, name, row)
    # What is timed is said exactly: the workers' cut, then the steps on the device.
    for stem, results in _raw_pipeline_rows(smoke_run, "gpu_dataloader").items():
        row = results["imagenet_train"]
        assert row["worker_crop"] == [SMOKE["gpu_dataloader"]["worker_crop"]] * 2, stem
        assert "uint8 crop" in row["timed"] and "pipeline's steps" in row["timed"], stem
        assert row["pipeline"] == "imagenet_train"
        assert row["variant"] == f"pipeline-{row['randomness']}"
    dali = _raw_pipeline_rows(smoke_run, "dali")
    assert set(dali) == set(SMOKE["dali"]["variants"])
    for stem, results in dali.items():
        assert set(results) == set(PIPELINES), stem
        seg = results["highres_segmentation"]
        assert seg["status"] in ("unsupported", "skipped") and seg.get("unsupported_step"), seg
        for name, row in results.items():
            assert row["variant"] == f"pipeline-{stem}" and row["dali_variant"] == stem
            if name == "train_heavy":  # DALI has no additive-noise operator
                assert row["status"] == "unsupported" and "GaussianNoise" in row["reason"]
            elif stem == "dali-gpu" and name != "highres_segmentation":
                assert row["status"] == "ok" or row["reason"] == SKIP_NO_CUDA, (name, row)
    if "dali-cpu" in dali:  # DALI's CPU backend runs the pipelines that map, here too
        light = dali["dali-cpu"]["train_light"]
        assert light["status"] == "ok", light.get("reason")
        assert light["output_shape"] == [SMOKE["dali"]["batch_size"], 3, 224, 224]


def test_breakdown_table_checks_the_harness_against_a_bare_loop(smoke_run: WorkflowRun) -> None:
    table = pd.read_csv(smoke_run.workdir / "results/tables/pipeline_breakdown.csv")
    ok = table[table["status"] == "ok"]
    assert len(ok)
    for (lib, name), steps in ok.groupby(["library", "pipeline"]):
        assert steps["step_index"].tolist() == list(range(len(steps))), (lib, name)
        assert steps["share"].sum() == pytest.approx(1.0, abs=1e-6)
        head = steps.iloc[0]
        # Flagged only where the ratio's whole interval lies outside the tolerance around 1.
        low, high = head["harness_vs_bare_ci_low"], head["harness_vs_bare_ci_high"]
        assert low <= head["harness_vs_bare"] <= high, (lib, name)
        tolerance = PIPELINE_HARNESS_TOLERANCE
        within = low <= 1.0 + tolerance and high >= 1.0 - tolerance
        assert bool(head["harness_vs_bare_within"]) == within, (lib, name)
        assert head["bare_ms_per_image"] > 0 and head["composition_effect"] > 0
        # The composition effect is whole / the summed isolated steps, from the same values.
        assert head["pipeline_ms_per_image"] == pytest.approx(
            head["composition_effect"] * steps["ms_per_image"].sum(), rel=0.5
        )
        # The whole row is the library's own composition object.
        expected = COMPOSE_CALLS[lib]
        assert expected in head["compose_call"], (lib, head["compose_call"])
    imagenet = ok[ok["pipeline"] == "imagenet_train"]
    assert imagenet.groupby("library")["step"].apply(list).iloc[0] == [
        "RandomResizedCrop",
        "HorizontalFlip",
        "Normalize+ToTensor",
    ]
    # Equal output: every library's imagenet_train ends in the same float32 CHW tensor.
    contracts = set(imagenet["output_contract"])
    assert contracts == {"torch.Tensor float32 3x224x224"}, contracts
    summary = (smoke_run.workdir / "results/analysis/summary.md").read_text()
    assert "## Pipelines: the library's own composition, checked against a bare loop" in summary


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
        elif row["status"] == "ok":
            # Each round (a process of each kind) ran in a fresh interpreter of its own, and
            # each whole pass's process kept its own faults.
            assert row["round_interpreters"] == len(row["process_order"]) // 3 >= 1, row
            assert 1 <= row["round_layouts"] <= row["round_interpreters"], row
            faults = row["minor_faults_per_image_by_process"]
            assert len(faults) == row["processes"] and row["most_minor_faults_per_image"] == max(
                faults
            )


def test_speedup_table_per_pipeline_is_labelled_by_regime(smoke_run: WorkflowRun) -> None:
    for name in PIPELINES:
        table = pd.read_csv(smoke_run.workdir / f"results/tables/speedups_pipeline_{name}.csv")
        assert set(table["pipeline"]) == {name}
        assert {"micro", "cpu_dataloader"} <= set(table["regime"])
        assert set(table["regime"]) <= {"micro", "cpu_dataloader", "gpu_dataloader", "dali"}
        assert table["regime_label"].str.contains("pipeline").all()
        assert "contract" in table.columns
        ok = table[table["status"] == "ok"]
        for _, group in ok.groupby(["regime_label", "contract"], dropna=False):
            assert group["is_fastest"].sum() == 1


def test_breakdown_figure_is_in_the_report(smoke_run: WorkflowRun, tmp_path: Path) -> None:
    run = copy_of(smoke_run, tmp_path / "run")  # --report writes beside the shared run's files
    analysis = run.workdir / "results/analysis"
    assert (analysis / "pipeline_breakdown.png").stat().st_size > 1000
    caption = (analysis / "pipeline_breakdown.caption.txt").read_text()
    assert "Regime: micro, one thread" in caption and "imagenet_train" in caption
    report = run.workdir / "pipelines-report.html"
    run.snakemake("--report", str(report), *SMOKE_CONFIG)
    text = report.read_text()
    assert "pipeline_breakdown.png" in text and "Per-step cost of each pipeline" in text
    # The answer page is in the report too, under its own category.
    assert "recommendation.md" in text and "Answer" in text
