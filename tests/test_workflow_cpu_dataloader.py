"""The real workflow at the smoke preset, cpu_dataloader regime: four libraries, both scopes,
workers 0 and 2, two recipes, real DataLoader worker processes in each library's env."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import (
    REPO,
    SMOKE_CONFIG,
    SMOKE_LIBRARIES,
    WorkflowRun,
    assert_every_row,
    check_crop_larger_than_the_images,
    env_python,
    run_engine,
    run_snakemake,
    smoke_settings,
)

from augbench.measuring.stopping import epoch_batches
from augbench.planning import regimes
from augbench.workload import matrix, recipes

pytestmark = pytest.mark.workflow

SMOKE = smoke_settings(
    regimes.libraries_for("cpu_dataloader", SMOKE_LIBRARIES), ["micro", "cpu_dataloader"]
)
DL = SMOKE["cpu_dataloader"]
DECODERS = {
    "albumentationsx": "cv2.imread",
    "torchvision": "torchvision.io",
    "kornia": "kornia.io",
    "pillow": "PIL",
}


def _dl_rows(run: WorkflowRun) -> pd.DataFrame:
    table = pd.read_csv(run.workdir / "results/tables/all_results.csv")
    return table[table["regime"] == "cpu_dataloader"]


def test_all_results_has_every_library_scope_workers_recipe_with_a_status(
    smoke_run: WorkflowRun,
) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]
    rows = _dl_rows(smoke_run)
    keys = set(zip(rows["library"], rows["scope"], rows["workers"], rows["transform"], strict=True))
    expected = {
        (lib, scope, workers, t)
        for lib in SMOKE["libraries"]
        for scope in DL["scopes"]
        for workers in DL["workers"]
        for t in DL["transforms"]
    }
    assert keys == expected
    assert len(rows) == len(expected)
    assert set(rows["status"]) <= set(matrix.STATUSES)
    assert rows[rows["status"] != "ok"]["reason"].notna().all()
    # Every library implements both smoke recipes: all are measured.
    ok = rows[rows["status"] == "ok"]
    assert len(ok) == len(expected), rows[rows["status"] != "ok"][["library", "reason"]]
    assert (ok["median_throughput"] > 0).all()
    assert (ok["batch_size"] == DL["batch_size"]).all()
    assert set(ok["recipe"]) == {recipes.recipe_name(t) for t in DL["transforms"]}


def test_result_rows_record_decoder_timing_and_threads(smoke_run: WorkflowRun) -> None:
    raw = sorted(smoke_run.raw("cpu_dataloader").rglob("*.json"))
    assert len(raw) == len(SMOKE["libraries"]) * len(DL["scopes"]) * len(DL["workers"])
    for path in raw:
        payload = json.loads(path.read_text())
        meta = payload["metadata"]
        params = meta["benchmark_params"]
        assert meta["regime"] == "cpu_dataloader"
        assert meta["machine"] == "smoke-test"
        assert path.name.startswith(f"{meta['scope']}-w{params['workers']}-")
        # job_per: library (smoke preset): one process measured every setting, in config order.
        assert DL["job_per"] == "library"
        assert params["settings_in_job"] == [
            matrix.dataloader_setting(scope, workers)
            for scope in DL["scopes"]
            for workers in DL["workers"]
        ]
        assert params["batch_size"] == DL["batch_size"]
        assert params["num_runs"] == DL["num_runs"]
        assert params["prefetch_factor"] == (DL["prefetch_factor"] if params["workers"] else None)
        assert "iter(loader)" in params["timed_window"]
        assert params["usable_cores"] >= 1
        threads = meta["thread_settings"]
        assert threads["environment"]["OMP_NUM_THREADS"] == "1"
        assert threads["main_process"]["pytorch"]["threads"] == 1
        if params["workers"]:
            # worker_init_fn reported from inside every worker process.
            (workers,) = threads["workers"]
            assert workers["pytorch"]["threads"] == 1
            assert workers["worker_processes"] >= params["workers"]
            if meta["library"] == "albumentationsx":
                assert workers["opencv"]["threads"] == 1
        else:
            assert threads["workers"] == []
        for name, row in payload["results"].items():
            assert row["status"] == "ok", (path, name, row.get("reason"))
            assert row["scope"] == meta["scope"]
            assert row["workers"] == params["workers"]
            assert row["decode_in_timed_window"] is (meta["scope"] == "decode")
            lib = meta["library"]
            assert row["decoder"] == "native"  # the library's own decode, its call beside it
            assert DECODERS.get(lib, "torchvision.io") in row["decoder_call"]
            # The stopping rule ends a row between min_runs and the configured num_runs.
            runs = len(row["throughputs"])
            assert params["min_runs"] <= runs <= DL["num_runs"] == params["num_runs"]
            assert runs == row["num_successful_runs"] == row["timed_rounds"]
            assert (runs < DL["num_runs"]) == (row["stopped_by"] == "relative_ci")
            assert row["relative_ci"] is not None
            assert all(t > 0 for t in row["throughputs"])
            window = epoch_batches(DL["batches_per_run"], params["workers"])
            assert row["window_batches"] == window
            assert row["images_per_run"] == DL["batch_size"] * window
            assert row["first_batch_s"] > 0
            # Tail latency: each batch's wait after an epoch's first, over the timed epochs; the
            # percentiles a sample of this size supports, and its maximum.
            waits = row["batch_wait_ms"]
            assert row["batch_waits_counted"] == runs * (window - 1) == waits["n"]
            assert 0 < waits["p50"] <= waits["max"], waits
            assert ("p99" in waits) is (waits["n"] >= 100)
            # The interval of the reported median, and what it covers.
            assert row["ci_low"] <= row["median_throughput"] <= row["ci_high"]
            assert 0 < row["ci_level"] <= 1 and "values" in row["ci_method"]
            # The hand-over probe: every decode row with workers carries its job's.
            probed = meta["job_timing"]["handover_seconds"]  # its share of the setting's time
            if meta["scope"] == "decode" and params["workers"] > 0:
                assert 0 < probed < meta["job_timing"]["setting_seconds"]
                assert row["handover_idle_ms"] > 0 and row["handover_busy_ms"] > 0
                # What a model that reads its batches pays: the first read, and next() that
                # frees a read batch.
                assert row["handover_first_read_ms"] > 0 and row["handover_read_ms"] > 0
                assert row["handover_batch_mb"] == pytest.approx(
                    DL["batch_size"] * 3 * 224 * 224 * 4 / 2**20
                )
            else:
                assert row["handover_idle_ms"] is None and probed == 0
            assert row["startup_in_timed_window"] is False
            assert row["batch_shape"] == [DL["batch_size"], 3, 224, 224]
            assert row["batch_dtype"] == "torch.float32"
            assert row["preflight_items"] == 10
            assert row["recipe"] == recipes.recipe_name(name)


def test_scaling_starvation_and_speedup_tables(smoke_run: WorkflowRun) -> None:
    tables = smoke_run.workdir / "results/tables"
    speedups = pd.read_csv(tables / "speedups_cpu_dataloader.csv")
    # Libraries compete only within one scope and worker count.
    for _, group in speedups[speedups["status"] == "ok"].groupby(["scope", "workers", "transform"]):
        assert set(group["library"]) == set(SMOKE["libraries"])
        assert group["is_fastest"].sum() == 1
    scaling = pd.read_csv(tables / "worker_scaling_cpu_dataloader.csv")
    assert set(scaling["workers"]) == set(DL["workers"])
    assert len(scaling) == len(_dl_rows(smoke_run))
    # Smoke has no workers=1 row: efficiency is undefined, the ratio to workers=0 is there.
    assert scaling["parallel_efficiency"].isna().all()
    assert (scaling[scaling["workers"] == 2]["speedup_vs_w0"] > 0).all()
    starvation = pd.read_csv(tables / "starvation_cpu_dataloader.csv")
    targets = {t["name"] for t in DL["required_throughput"]}
    assert set(starvation["target"]) == targets
    assert len(starvation) == len(targets) * len(_dl_rows(smoke_run))
    assert starvation["fed_ratio"].gt(0).all()
    assert set(starvation["verdict"]) <= {"keeps up", "starved"}


def test_rerun_does_no_work(smoke_run: WorkflowRun) -> None:
    proc = smoke_run.snakemake("-n", *SMOKE_CONFIG)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_worker_count_above_the_cores_is_a_visible_skipped_row(smoke_run: WorkflowRun) -> None:
    rows = run_engine(
        env_python("pillow"), "cpu_dataloader", "--library", "pillow",
        "--scope", "memory", "--workers", str(os.cpu_count() + 1),
        "--transforms", "HorizontalFlip,CenterCrop224", "--manifest", str(smoke_run.manifest),
        "--num-images", "4", output=smoke_run.workdir / "over-cap.json",
    )["results"]  # fmt: skip
    assert_every_row(rows, "skipped", "usable cores")
    assert rows["CenterCrop224"]["recipe"] == "CenterCrop224 + Normalize + ToTensor"


def test_failing_recipe_keeps_the_other_rows(smoke_run: WorkflowRun, tmp_path) -> None:
    """Images smaller than the 224 crop make RandomCrop224 raise: that recipe is an error row
    with the library's message, the resize-crop recipe is measured."""
    check_crop_larger_than_the_images(
        tmp_path, "cpu_dataloader", "HorizontalFlip", "RandomResizedCrop",
        "--scope", "decode", "--workers", "1",
        "--batch-size", "2", "--batches-per-run", "2", "--num-runs", "1",
    )  # fmt: skip


def test_baseline_columns_on_every_row(smoke_run: WorkflowRun) -> None:
    rows = _dl_rows(smoke_run)
    ok = rows[rows["status"] == "ok"]
    # Bare loop per recipe, transport per job: measured for every ok row of both scopes.
    assert (ok["bare_loop_throughput"] > 0).all()
    assert (ok["regime_vs_bare"] > 0).all()
    assert (ok["transport_throughput"] > 0).all()
    assert ok["transport_bound"].notna().all()
    for _, row in ok.iterrows():
        # regime_vs_bare: the median of the ratios of the epochs of one round, every pair kept.
        regime = json.loads(row["throughputs"])
        bare = json.loads(row["bare_loop_throughputs"])
        pairs = min(len(regime), len(bare))
        assert 1 <= len(bare) <= DL["baseline_runs"]
        assert row["regime_vs_bare_pairs"] == pairs
        ratios = [r / b for r, b in zip(regime, bare, strict=False)]
        assert row["regime_vs_bare"] == pytest.approx(statistics.median(ratios))
        assert row["regime_vs_bare_min"] == pytest.approx(min(ratios))
        assert row["regime_vs_bare_max"] == pytest.approx(max(ratios))
    decode = ok[ok["scope"] == "decode"]
    memory = ok[ok["scope"] == "memory"]
    assert (decode["decode_floor_throughput"] > 0).all()
    assert memory["decode_floor_throughput"].isna().all()
    assert memory["decode_composition_source"].isna().all()
    assert (decode["decode_floor_processes"] == decode["workers"].clip(lower=1)).all()
    # The composition terms come from the decode job's own file: its memory-scope companion and
    # decode floor, timed in the same rounds as the decode epochs, not another job's row.
    for _, row in decode.iterrows():
        assert row["decode_composition_source"] == "same_job"
        assert row["memory_row_source_file"] == row["source_file"]
        payload = json.loads((smoke_run.workdir / row["source_file"]).read_text())
        raw = payload["results"][row["transform"]]
        assert raw["decode_composition_source"] == "same_job"
        decode_runs = raw["throughputs"]
        memory_runs = raw["memory_row_throughputs"]
        floor_runs = raw["decode_floor_throughputs"]
        assert len(memory_runs) == len(floor_runs) == min(len(decode_runs), DL["baseline_runs"])
        assert row["memory_row_throughput"] == pytest.approx(statistics.median(memory_runs))
        expected = [1 / (1 / f + 1 / m) for f, m in zip(floor_runs, memory_runs, strict=True)]
        assert row["decode_expected_throughput"] == pytest.approx(statistics.median(expected))
        ratios = [d / e for d, e in zip(decode_runs, expected, strict=False)]
        assert row["decode_composition_ratio"] == pytest.approx(statistics.median(ratios))
        assert row["decode_composition_pairs"] == len(ratios)
    scaling = pd.read_csv(smoke_run.workdir / "results/tables/worker_scaling_cpu_dataloader.csv")
    assert (scaling[scaling["status"] == "ok"]["transport_throughput"] > 0).all()
    assert scaling["regime_vs_bare"].notna().any()


@pytest.fixture(scope="module")
def torchvision_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's torchvision env, built by the workflow's own rule (seconds when it
    exists): the sleep test needs no benchmark run."""
    workdir = tmp_path_factory.mktemp("env")
    run_snakemake(
        workdir, "--cores", "1", "results/envs/torchvision.json", *SMOKE_CONFIG
    )  # fmt: skip
    return env_python("torchvision")


@pytest.mark.slow
def test_injected_sleep_is_measured_by_the_regime_and_every_baseline(
    torchvision_env: Path, tmp_path: Path
) -> None:
    """A 5 ms sleep per sample (a test-only recipe step, tail or decoder) must read as about
    200 img/s per worker that runs in parallel, in the regime's loader, the bare loop, the
    transport baseline and the decode floor (tests/helpers/sleep_baselines.py, torchvision env).
    The best of the runs is compared: on a shared machine other processes only ever slow a run
    down, while a timing window that missed or double-counted work would be off in every run."""
    cores = len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    if load > 1.5 * cores:
        # Runnable processes beyond the cores: a sleeping sample wakes up late and its few
        # microseconds of work wait their turn, so wall-clock rates measure the other processes.
        pytest.skip(
            f"load average {load:.1f} on {cores} cores: rates would measure the other processes"
        )
    out = tmp_path / "sleep.json"
    # Two workers only where the main process has a core of its own to receive their batches.
    workers = [0, 1, 2] if cores >= 3 else [0, 1]
    subprocess.run(
        [str(torchvision_env), str(REPO / "tests/helpers/sleep_baselines.py"), str(out),
         *map(str, workers)],
        check=True, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
    )  # fmt: skip
    measured = json.loads(out.read_text())
    for w in workers:
        runs_of = measured[str(w)]
        ratios = runs_of.pop("decode_composition_ratio")
        # decode + the step: two sleeps per sample; decode alone and the step alone compose to it.
        expected = {"decode_recipe": 100.0 * max(1, w)}
        # 15 %: beside a second test worker on 2 cores a one-worker loader's best epoch came out
        # 11 % under its sleeps' rate in all four runs (late wake-ups); a sleep not timed, or
        # timed twice, is 2x off.
        for name, runs in runs_of.items():
            assert len(runs) == 4, (w, name, runs)
            assert max(runs) == pytest.approx(expected.get(name, 200.0 * max(1, w)), rel=0.15), (
                w,
                name,
                runs,
            )
        assert len(ratios) == 4
        assert statistics.median(ratios) == pytest.approx(1.0, rel=0.10), (w, ratios)


def test_job_per_setting_plans_one_job_per_setting_with_the_same_result_files(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    """cpu_dataloader.job_per: setting (cloud sweeps) writes exactly the files that the smoke
    run's job_per: library jobs wrote, one job each; job_per: library plans one job per library."""
    per_library = sorted(
        str(p.relative_to(smoke_run.workdir))
        for p in smoke_run.raw("cpu_dataloader").rglob("*.json")
    )
    config = [*SMOKE_CONFIG, "regimes=[cpu_dataloader]"]

    def planned(job_per: str) -> tuple[list[str], int]:
        proc = run_snakemake(
            tmp_path, "-n", "--forceall", "--until", "cpu_dataloader", *config,
            f"cpu_dataloader={{'job_per': '{job_per}'}}",
        )  # fmt: skip
        text = proc.stdout + proc.stderr
        outputs = sorted(
            out.strip()
            for line in text.splitlines()
            if line.strip().startswith("output: results/raw/")
            for out in line.strip()[len("output: ") :].split(",")
        )
        jobs = sum(1 for line in text.splitlines() if line.strip().endswith("rule cpu_dataloader:"))
        return outputs, jobs

    setting_outputs, setting_jobs = planned("setting")
    library_outputs, library_jobs = planned("library")
    assert setting_outputs == library_outputs == per_library
    assert setting_jobs == len(per_library)
    settings = len(DL["scopes"]) * len(DL["workers"])
    assert library_jobs == len(per_library) // settings
