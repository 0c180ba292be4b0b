"""The training regime through the real workflow at smoke size: each library's DataLoader (the
cpu_dataloader decode scope's) feeding the sleep stand-in accelerator (config/presets/smoke.yaml:
a 100 ms step at batch 4, model-bound by design), at the cpu_dataloader regime's worker counts,
beside that regime's decode rows of the same recipe: each training row's prediction comes from
them (another job), out of sample. Rows carry throughput, data-wait fraction with its interval
and the step and batch-wait percentiles their sample supports. The supply runs twice
(cpu_dataloader.runs): each run a job of its own, one row per setting in the tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, run_snakemake, smoke_settings

from augbench.policy import TRAINING_PREDICTION_TOLERANCE

pytestmark = pytest.mark.workflow

LIBRARIES = ["torchvision", "pillow"]
SMOKE = smoke_settings(LIBRARIES, ["training"])


@pytest.fixture(scope="module")
def training_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("training")
    run_snakemake(
        workdir, "--cores", "2",
        # What the tests read (no figures: the session's smoke run draws them).
        "results/tables/training.csv", "results/tables/all_results.csv",
        "results/analysis/summary.md",
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        f"libraries=[{','.join(LIBRARIES)}]", "regimes=[training,cpu_dataloader]",
        # The supply rows the prediction needs, and nothing else of the DataLoader regime (no
        # pipelines: their DataLoader jobs are tested on the session's smoke run), in two runs.
        "cpu_dataloader={scopes: [decode], transforms: [RandomResizedCrop], runs: 2}",
        "pipelines=[]",
    )  # fmt: skip
    return workdir


def test_every_library_and_worker_count_has_a_measured_row(training_run: Path) -> None:
    files = sorted((training_run / "results/raw/smoke-test").glob("*/training/*/*.json"))
    found = set()
    for path in files:
        payload = json.loads(path.read_text())
        meta = payload["metadata"]
        assert meta["regime"] == "training" and meta["scope"] == "decode"
        for name, row in payload["results"].items():
            assert row["status"] == "ok", (path, row.get("reason"))
            found.add((meta["library"], row["workers"], name))
            assert row["variant"] == "sleep-100ms" and row["accelerator"] == "sleep:100"
            assert 0.0 <= row["data_wait_fraction"] < 1.0
            assert row["data_wait_ci_low"] <= row["data_wait_median"] <= row["data_wait_ci_high"]
            # 6 timed steps: a median and the maximum, no p95 or p99 the sample cannot give.
            assert row["step_ms"]["n"] == 6 and "p95" not in row["step_ms"]
            assert row["step_ms"]["p50"] <= row["step_ms"]["max"]
            assert row["step_ms"]["p50"] >= 100.0  # the stand-in sleeps 100 ms per batch
            assert set(row["batch_wait_ms"]) == {"n", "p50", "max"}
            assert row["batch_shape"] == [SMOKE["cpu_dataloader"]["batch_size"], 3, 224, 224]
            assert len(row["throughputs"]) == 5 and row["relative_ci"] is not None
            assert row["peak_rss_mb"] > 0 and "predicted_img_per_s" not in row
    expected = {
        (lib, w, t)
        for lib in LIBRARIES
        for w in SMOKE["cpu_dataloader"]["workers"]
        for t in SMOKE["training"]["transforms"]
    }
    assert found == expected


def test_the_sleep_rows_agree_with_the_out_of_sample_prediction(training_run: Path) -> None:
    """With the stand-in accelerator, measured and predicted (from the cpu_dataloader rows,
    another job) agree within policy.TRAINING_PREDICTION_TOLERANCE where neither job was under
    load. A 0-worker row loads and steps in one process, so a second process on the 2 cores
    slows its loading in one job and not the other: a row the quietness probe flags (its job or
    its supply's) has to agree within twice the tolerance."""
    table = pd.read_csv(training_run / "results/tables/training.csv")
    assert len(table) == len(LIBRARIES) * len(SMOKE["cpu_dataloader"]["workers"])
    assert (table["status"] == "ok").all()
    assert table["supply_source"].str.contains("/cpu_dataloader/").all(), table.to_string()
    off = (table["measured_vs_predicted"] - 1.0).abs()
    loaded = table[["under_load", "supply_under_load"]].fillna(True).astype(bool).any(axis=1)
    quiet = ~loaded
    assert (off[quiet] <= TRAINING_PREDICTION_TOLERANCE).all(), table.to_string()
    assert (off <= 2 * TRAINING_PREDICTION_TOLERANCE).all(), table.to_string()
    assert table["model_source"].str.startswith("the stand-in's nominal rate").all()
    summary = (training_run / "results/analysis/summary.md").read_text()
    assert "## Training: measured against the starvation model, out of sample" in summary


def test_the_supplys_two_runs_are_two_jobs_and_one_row(training_run: Path) -> None:
    """cpu_dataloader.runs: 2 writes each setting's file twice (the second ``-run2``, its own
    log and benchmark); the tables hold one row per setting pooling both, its interval over the
    two processes, and the training table's prediction takes that row (``supply_runs`` 2)."""
    raw = sorted((training_run / "results/raw/smoke-test").glob("*/cpu_dataloader/*/*.json"))
    first = [p for p in raw if "-run" not in p.name]
    assert first and sorted(raw) == sorted([*first, *(p.with_name(p.stem + "-run2.json")
                                                    for p in first)])  # fmt: skip
    logs = sorted((training_run / "logs/smoke-test").glob("*/cpu_dataloader/*/*-run2.log"))
    assert logs
    table = pd.read_csv(training_run / "results/tables/all_results.csv")
    loader = table[table["regime"] == "cpu_dataloader"]
    assert len(loader) == len(first) and (loader["runs"] == 2).all(), loader.to_string()
    assert loader["ci_method"].str.contains("2 processes").all()
    assert loader["source_file"].str.contains("-run2.json").all()
    training = pd.read_csv(training_run / "results/tables/training.csv")
    assert (training["supply_runs"] == 2).all() and (training["runs"] == 1).all()


def test_plots_from_the_result_files_gives_the_same_training_table(
    training_run: Path, tmp_path: Path
) -> None:
    """Results brought from elsewhere (an offline GPU node's, say) and read as ``snakemake
    plots`` reads them (its collect_results rule, alone here): the same out-of-sample training
    table as the run's own."""
    raw = training_run / "results/raw"
    run_snakemake(
        tmp_path, "--cores", "1", "results/plots/brought/tables/training.csv", "--config",
        "preset=smoke", "machine=smoke-test", f"plot_from={{'brought': ['{raw}']}}",
    )  # fmt: skip
    brought = pd.read_csv(tmp_path / "results/plots/brought/tables/training.csv")
    own = pd.read_csv(training_run / "results/tables/training.csv")
    columns = ["library", "workers", "predicted_img_per_s", "measured_vs_predicted"]
    key = ["library", "workers"]
    pd.testing.assert_frame_equal(
        brought[columns].sort_values(key).reset_index(drop=True),
        own[columns].sort_values(key).reset_index(drop=True),
    )
