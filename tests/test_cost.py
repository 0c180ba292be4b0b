"""The per-job time model (augbench.planning.cost) on result files and benchmark timings with known
numbers, and rule `cost`: the paper sweep's estimate for all four regimes and the setup jobs,
computed before anything is launched."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from pathlib import Path

import pytest
import snakemake_runner
import yaml
from conftest import OFFLINE_ENV, REPO

from augbench import paths, policy
from augbench.measuring import stopping
from augbench.planning import cost, regimes
from augbench.planning.regimes import cpu_dataloader
from augbench.policy import DATALOADER_MIN_RUNS

DS = "ds-0123456789ab"
POLICY = {"preflight_items": 10, "max_seconds_per_item": 0.05, "preflight_max_seconds": 60.0,
          "enabled": True}  # fmt: skip


def _write(root: Path, rel: str, payload: dict, seconds: float, megapixels: float = 0.2) -> None:
    """A result file at results/raw/laptop/<DS>/<rel>.json (its dataset measured at
    ``megapixels``) and its job's benchmark file."""
    payload["metadata"]["dataset"] = {"mean_megapixels": megapixels}
    raw = root / "results/raw/laptop" / DS / f"{rel}.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(payload))
    _bench(root, f"laptop/{DS}/{rel}", seconds)


def _bench(root: Path, rel: str, seconds: float) -> None:
    bench = root / "benchmarks" / f"{rel}.tsv"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(f"s\th:m:s\tmax_rss\tmax_pss\n{seconds}\t0:00:07\t100\t90\n")


def _local_run(root: Path) -> Path:
    """A finished local run with known numbers (each kind's work and overhead below)."""
    # micro: HorizontalFlip 10 images x (2 values + 1 warm-up) x 1 process x 1 loop at
    # 100 img/s = 0.3 s; GaussianBlur 30 img/s: 1 s; the 6.3 s job minus them: 5.0 s of
    # overhead per pyperf process round (the rows used 1 of 2 processes: share 0.5).
    micro = {"num_images": 10, "processes": 2, "values": 2, "warmups": 1}
    row = {"status": "ok", "pyperf_processes": 1, "loops": 1}
    _write(root, "micro/pillow/s000", {"metadata": {"benchmark_params": micro}, "results": {
        "HorizontalFlip": {**row, "median_throughput": 100.0},
        "GaussianBlur": {**row, "median_throughput": 30.0},
        "ColorJitter": {"status": "unsupported"},
    }}, 6.3)  # fmt: skip
    # cpu_dataloader (memory scope, 2 workers): 12 images per epoch; 2 of 4 rounds timed
    # (share 0.5): regime 2 x 12/48 = 0.5 s, bare loop 2 x 12/96 = 0.25 s, the job's transport
    # baseline 2 x 12/120 = 0.2 s; the 5.95 s job has 5.0 s of overhead.
    dl = {"images_per_run": 12, "num_runs": 4, "baseline_runs": 2}
    loader_row = {
        "status": "ok", "median_throughput": 48.0, "throughputs": [48.0, 48.0],
        "bare_loop_throughputs": [96.0, 96.0], "transport_throughputs": [120.0, 120.0],
        "timed_rounds": 2, "scope": "memory", "workers": 2,
    }  # fmt: skip
    _write(root, "cpu_dataloader/pillow/memory-w2-s000",
           {"metadata": {"benchmark_params": dl}, "results": {"HorizontalFlip": loader_row}},
           5.95)  # fmt: skip
    # GPU rows skipped (no CUDA): no model beyond the job's overhead.
    gpu = {"num_images": 12, "values": 2, "warmups": 1}
    skipped = {"HorizontalFlip": {"status": "skipped", "reason": "no CUDA device"}}
    _write(root, "gpu_dataloader/torchvision/decode_w1_per-sample_s000",
           {"metadata": {"benchmark_params": gpu}, "results": skipped}, 3.0)  # fmt: skip
    # dali_cpu: 12 x 3 = 36 images at 36 img/s = 1 s of a 3 s job.
    _write(root, "dali/dali/dali-cpu_s000", {"metadata": {"benchmark_params": gpu}, "results": {
        "HorizontalFlip": {"status": "ok", "median_throughput": 36.0}}}, 3.0)  # fmt: skip
    # pipeline breakdown: 4 images x 2 passes per value; 4 values of each kind (steps, whole,
    # bare) in 2 fresh processes of a warm-up + 2 values: 3 x 6 passes x 8 images at 200 img/s =
    # 0.72 s of a 2.72 s job (values used: 4 of 4), whose 2 rounds ran in 2 interpreters (the
    # job's process and a fresh one): 2 s of overhead, 1 s per round.
    breakdown = {"num_images": 4, "min_values": 2, "max_values": 4, "warmups": 1}
    raw = root / "results/pipelines/raw/laptop" / DS / "micro/pillow/breakdown.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps({
        "metadata": {"benchmark_params": breakdown, "dataset": {"mean_megapixels": 0.2}},
        "results": {
            "train_light": {"status": "ok", "median_throughput": 200.0, "num_images": 4,
                            "passes_per_value": 2, "throughputs": [200.0] * 4,
                            "round_interpreters": 2, "pipeline": "train_light"},
            "train_light · 0 RandomResizedCrop": {"status": "ok", "median_throughput": 900.0,
                                                 "pipeline": "train_light"},
        },
    }))  # fmt: skip
    _bench(root, f"laptop/{DS}/pipelines/micro/pillow/breakdown", 2.72)
    # lazy outputs: HorizontalFlip 0.9 ms a call + 0.1 ms its materialization, 2 + (1 warm-up + 3
    # repeats) x 10 images = 42 calls: 0.042 s of a 4.042 s job, 4.0 s of overhead.
    lazy = root / paths.LAZY_ROOT / "laptop" / DS / "pillow.json"
    lazy.parent.mkdir(parents=True, exist_ok=True)
    lazy.write_text(json.dumps({"metadata": {"num_images": 10, "repeats": 3}, "results": {
        "HorizontalFlip": {"status": "ok", "call_us": 900.0, "materialize_us": 100.0},
        "ColorJitter": {"status": "unsupported"},
    }}))  # fmt: skip
    _bench(root, f"laptop/{DS}/lazy_outputs/pillow", 4.042)
    for kind, seconds in (("build_env", 1.5), ("stage_dataset", 0.5),
                          ("build_default_archive", 2.0)):  # fmt: skip
        tsv = root / "benchmarks/setup" / kind / "x.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
    return root


def _job(kind: str, library: str, transforms: tuple[str, ...], params: dict, **rest) -> regimes.Job:
    return regimes.Job(kind, library, transforms=transforms, params_json=json.dumps(params), **rest)


def _plant_loader_file(
    root: Path, folder: str, setting: str, params: dict, timing: dict, results: dict,
    seconds: float,
) -> None:  # fmt: skip
    """Pillow's DataLoader result file of ``setting`` (under results/<folder>, with its
    job_timing) and its job's benchmark file of ``seconds``."""
    raw = root / f"results/{folder}/laptop/{DS}/cpu_dataloader/pillow/{setting}.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark_params": params, "job_timing": timing, "scope": params["scope"]}
    raw.write_text(json.dumps({"metadata": meta, "results": results}))
    pipelines = "pipelines/" if folder == "pipelines/raw" else ""
    _bench(root, f"laptop/{DS}/{pipelines}cpu_dataloader/pillow/{setting}", seconds)


MICRO_TARGET = {"num_images": 20, "processes": 4, "min_processes": 1, "values": 3,
                "warmups": 1, "policy": json.dumps(POLICY)}  # fmt: skip
LOADER_TARGET = {"batch_size": 10, "batches_per_run": 10, "num_runs": 6, "baseline_runs": 2,
                 "scope": "memory", "workers": "2"}  # fmt: skip
CONFIG = {
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
        "assumed_img_per_s": {"gpu_dataloader": {"torchvision": 500.0}},
    },
}


def test_learn_separates_each_kinds_work_from_its_overhead(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    micro = models[("micro", "pillow")]
    assert micro.overhead_s == pytest.approx(5.0) and micro.process_share == 0.5
    assert micro.megapixels == {"HorizontalFlip": 0.2, "GaussianBlur": 0.2}
    loader = models[("cpu_dataloader", "pillow")]
    assert loader.overhead_s == pytest.approx(5.0) and loader.run_share == 0.5
    assert loader.arm_s["HorizontalFlip|memory-w2|bare"] == pytest.approx(1 / 96)
    assert loader.baseline_s == {"memory-w2": pytest.approx(1 / 120)}
    breakdown = models[("pipeline_breakdown", "pillow")]
    assert breakdown.overhead_s == pytest.approx(1.0)
    assert set(breakdown.per_image_s) == {"train_light"}  # step rows are part of the passes
    assert models[("dali_cpu", "dali")].overhead_s == pytest.approx(2.0)
    lazy = models[("lazy_outputs", "pillow")]
    assert lazy.overhead_s == pytest.approx(4.0)
    assert lazy.per_image_s == {"HorizontalFlip": pytest.approx(0.001)}


def test_a_result_file_that_fails_half_way_teaches_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose second row cannot be read (a list where a rate belongs) adds nothing, not
    its first row: one line names it; the run's other files are learned as before."""
    run = _local_run(tmp_path)
    micro = {"num_images": 10, "processes": 2, "values": 2, "warmups": 1}
    row = {"status": "ok", "pyperf_processes": 1, "loops": 1}
    _write(run, "micro/pillow/s001", {"metadata": {"benchmark_params": micro}, "results": {
        "Rotate": {**row, "median_throughput": 50.0},
        "Affine": {**row, "median_throughput": 40.0, "pyperf_processes": [1]},
    }}, 6.0)  # fmt: skip
    models = cost.learn(run)
    assert set(models[("micro", "pillow")].per_image_s) == {"HorizontalFlip", "GaussianBlur"}
    lines = [line for line in capsys.readouterr().err.splitlines() if "not learned" in line]
    assert len(lines) == 1 and "micro/pillow/s001.json" in lines[0], lines


def test_micro_expected_and_most_scale_with_pixels_processes_and_slow_transforms(
    tmp_path: Path,
) -> None:
    """At twice the megapixels a transform costs twice per image; HorizontalFlip then takes
    20 x 0.02 = 0.4 s per pass (one pass per value), 4 passes per process and a 10-image
    preflight; expected processes are the local share of the maximum (2 of 4), each paying the
    5 s round overhead. GaussianBlur at 1/30 x 2 = 0.067 s/image is past the slow-transform
    threshold: only its preflight (an untimed image and 10 timed) is paid."""
    models = cost.learn(_local_run(tmp_path))
    job = _job("micro", "pillow", ("HorizontalFlip",), MICRO_TARGET, megapixels=0.4)
    slow = _job("micro", "pillow", ("GaussianBlur",), MICRO_TARGET, megapixels=0.4)
    found, basis = cost.estimate_jobs([job, slow], models, CONFIG)
    preflight = 11 * 0.02  # an untimed image, then 10 timed
    assert found[job] == cost.Estimate(
        pytest.approx(2 * 5.0 + preflight + 2 * 1.6), pytest.approx(4 * 5.0 + preflight + 4 * 1.6)
    )
    assert found[slow].expected == pytest.approx(2 * 5.0 + 11 * 2 / 30)
    # Near the threshold (0.05 s/image x 1/1.25 ... x 1.25) either outcome is expected with
    # its probability: at exactly the threshold, half the full measurement.
    edge = _job("micro", "pillow", ("GaussianBlur",), MICRO_TARGET, megapixels=0.2 * 1.5)
    found, _ = cost.estimate_jobs([edge], models, CONFIG)
    preflight, full = 11 * 0.05, 11 * 0.05 + 2 * 4 * 20 * 0.05
    assert found[edge].expected == pytest.approx(2 * 5.0 + 0.5 * preflight + 0.5 * full)
    assert found[edge].most == pytest.approx(4 * 5.0 + 11 * 0.05 + 4 * 4 * 20 * 0.05)
    assert basis[job] == "measured"


def test_dataloader_counts_each_arms_epochs_at_the_measured_setting(tmp_path: Path) -> None:
    """Expected rounds: the local share of num_runs (0.5 x 6), at least DATALOADER_MIN_RUNS;
    the bare loop takes part in the baseline rounds only; the job's transport baseline and
    overhead are added once."""
    models = cost.learn(_local_run(tmp_path))
    job = _job("cpu_dataloader", "pillow", ("HorizontalFlip",), LOADER_TARGET)
    found, _ = cost.estimate_jobs([job], models, CONFIG)
    runs = max(3, DATALOADER_MIN_RUNS)
    fixed = 5.0 + 2 * 100 / 96 + 2 * 100 / 120
    assert found[job].expected == pytest.approx(fixed + runs * 100 / 48)
    assert found[job].most == pytest.approx(fixed + 6 * 100 / 48)
    # Planned as one of two result files of one process, it carries half the overhead.
    shared = _job("cpu_dataloader", "pillow", ("HorizontalFlip",), LOADER_TARGET, share=2)
    found, _ = cost.estimate_jobs([shared], models, CONFIG)
    assert found[shared].expected == pytest.approx(fixed - 2.5 + runs * 100 / 48)


def test_breakdown_stream_whole_job_assumed_and_setup_kinds(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    target = {"num_images": 16, "min_values": 2, "max_values": 6, "warmups": 1}
    breakdown = _job("pipeline_breakdown", "pillow", ("train_light",), target)
    dali = _job("dali_cpu", "dali", ("HorizontalFlip",),
                {"num_images": 100, "values": 4, "warmups": 1})  # fmt: skip
    gpu = _job("gpu_dataloader", "torchvision", ("HorizontalFlip", "Affine"),
               {"num_images": 100, "values": 4, "warmups": 1})  # fmt: skip
    lazy, lazy_missing = (
        _job("lazy_outputs", "pillow", ("HorizontalFlip",), {"num_images": 10, "repeats": 3}),
        regimes.Job("lazy_outputs", "kornia"),
    )
    stage = regimes.Job("stage_dataset")
    found, basis = cost.estimate_jobs(
        [breakdown, dali, gpu, lazy, lazy_missing, stage], models, CONFIG, image_scale=10.0
    )
    # 16 images x 0.005 s = 0.08 s per pass; 6 values (the local share 1.0 of 6) of each kind
    # (steps, whole, bare) in 3 processes of a warm-up + 2 values: 3 x 9 passes; the overhead
    # of the 3 rounds' interpreters.
    assert found[breakdown].expected == pytest.approx(3 * 1.0 + 3 * 9 * 0.08)
    assert found[dali].expected == pytest.approx(2.0 + 500 / 36)
    # GPU without CUDA: measured overhead + assumed throughput, labelled as such.
    assert found[gpu].expected == pytest.approx(3.0 + 2 * 500 / 500.0) and basis[gpu] == "assumed"
    assert found[lazy].expected == pytest.approx(4.042)
    assert found[lazy_missing] is None and basis[lazy_missing].startswith("none")
    assert found[stage].expected == pytest.approx(5.0)  # staging scales with the dataset


def test_estimate_rows_group_start_ups_and_write_every_column(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    micro = [_job("micro", "pillow", ("HorizontalFlip",), MICRO_TARGET, output=f"r{i}.json")
             for i in range(10)]  # fmt: skip
    jobs = [*micro, regimes.Job("build_env", "pillow")]
    grouping = cost.Grouping({"micro": "bench_micro"}, {"bench_micro": 4})
    rows = cost.estimate(jobs, models, CONFIG, "e2-standard-2", {"micro"}, 60.0,
                         grouping=grouping)  # fmt: skip
    by_kind = {r.kind: r for r in rows}
    row = by_kind["micro"]
    # 10 jobs in VM jobs of 4: 3 start-ups; job seconds / the speed factor 2.
    assert row.jobs == 10 and row.vm_jobs == 3 and row.speed_factor == 2.0
    assert row.startup_vm_hours == pytest.approx(3 * 60 / 3600)
    # Each job (at the local megapixels): 2 process rounds of 5 s, an 11-image preflight at
    # 0.01 s and 2 x 4 passes of 20 images at 0.01 s: 11.71 s.
    assert row.vm_hours("expected") == pytest.approx(10 * 11.71 / 2 / 3600 + 3 * 60 / 3600)
    assert row.usd(True) == pytest.approx(row.vm_hours() * 0.1)  # preemptible: Spot
    assert not by_kind["build_env"].preemptible
    assert by_kind["build_env"].usd(True) == by_kind["build_env"].usd(False)  # on-demand
    tsv = tmp_path / "estimate.tsv"
    cost.write_tsv(rows, tsv)
    with tsv.open() as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    assert set(cost.TSV_COLUMNS) <= set(table[0])
    total = table[-1]
    assert total["rule"] == "total" and total["jobs"] == "11"
    assert float(total["vm_hours_max"]) >= float(total["vm_hours_expected"])
    text = cost.report(rows, ["micro", "build_env"], 64, {})
    assert "NO TOTAL" not in text and "total: 11 jobs in 4 VM jobs" in text


def test_a_rule_without_a_model_is_loud_and_there_is_no_total(tmp_path: Path) -> None:
    models = cost.learn(_local_run(tmp_path))
    gpu = _job("gpu_dataloader", "kornia", ("HorizontalFlip",),
               {"num_images": 100, "values": 4, "warmups": 1})  # fmt: skip
    rows = cost.estimate([gpu], models, CONFIG, "e2-standard-2", set(), 0.0)
    text = cost.report(rows, ["gpu_dataloader"], 64, {})
    assert "NO TOTAL" in text and "total:" not in text
    assert "gpu_dataloader on g2-standard-8: none: no measured row" in text
    tsv = tmp_path / "estimate.tsv"
    cost.write_tsv(rows, tsv)
    with tsv.open() as fh:
        total = list(csv.DictReader(fh, delimiter="\t"))[-1]
    assert total["rule"] == "total" and total["vm_hours_expected"] == "n/a"


def test_a_job_per_library_job_pays_its_overhead_once_for_its_settings(tmp_path: Path) -> None:
    """cpu_dataloader.job_per: library: one job (one benchmark file, named after the job)
    writes a result file per setting; the job's time beyond the work of them all is one
    per-process overhead."""
    dl = {"images_per_run": 12, "num_runs": 2, "baseline_runs": 0, "shard": "s000",
          "settings_in_job": ["memory-w0", "decode-w0"]}  # fmt: skip
    for setting in dl["settings_in_job"]:
        scope = setting.split("-")[0]
        ok = {
            "HorizontalFlip": {
                "status": "ok",
                "median_throughput": 24.0,
                "throughputs": [24.0, 24.0],
                "scope": scope,
                "workers": 0,
            }
        }
        raw = tmp_path / f"results/raw/laptop/{DS}/cpu_dataloader/pillow/{setting}-s000.json"
        raw.parent.mkdir(parents=True, exist_ok=True)
        raw.write_text(json.dumps({"metadata": {"benchmark_params": dl}, "results": ok}))
    _bench(tmp_path, f"laptop/{DS}/cpu_dataloader/pillow/all-settings-s000", 8.0)
    model = cost.learn(tmp_path)[("cpu_dataloader", "pillow")]
    assert model.overhead_s == pytest.approx(6.0)  # 2 files x 2 epochs x 12/24 s = 2 s of work


# The paper sweep's expected VM hours must stay within this. 200: the estimate from the shipped
# reference timings is 165.0 (docs/results/amd-epyc-2c/2026-11-29-paper-estimate-night).
PAPER_GOAL_VM_HOURS = 200.0


@pytest.mark.workflow
def test_the_readme_cost_command_prices_the_paper_sweep_on_a_fresh_clone(tmp_path: Path) -> None:
    """`snakemake cost --cores 1 --config preset=paper` with no cloud credentials and no local
    run: exit 0, a total from the shipped reference timings (named), every regime of the paper
    priced (GPU ones at assumed rates), within the paper's VM-hour goal; nothing measured."""
    work = tmp_path / "fresh"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_")}
    proc = _snakemake(work, "cost", "--cores", "1", "--config", "preset=paper", env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "Traceback" not in out and "cost         1\ntotal        1" in out
    assert not (work / "results" / "raw").exists()  # nothing was measured
    assert "measured in: nothing: no finished local run" in out
    assert "reference timings: reference timings of " in out
    total_line = next(line for line in out.splitlines() if line.startswith("total: "))
    assert "VM hours expected" in total_line and "64 jobs at once" in total_line
    with (work / "results/cost/estimate.tsv").open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    rules = {r["rule"] for r in rows}
    assert {"micro", "cpu_dataloader", "gpu_dataloader", "dali", "dali_cpu", "training",
            "pipeline_breakdown", "pipeline_dataloader"} <= rules  # fmt: skip
    assert all(r["vm_hours_expected"] != "n/a" for r in rows)
    bench = [r for r in rows if r["rule"] in cost.bench_kinds()]
    assert all(r["preemptible"] == "True" for r in bench)  # from the profile's preemptible-rules
    assert float(rows[-1]["vm_hours_expected"]) <= PAPER_GOAL_VM_HOURS
    micro = next(r for r in rows if r["rule"] == "micro")
    assert float(micro["vm_jobs"]) < int(micro["jobs"]) / 4  # the profile's groups


@pytest.mark.workflow
def test_a_local_run_of_any_preset_is_used_and_the_reference_fills_what_it_lacks(
    tmp_path: Path,
) -> None:
    """The local run measured pillow only: its models price pillow's jobs, the reference every
    other library's, and the output says which; memory is checked against the cloud machines
    (the paper's 16-worker jobs would not fit this one). A machine type without a price is
    named with its key, and there is no total."""
    run = _local_run(tmp_path / "local-run")
    work = tmp_path / "driver"
    work.mkdir()
    config = ("--config", "preset=paper", f"cloud={{'estimate_from': '{run}'}}")
    proc = _snakemake(work, "cost", "--cores", "1", *config)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert f"measured in: {run}" in out and "total: " in out
    used = next(line for line in out.splitlines() if line.startswith("reference timings: "))
    assert "micro/kornia" in used and "micro/pillow" not in used
    with (work / "results/cost/jobs.tsv").open() as fh:
        jobs = list(csv.DictReader(fh, delimiter="\t"))
    timed = [j for j in jobs if j["benchmark"]]
    assert timed and all(int(j["mem_mb"]) > 0 for j in timed)
    n4 = "{'machine_type': 'n4-standard-4', 'cpus': 4, 'memory_mb': 14000}"
    cloud = f"cloud={{'estimate_from': '{run}', 'regimes': {{'micro': {n4}}}}}"
    unpriced = _snakemake(work, "cost", "--cores", "1", "--forcerun", "cost", *config[:-1], cloud)
    text = unpriced.stdout + unpriced.stderr
    assert unpriced.returncode == 0, text[-4000:]
    assert "NO TOTAL" in text and "total: " not in text
    assert "n4-standard-4: no price; set cloud.prices_usd_per_hour.n4-standard-4" in text
    assert "micro " in text  # every other row is still printed


def _snakemake(workdir: Path, *args: str, env: dict[str, str] | None = None):
    return snakemake_runner.run(
        ["--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), *args],
        workdir, {**(os.environ if env is None else env), **OFFLINE_ENV},
    )  # fmt: skip


def test_costs_grow_with_pixels_as_fitted_over_the_local_sizes() -> None:
    """A transform measured at sizes at least MIN_PIXEL_RATIO apart gets its own exponent (here
    s = 2 x mp ** 1.5, so 8x the pixels cost 22.6x); one size, or sizes too close, scale in
    proportion to pixels; an absurd fit is clamped."""
    s0, mp0, k = cost._fit_power([0.2, 1.6], [2 * 0.2**1.5, 2 * 1.6**1.5])
    model = cost.KindModel({"T": s0}, megapixels={"T": mp0}, slope={"T": k})
    assert k == pytest.approx(1.5)
    assert model.seconds_per_image("T", 3.2) == pytest.approx(2 * 3.2**1.5)
    assert cost._fit_power([0.2, 0.3], [1.0, 9.0])[2] == 1.0  # too close to tell
    assert cost._fit_power([0.1, 10.0], [1.0, 1e6])[2] == cost.SLOPE_BOUNDS[1]


def test_a_micro_rounds_overhead_grows_with_the_megapixels_it_holds() -> None:
    """A process round imports the library (fixed) and loads the job's decoded cache (per
    megapixel held): a line through the local jobs' overheads; one size: no slope."""
    assert cost.fit_line([(2.0, 5.0), (20.0, 14.0)]) == pytest.approx((4.0, 0.5))
    assert cost.fit_line([(2.0, 5.0), (2.5, 7.0)]) == (6.0, 0.0)
    assert cost.fit_line([]) == (0.0, 0.0)


def test_early_stopping_the_local_run_could_not_show_is_borrowed_from_the_reference() -> None:
    local = {("micro", "pillow"): cost.KindModel({"T": 0.01}, 1.0)}  # one process: no stop seen
    reference = {("micro", "pillow"): cost.KindModel({}, 9.0, process_share=0.6,
                                                     share_observed=True)}  # fmt: skip
    assert cost.borrow_shares(local, reference) == ["micro/pillow"]
    assert local[("micro", "pillow")].process_share == 0.6
    assert local[("micro", "pillow")].overhead_s == 1.0  # only the share is borrowed
    observed = {("micro", "pillow"): cost.KindModel({}, 1.0, share_observed=True)}
    assert cost.borrow_shares(observed, reference) == []


def _loader_model(cores: int) -> cost.KindModel:
    """A DataLoader model measured on a machine of ``cores``: HorizontalFlip at 0 and 2 workers,
    GaussianBlur at 2 only (memory scope)."""
    return cost.KindModel(
        {"HorizontalFlip": 0.01, "GaussianBlur": 0.04}, 1.0, megapixels={"HorizontalFlip": 0.2},
        arm_s={"HorizontalFlip|memory-w0|regime": 0.02, "HorizontalFlip|memory-w2|regime": 0.01,
               "GaussianBlur|memory-w2|regime": 0.03},
        cores=cores,
    )  # fmt: skip


def test_a_worker_count_is_priced_for_the_cores_it_will_run_on() -> None:
    """Measured at 2 workers on 2 cores (1.5 images at once: the main process keeps half a core):
    16 workers on a 16-core machine transform 15.5 at once; on the 2-core machine no more than 2
    workers do; 0 workers are as measured; 2 workers on 16 cores, 2 at once."""
    model = _loader_model(cores=2)
    arm = cpu_dataloader.arm_seconds
    at = policy.MAIN_PROCESS_CORES
    assert arm(model, "HorizontalFlip", "memory-w16", "regime", 0.0, 16) == pytest.approx(
        0.01 * (2 - at) / (16 - at)
    )
    assert arm(model, "HorizontalFlip", "memory-w16", "regime", 0.0, 2) == pytest.approx(0.01)
    assert arm(model, "HorizontalFlip", "memory-w0", "regime", 0.0, 16) == pytest.approx(0.02)
    assert arm(model, "HorizontalFlip", "memory-w2", "regime", 0.0, 16) == pytest.approx(
        0.01 * (2 - at) / 2
    )
    # Fewer workers than measured: priced from the nearest above, 1 image at once, not 1.5.
    assert arm(model, "HorizontalFlip", "memory-w1", "regime", 0.0, 2) == pytest.approx(
        0.01 * (2 - at)
    )
    # Unknown cores of the measuring machine (older results): as measured.
    assert arm(_loader_model(0), "HorizontalFlip", "memory-w16", "regime", 0.0, 16) == 0.01


def test_a_recipe_the_run_did_not_measure_takes_the_librarys_median_at_that_setting() -> None:
    """Not the regime's per-image median over every setting (which would price 16 workers like
    0): the measured recipes' rates at the setting, scaled the same way."""
    model = _loader_model(cores=2)
    arm = cpu_dataloader.arm_seconds
    at_16 = arm(model, "Elastic", "memory-w16", "regime", 0.0, 16)
    scale = (2 - policy.MAIN_PROCESS_CORES) / (16 - policy.MAIN_PROCESS_CORES)
    assert at_16 == pytest.approx(((0.01 + 0.03) / 2) * scale)
    # Megapixels scale it from the library's measured size.
    assert arm(model, "Elastic", "memory-w16", "regime", 0.4, 16) == pytest.approx(2 * at_16)


def test_an_unmeasured_recipe_costs_the_base_recipe_plus_its_transforms_micro_time() -> None:
    """With the library's micro rows, a recipe the DataLoader run never measured costs the base
    recipe at the setting plus its transform's one-thread time on the 224 px crop, spread over
    the setting's parallelism; a crop replaces the base crop on the whole image; the decode
    floor runs no recipe."""
    model = cost.KindModel(
        {}, 1.0, megapixels={"RandomCrop224": 0.2},
        arm_s={"RandomCrop224|memory-w0|regime": 0.002, "RandomCrop224|memory-w2|regime": 0.001,
               "GaussianBlur|memory-w2|regime": 0.03, "RandomCrop224|decode-w2|floor": 0.004},
        cores=2,
    )  # fmt: skip
    crop_mp = 224 * 224 / 1e6
    # Blur measured at the crop's pixels (slope 1: seconds grow with pixels).
    single = cost.KindModel(
        {"Blur": 0.005, "RandomCrop224": 0.0001, "RandomResizedCrop": 0.0031},
        megapixels={"Blur": crop_mp, "RandomCrop224": 0.2, "RandomResizedCrop": 0.2},
    )  # fmt: skip
    arm = cpu_dataloader.arm_seconds
    assert arm(model, "Blur", "memory-w0", "regime", 0.2, 0, single) == pytest.approx(0.007)
    spread = 2 - policy.MAIN_PROCESS_CORES
    assert arm(model, "Blur", "memory-w2", "regime", 0.2, 0, single) == pytest.approx(
        0.001 + 0.005 / spread
    )
    assert arm(model, "RandomResizedCrop", "memory-w0", "regime", 0.2, 0, single) == pytest.approx(
        0.002 + 0.003
    )
    assert arm(model, "Blur", "decode-w2", "floor", 0.2, 0, single) == pytest.approx(0.004)
    # Without the micro rows: the median of the recipes measured at the setting, as before.
    assert arm(model, "Blur", "memory-w2", "regime", 0.2) == pytest.approx((0.001 + 0.03) / 2)


def test_the_longest_vm_job_bounds_the_wall_time_and_a_missing_price_names_its_key() -> None:
    micro = [_job("micro", "pillow", ("HorizontalFlip",), MICRO_TARGET, output=f"r{i}.json")
             for i in range(4)]  # fmt: skip
    models = {("micro", "pillow"): cost.KindModel({"HorizontalFlip": 1.0}, 100.0)}
    grouping = cost.Grouping({"micro": "bench_micro"}, {"bench_micro": 2})
    rows = cost.estimate(micro, models, CONFIG, "e2-standard-2", {"micro"}, 60.0,
                         grouping=grouping)  # fmt: skip
    (row,) = rows
    one = cost.estimate_jobs(micro[:1], models, CONFIG)[0][micro[0]].expected / 2.0  # speed 2
    assert row.longest_vm_job_s == pytest.approx(60.0 + 2 * one)
    # 4 jobs in 2 VM jobs on 64 machines at once: the wall time is one VM job, not 1/64 of all.
    assert cost.wall_hours(rows, 64) == pytest.approx(row.longest_vm_job_s / 3600)
    assert "about" in cost.report(rows, ["micro"], 64, {})
    unpriced = {**CONFIG, "cloud": {**CONFIG["cloud"], "prices_usd_per_hour": {},
                                    "spot_prices_usd_per_hour": {}}}  # fmt: skip
    rows = cost.estimate(micro, models, unpriced, "e2-standard-2", {"micro"}, 60.0)
    text = cost.report(rows, ["micro"], 64, {})
    assert "NO TOTAL" in text and "total:" not in text
    assert "c3-standard-4: no price; set cloud.prices_usd_per_hour.c3-standard-4" in text
    assert text.count("cloud.prices_usd_per_hour.c3-standard-4") == 1  # one line for it


def test_the_cost_reads_the_profile_it_prices_as_a_file(tmp_path: Path) -> None:
    from augbench.planning import profile

    shipped = profile.read(REPO / "profiles" / "googlebatch")
    raw = yaml.safe_load((REPO / "profiles" / "googlebatch" / "profile.yaml").read_text())
    assert shipped.jobs_at_once == raw["jobs"] and shipped.executor == "googlebatch"
    assert shipped.groups == raw["groups"] and shipped.group_components == raw["group-components"]
    assert set(shipped.preemptible_rules) == set(raw["preemptible-rules"])
    assert shipped.default_machine == raw["googlebatch-machine-type"]
    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / "profile.yaml").write_text(
        "executor: slurm\njobs: 8\ngroups: [micro=g]\ngroup-components: [g=3]\n"
    )
    assert profile.read(listed).groups == {"micro": "g"}
    assert profile.read(listed).group_components == {"g": 3}
    with pytest.raises(profile.ProfileError, match="cannot read the profile"):
        profile.read(tmp_path / "absent")
    (listed / "profile.yaml").write_text("jobs: many\n")
    with pytest.raises(profile.ProfileError, match="must be integers"):
        profile.read(listed)


def test_a_training_job_is_priced_from_its_passes_at_the_planned_accelerator(
    tmp_path: Path,
) -> None:
    """A training run's row (ResNet-18 steps of 0.1 s at batch 10, 2 workers): the step alone
    (5 + 1 steps: 0.6 s), the loader alone (6 batches at 200 img/s: 0.3 s) and the loop (5
    warm-up + 20 timed steps at 50 img/s: 5 s) are its work; the rest of its 9.9 s job is
    overhead (4 s). A plan with a 20 ms stand-in at the same setting is priced from the same
    passes (augbench.measuring.stopping.training_counts), the loop at the starvation model's rate
    (the loader's 200 img/s here: 20 ms steps at batch 10 take 500 img/s); one with the model, at
    its measured step."""
    from augbench.measuring.stopping import model_alone_counts, training_counts
    from augbench.planning.starvation_model import Supply, predict

    params = {"batch_size": 10, "workers": 2, "steps": 20, "warmup_steps": 3, "model_steps": 5,
              "accelerator": "model", "model": "auto"}  # fmt: skip
    row = {"status": "ok", "median_throughput": 50.0, "loader_img_per_s": 200.0,
           "loader_batches": 6, "model_step_ms": 100.0, "warmup_iterations": 5,
           "timed_steps": 20, "workers": 2, "batch_size": 10, "feed": "cpu",
           "transform": "RandomResizedCrop", "accelerator": "model"}  # fmt: skip
    payload = {"metadata": {"benchmark_params": params}, "results": {"RandomResizedCrop": row}}
    _write(tmp_path, "training/pillow/w2", payload, 9.9)
    model = cost.learn(tmp_path)[("training", "pillow")]
    assert model.overhead_s == pytest.approx(9.9 - 0.6 - 0.3 - 5.0)
    assert model.step_s == {"model|auto|cpu": pytest.approx(0.01)}
    flags = {"batch-size": 10, "workers": "2", "steps": 40, "warmup-steps": 3,
             "model-steps": 5, "prefetch-factor": 2, "feeds": "cpu", "model": "auto"}  # fmt: skip
    stand_in = _job("training", "pillow", ("RandomResizedCrop",),
                    {**flags, "accelerator": "sleep:20"})  # fmt: skip
    real = _job("training", "pillow", ("RandomResizedCrop",), {**flags, "accelerator": "model"})
    found, basis = cost.estimate_jobs([stand_in, real], {("training", "pillow"): model}, {})
    warmup, loader_batches = training_counts(2, 3, 2)
    assert (warmup, loader_batches) == (5, 6)
    # The planned step alone: the loop's 3 warm-up steps, then 5 (the row above, which does not
    # record its warm-up, took the one an older engine ran).
    alone = sum(model_alone_counts(3, 5))
    assert alone == 8
    for job, step in ((stand_in, 0.002), (real, 0.01)):
        loop = predict(Supply(200.0, 2, 10), 1 / step).images_per_second
        expected = 4.0 + alone * 10 * step + 6 * 10 / 200.0 + (5 + 40) * 10 / loop
        assert found[job].expected == pytest.approx(expected) and basis[job] == "measured"
    assert found[stand_in].expected < found[real].expected
    # On a GPU placement, where only a CPU step was measured: the loop at the loader's pace.
    on_gpu, _ = cost.estimate_jobs(
        [real], {("training", "pillow"): model}, {}, target_device=lambda job: "cuda"
    )
    loop = predict(Supply(200.0, 2, 10), 1e9).images_per_second
    assert loop == pytest.approx(200.0)
    assert on_gpu[real].expected == pytest.approx(4.0 + 6 * 10 / 200.0 + 45 * 10 / loop)


# A pipeline DataLoader job in 3 fresh processes (--processes), each one sized epoch
# (--window-seconds) of 4 batches of 8 at 64 img/s (0.5 s): the first process imports in 2 s and
# its setting costs 1 s more; each later process 3 s beyond its epoch; the job 0.5 s beyond its
# settings (11 s).
FRESH_PROCESSES_PARAMS = {
    "images_per_run": 32, "batch_size": 8, "batches_per_run": 2, "num_runs": 1,
    "baseline_runs": 0, "processes": 3, "window_seconds": 0.5, "workers": "2", "scope": "decode",
}  # fmt: skip


def _plant_pipeline_in_fresh_processes(root: Path) -> None:
    row = {"status": "ok", "median_throughput": 64.0, "throughputs": [64.0] * 3,
           "timed_rounds": 3, "processes": 3, "window_batches": 4, "images_per_run": 32,
           "batch_size": 8, "scope": "decode", "workers": 2}  # fmt: skip
    timing = {"import_seconds": 2.0, "setting_seconds": 10.5, "later_processes_seconds": 7.0}
    _plant_loader_file(
        root, "pipelines/raw", "decode-w2", FRESH_PROCESSES_PARAMS, timing, {"p": row}, 11.0
    )


def test_a_row_in_fresh_processes_is_learned_per_process_and_priced_back(tmp_path: Path) -> None:
    """A pipeline DataLoader job whose rows run in 3 fresh processes (--processes), each one
    sized epoch (--window-seconds) of 4 batches of 8 at 64 img/s (0.5 s): the first process
    imports in 2 s and its setting costs 1 s more; each later process 3 s beyond its epoch; the
    job 0.5 s beyond its settings. Learned per process, the model prices the job back."""
    params = FRESH_PROCESSES_PARAMS
    _plant_pipeline_in_fresh_processes(tmp_path)
    model = cost.learn(tmp_path)[("pipeline_dataloader", "pillow")]
    assert model.run_share == pytest.approx(1.0)  # 3 rounds in 3 processes: each its one
    assert model.epoch_images == {"p|decode-w2": 32}
    # 3 s less the row's warm-up (2 batches of 8 at 64 img/s), which is priced per recipe.
    assert model.later_process_s == pytest.approx(2.75)
    assert model.setting_s == {"decode-w2": pytest.approx(1.0)}
    job = _job("pipeline_dataloader", "pillow", ("p",), params)
    found, _ = cost.estimate_jobs([job], {("pipeline_dataloader", "pillow"): model}, CONFIG)
    assert found[job].expected == pytest.approx(11.0)


def test_a_process_start_is_learned_from_every_job_that_started_its_engine(
    tmp_path: Path,
) -> None:
    """cpu_dataloader and the pipelines' DataLoader jobs start the same engine in the same env: a
    reference's one cpu_dataloader job (its process 4 s beyond its setting) and two pipeline jobs
    (2 s and 3 s) price every start of either kind at their median, 3 s."""
    params = {**FRESH_PROCESSES_PARAMS, "processes": 1, "window_seconds": 0.0}
    row = {"status": "ok", "median_throughput": 64.0, "throughputs": [64.0],
           "timed_rounds": 1, "images_per_run": 32, "batch_size": 8, "workers": 2}  # fmt: skip
    for folder, setting, scope, process in (
        ("raw", "memory-w2-s000", "memory", 4.0),
        ("pipelines/raw", "memory-w2", "memory", 2.0),
        ("pipelines/raw", "decode-w2", "decode", 3.0),
    ):
        timing = {"import_seconds": 1.0, "setting_seconds": 3.0, "later_processes_seconds": 0.0}
        found = {"p": {**row, "scope": scope}}
        _plant_loader_file(
            tmp_path, folder, setting, {**params, "scope": scope}, timing, found, process + 2.0
        )
    models = cost.learn(tmp_path)
    for kind in ("cpu_dataloader", "pipeline_dataloader"):
        assert models[(kind, "pillow")].process_s == pytest.approx(3.0)


def test_a_model_file_that_kept_warm_ups_in_its_later_processes_is_priced_as_learned(
    tmp_path: Path,
) -> None:
    """The same job priced from a model file written before warm-ups were learned apart (no
    ``warmups_apart``: its later processes' 3 s include the row's warm-up) costs what the model
    learned now (2.75 s, the warm-up priced per recipe) does: the warm-up is counted once."""
    params = FRESH_PROCESSES_PARAMS
    _plant_pipeline_in_fresh_processes(tmp_path)
    learned = cost.learn(tmp_path)[("pipeline_dataloader", "pillow")]
    entry = learned.to_dict()
    assert entry["warmups_apart"] is True
    del entry["warmups_apart"]
    older = cost.KindModel.from_dict({**entry, "later_process_s": 3.0})
    assert older.warmups_apart is False
    job = _job("pipeline_dataloader", "pillow", ("p",), params)
    for model in (learned, older):
        found, _ = cost.estimate_jobs([job], {("pipeline_dataloader", "pillow"): model}, CONFIG)
        assert found[job].expected == pytest.approx(11.0)


def test_a_setup_kind_is_priced_at_the_mean_of_its_jobs(tmp_path: Path) -> None:
    """An estimate sums a setup kind's jobs, so one slow env build counts: the mean, not the
    median (1.5, 1.5 and 6.0 s: 3.0 s, where the median would say 1.5 s)."""
    for name, seconds in (("a", 1.5), ("b", 1.5), ("c", 6.0)):
        tsv = tmp_path / "benchmarks/setup/build_env" / f"{name}.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
    models = cost.learn(tmp_path)
    assert models[("build_env", "")].overhead_s == pytest.approx(3.0)


def test_an_env_build_that_compiled_fills_the_cache_once(tmp_path: Path) -> None:
    """A build whose log shows uv compiling a package (its cache had no wheel) is not a typical
    build: the expected build is the others' mean, and what compiling added is in the maximum;
    a library whose build compiled nothing is priced at its own."""
    for name, seconds in (("a", 1.0), ("b", 2.0), ("c", 4.5)):
        tsv = tmp_path / "benchmarks/setup/build_env" / f"{name}.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
        log = tmp_path / paths.ENV_LOG.format(library=name)
        log.parent.mkdir(parents=True, exist_ok=True)
        compiled = "   Building pyturbojpeg==1.8.3\n      Built pyturbojpeg==1.8.3\n"
        log.write_text("Resolved 49 packages in 180ms\n" + (compiled if name == "c" else ""))
    model = cost.learn(tmp_path)[("build_env", "")]
    assert model.overhead_s == pytest.approx(1.5) and model.cache_fill_s == pytest.approx(3.0)
    job = regimes.Job("build_env", "pillow")
    found, _ = cost.estimate_jobs([job], {("build_env", ""): model}, CONFIG)
    assert (found[job].expected, found[job].most) == (pytest.approx(1.5), pytest.approx(4.5))
    # A library whose build compiled nothing is priced at its own build.
    models = cost.learn(tmp_path)
    assert set(models) >= {("build_env", "a"), ("build_env", "b")}
    assert ("build_env", "c") not in models
    own = regimes.Job("build_env", "b")
    found, _ = cost.estimate_jobs([own], models, CONFIG)
    assert found[own].expected == pytest.approx(2.0)
    assert cost.KindModel.from_dict(model.to_dict()).cache_fill_s == pytest.approx(3.0)
    # Where the compiling build's log says how long uv took to prepare what it compiled, the
    # library is priced at its own build without it (4.5 - 1.25 s).
    log = tmp_path / paths.ENV_LOG.format(library="c")
    log.write_text(log.read_text() + "Prepared 1 package in 1250ms\n")
    models = cost.learn(tmp_path)
    assert models[("build_env", "c")].overhead_s == pytest.approx(3.25)
    assert models[("build_env", "")].overhead_s == pytest.approx(1.5)


def test_an_env_build_is_priced_at_its_cpu_seconds_times_the_least_waiting_builds_ratio(
    tmp_path: Path,
) -> None:
    """Builds that waited longer than the least-waiting build of the run (files read cold) are
    priced at their CPU seconds times that build's wall-to-CPU ratio: b waited 1.2x its CPU
    (the least), a 2x, so a is 5.0 s x 1.2 = 6.0 s, not its 10.0 s; b at its own 6.0 s."""
    for name, (wall, cpu) in {"a": (10.0, 5.0), "b": (6.0, 5.0), "c": (2.4, 1.0)}.items():
        tsv = tmp_path / "benchmarks/setup/build_env" / f"{name}.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\tmean_load\tcpu_time\n{wall}\t0:00:10\t50.0\t{cpu}\n")
    models = cost.learn(tmp_path)
    assert models[("build_env", "a")].overhead_s == pytest.approx(6.0)
    assert models[("build_env", "b")].overhead_s == pytest.approx(6.0)
    assert models[("build_env", "c")].overhead_s == pytest.approx(1.2)
    assert models[("build_env", "")].overhead_s == pytest.approx((6.0 + 6.0 + 1.2) / 3)
    # A benchmark without a CPU time (NA) prices that build at its wall time.
    tsv = tmp_path / "benchmarks/setup/build_env/a.tsv"
    tsv.write_text("s\th:m:s\tmean_load\tcpu_time\n10.0\t0:00:10\tNA\tNA\n")
    assert cost.learn(tmp_path)[("build_env", "a")].overhead_s == pytest.approx(10.0)


def test_a_pipeline_the_library_cannot_run_costs_nothing() -> None:
    """A pipeline with a step the library lacks is an `unsupported` row written without timing:
    only the pipelines it runs are priced (on the CPU and, with their own rule, on the GPU)."""
    from augbench.workload import pipelines

    defined = [
        pipelines.parse({"name": "runs", "steps": ["HorizontalFlip"]}),
        pipelines.parse({"name": "lacks", "steps": ["HorizontalFlip", "CLAHE"]}),
    ]
    payload = pipelines.to_json(defined)
    job = _job("pipeline_dataloader", "torchvision", ("runs", "lacks"), {"pipelines": payload})
    assert cost.supported(job) == ("runs",)
    assert cost.supported(job, gpu=True) == ()  # no Normalize at the end: an error row there


def test_a_resize_job_pays_per_image_and_per_megapixel(tmp_path: Path) -> None:
    """Resizes of two sizes (10 images each: 0.625 s for 1.25 MP per image, 1.0 s for 5 MP)
    teach seconds per image (0.05) and per megapixel read and written (0.01): a planned resize
    of 10 images pays 10 x (0.05 + 3 MP x 0.01) s, one of 20 images twice that (where the staging
    job's fixed time, 0.5 s, paid once, would say 1.1 s). Resizes of one size: that fixed time
    plus the rest per megapixel."""
    data = tmp_path / "results/data"

    def manifest(key: str, side: int, base: str | None = None) -> None:
        files = [{"width": side, "height": side} for _ in range(10)]
        (data / key).mkdir(parents=True)
        (data / key / "manifest.json").write_text(json.dumps({"files": files, "base_key": base}))

    manifest("base", 1000)  # 10 MP read by each resize
    manifest("r500", 500, "base")  # 2.5 MP written: 12.5 MP in all, 0.125 s at 0.01 s/MP
    manifest("r2000", 2000, "base")  # 40 MP written: 50 MP in all, 0.5 s
    setup = tmp_path / "benchmarks/setup"
    for kind, name, seconds in (("stage_dataset", "base", 0.5), ("resize_dataset", "r500", 0.625),
                                ("resize_dataset", "r2000", 1.0)):  # fmt: skip
        (setup / kind).mkdir(parents=True, exist_ok=True)
        (setup / kind / f"{name}.tsv").write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
    models = cost.learn(tmp_path)
    resize = regimes.Job("resize_dataset", params_json=json.dumps(
        {"num_images": 10, "input_megapixels": 1.0}), megapixels=2.0)  # fmt: skip
    found, basis = cost.estimate_jobs([resize], models, CONFIG)
    assert found[resize].expected == pytest.approx(10 * (0.05 + 3 * 0.01))
    assert basis[resize] == "measured"
    twice = regimes.Job("resize_dataset", params_json=json.dumps(
        {"num_images": 20, "input_megapixels": 1.0}), megapixels=2.0)  # fmt: skip
    found, _ = cost.estimate_jobs([twice], models, CONFIG)
    assert found[twice].expected == pytest.approx(20 * (0.05 + 3 * 0.01))
    assert cost.KindModel.from_dict(models[("resize_dataset", "")].to_dict()).per_file_s == (
        pytest.approx(0.05)
    )
    (setup / "resize_dataset" / "r500.tsv").unlink()  # one size: the staging job's fixed time
    found, _ = cost.estimate_jobs([resize], cost.learn(tmp_path), CONFIG)
    assert found[resize].expected == pytest.approx(0.5 + 30 * 0.5 / 50)


def test_a_transform_the_run_did_not_measure_is_priced_from_the_prior_at_local_speed() -> None:
    """The prior measured HorizontalFlip at 0.01 s and MedianBlur at 0.2 s per image of 0.2 MP;
    the local run measured HorizontalFlip only, at 0.03 s on 0.4 MP images: this machine is 1.5x
    slower at equal pixels, so MedianBlur costs 0.2 x 1.5 x 2 = 0.6 s per local image. A library
    the prior lacks, and the DataLoader kinds' own models, keep their median."""
    from augbench.planning import transform_prior

    prior = transform_prior.Prior(
        {"pillow": {"HorizontalFlip": 0.01, "MedianBlur": 0.2}}, 0.2, "test VM"
    )

    def micro() -> cost.KindModel:
        return cost.KindModel({"HorizontalFlip": 0.03, "Grayscale": 0.05},
                              megapixels={"HorizontalFlip": 0.4, "Grayscale": 0.4})  # fmt: skip

    models = {("micro", "pillow"): micro(), ("micro", "kornia"): micro(),
              ("cpu_dataloader", "pillow"): micro()}  # fmt: skip
    assert transform_prior.apply(models, prior) == ["pillow"]
    assert models[("micro", "pillow")].seconds_per_image("MedianBlur") == pytest.approx(0.6)
    assert models[("micro", "pillow")].seconds_per_image("HorizontalFlip") == 0.03  # its own row
    for key in (("micro", "kornia"), ("cpu_dataloader", "pillow")):
        assert models[key].seconds_per_image("MedianBlur") == pytest.approx(0.04)
    # At 0.6 s per image (above the 0.05 s slow-transform threshold) the planned job expects
    # MedianBlur to stop at its preflight of 10 + 1 items; at the median it would be measured.
    job = _job("micro", "pillow", ("MedianBlur",), MICRO_TARGET, megapixels=0.4)
    found, _ = cost.estimate_jobs([job], models, CONFIG)
    assert found[job] == cost.Estimate(pytest.approx(11 * 0.6), pytest.approx(11 * 0.6))
    unpriced, _ = cost.estimate_jobs([job], {("micro", "pillow"): micro()}, CONFIG)
    assert unpriced[job].most > 20 * 4 * 0.04
    assert "prior_s" not in models[("micro", "pillow")].to_dict()  # never stored with a model


def test_a_row_of_long_epochs_is_expected_to_stop_at_the_first_look(tmp_path: Path) -> None:
    """The engine's stopping rule on the job's own epochs: with the measured jitter (0.02 s at
    the first look), a fast recipe's 0.064 s epochs run to num_runs, a slow one's 3.2 s epochs
    stop at the minimum. The spreads are learned from one-process rows' first rounds."""
    params = {"batch_size": 16, "batches_per_run": 4, "num_runs": 6, "baseline_runs": 0,
              "workers": "2", "scope": "decode"}  # fmt: skip
    arm_s = {"fast|decode-w2|regime": 0.001, "slow|decode-w2|regime": 0.05}
    per_image = {"fast": 0.001, "slow": 0.05}
    model = cost.KindModel(per_image, 0.0, arm_s=arm_s, epoch_spread_s=[0.02, 0.02])
    job = _job("cpu_dataloader", "pillow", ("fast", "slow"), params)
    found, _ = cost.estimate_jobs([job], {("cpu_dataloader", "pillow"): model}, CONFIG)
    assert found[job].expected == pytest.approx(6 * 0.064 + DATALOADER_MIN_RUNS * 3.2)
    assert found[job].most == pytest.approx(6 * (0.064 + 3.2))
    # Learned: the relative interval of the first 3 throughputs times their epochs' median.
    row = {"status": "ok", "median_throughput": 100.0, "throughputs": [90.0, 100.0, 110.0, 99.0],
           "times": [0.71, 0.64, 0.58, 0.65], "timed_rounds": 4, "scope": "decode",
           "workers": 2, "batch_size": 16}  # fmt: skip
    raw = tmp_path / f"results/raw/laptop/{DS}/cpu_dataloader/pillow/decode-w2-s000.json"
    raw.parent.mkdir(parents=True)
    meta = {"benchmark_params": {**params, "images_per_run": 64}, "scope": "decode"}
    raw.write_text(json.dumps({"metadata": meta, "results": {"fast": row}}))
    _bench(tmp_path, f"laptop/{DS}/cpu_dataloader/pillow/decode-w2-s000", 5.0)
    learned = cost.learn(tmp_path)[("cpu_dataloader", "pillow")]
    assert learned.epoch_spread_s == [pytest.approx(0.1 * 0.64)]


def test_a_settings_fixed_time_is_its_loader_starts_and_the_hand_over_probe(
    tmp_path: Path,
) -> None:
    """A decode setting with workers and baselines started 2 rows x 4 arms + the transport
    baseline's loader (9 starts), warmed up 2 rows x 3 loaders (a batch of 10 per worker at 120
    images/s: 1 s) and ran the hand-over probe (2 s): 7.5 s beyond its epochs and imports is
    0.5 s per start, and a job pays each loader's warm-up at its batch. The probe's batch
    periods at the transport's rate (batches of 10 at 1200 images/s) leave it a fixed part; a
    job of batches of 40 pays that part and four times longer periods. Without baselines the
    same setting starts one loader per row and still runs the probe; a memory setting runs no
    probe."""
    rates, transport = [120.0, 120.0], [1200.0, 1200.0]  # 60-image epochs of 0.5 s, 0.05 s
    row = {"status": "ok", "median_throughput": 120.0, "throughputs": rates,
           "bare_loop_throughputs": rates, "memory_row_throughputs": rates,
           "decode_floor_throughputs": rates, "transport_throughputs": transport,
           "timed_rounds": 2, "scope": "decode", "workers": 2}  # fmt: skip
    params = {"images_per_run": 60, "batch_size": 10, "batches_per_run": 6, "num_runs": 2,
              "baseline_runs": 2, "workers": 2, "scope": "decode",
              "prefetch_factor": 2}  # fmt: skip
    work = 2 * 4 * 2 * 0.5 + 2 * 0.05  # every arm's epochs of both rows, the transport's
    timing = {"import_seconds": 1.0, "setting_seconds": 1.0 + work + 7.5,
              "later_processes_seconds": 0.0, "handover_seconds": 2.0}  # fmt: skip
    results = {"A": row, "B": dict(row)}
    _plant_loader_file(tmp_path, "raw", "decode-w2-s000", params, timing, results, 20.0)
    model = cost.learn(tmp_path)[("cpu_dataloader", "pillow")]
    assert model.start_s == {"decode-w2": pytest.approx(0.5)}
    probe = stopping.handover_probe_seconds(10 / 1200.0, 2, 2)
    assert 0.5 < probe < 1.0  # its idle waits, batches and paced reading
    assert model.handover_fixed_s == {"decode-w2": pytest.approx(2.0 - probe)}
    priced = dataclasses.replace(model, epoch_spread_s=[], process_s=1.0, run_share=1.0)
    plain = {**params, "baseline_runs": 0}
    longer = 2.0 - probe + stopping.handover_probe_seconds(40 / 1200.0, 2, 2)
    for scope, batch, fixed in (
        ("decode", 10, 3 * 0.5 + 2.0),
        ("decode", 40, 3 * 0.5 + longer),
        ("memory", 10, 3 * 0.5),
    ):
        plan = {**plain, "scope": scope, "batch_size": batch}
        job = _job("cpu_dataloader", "pillow", ("A", "B", "A"), plan)
        found, _ = cost.estimate_jobs([job], {("cpu_dataloader", "pillow"): priced}, CONFIG)
        s_img = cpu_dataloader.arm_seconds(
            priced, "A", f"{scope}-w2", "regime", job.megapixels, 0, None
        )
        epoch, warm_up = 6 * batch * s_img, 2 * batch * s_img  # a batch per worker
        assert found[job].expected == pytest.approx(1.0 + fixed + 3 * (2 * epoch + warm_up))


def test_a_later_process_the_kind_never_measured_is_its_own_process_start_and_warm_ups(
    tmp_path: Path,
) -> None:
    """A cpu_dataloader job of two recipes in 3 fresh processes, from a run whose recipes each
    ran in one process: each later process is priced as the job's own process start (1 s) and
    both recipes' warm-ups, whatever the pipelines' later processes took (3 s, learned as above:
    priced from those, such jobs took 0.24-0.54 of their prediction on intel-xeon-2c)."""
    params = FRESH_PROCESSES_PARAMS
    _plant_pipeline_in_fresh_processes(tmp_path)
    pipeline = cost.learn(tmp_path)[("pipeline_dataloader", "pillow")]
    assert pipeline.later_process_s == pytest.approx(2.75)
    single = cost.KindModel({"A": 0.01, "B": 0.02}, 0.0, process_s=1.0,
                            start_s={"memory-w2": 0.5})  # fmt: skip
    plan = {**params, "scope": "memory", "window_seconds": 0.0}
    job = _job("cpu_dataloader", "pillow", ("A", "B"), plan)
    one = _job("cpu_dataloader", "pillow", ("A", "B"), {**plan, "processes": 1})
    models = {("cpu_dataloader", "pillow"): single, ("pipeline_dataloader", "pillow"): pipeline}
    found, _ = cost.estimate_jobs([job, one], models, CONFIG)
    # Per image, both recipes: a warm-up batch per worker (8 x 2 images) and the regime's one
    # epoch of 16 images a row, in each later process.
    s_img = sum(
        cpu_dataloader.arm_seconds(single, t, "memory-w2", "regime", 0.0, 0, None)
        for t in ("A", "B")
    )
    warm, later_epochs = 8 * 2 * s_img, 2 * 16 * s_img
    assert found[job].expected == pytest.approx(
        found[one].expected + later_epochs + 2 * (1.0 + warm)
    )


def test_the_first_process_holds_the_baselines_epochs(tmp_path: Path) -> None:
    """A row in 3 fresh processes whose bare loop ran in the first only: the later processes
    repeat the regime's 0.5 s epoch alone (3 s each beyond it, 2.75 s without its warm-up of 2
    batches of 8 at 64 img/s), so the first process's work is its regime epoch and the bare
    loop's (1 s), not a third of all (0.67 s), and the setting's 1 s beyond it is, less both
    loaders' warm-ups (0.5 s), 0.25 s per loader start (the regime's and the bare loop's)."""
    params = {"images_per_run": 32, "batch_size": 8, "batches_per_run": 4, "num_runs": 1,
              "baseline_runs": 1, "processes": 3, "workers": "2", "scope": "memory"}  # fmt: skip
    row = {"status": "ok", "median_throughput": 64.0, "throughputs": [64.0] * 3,
           "throughputs_by_process": [[64.0]] * 3, "bare_loop_throughputs": [64.0],
           "timed_rounds": 3, "processes": 3, "images_per_run": 32, "batch_size": 8,
           "scope": "memory", "workers": 2}  # fmt: skip
    timing = {"import_seconds": 2.0, "setting_seconds": 11.0, "later_processes_seconds": 7.0,
              "handover_seconds": 0.0}  # fmt: skip
    _plant_loader_file(tmp_path, "pipelines/raw", "memory-w2", params, timing, {"p": row}, 11.5)
    model = cost.learn(tmp_path)[("pipeline_dataloader", "pillow")]
    assert model.later_process_s == pytest.approx(2.75)
    assert model.start_s == {"memory-w2": pytest.approx(0.25)}


def test_a_micro_job_that_timed_its_rounds_pays_the_rest_once(tmp_path: Path) -> None:
    """_local_run's micro job (6.3 s: 1.3 s of rows in one pyperf round) recording its round's
    4.3 s: 3 s of that round beyond its rows is paid per round, the 2 s outside it once per job,
    so a job of two rounds costs 2 + 2 x 3 s beyond its rows, not 2 x 5 s."""
    run = _local_run(tmp_path)
    raw = run / "results/raw/laptop" / DS / "micro/pillow/s000.json"
    payload = json.loads(raw.read_text())
    payload["metadata"]["job_timing"] = {"round_seconds": [4.3]}
    raw.write_text(json.dumps(payload))
    micro = cost.learn(run)[("micro", "pillow")]
    assert micro.overhead_s == pytest.approx(3.0) and micro.process_s == pytest.approx(2.0)
    job = _job("micro", "pillow", ("HorizontalFlip",), MICRO_TARGET, megapixels=0.2)
    found, _ = cost.estimate_jobs([job], {("micro", "pillow"): micro}, CONFIG)
    preflight = 11 * 0.01
    assert found[job].expected == pytest.approx(2.0 + 2 * 3.0 + preflight + 2 * 0.8)
    assert found[job].most == pytest.approx(2.0 + 4 * 3.0 + preflight + 4 * 0.8)


def test_what_each_transform_adds_to_a_micro_round_is_priced_per_transform(
    tmp_path: Path,
) -> None:
    """Rows that record their seconds in the worker processes (``worker_seconds``): 0.5 s each
    beyond their passes (HorizontalFlip 0.3 s, GaussianBlur 1.0 s) is the transform's, so the
    4.3 s round leaves 2.0 s of its own; a job of one transform then pays 2.0 + 0.5 s per round,
    not the 3.0 s a round of two transforms took (and a model without it, as before)."""
    run = _local_run(tmp_path)
    raw = run / "results/raw/laptop" / DS / "micro/pillow/s000.json"
    payload = json.loads(raw.read_text())
    payload["metadata"]["job_timing"] = {"round_seconds": [4.3]}
    payload["results"]["HorizontalFlip"]["worker_seconds"] = 0.8
    payload["results"]["GaussianBlur"]["worker_seconds"] = 1.5
    raw.write_text(json.dumps(payload))
    micro = cost.learn(run)[("micro", "pillow")]
    assert micro.overhead_s == pytest.approx(2.0) and micro.process_s == pytest.approx(2.0)
    assert micro.transform_round_s == pytest.approx(0.5)
    assert cost.KindModel.from_dict(micro.to_dict()).transform_round_s == pytest.approx(0.5)
    job = _job("micro", "pillow", ("HorizontalFlip",), MICRO_TARGET, megapixels=0.2)
    found, _ = cost.estimate_jobs([job], {("micro", "pillow"): micro}, CONFIG)
    preflight = 11 * 0.01
    assert found[job].expected == pytest.approx(2.0 + 2 * 2.0 + preflight + 2 * (0.8 + 0.5))
    assert found[job].most == pytest.approx(2.0 + 4 * 2.0 + preflight + 4 * (0.8 + 0.5))
    older = cost.KindModel.from_dict(
        {k: v for k, v in micro.to_dict().items() if k != "transform_round_s"}
    )
    found, _ = cost.estimate_jobs([job], {("micro", "pillow"): older}, CONFIG)
    assert found[job].expected == pytest.approx(2.0 + 2 * 2.0 + preflight + 2 * 0.8)


def test_a_lazy_output_job_pays_its_process_and_each_transforms_calls(tmp_path: Path) -> None:
    """Its calls (the engine's count) x its own rows' seconds per call, a transform they lack at
    the library's micro seconds per image, its process once; a model without rows (reference
    timings that kept the job's wall time only) is that wall time."""
    models = cost.learn(_local_run(tmp_path))
    params = {"num_images": 6, "repeats": 2}
    calls = 2 + (1 + 2) * 6
    assert stopping.lazy_probe_calls(6, 2) == calls
    job = _job("lazy_outputs", "pillow", ("HorizontalFlip", "GaussianBlur", "ColorJitter"), params)
    found, _ = cost.estimate_jobs([job], models, CONFIG)
    # ColorJitter: Pillow cannot run it (an unsupported row, no call); GaussianBlur: micro's 1/30 s.
    assert found[job].expected == pytest.approx(4.0 + calls * (0.001 + 1 / 30))
    wall_only = {**models, ("lazy_outputs", "pillow"): cost.KindModel({}, 7.5)}
    found, _ = cost.estimate_jobs([job], wall_only, CONFIG)
    assert found[job].expected == 7.5
