"""The real workflow at the smoke preset: all four libraries, real envs, real pyperf."""

from __future__ import annotations

import json
import sys
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
    copy_of,
    env_python,
    run_engine,
    run_snakemake,
    smoke_settings,
)

from augbench import result_format
from augbench.planning import regimes
from augbench.workload import matrix

pytestmark = pytest.mark.workflow

SMOKE = smoke_settings(regimes.libraries_for("micro", SMOKE_LIBRARIES), ["micro"])
STATUSES = set(matrix.STATUSES)


def test_smoke_run_succeeds(smoke_run: WorkflowRun) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]


def test_speedups_table_has_every_transform_and_library_with_a_status(
    smoke_run: WorkflowRun,
) -> None:
    table = pd.read_csv(smoke_run.workdir / "results/tables/speedups_micro.csv")
    pairs = set(zip(table["transform"], table["library"], strict=True))
    expected = {(t, lib) for t in SMOKE["transforms"] for lib in SMOKE["libraries"]}
    assert pairs == expected
    assert set(table["status"]) <= STATUSES
    ok = table[table["status"] == "ok"]
    assert len(ok) >= len(expected) // 2
    assert (ok["median_throughput"] > 0).all()
    # Pillow has no hue operation: ColorJitter must say so rather than vanish.
    pillow_jitter = table[(table["library"] == "pillow") & (table["transform"] == "ColorJitter")]
    assert pillow_jitter["status"].tolist() == ["unsupported"]
    assert "hue" in pillow_jitter["reason"].iloc[0]
    not_ok = table[table["status"] != "ok"]
    assert not_ok["reason"].notna().all()
    # Where two libraries are ok on a transform, exactly one of them is fastest.
    for _, group in ok.groupby("transform"):
        if len(group) > 1:
            assert group["is_fastest"].sum() == 1
            assert group["speedup"].notna().all()


def test_result_files_follow_the_schema(smoke_run: WorkflowRun) -> None:
    raw = sorted(smoke_run.raw("micro").rglob("*.json"))
    assert len(raw) == len(SMOKE["libraries"])  # 3 transforms in one shard per library
    for path in raw:
        payload = json.loads(path.read_text())
        meta = payload["metadata"]
        for key in (
            "system_info",
            "machine",
            "library_versions",
            "thread_settings",
            "benchmark_params",
            "regime",
            "scope",
            "dataset",
            "environment",
        ):
            assert key in meta, (path, key)
        assert meta["machine"] == "smoke-test"
        assert meta["regime"] == "micro"
        assert meta["benchmark_params"]["timer_backend"] == "pyperf"
        assert meta["dataset"]["num_images_used"] == SMOKE["num_images"]
        assert meta["environment"]["env_lock_sha256"]
        assert meta["thread_settings"]["environment"]["OMP_NUM_THREADS"] == "1"
        # How quiet the machine was (augbench.measuring.quietness): both ends, the pre-start sample
        # of the engine process, and the job's own CPU (its pyperf workers reaped and counted).
        quiet = meta["quietness"]
        assert quiet["source"] == "linux /proc" and quiet["cpus"] >= 1
        assert quiet["pre_start"]["wall_seconds"] > 0
        assert quiet["start"]["loadavg"] and quiet["end"]["busy_jiffies"]
        assert quiet["own_cpu_seconds"] > 0 and quiet["other_load_cores"] is not None
        for name, row in payload["results"].items():
            assert row["status"] in STATUSES
            if row["status"] == "ok":
                runs = SMOKE["micro"]["processes"] * SMOKE["micro"]["values"]
                assert len(row["throughputs"]) == runs == row["num_successful_runs"]
                assert all(t > 0 for t in row["throughputs"])
                assert row["median_throughput"] > 0
                assert row["warmup_iterations"] == SMOKE["micro"]["warmups"]
                assert row["preflight_items"] == 10
            else:
                assert row["reason"], (path, name)


def test_every_raw_result_file_validates_against_the_schema(smoke_run: WorkflowRun) -> None:
    """Every raw JSON the run wrote (all regimes, the pipelines' jobs) is a result file of the
    current schema version, read as written (workflow/schemas/result.schema.yaml)."""
    results = smoke_run.workdir / "results"
    raw = sorted(
        path for folder in ("raw", "pipelines/raw") for path in (results / folder).rglob("*.json")
    )
    assert raw
    regimes_seen = set()
    for path in raw:
        written = json.loads(path.read_text())
        result_format.validate(written, path)
        assert written["metadata"]["schema_version"] == result_format.SCHEMA_VERSION, path
        assert result_format.read(path) == written, path  # nothing to convert
        regimes_seen.add(written["metadata"].get("regime"))
    assert "micro" in regimes_seen and len(regimes_seen) > 1, regimes_seen


def test_every_timed_job_records_the_peak_memory_of_its_processes(smoke_run: WorkflowRun) -> None:
    """The launcher's sampler (augbench.measuring.memory_peak) saw every engine's process tree:
    its peaks are in the result's metadata, at least the engine's own resident set at its
    imports."""
    results = smoke_run.workdir / "results"
    raw = sorted(
        path for folder in ("raw", "pipelines/raw") for path in (results / folder).rglob("*.json")
    )
    for path in raw:
        memory = json.loads(path.read_text())["metadata"].get("job_memory")
        if "env_failed" in path.read_text():
            continue  # written by the launcher itself: no engine ran
        assert memory and memory["samples"] >= 1, path
        assert 20 < memory["peak_rss_mb"] < 20_000, (path, memory)
        assert 0 < memory["peak_pss_mb"] <= memory["peak_rss_mb"] * 1.01, (path, memory)


def test_every_timed_job_records_quietness(smoke_run: WorkflowRun) -> None:
    """Every engine of the run writes the block (all regimes, the pipelines' jobs and the
    lazy-output diagnostic), and the tidy table reads it."""
    results = smoke_run.workdir / "results"
    folders = ("raw", "pipelines/raw", "analysis/lazy_outputs")
    raw = sorted(path for folder in folders for path in (results / folder).rglob("*.json"))
    assert raw
    for path in raw:
        quiet = json.loads(path.read_text())["metadata"].get("quietness")
        assert quiet and quiet["wall_seconds"] > 0 and quiet["end"]["loadavg"], path
    table = pd.read_csv(smoke_run.workdir / "results/tables/all_results.csv")
    assert table["other_load_cores"].notna().all()
    # No verdict (empty) only for a job shorter than policy.QUIETNESS_MIN_WALL_SECONDS.
    verdicts = table["under_load"].dropna()
    assert len(verdicts) and set(verdicts.astype(str)) <= {"True", "False"}


def test_env_markers_record_interpreter_versions_and_lock_hash(smoke_run: WorkflowRun) -> None:
    for lib in SMOKE["libraries"]:
        marker = json.loads((smoke_run.workdir / f"results/envs/{lib}.json").read_text())
        assert Path(marker["python"]).exists()
        assert len(marker["lock_sha256"]) == 64
        assert marker["packages"]["torch"] == "2.13.0"
        assert marker["packages"]["numpy"]


def test_rerun_does_no_work(smoke_run: WorkflowRun) -> None:
    proc = smoke_run.snakemake("-n", *SMOKE_CONFIG)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_deleting_one_shard_reruns_only_that_shard(smoke_run: WorkflowRun, tmp_path: Path) -> None:
    run = copy_of(smoke_run, tmp_path / "run")  # the shared run stays as it is for other tests
    raw = run.raw("micro")
    victim = raw / "pillow" / "s000.json"
    others = {p: p.stat().st_mtime_ns for p in raw.rglob("*.json") if p != victim}
    victim.unlink()
    dry = run.snakemake("-n", "--quiet", "rules", *SMOKE_CONFIG)
    out = dry.stdout + dry.stderr
    assert "micro" in out and "aggregate" in out
    assert "build_env" not in out and "stage_dataset" not in out
    # Only the shard is asked for: the plan above showed what a full run would redo.
    run.snakemake("--cores", "2", str(victim.relative_to(run.workdir)), *SMOKE_CONFIG)
    assert victim.exists()
    assert {p: p.stat().st_mtime_ns for p in others} == others


def test_unknown_transform_in_config_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_snakemake(
        tmp_path, "-n", "--config", "preset=smoke", "transforms=[Nope]", check=False
    )
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "transforms[0]: 'Nope' is not one of" in out
    assert "HorizontalFlip" in out


def test_corrupt_archive_stops_staging_with_the_member_named(tmp_path: Path) -> None:
    import io
    import tarfile

    archive = tmp_path / "bad.tar"
    with tarfile.open(archive, "w") as tar:
        data = b"\xff\xd8\xff\xe0 truncated jpeg"
        info = tarfile.TarInfo("imgs/broken.jpg")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    proc = run_snakemake(
        tmp_path,
        "--cores", "1", "stage_dataset",
        "--config", "preset=smoke", f"dataset={{'archive': '{archive}'}}",
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "imgs/broken.jpg" in proc.stdout + proc.stderr
    assert not list((tmp_path / "results/data").glob("bad-*/manifest.json"))


def test_failing_transform_keeps_the_other_rows(smoke_run: WorkflowRun, tmp_path: Path) -> None:
    """Images smaller than the crop make torchvision's RandomCrop raise; the flip is still
    measured and the error row keeps the library's message."""
    check_crop_larger_than_the_images(
        tmp_path, "micro", "RandomCrop224", "HorizontalFlip",
        "--processes", "1", "--values", "1", "--warmups", "0",
    )  # fmt: skip


def test_library_that_fails_to_import_gives_error_rows(smoke_run: WorkflowRun) -> None:
    """The driver's interpreter has no kornia: every row is an error naming the import."""
    rows = run_engine(
        sys.executable, "micro", "--library", "kornia",
        "--transforms", "HorizontalFlip,Rotate", "--manifest", str(smoke_run.manifest),
        "--num-images", "2", output=smoke_run.workdir / "import-failure.json",
    )["results"]  # fmt: skip
    assert_every_row(rows, "error", "No module named 'kornia'")


def test_a_breakdown_job_runs_every_round_in_an_interpreter_of_its_own(
    smoke_run: WorkflowRun,
) -> None:
    """The breakdown job's own process imports no library: in the driver's interpreter, which
    has no kornia, the first round's interpreter says so in every row; in Pillow's env a row
    precise after its first round ran one interpreter, and the file records its thread policy
    and that round's decode."""
    from augbench.workload.pipeline_sources.configured import load_file
    from augbench.workload.pipelines import to_json

    pipeline = load_file(REPO / "config" / "pipelines" / "imagenet_train.yaml")
    common = ("--pipelines", to_json([pipeline]), "--manifest", str(smoke_run.manifest),
              "--num-images", "2", "--min-values", "2", "--max-values", "2",
              "--values-per-process", "2")  # fmt: skip
    failed = run_engine(
        sys.executable, "pipeline_breakdown", "--library", "kornia", *common,
        output=smoke_run.workdir / "breakdown-import-failure.json",
    )["results"]  # fmt: skip
    assert_every_row(failed, "error", "No module named 'kornia'")
    payload = run_engine(
        env_python("pillow"), "pipeline_breakdown", "--library", "pillow", *common,
        output=smoke_run.workdir / "breakdown-one-round.json",
    )  # fmt: skip
    row = payload["results"][pipeline.name]
    assert row["status"] == "ok", row
    assert row["round_interpreters"] == 1 and len(row["throughputs"]) == 2
    metadata = payload["metadata"]
    assert metadata["thread_settings"]["policy"]["threads"] == 1
    assert metadata["decode"]["decoder"] and metadata["decode"]["preload_seconds"] > 0


def test_rows_repeat_until_the_ci_target_or_the_process_limit(smoke_run: WorkflowRun) -> None:
    """One pyperf worker per round times every transform; a row gets another round only while
    its relative CI is above the target, between min_processes and processes rounds."""
    payload = run_engine(
        env_python("pillow"), "micro", "--library", "pillow",
        "--transforms", "HorizontalFlip,Grayscale,ColorJitter",
        "--manifest", str(smoke_run.manifest),
        "--num-images", "4",
        "--processes", "3", "--min-processes", "2", "--values", "2", "--warmups", "1",
        output=smoke_run.workdir / "stopping.json",
    )  # fmt: skip
    params = payload["metadata"]["benchmark_params"]
    assert (params["processes"], params["min_processes"]) == (3, 2)
    assert params["relative_ci_target"] == 0.05
    rows = payload["results"]
    assert list(rows) == ["HorizontalFlip", "Grayscale", "ColorJitter"]  # configured order
    assert rows["ColorJitter"]["status"] == "unsupported"
    for name in ("HorizontalFlip", "Grayscale"):
        row = rows[name]
        assert row["status"] == "ok", row
        assert 2 <= row["pyperf_processes"] <= 3
        assert len(row["throughputs"]) == 2 * row["pyperf_processes"]
        assert row["loops"] >= 1 and row["num_images"] == 4
        met = row["relative_ci"] <= row["relative_ci_target"]
        assert row["stopped_by"] == ("ci_target" if met else "max_values")
        if row["pyperf_processes"] < 3:  # stopped before the limit: the CI was reached
            assert met
        assert row["peak_rss_mb"] > 0 and row["peak_rss_scope"] in ("transform", "process")
        assert row["input_layout"]["type"] == "PIL.Image.Image"
        # Its seconds in the worker processes: its timed passes and what surrounds them.
        assert row["worker_seconds"] > row["wall_seconds"] > 0
    # Each round's wall time, one per round the rows took: the rest of the job is paid once.
    rounds = payload["metadata"]["job_timing"]["round_seconds"]
    assert len(rounds) == max(rows[n]["pyperf_processes"] for n in ("HorizontalFlip", "Grayscale"))
    assert all(r > 0 for r in rounds)
    assert sum(rounds) < payload["metadata"]["quietness"]["wall_seconds"]


def test_plan_is_printed_before_the_first_job(smoke_run: WorkflowRun) -> None:
    """Jobs per phase and an ETA (augbench.planning.plan) come before any job's output."""
    out = smoke_run.output
    assert "augbench plan:" in out, out[:3000]
    before_jobs = out.split("augbench plan:", 1)[0]
    assert "rule micro:" not in before_jobs and "rule build_env:" not in before_jobs
    lines = out.split("augbench plan:", 1)[1].splitlines()
    phases = {}
    for line in lines[1:]:
        if not line.startswith("  ") or "ETA" in line:
            break
        name, count = line.split()[:2]
        phases[name] = int(count)
    micro_files = list(smoke_run.raw("micro").rglob("*.json"))
    assert phases["micro"] == len(micro_files) == 4  # 4 libraries x 1 shard of the smoke set
    assert phases["setup"] >= 5  # an env per library, the default archive, staging
    for regime in ("cpu_dataloader", "gpu_dataloader", "dali", "dali_cpu", "lazy_outputs"):
        assert phases[regime] > 0, regime
    # One job per library measures every cpu_dataloader setting (smoke: job_per: library).
    assert phases["cpu_dataloader"] == 4
    # The pipelines' jobs have their own phases and a time model (the reference timings).
    for kind in ("pipeline_breakdown", "pipeline_dataloader"):
        assert phases[kind] == 4, kind
    # aggregate, figures, speedup report, summary, lazy-output table, pipeline tables and figure,
    # the answer page and its HTML
    assert phases["analysis"] == 9
    eta = next(line for line in lines if "ETA ~" in line)
    assert "time model:" in eta
