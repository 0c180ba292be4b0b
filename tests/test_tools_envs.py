"""The scripts of tools/ that measure in a library's env (.venvs/<library>), each run as a user
runs it at the smallest scale it allows (a handful of small JPEGs, one or two rounds, mostly
Pillow: the env that starts fastest) and checked on what it writes: its rows, columns and the
numbers that follow from its inputs. The speeds themselves are not checked. Result files the
scripts read (a pipeline breakdown, a cpu_dataloader decode job) come from the real engines."""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, jpeg_manifest, library_env
from test_tools import run_tool

from augbench.workload import pipelines

pytestmark = pytest.mark.envs

# A two-step pipeline Pillow runs (the breakdown's whole-pipeline row is the tools' subject),
# as a file and as the engine's --pipelines JSON.
PIPELINE_YAML = "name: flip_blur\nsteps:\n  - HorizontalFlip\n  - GaussianBlur\n"
PIPELINES_JSON = pipelines.to_json([pipelines.parse(yaml.safe_load(PIPELINE_YAML), source="t")])


def engine(python: Path, module: str, *args: str) -> None:
    subprocess.run(
        [str(python), "-m", f"augbench.measuring.engines.{module}", *args],
        check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


@pytest.fixture(scope="module")
def pillow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return library_env("pillow")


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four 320x288 JPEGs: the manifest of a dataset named ``t``."""
    return jpeg_manifest(tmp_path_factory.mktemp("images"), count=4)


@pytest.fixture(scope="module")
def breakdown(pillow: Path, images: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run's results folder holding one Pillow pipeline breakdown file."""
    results = tmp_path_factory.mktemp("breakdown") / "results"
    output = results / "pipelines/raw/t/t/micro/pillow/breakdown-s000.json"
    engine(pillow, "pipeline_breakdown", "--library", "pillow", "--pipelines",
           PIPELINES_JSON, "--manifest", str(images), "--num-images", "4",
           "--min-values", "2", "--max-values", "2", "--machine", "t",
           "--output", str(output))  # fmt: skip
    row = json.loads(output.read_text())["results"]["flip_blur"]
    assert row["status"] == "ok", row
    return results


@pytest.fixture(scope="module")
def loader_run(pillow: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder holding a Pillow cpu_dataloader decode job (workers 0, the cheapest recipe,
    one bare-loop epoch per epoch) and its staged dataset, as the workflow lays them out."""
    run = tmp_path_factory.mktemp("loader-run")
    data = run / "results/data/t"
    data.mkdir(parents=True)
    manifest = jpeg_manifest(data, count=4)
    output = run / "results/raw/t/t/cpu_dataloader/pillow/decode-w0-s000.json"
    engine(pillow, "cpu_dataloader", "--library", "pillow", "--transforms",
           "RandomCrop224", "--manifest", str(manifest), "--num-images", "4",
           "--machine", "t", "--scope", "decode", "--workers", "0", "--batch-size", "2",
           "--batches-per-run", "2", "--num-runs", "2", "--min-runs", "2",
           "--baseline-runs", "1", "--output", str(output))  # fmt: skip
    rows = json.loads(output.read_text())["results"]
    assert {r["status"] for r in rows.values()} == {"ok"}, rows
    return run


# -- checks --------------------------------------------------------------------------------------
def test_compose_vs_rows_times_the_rows_compose_side_by_side(
    breakdown: Path, images: Path, tmp_path: Path
) -> None:
    """``--jobs 1``: the breakdown job runs again (its output in --out-dir), then 3 fresh
    interpreters loop over its whole-pipeline Compose; one line for the pipeline, the ratio
    being row / loop, within the (wide) tolerance asked for."""
    out = tmp_path / "rows-vs-loop.tsv"
    run_tool(
        "checks/compose_vs_rows.py", "--results", str(breakdown), "--manifest", str(images),
        "--processes", "3", "--jobs", "1", "--out-dir", str(tmp_path / "jobs"),
        "--tolerance", "100", "--out", str(out),
    )  # fmt: skip
    rerun = json.loads((tmp_path / "jobs/pillow-1.json").read_text())
    assert rerun["results"]["flip_blur"]["status"] == "ok"
    with out.open() as fh:
        (row,) = list(csv.DictReader(fh, delimiter="\t"))
    assert (row["library"], row["pipeline"], row["images"], row["jobs"]) == (
        "pillow",
        "flip_blur",
        "4",
        "1",
    )
    assert row["malloc_env"] == "glibc as shipped" and row["machine"] == "t"
    assert int(row["fresh_interpreters"]) == 3 and int(row["row_processes"]) >= 1
    row_ms, loop_ms = float(row["row_ms_per_image"]), float(row["fresh_loop_ms_per_image"])
    assert row_ms > 0 and loop_ms > 0
    assert float(row["ratio"]) == pytest.approx(row_ms / loop_ms, rel=0.02)
    assert row["within"] == "yes"


def test_process_speeds_alternates_its_arms_and_summarizes_them(
    pillow: Path, images: Path, tmp_path: Path
) -> None:
    pipeline = tmp_path / "flip_blur.yaml"
    pipeline.write_text(PIPELINE_YAML)
    out = tmp_path / "speeds.tsv"
    done = run_tool(
        "checks/process_speeds.py", "--library", "pillow", "--pipeline", str(pipeline),
        "--manifest", str(images), "--images", "2", "--interpreters", "2", "--values", "2",
        "--passes", "1", "--machine", "test", "--out", str(out),
    )  # fmt: skip
    lines = pd.read_csv(out, sep="\t")
    assert list(lines.columns) == ["machine", "library", "pipeline", "arm", "interpreter",
                                   "ms_per_image", "minor_faults_per_image"]  # fmt: skip
    assert len(lines) == 6 and (lines["ms_per_image"] > 0).all()
    assert lines.groupby("arm")["interpreter"].apply(sorted).to_dict() == {
        arm: [1, 2] for arm in ("glibc", "glibc-fixed-layout", "glibc-steady")
    }
    # Each arm first equally often: interpreter i starts with arm i mod 3.
    assert list(lines["arm"][::3]) == ["glibc", "glibc-fixed-layout"]
    summary = tmp_path / "summary.tsv"
    run_tool("checks/process_speeds.py", "--summarize", str(out), "--out", str(summary))
    table = pd.read_csv(summary, sep="\t")
    assert list(table["arm"]) == ["glibc", "glibc-fixed-layout", "glibc-steady"]
    for _, arm in table.iterrows():
        ms = lines[lines["arm"] == arm["arm"]]["ms_per_image"]
        assert arm["interpreters"] == 2 and arm["pipeline"] == "flip_blur"
        assert arm["fastest_ms"] == pytest.approx(ms.min(), abs=1e-3)
        assert arm["slowest_ms"] == pytest.approx(ms.max(), abs=1e-3)
        assert arm["median_ms"] == pytest.approx(ms.median(), abs=1e-3)
    # The run printed the same summary it would write.
    assert summary.read_text().strip() in done.stdout


def test_training_out_of_sample_predicts_a_training_job_from_the_supply(
    loader_run: Path, tmp_path: Path
) -> None:
    """One sleeping stand-in (data / model 2: model-bound) around each supply row of the decode
    job, run through the workflow's launcher; the table predicts every row, and the exit status
    says whether all were within the targets."""
    out, table = tmp_path / "train", tmp_path / "training.csv"
    done = run_tool(
        "checks/training_out_of_sample.py", "--supply", str(loader_run), "--out", str(out),
        "--ratios", "2", "--recipes", "RandomCrop224", "--steps", "4", "--blocks", "2",
        "--table", str(table), check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-4000:]
    written = sorted(out.glob("results/raw/t/t/training/pillow/*.json"))
    assert [p.name for p in written] == ["w0-RandomCrop224-r2.json"]
    rows = pd.read_csv(table)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"table": str(table), "rows": 1}
    (row,) = rows.to_dict("records")
    assert row["library"] == "pillow" and row["transform"] == "RandomCrop224"
    assert row["step_kind"] == "sleep" and row["predicted_img_per_s"] > 0
    assert row["data_over_model"] == pytest.approx(2.0, rel=0.15)  # the stand-in's ratio
    assert row["bound"] == "model"
    assert done.returncode == (0 if row["within_tolerance"] else 1)
    assert "sleep step, model-bound: " in done.stdout


# -- experiments ---------------------------------------------------------------------------------
def test_process_spread_times_the_same_loop_in_fresh_processes(
    breakdown: Path, images: Path, tmp_path: Path
) -> None:
    out = tmp_path / "spread.tsv"
    run_tool(
        "experiments/process_spread.py", "--results", str(breakdown), "--manifest", str(images),
        "--pipelines", "pillow:flip_blur", "--processes", "3", "--values", "1",
        "--out", str(out),
    )  # fmt: skip
    (row,) = pd.read_csv(out, sep="\t").to_dict("records")
    assert (row["library"], row["pipeline"], row["images"], row["processes"]) == (
        "pillow",
        "flip_blur",
        4,
        3,
    )
    medians = [float(m) for m in row["process_medians_ms"].split(", ")]
    assert len(medians) == 3
    assert row["min"] == pytest.approx(min(medians)) and row["max"] == pytest.approx(max(medians))
    assert row["max_over_min"] == pytest.approx(max(medians) / min(medians), abs=0.01)


def test_harness_overhead_pairs_the_workflows_process_with_a_bare_loop(
    pillow: Path, images: Path, tmp_path: Path
) -> None:
    out = tmp_path / "overhead.json"
    done = run_tool(
        "experiments/harness_overhead.py", "--library", "pillow",
        "--transforms", "GaussianBlur", "--manifest", str(images),
        "--num-images", "2", "--values", "2", "--rounds", "2", "--json-out", str(out),
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert [e["transform"] for e in report] == ["GaussianBlur"]
    for entry in report:
        assert entry["library"] == "pillow" and len(entry["ratio_per_round"]) == 2
        assert entry["workflow_img_s"] > 0 and entry["bare_loop_img_s"] > 0
        assert entry["ratio_median"] == pytest.approx(statistics.median(entry["ratio_per_round"]))
        assert f"ratio {entry['ratio_median']:.3f}" in done.stdout


def test_layout_effect_times_native_and_contiguous_inputs(images: Path, tmp_path: Path) -> None:
    """torchvision decodes to channels-last tensors: the native side is that, the contiguous one
    a row-major copy; one entry per transform, the ratio per pass pair."""
    library_env("torchvision")
    out, table = tmp_path / "layout.json", tmp_path / "layout.md"
    run_tool(
        "experiments/layout_effect.py", "--libraries", "torchvision",
        "--transforms", "HorizontalFlip", "--manifest", str(images),
        "--num-images", "2", "--passes", "2", "--clock", "cpu",
        "--json-out", str(out), "--markdown-out", str(table),
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert [e["transform"] for e in report] == ["HorizontalFlip"]
    for entry in report:
        assert entry["native_input"] == "channels_last"
        assert entry["contiguous_input"] == "contiguous"
        assert len(entry["ratio_per_pass"]) == 2
        assert entry["ratio_median"] == pytest.approx(statistics.median(entry["ratio_per_pass"]))
    lines = table.read_text().splitlines()
    assert len(lines) == 2 + len(report) and lines[2].startswith("| torchvision | HorizontalFlip")


def test_loader_transport_times_the_loaders_own_costs(
    images: Path, tmp_path: Path, pillow: Path
) -> None:
    out = tmp_path / "transport.csv"
    done = run_tool(
        "experiments/loader_transport.py", "--manifest", str(images), "--libraries", "pillow",
        "--num-images", "4", "--batch-size", "2", "--batches-per-run", "1", "--rounds", "2",
        "--output", str(out),
    )  # fmt: skip
    table = pd.read_csv(out)
    loaders = table[table["workers"].notna()]
    assert set(zip(loaders["measurement"], loaders["workers"].astype(int), strict=True)) == {
        (m, w) for m in ("recipe", "tail", "ready_float32", "ready_uint8") for w in (0, 1)
    }
    collate = table[table["workers"].isna()]
    assert set(collate["measurement"]) == {"stack_private", "stack_shared", "stack_shared_uint8"}
    assert (table["library"] == "pillow").all() and (table["img_s"] > 0).all()
    assert table["us_per_image"].to_numpy() == pytest.approx(1e6 / table["img_s"].to_numpy())
    for runs in loaders["runs"]:
        assert len(json.loads(runs)) == 2  # one value per round
    assert f"written to {out}" in done.stdout


def test_decode_floor_pairs_the_dataloader_with_decoding_alone(
    images: Path, tmp_path: Path, pillow: Path
) -> None:
    out = tmp_path / "floor.csv"
    run_tool(
        "experiments/decode_floor.py", "--manifest", str(images), "--libraries", "pillow",
        "--workers", "0", "2", "--num-images", "4", "--batch-size", "2",
        "--batches-per-run", "1", "--num-runs", "2", "--output", str(out),
    )  # fmt: skip
    table = pd.read_csv(out)
    assert list(table["workers"]) == [0, 2] and list(table["floor_processes"]) == [1, 2]
    assert (table["images_per_run"] == 2).all() and (table["library"] == "pillow").all()
    for _, row in table.iterrows():
        floor, loader = json.loads(row["floor_runs"]), json.loads(row["dataloader_runs"])
        assert len(floor) == 2 and len(loader) == 2
        assert row["ratio"] == pytest.approx(statistics.median(loader) / statistics.median(floor))


def test_dataloader_remeasure_runs_each_flagged_setting_again(
    loader_run: Path, tmp_path: Path
) -> None:
    """The run's row flagged below its bare loop (its tidy table says 0.5): the decode-w0 job runs
    again with 2 paired rounds; the run's own pairs and the new ones printed."""
    from augbench.analysis import tidy

    files = sorted(loader_run.glob("results/raw/*/*/cpu_dataloader/*/*.json"))
    table = tidy.load(files)
    table.loc[:, "regime_vs_bare"] = 0.5
    table.loc[:, "decode_composition_ratio"] = 1.0  # no composition flag
    tables = loader_run / "results/tables"
    tables.mkdir(exist_ok=True)
    table.to_csv(tables / "all_results.csv", index=False)
    done = run_tool("experiments/dataloader_remeasure.py", str(loader_run), "--rounds", "2",
                    "--envs", str(REPO / ".venvs"))  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0] == f"1 flagged rows in {loader_run}; re-measured with 2 pairs"
    (row,) = [line for line in lines if line.startswith("| pillow ")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:5] == ["pillow", "decode", "0", "RandomCrop224", "regime_vs_bare"]
    original = json.loads(files[0].read_text())["results"]["RandomCrop224"]
    assert cells[5].startswith(f"{original['regime_vs_bare']:.2f} (")
    value, pairs = cells[6].split(" (")
    assert not math.isnan(float(value)) and len(pairs.rstrip(")").split(", ")) == 2
