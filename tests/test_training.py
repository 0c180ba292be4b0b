"""The training regime's logic (augbench/measuring/engines/training.py,
augbench/analysis/training.py): the starvation model it checks, the measured data-wait fraction
against the analytic value of a synthetic loader whose cost is known, and its tables. No timing
thresholds: the analytic check compares a measured fraction with a computed one."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import REPO, jpeg_manifest, library_env

from augbench.analysis import training as training_tables
from augbench.measuring.engines import training
from augbench.planning.config import ConfigError, resolve
from augbench.planning.starvation_model import Supply, fewest_fed, predict, verdict

BASE = {"machine": "m", "envs": {}, "dataset": {"archive": None}, "preset": "smoke"}


def test_the_starvation_model_overlaps_with_workers_and_adds_without() -> None:
    fed = predict(Supply(400.0, 2, 10), 100.0)
    assert fed.images_per_second == 100.0 and fed.data_wait_fraction == 0.0
    starved = predict(Supply(50.0, 2, 10), 100.0)
    assert starved.images_per_second == 50.0 and starved.data_wait_fraction == pytest.approx(0.5)
    serial = predict(Supply(100.0, 0, 10), 100.0)  # load, then step
    assert serial.images_per_second == pytest.approx(50.0)
    assert serial.data_wait_fraction == pytest.approx(0.5)


def test_the_hand_over_sits_between_its_idle_and_busy_cost_by_the_workers_busy_share() -> None:
    # Step 100 ms, loader period 25 ms (400 img/s, batch 10): the workers are busy a quarter of
    # the loop, so the hand-over is 2 ms + 0.25 x (10 - 2) ms (solved with the loop's own
    # length: 25 / (100 + h)), on top of the step.
    model = predict(Supply(400.0, 2, 10, handover_idle_s=0.002, handover_busy_s=0.010), 100.0)
    busy = 0.025 / (0.100 + (model.handover_s))
    assert model.handover_s == pytest.approx(0.002 + busy * 0.008, rel=1e-6)
    assert model.images_per_second == pytest.approx(10 / (0.100 + model.handover_s))
    assert model.data_wait_fraction == pytest.approx(model.handover_s / (0.100 + model.handover_s))
    # A loader slower than step + hand-over sets the pace; the hand-over is then its busy cost.
    slow = predict(Supply(80.0, 2, 10, 0.002, 0.010), 100.0)
    assert slow.images_per_second == pytest.approx(80.0)
    assert slow.handover_s == pytest.approx(0.010)


def test_a_model_that_reads_its_batch_pays_the_first_read_in_its_step_not_its_wait() -> None:
    # Step 100 ms, loader period 25 ms, hand-over 2 ms, first read 3 ms: the loop is 105 ms
    # of step (as the loop times it) and 2 ms of wait.
    fed = predict(Supply(400.0, 2, 10, 0.002, 0.002, first_read_s=0.003), 100.0)
    assert fed.images_per_second == pytest.approx(10 / 0.105)
    assert fed.data_wait_fraction == pytest.approx(0.002 / 0.105)
    # Data-bound: the loader's period sets the pace; the first read only shortens the wait.
    slow = predict(Supply(50.0, 2, 10, 0.002, 0.002, first_read_s=0.003), 100.0)
    assert slow.images_per_second == pytest.approx(50.0)
    assert slow.data_wait_fraction == pytest.approx((0.2 - 0.103) / 0.2)


def test_fed_is_one_threshold_with_its_interval_and_monotone_in_workers() -> None:
    assert verdict(0.01, 0.04) == "fed"
    assert verdict(0.04, 0.06) == "borderline"
    assert verdict(0.05, 0.2) == "starved"
    assert fewest_fed({0: "starved", 1: "borderline", 2: "fed", 4: "fed"}) == (2, True)
    # Fed at 1 worker, starved at 2: more workers did worse; the answer skips past it, flagged.
    assert fewest_fed({0: "starved", 1: "fed", 2: "starved", 4: "fed"}) == (4, False)
    assert fewest_fed({0: "starved", 1: "fed", 2: "starved"}) == (None, False)


def test_a_window_gives_throughput_wait_fraction_and_block_values() -> None:
    window = training.Window(waits=[0.01] * 4, steps=[0.03] * 4, images=[4] * 4, wall=0.16)
    assert window.throughput == pytest.approx(100.0)
    assert window.data_wait_fraction == pytest.approx(0.25)
    rates, times, waits = window.block_throughputs(2)
    assert rates == pytest.approx([100.0, 100.0]) and times == pytest.approx([0.08, 0.08])
    assert waits == pytest.approx([0.25, 0.25])


# A loader of known cost: each item sleeps ITEM_S in its worker (or in the main process without
# workers), a batch of BATCH items; the stand-in accelerator sleeps STEP_S per batch. Per batch
# the data take L = BATCH x ITEM_S per worker; W workers deliver a batch every L / W.
ITEM_S, BATCH, STEP_S = 0.010, 4, 0.010


def analytic_wait_fraction(workers: int) -> float:
    load = BATCH * ITEM_S
    if workers == 0:  # the main process loads, then steps
        return load / (load + STEP_S)
    interval = load / workers
    return max(0.0, (interval - STEP_S) / interval)


KNOWN_COST_LOOP = """
import json, sys, time
import torch
from torch.utils.data import DataLoader, Dataset
from augbench.measuring.engines import accelerators, training

class Slow(Dataset):
    def __len__(self):
        return 10_000
    def __getitem__(self, i):
        time.sleep({item_s})
        return torch.zeros(3, 8, 8)

out = {{}}
for workers in (0, 1, 2):
    loader = DataLoader(Slow(), batch_size={batch}, num_workers=workers,
                        prefetch_factor=2 if workers else None)
    batches = training.endless(loader)
    step = accelerators.sleep_accelerator({step_ms}).step
    warmup = 2 * workers + 2
    window = training.train(batches, step, warmup=warmup, steps=30)
    out[workers] = window.data_wait_fraction
    del batches, loader
print(json.dumps(out))
"""


@pytest.mark.envs
def test_measured_data_wait_matches_the_analytic_value_for_0_1_2_workers() -> None:
    python = library_env("torchvision")
    code = KNOWN_COST_LOOP.format(item_s=ITEM_S, batch=BATCH, step_ms=STEP_S * 1000)
    proc = subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    measured = {int(k): v for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    for workers, fraction in measured.items():
        expected = analytic_wait_fraction(workers)
        assert fraction == pytest.approx(expected, abs=0.05), (workers, fraction, expected)


# -- the tables ----------------------------------------------------------------------------------
def _row(workers: int, measured: float, wait: float, **extra: Any) -> dict:
    """A training row of the 50 ms stand-in at batch 4 (80 img/s nominal)."""
    return {
        "machine": "m", "dataset": "d", "regime": "training", "scope": "decode",
        "variant": "sleep-50ms", "accelerator": "sleep:50", "library": "torchvision",
        "transform": "RandomResizedCrop", "workers": workers, "batch_size": 4,
        "allocator_setting": "glibc", "status": "ok", "median_throughput": measured,
        "ci_low": measured * 0.98, "ci_high": measured * 1.02, "data_wait_median": wait,
        "data_wait_ci_low": max(0.0, wait - 0.005), "data_wait_ci_high": wait + 0.005,
        "loader_img_per_s": 300.0, "model_img_per_s": 79.0,
        "batch_shape": json.dumps([4, 3, 224, 224]),
        "step_ms": json.dumps({"n": 30, "p50": 50.0, "p95": 51.0, "max": 52.0}),
        "batch_wait_ms": {"n": 30, "p50": 1.0, "p95": 2.0, "max": 3.0}, **extra,
    }  # fmt: skip


def _supply(workers: int, rate: float, **extra: Any) -> dict:
    """The cpu_dataloader decode row of the same recipe, workers and batch (another job)."""
    return {
        "machine": "m", "dataset": "d", "regime": "cpu_dataloader", "scope": "decode",
        "variant": "", "library": "torchvision", "transform": "RandomResizedCrop",
        "workers": workers, "batch_size": 4, "allocator_setting": "glibc", "status": "ok",
        "median_throughput": rate, "ci_low": rate * 0.95, "ci_high": rate * 1.05,
        "handover_idle_ms": 1.0, "handover_busy_ms": 1.0,
        "handover_batch_mb": 4 * 3 * 224 * 224 * 4 / 2**20,
        "batch_shape": json.dumps([4, 3, 224, 224]), "source_file": f"w{workers}.json", **extra,
    }  # fmt: skip


def test_the_prediction_comes_from_another_job_and_is_checked_against_the_loop() -> None:
    frame = pd.DataFrame(
        [
            # 0 workers: load (4 / 160 s) then step (50 ms): 53.3 img/s, 33 % wait.
            _row(0, 53.0, 0.33),
            _supply(0, 160.0),
            # 1 worker: model-bound; the loop pays the 1 ms hand-over: 78.4 img/s, 2 % wait.
            _row(1, 78.0, 0.02),
            _supply(1, 300.0),
            # 2 workers: a loop far off its prediction is flagged.
            _row(2, 60.0, 0.02),
            _supply(2, 500.0),
            # 4 workers: no cpu_dataloader row at 4 workers: no prediction, and it says why.
            _row(4, 78.0, 0.02),
        ]
    )
    table = training_tables.predicted_vs_measured(frame).set_index("workers")
    assert table.loc[0, "predicted_img_per_s"] == pytest.approx(4 / (4 / 160 + 0.05))
    assert table.loc[1, "predicted_img_per_s"] == pytest.approx(4 / 0.051)
    assert table.loc[1, "predicted_data_wait"] == pytest.approx(1 / 51)
    assert table.loc[1, "model_source"].startswith("the stand-in's nominal rate")
    assert table["within_tolerance"].tolist()[:3] == [True, True, False]
    assert table.loc[4, "prediction"].startswith("no out-of-sample prediction: no ok cpu_data")
    assert pd.isna(table.loc[4, "predicted_img_per_s"])
    assert table.loc[1, "verdict"] == "fed" and table.loc[0, "verdict"] == "starved"
    assert set(table["fewest_workers_fed"]) == {1}
    assert table["step_ms_p95"].tolist() == [51.0] * 4
    lines = "\n".join(training_tables.summary_lines(frame.drop(columns=[])))
    assert "**(differs)**" in lines and "1 worker(s) keep it fed" in lines
    assert "no out-of-sample prediction" in lines


def test_a_miss_says_whether_it_lies_within_the_predictions_interval() -> None:
    """Two data-bound rows off the tolerances by the same ratio: one whose supply's interval is
    wide (its runs spread that far) lies within the prediction's interval, the other, with a
    narrow supply interval, beyond it; the summary's note says which."""
    frame = pd.DataFrame(
        [
            # The supply's interval 45-75 img/s: the prediction spans about 44-72 img/s and a
            # wait of about 9-45 %; measured 50 img/s waiting 36 % is 0.84x, 11 points off.
            _row(1, 50.0, 0.36),
            _supply(1, 60.0, ci_low=45.0, ci_high=75.0),
            # The same miss against a supply known to 1 %.
            _row(2, 50.0, 0.36),
            _supply(2, 60.0, ci_low=59.7, ci_high=60.3),
        ]
    )
    table = training_tables.predicted_vs_measured(frame).set_index("workers")
    assert not table.loc[1, "within_tolerance"] and not table.loc[2, "within_tolerance"]
    assert table["within_interval"].tolist() == [True, False]
    notes = [
        line
        for line in training_tables.summary_lines(frame)
        if line.startswith("- torchvision") and "x the prediction" in line
    ]
    assert len(notes) == 2
    assert "within what the inputs' spread allows" in notes[0]
    assert "beyond the prediction's interval" in notes[1]


def test_several_runs_of_one_setting_are_pooled_as_processes() -> None:
    """Three supply runs and two training runs of one setting: one table row, whose values are
    the medians of all the runs' values, with the interval over the runs as processes; a
    setting measured once keeps its own row's values."""
    epochs = ([290.0, 300.0, 310.0], [250.0, 260.0, 270.0], [330.0, 340.0, 350.0])
    blocks = ([70.0, 72.0, 74.0], [80.0, 82.0, 84.0])
    frame = pd.DataFrame(
        [
            *(
                _supply(1, statistics.median(e), throughputs=json.dumps(e), timestamp=f"t{i}",
                        source_file=f"run{i}/w1.json", handover_idle_ms=float(i + 1))
                for i, e in enumerate(epochs)
            ),
            *(
                _row(1, statistics.median(b), 0.1 * (i + 1), throughputs=json.dumps(b),
                     data_wait_fractions=json.dumps([0.1 * (i + 1)] * 3), timestamp=f"t{i}")
                for i, b in enumerate(blocks)
            ),
            _row(0, 53.0, 0.33),
            _supply(0, 160.0),
        ]
    )  # fmt: skip
    table = training_tables.predicted_vs_measured(frame).set_index("workers")
    assert len(table) == 2
    assert table.loc[1, "supply_runs"] == 3 and table.loc[1, "runs"] == 2
    assert table.loc[1, "supply_img_per_s"] == statistics.median([v for e in epochs for v in e])
    assert table.loc[1, "supply_source"] == "run0/w1.json; run1/w1.json; run2/w1.json"
    # The pooled interval holds the spread between the runs, not one run's epochs.
    assert table.loc[1, "supply_ci_low"] <= 270.0 and table.loc[1, "supply_ci_high"] >= 330.0
    assert table.loc[1, "images_per_second"] == statistics.median(blocks[0] + blocks[1])
    assert table.loc[1, "data_wait"] == pytest.approx(0.15)
    assert table.loc[0, "runs"] == 1 and table.loc[0, "supply_runs"] == 1
    assert table.loc[0, "supply_img_per_s"] == 160.0 and table.loc[0, "images_per_second"] == 53.0
    lines = "\n".join(training_tables.summary_lines(frame))
    assert "1 rows pool several runs of their setting (training runs 1-2, supply runs 1-3:" in lines


def test_a_pooled_models_rate_spreads_the_prediction_by_its_runs() -> None:
    """A real model measured alone in three runs (60, 80, 100 img/s) and a supply far above it:
    the prediction is model-bound at the runs' median, and its interval spans the runs' model
    rates (a step's rate differs between processes), where one run's prediction has only the
    supply's interval."""
    rates = (60.0, 80.0, 100.0)
    model = {"accelerator": "model", "variant": "resnet50-224px-amp-cuda"}
    frame = pd.DataFrame(
        [
            *(
                _row(2, 0.9 * r, 0.05, **model, model_img_per_s=r, timestamp=f"t{i}",
                     throughputs=json.dumps([0.9 * r] * 3),
                     data_wait_fractions=json.dumps([0.05] * 3))
                for i, r in enumerate(rates)
            ),
            _supply(2, 1000.0),
            _row(1, 70.0, 0.05, **model, model_img_per_s=80.0),
            _supply(1, 1000.0),
        ]
    )  # fmt: skip
    table = training_tables.predicted_vs_measured(frame).set_index("workers")
    pooled, single = table.loc[2], table.loc[1]
    assert pooled["model_img_per_s"] == 80.0
    assert pooled["model_ci_low"] <= 60.0 and pooled["model_ci_high"] >= 100.0
    assert pooled["model_source"] == "the model alone, measured in each run's job"
    step = 4 / pooled["predicted_img_per_s"] - 0.001  # the 1 ms hand-over
    assert step == pytest.approx(4 / 80.0)
    assert pooled["predicted_low"] == pytest.approx(4 / (4 / 60.0 + 0.001))
    assert pooled["predicted_high"] == pytest.approx(4 / (4 / 100.0 + 0.001))
    assert math.isnan(single["model_ci_low"])
    assert single["predicted_low"] == single["predicted_high"] == single["predicted_img_per_s"]
    # The runs of one job pooled first (as tidy.load reads a job's runs) keep each run's rate.
    from augbench.analysis.runs import WAIT_POOL, pooled_runs

    runs = frame[(frame["workers"] == 2) & (frame["regime"] == "training")]
    one = pooled_runs(runs, WAIT_POOL)
    assert json.loads(one["model_img_per_s_by_run"]) == list(rates)
    again = training_tables.predicted_vs_measured(
        pd.concat([one.to_frame().T, frame[frame["regime"] == "cpu_dataloader"]])
    ).set_index("workers")
    assert again.loc[2, "predicted_low"] == pytest.approx(pooled["predicted_low"])


def test_the_first_read_counts_for_a_real_model_not_for_a_stand_in_that_sleeps() -> None:
    """The supply's job probed a 2 ms hand-over, 4 ms where the batch it frees was read, and a
    3 ms first read of a batch: a real model's prediction pays the read batches' hand-over and
    the first read, the 50 ms stand-in (which never reads its batches) the plain hand-over."""
    probes = {"handover_idle_ms": 2.0, "handover_busy_ms": 2.0, "handover_read_ms": 4.0,
              "handover_first_read_ms": 3.0}  # fmt: skip
    model = {"accelerator": "model", "variant": "resnet50-224px-amp-cuda", "model_img_per_s": 80.0}
    frame = pd.DataFrame(
        [_row(1, 70.0, 0.05), _row(1, 70.0, 0.05, **model), _supply(1, 1000.0, **probes)]
    )
    table = training_tables.predicted_vs_measured(frame).set_index("variant")
    stand_in, real = table.loc["sleep-50ms"], table.loc["resnet50-224px-amp-cuda"]
    assert stand_in["first_read_ms"] == 0.0
    assert stand_in["predicted_img_per_s"] == pytest.approx(4 / 0.052)
    assert real["first_read_ms"] == pytest.approx(3.0)
    assert real["handover_ms"] == pytest.approx(4.0)
    assert real["predicted_img_per_s"] == pytest.approx(4 / (4 / 80.0 + 0.007))
    assert real["predicted_data_wait"] == pytest.approx(0.004 / (4 / 80.0 + 0.007))


def test_a_pooled_supply_is_allocator_bound_when_any_run_faulted_beyond_its_output() -> None:
    """Three runs of a 1-worker supply whose output is 147 pages (allowance 294 with workers):
    two fault at 215 per image, one at 432. The median (215) is under the line, but one
    process's rate depended on its allocator history, so the pooled supply says allocator-bound;
    runs that all stay under it do not."""

    def frame(faults: list[float]) -> pd.DataFrame:
        return pd.DataFrame(
            [
                *(
                    _supply(1, 300.0, throughputs=json.dumps([300.0] * 3), timestamp=f"t{i}",
                            source_file=f"run{i}/w1.json", minor_faults_per_image=f,
                            output_pages=147.0)
                    for i, f in enumerate(faults)
                ),
                _row(1, 78.0, 0.02),
            ]
        )  # fmt: skip

    bound = training_tables.predicted_vs_measured(frame([215.0, 432.0, 216.0])).iloc[0]
    assert str(bound["supply_allocator_bound"]) == "True"
    assert bound["supply_faults_per_image"] == 432.0 and bound["supply_output_pages"] == 147.0
    quiet = training_tables.predicted_vs_measured(frame([215.0, 250.0, 216.0])).iloc[0]
    assert str(quiet["supply_allocator_bound"]) == "False"


def test_the_prediction_reads_the_supply_as_a_stream_where_its_job_recorded_one() -> None:
    """A training loop reads its loader without stopping: the supply's steady rate (its epochs
    past their first round) is the prediction's input where the result file has it, and the
    table says which rate it took."""
    frame = pd.DataFrame(
        [
            _row(1, 78.0, 0.02, accelerator="sleep:100", variant="sleep-100ms"),
            _supply(1, 30.0, steady_throughput=36.0, steady_ci_low=35.0, steady_ci_high=37.0),
            _row(2, 78.0, 0.02, accelerator="sleep:100", variant="sleep-100ms"),
            _supply(2, 30.0),  # an older file: no steady rate
        ]
    )
    table = training_tables.predicted_vs_measured(frame).set_index("workers")
    assert table.loc[1, "supply_img_per_s"] == 36.0 and table.loc[1, "supply_ci_low"] == 35.0
    assert table.loc[1, "supply_epoch_img_per_s"] == 30.0
    assert table.loc[1, "supply_basis"].startswith("stream")
    # Data-bound (36 img/s against a 40 img/s stand-in): the loader sets the pace.
    assert table.loc[1, "predicted_img_per_s"] == pytest.approx(36.0, rel=0.02)
    assert table.loc[2, "supply_img_per_s"] == 30.0
    assert table.loc[2, "supply_basis"].startswith("epochs")


def test_workers_and_the_training_process_beyond_the_cores_are_flagged_and_said() -> None:
    """2 workers + the training process on 2 cores ask for more than the job had: the row says
    so (its prediction takes the alone rates); 1 worker on 2 cores does not; unknown cores: None."""
    frame = pd.DataFrame(
        [
            _row(1, 78.0, 0.02, usable_cores=2),
            _supply(1, 300.0),
            _row(2, 40.0, 0.40, usable_cores=2),  # far off: flagged, and why it may be
            _supply(2, 500.0),
            _row(4, 78.0, 0.02),
        ]
    )
    table = training_tables.predicted_vs_measured(frame).set_index("workers")
    assert table.loc[1, "oversubscribed"] is False or table.loc[1, "oversubscribed"] == False  # noqa: E712
    assert table.loc[2, "oversubscribed"] == True  # noqa: E712
    assert table.loc[4, "oversubscribed"] is None
    lines = "\n".join(training_tables.summary_lines(frame))
    assert "its 2 workers and the training process ask for more cores than the job had" in lines
    assert "its 1 workers" not in lines


def test_the_gpu_feed_and_dali_say_why_they_have_no_prediction() -> None:
    frame = pd.DataFrame(
        [_row(1, 78.0, 0.02, feed="gpu"), _row(1, 78.0, 0.02, library="dali"), _supply(1, 300.0)]
    )
    table = training_tables.predicted_vs_measured(frame)
    reasons = " ".join(table["prediction"])
    assert "GPU feed" in reasons and "DALI" in reasons
    assert table["predicted_img_per_s"].isna().all()


def test_training_settings_are_checked_before_any_job() -> None:
    for bad, where in (
        ({"accelerator": "sleep:fast"}, "training.accelerator"),
        ({"model": "vit_b_16"}, "training.model"),
        ({"transforms": ["NoSuchRecipe"]}, "training.transforms"),
    ):
        with pytest.raises(ConfigError, match=where):
            resolve({**BASE, "libraries": ["torchvision"], "regimes": ["training"],
                     "training": bad}, REPO)  # fmt: skip


def test_paper_trains_on_every_configured_pipeline() -> None:
    config = resolve(
        {**BASE, "preset": "paper", "libraries": ["torchvision"], "regimes": ["training"],
         "pipelines": ["config/pipelines/imagenet_train.yaml"]},
        REPO,
    )  # fmt: skip
    assert config["training"]["transforms"] == ["RandomResizedCrop", "imagenet_train"]


def test_the_engine_refuses_a_malformed_accelerator(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        training.parse_args(
            ["--library", "torchvision", "--transforms", "RandomResizedCrop", "--manifest",
             str(tmp_path / "m.json"), "--num-images", "4", "--machine", "m", "--workers", "0",
             "--output", str(tmp_path / "o.json"), "--accelerator", "nap:5"]
        )  # fmt: skip


# -- the GPU feed's CPU-side logic (the recipe on the device beside the model) ---------------------
ENGINE_ARGS = ["--transforms", "RandomResizedCrop", "--num-images", "6", "--workers", "1",
               "--batch-size", "2", "--accelerator", "sleep:5", "--steps", "6", "--blocks", "2",
               "--model-steps", "2", "--warmup-steps", "1", "--feeds", "cpu,gpu"]  # fmt: skip


@pytest.mark.envs
@pytest.mark.parametrize("library", ["torchvision", "pillow"])
def test_both_feeds_give_rows_that_say_what_they_time(library: str, tmp_path: Path) -> None:
    from conftest import run_engine

    manifest = jpeg_manifest(tmp_path)
    common = [*ENGINE_ARGS, "--library", library, "--manifest", str(manifest)]
    python = library_env(library)
    # The device-side chain on CPU tensors (a test switch; rows say the device).
    rows = run_engine(
        python, "training", *common, "--allow-cpu-device-feed", "true",
        output=tmp_path / "on-cpu.json",
    )["results"]  # fmt: skip
    cpu = rows["RandomResizedCrop"]
    assert cpu["status"] == "ok" and cpu["feed"] == "cpu" and cpu["variant"] == "sleep-5ms"
    gpu = rows["RandomResizedCrop · gpu-feed"]
    assert gpu["transform"] == "RandomResizedCrop" and gpu["variant"] == "sleep-5ms · gpu-feed"
    if library == "pillow":  # no GPU augmentation path: one row saying so
        assert gpu["status"] == "unsupported" and "GPU augmentation" in gpu["reason"]
        return
    assert gpu["status"] == "ok", gpu.get("reason")
    assert gpu["worker_crop"] == [256, 256] and gpu["feed_device"] == "cpu"
    assert "uint8 crop" in gpu["feed_timed"] and "then the model" in gpu["feed_timed"]
    assert gpu["batch_dtype"] == "torch.uint8"  # what the workers hand over
    # Without the switch: on CUDA where there is one, else a visible skipped row.
    rows = run_engine(python, "training", *common, output=tmp_path / "plain.json")["results"]
    plain = rows["RandomResizedCrop · gpu-feed"]
    if plain["status"] == "ok":
        assert plain["feed_device"] == "cuda"
    else:
        assert plain["status"] == "skipped" and "no CUDA device" in plain["reason"]


@pytest.mark.envs
def test_the_real_model_step_runs_on_cpu_and_says_so(tmp_path: Path) -> None:
    """The model accelerator's own code (random-weight torchvision ResNet-18, forward, backward,
    SGD) on a tiny input: the row names the model, its input and device; the CUDA branch (AMP,
    channels_last, synchronize) is the same function on a CUDA machine."""
    from conftest import run_engine

    manifest = jpeg_manifest(tmp_path)
    rows = run_engine(
        library_env("torchvision"), "training",
        "--library", "torchvision", "--transforms", "RandomResizedCrop", "--manifest",
        str(manifest), "--num-images", "6", "--workers", "0", "--batch-size", "2",
        "--accelerator", "model", "--model", "resnet18", "--device", "cpu",
        "--cpu-input-size", "32", "--steps", "4", "--blocks", "2", "--model-steps", "2",
        "--warmup-steps", "1", output=tmp_path / "model.json",
    )["results"]  # fmt: skip
    row = rows["RandomResizedCrop"]
    assert row["status"] == "ok", row.get("reason")
    assert row["variant"] == "resnet18-32px-cpu" and row["model"] == "resnet18"
    assert row["device"] == "cpu" and row["amp"] is False and row["channels_last"] is False
    assert row["model_img_per_s"] > 0 and "predicted_img_per_s" not in row  # never in-job


@pytest.mark.envs
def test_dali_feeds_the_stand_in_and_says_what_it_cannot_do(tmp_path: Path) -> None:
    """DALI's own pipeline (reader, decoder, recipe, crop_mirror_normalize) as the loader, in
    the DALI env: measured with the sleep stand-in (dali-cpu); its GPU variant needs CUDA; no
    model (the DALI env has no torch); no zero-worker count (DALI always has its threads)."""
    from conftest import run_engine

    manifest = jpeg_manifest(tmp_path)
    python = library_env("dali")
    common = ["--library", "dali", "--transforms", "RandomResizedCrop", "--manifest",
              str(manifest), "--num-images", "6", "--batch-size", "2", "--steps", "6",
              "--blocks", "2", "--model-steps", "2", "--warmup-steps", "1",
              "--feeds", "cpu,gpu"]  # fmt: skip
    rows = run_engine(
        python, "training", *common, "--workers", "1", "--accelerator", "sleep:5",
        output=tmp_path / "sleep.json",
    )["results"]  # fmt: skip
    cpu = rows["RandomResizedCrop"]
    assert cpu["status"] == "ok", cpu.get("reason")
    assert cpu["dali_variant"] == "dali-cpu" and cpu["batch_shape"] == [2, 3, 224, 224]
    assert cpu["data_wait_median"] >= 0 and cpu["variant"] == "sleep-5ms"
    gpu = rows["RandomResizedCrop · gpu-feed"]
    assert gpu["status"] == "ok" or "no CUDA device" in gpu["reason"]
    for workers, accelerator, why in (("1", "model", "no torch"), ("0", "sleep:5", "threads")):
        rows = run_engine(
            python, "training", *common, "--workers", workers, "--accelerator", accelerator,
            output=tmp_path / f"{workers}-{accelerator}.json",
        )["results"]  # fmt: skip
        for row in rows.values():
            assert row["status"] == "unsupported" and why in row["reason"], row


def test_a_supply_pooled_from_a_jobs_runs_pools_again_with_another_folders_run() -> None:
    """A supply row that already pools three runs of its job (cpu_dataloader.runs, pooled when
    the tables are read) and one run of the same setting from another folder (plot_from): four
    runs, each still a process of its own in the interval."""
    from augbench.analysis.runs import THROUGHPUT_POOL, pooled_runs

    epochs = ([290.0, 300.0, 310.0], [250.0, 260.0, 270.0], [330.0, 340.0, 350.0])
    own = pd.DataFrame(
        [
            _supply(1, statistics.median(e), throughputs=json.dumps(e), timestamp=f"t{i}",
                    source_file=f"w1-run{i + 1}.json")
            for i, e in enumerate(epochs)
        ]
    )  # fmt: skip
    job = pooled_runs(own, THROUGHPUT_POOL)
    assert job["runs"] == 3 and json.loads(job["throughputs_by_run"]) == [list(e) for e in epochs]
    other = _supply(1, 400.0, throughputs=json.dumps([395.0, 400.0, 405.0]), timestamp="t9",
                    source_file="elsewhere/w1.json")  # fmt: skip
    frame = pd.DataFrame([job.to_dict(), other, _row(1, 78.0, 0.02)])
    row = training_tables.predicted_vs_measured(frame).iloc[0]
    assert row["supply_runs"] == 4
    everything = [v for e in (*epochs, [395.0, 400.0, 405.0]) for v in e]
    assert row["supply_img_per_s"] == statistics.median(everything)
