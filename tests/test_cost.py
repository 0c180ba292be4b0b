"""The per-job time model (augbench.cost) on result files and benchmark timings with known numbers,
and rule `cost`: the paper sweep's estimate for all four regimes and the setup jobs, computed
before anything is launched."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import OFFLINE_ENV, REPO

from augbench import cost

MICRO = {"num_images": 10, "processes": 1, "values": 2, "warmups": 1}


def _write(root: Path, rel: str, payload: dict, seconds: float) -> None:
    raw = root / "results/raw/laptop" / f"{rel}.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(payload))
    bench = root / "benchmarks/laptop" / f"{rel}.tsv"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:07\t100\n")


def _local_run(root: Path) -> Path:
    """A finished local run: micro (pillow), cpu_dataloader (pillow), GPU rows skipped (no
    CUDA), a DALI CPU-backend row, and setup timings."""
    # micro: 30 images per transform; HorizontalFlip at 100 img/s = 0.3 s of work; the job's
    # 7.3 s minus that is overhead (7.0 s), the unsupported and early-stopped rows add no work.
    _write(root, "micro/pillow/s000", {"metadata": {"benchmark_params": MICRO}, "results": {
        "HorizontalFlip": {"status": "ok", "median_throughput": 100.0},
        "ColorJitter": {"status": "unsupported"},
        "Rotate": {"status": "early_stopped"},
    }}, 7.3)  # fmt: skip
    # cpu_dataloader: 12 images per run x (2 runs + 1 baseline + 1 warm-up) = 48 images; at
    # 48 img/s = 1 s of work in a 5 s job: 4 s overhead.
    dl = {"images_per_run": 12, "num_runs": 2, "baseline_runs": 1}
    ok = {"HorizontalFlip": {"status": "ok", "median_throughput": 48.0}}
    _write(root, "cpu_dataloader/pillow/memory-w2-s000",
           {"metadata": {"benchmark_params": dl}, "results": ok}, 5.0)  # fmt: skip
    gpu = {"num_images": 12, "values": 2, "warmups": 1}
    skipped = {"HorizontalFlip": {"status": "skipped", "reason": "no CUDA device"}}
    _write(root, "gpu_dataloader/torchvision/decode_w1_per-sample_s000",
           {"metadata": {"benchmark_params": gpu}, "results": skipped}, 3.0)  # fmt: skip
    _write(root, "dali/dali/dali-gpu_s000",
           {"metadata": {"benchmark_params": gpu}, "results": skipped}, 2.0)  # fmt: skip
    _write(root, "dali/dali/dali-cpu_s000", {"metadata": {"benchmark_params": gpu}, "results": {
        "HorizontalFlip": {"status": "ok", "median_throughput": 36.0}}}, 3.0)  # fmt: skip
    for kind, seconds in (("build_env", 1.5), ("stage_dataset", 0.5),
                          ("build_default_archive", 2.0)):  # fmt: skip
        tsv = root / "benchmarks/setup" / kind / "x.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
    return root


CONFIG = {
    "num_images": 100,
    "micro": {"processes": 2, "values": 3, "warmups": 1},
    "cpu_dataloader": {"batch_size": 10, "batches_per_run": 10, "num_runs": 3},
    "gpu_dataloader": {"values": 4, "warmups": 1},
    "dali": {"values": 4, "warmups": 1},
    "cloud": {
        "regimes": {
            "micro": {"machine_type": "c3-standard-4"},
            "cpu_dataloader": {"machine_type": "n2-standard-16"},
            "gpu_dataloader": {"machine_type": "g2-standard-8"},
            "dali": {"machine_type": "g2-standard-8"},
            "dali_cpu": {"machine_type": "c3-standard-8"},
        },
        "prices_usd_per_hour": {
            "c3-standard-4": 0.2,
            "n2-standard-16": 0.8,
            "g2-standard-8": 0.9,
            "c3-standard-8": 0.4,
            "e2-standard-2": 0.07,
        },
        "spot_prices_usd_per_hour": {
            "c3-standard-4": 0.1,
            "n2-standard-16": 0.3,
            "g2-standard-8": 0.3,
            "c3-standard-8": 0.2,
        },
        "speed_factors": {"c3-standard-4": 2.0},
        "assumed_img_per_s": {"gpu_dataloader": {"torchvision": 500.0}, "dali": {"dali": 1000.0}},
    },
}
JOBS = [
    cost.Job("micro", "pillow", ("HorizontalFlip", "ColorJitter")),
    cost.Job("micro", "pillow", ("Rotate", "Affine")),
    cost.Job("cpu_dataloader", "pillow", ("HorizontalFlip",)),
    cost.Job("gpu_dataloader", "torchvision", ("HorizontalFlip", "Affine")),
    cost.Job("dali", "dali", ("HorizontalFlip",)),
    cost.Job("dali_cpu", "dali", ("HorizontalFlip",)),
    cost.Job("build_env", "pillow"),
    cost.Job("stage_dataset"),
]


def test_seconds_per_job_scale_the_measured_work_and_keep_the_overheads(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    assert models[("micro", "pillow")].overhead_s == pytest.approx(7.0)
    assert models[("cpu_dataloader", "pillow")].overhead_s == pytest.approx(4.0)
    seconds, basis = cost.seconds_per_job(JOBS, models, CONFIG, image_scale=10.0)
    micro_a, micro_b, loader, gpu = JOBS[:4]
    # micro target: 100 images x 2 processes x 4 = 800 images per transform at 0.01 s.
    # Unmeasured transforms (ColorJitter unsupported, Rotate early stopped, Affine absent) cost
    # the library's typical measured transform.
    assert seconds[micro_a] == pytest.approx(7.0 + 8.0 + 8.0)
    assert seconds[micro_b] == pytest.approx(7.0 + 8.0 + 8.0)
    # cpu_dataloader target: 100 images per run x (3 + 1 + 1) = 500 images at 1/48 s.
    assert seconds[loader] == pytest.approx(4.0 + 500 / 48)
    # GPU without CUDA: measured overhead + assumed throughput, labelled as such.
    assert seconds[gpu] == pytest.approx(3.0 + 2 * 500 / 500.0)
    assert basis[gpu] == "assumed"
    assert seconds[JOBS[4]] == pytest.approx(2.0 + 500 / 1000.0)
    # dali_cpu: 36 local images at 36 img/s = 1 s of a 3 s job; target 500 images.
    assert seconds[JOBS[5]] == pytest.approx(2.0 + 500 / 36)
    assert basis[JOBS[5]] == "measured"
    # Setup: build_env as measured, staging scaled with the dataset size.
    assert seconds[JOBS[6]] == pytest.approx(1.5)
    assert seconds[JOBS[7]] == pytest.approx(5.0)


def test_estimate_applies_speed_factor_vm_start_and_both_prices(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    rows = cost.estimate(JOBS, models, CONFIG, "e2-standard-2", set(cost.bench_kinds()), 60.0)
    by_kind = {(r.kind, r.machine_type): r for r in rows}
    micro = by_kind[("micro", "c3-standard-4")]
    assert micro.jobs == 2 and micro.speed_factor == 2.0
    assert micro.vm_seconds == pytest.approx(2 * 60 + (23.0 + 23.0) / 2.0)
    assert micro.usd(False) == pytest.approx(micro.vm_seconds / 3600 * 0.2)
    assert micro.usd(True) == pytest.approx(micro.vm_seconds / 3600 * 0.1)
    setup = by_kind[("build_env", "e2-standard-2")]
    assert not setup.preemptible and setup.usd(True) == setup.usd(False)  # on-demand
    text = cost.report(rows, ["micro", "cpu_dataloader", "gpu_dataloader", "dali"], 64, {})
    assert "NO TOTAL" not in text and "total: 8 jobs" in text
    for kind in ("micro", "cpu_dataloader", "gpu_dataloader", "dali", "dali_cpu"):
        assert f"\n{kind} " in text


def test_a_regime_without_a_model_is_loud_and_there_is_no_total(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    config = {**CONFIG, "cloud": {**CONFIG["cloud"], "assumed_img_per_s": {}}}
    rows = cost.estimate(JOBS, models, config, "e2-standard-2", set(), 0.0)
    text = cost.report(rows, ["micro", "cpu_dataloader", "gpu_dataloader", "dali"], 64, {})
    assert "NO TOTAL" in text and "total:" not in text
    assert "gpu_dataloader on g2-standard-8: none: no measured row" in text
    assert "dali on g2-standard-8: none" in text


@pytest.mark.workflow
def test_cost_target_estimates_the_paper_sweep_without_running_it(tmp_path: Path) -> None:
    """`snakemake cost --workflow-profile profiles/googlebatch --config preset=paper` plans one
    job (the estimate), writes results/cost/estimate.tsv and prints the table. The executor is
    local here (the googlebatch one needs credentials); placement, preemptible rules and prices
    come from the cloud profile and the config as in a sweep."""
    run = _local_run(tmp_path / "local-run")
    work = tmp_path / "driver"
    work.mkdir()
    config = ("--config", "preset=paper", "machine=gcp-paper",
              "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
              "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]",
              f"cloud={{'estimate_from': '{run}'}}")  # fmt: skip
    cloud = ("--workflow-profile", str(REPO / "profiles" / "googlebatch"), "--executor", "local",
             "--default-storage-provider", "fs",
             "--default-storage-prefix", str(tmp_path / "b"))  # fmt: skip
    proc = _snakemake(work, "cost", *cloud, "--cores", "1", *config)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "Job stats:" in out and "cost         1\ntotal        1" in out
    assert not (work / "results" / "raw").exists()  # nothing was measured
    with (work / "results/cost/estimate.tsv").open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    kinds = {r["kind"] for r in rows}
    assert {"micro", "cpu_dataloader", "gpu_dataloader", "dali", "dali_cpu"} <= kinds
    assert {"build_env", "stage_dataset", "build_default_archive"} <= kinds
    bench = [r for r in rows if r["kind"] in cost.bench_kinds()]
    assert all(r["preemptible"] == "True" for r in bench)  # from the profile's preemptible-rules
    priced = [r for r in rows if r["vm_hours"] != "n/a"]
    assert {r["kind"] for r in priced} >= {"gpu_dataloader", "dali", "dali_cpu", "build_env"}
    assert all(r["usd_spot"] != "n/a" and r["usd_on_demand"] != "n/a" for r in priced)
    # kornia was not measured locally in micro or cpu_dataloader: the typical measured
    # transform does not exist for it, so those rows have no model and there is no total.
    assert "NO TOTAL" in out and "micro on c3-standard-4: " in out
    assert "USD Spot" in out


def _snakemake(workdir: Path, *args: str):
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
         "--directory", str(workdir), *args],
        capture_output=True, text=True, cwd=workdir, env={**os.environ, **OFFLINE_ENV},
    )  # fmt: skip


def test_a_job_per_library_shares_its_overhead_among_its_settings(tmp_path: Path) -> None:
    """cpu_dataloader.job_per: library: one job (one benchmark file) writes a result file per
    setting; the job's time beyond the measured work of them all is one per-process overhead."""
    dl = {"images_per_run": 12, "num_runs": 2, "baseline_runs": 1, "shard": "s000",
          "settings_in_job": ["memory-w0", "decode-w0"]}  # fmt: skip
    ok = {"HorizontalFlip": {"status": "ok", "median_throughput": 48.0}}  # 48 images: 1 s
    for setting in dl["settings_in_job"]:
        raw = tmp_path / f"results/raw/laptop/cpu_dataloader/pillow/{setting}-s000.json"
        raw.parent.mkdir(parents=True, exist_ok=True)
        raw.write_text(json.dumps({"metadata": {"benchmark_params": dl}, "results": ok}))
    bench = tmp_path / "benchmarks/laptop/cpu_dataloader/pillow/all-settings-s000.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\n8.0\t0:00:08\n")  # 2 s of work, 6 s of overhead
    model = cost.learn(tmp_path)[("cpu_dataloader", "pillow")]
    assert model.overhead_s == pytest.approx(6.0)  # one process's overhead, paid once
    # Planned again as one job of two files: each file carries half the overhead; planned as
    # two jobs of their own (job_per: setting, a cloud sweep), each pays all of it.
    config = {"cpu_dataloader": {"batch_size": 12, "batches_per_run": 1, "num_runs": 2,
                                 "baseline_runs": 1}}  # fmt: skip
    grouped = cost.Job("cpu_dataloader", "pillow", ("HorizontalFlip",), share=2)
    alone = cost.Job("cpu_dataloader", "pillow", ("HorizontalFlip",))
    seconds, _ = cost.seconds_per_job(
        [grouped, alone], {("cpu_dataloader", "pillow"): model}, config
    )
    assert seconds[grouped] == pytest.approx(3.0 + 1.0) and seconds[alone] == pytest.approx(7.0)


def test_pipeline_jobs_are_modelled_by_their_wall_time(tmp_path: Path) -> None:
    for rel, seconds in (("pipelines/micro/pillow/breakdown", 6.0),
                         ("pipelines/cpu_dataloader/pillow/decode-w2", 9.0),
                         ("pipelines/cpu_dataloader/pillow/decode-w0", 11.0),
                         ("lazy_outputs/kornia", 4.0)):  # fmt: skip
        tsv = tmp_path / "benchmarks/laptop/ds-0123456789ab" / f"{rel}.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
    models = cost.learn(tmp_path)
    assert models[("pipeline_breakdown", "pillow")].overhead_s == 6.0
    assert models[("pipeline_dataloader", "pillow")].overhead_s == 10.0  # median of the two
    assert models[("lazy_outputs", "kornia")].overhead_s == 4.0
    seconds, basis = cost.seconds_per_job(
        [cost.Job("pipeline_breakdown", "pillow"), cost.Job("pipeline_breakdown", "kornia")],
        models,
        CONFIG,
    )
    assert seconds[cost.Job("pipeline_breakdown", "pillow")] == 6.0
    assert seconds[cost.Job("pipeline_breakdown", "kornia")] is None
    assert basis[cost.Job("pipeline_breakdown", "kornia")].startswith("none")


def test_a_job_per_library_job_of_one_setting_is_found_by_its_job_name(tmp_path: Path) -> None:
    """A --settings job names its benchmark file after the job even when it measured a single
    setting (job_per: library with one scope and one worker count)."""
    dl = {"images_per_run": 12, "num_runs": 2, "baseline_runs": 1, "shard": "s000",
          "settings_in_job": ["decode-w2"]}  # fmt: skip
    ok = {"HorizontalFlip": {"status": "ok", "median_throughput": 48.0}}  # 48 images: 1 s
    raw = tmp_path / "results/raw/laptop/cpu_dataloader/pillow/decode-w2-s000.json"
    raw.parent.mkdir(parents=True)
    raw.write_text(json.dumps({"metadata": {"benchmark_params": dl}, "results": ok}))
    bench = tmp_path / "benchmarks/laptop/cpu_dataloader/pillow/all-settings-s000.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\n5.0\t0:00:05\n")
    assert cost.learn(tmp_path)[("cpu_dataloader", "pillow")].overhead_s == pytest.approx(4.0)
