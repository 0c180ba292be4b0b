"""A model that steps on the CPU the loader's workers use (augbench.planning.starvation_model,
augbench.analysis.training, augbench.measuring.engines.training): the cores its step keeps from them
slow the loader, which the prediction counts; a stand-in that sleeps keeps none. Arithmetic on
synthetic rows, and the CPU stand-in's step measured alone (its CPU time, not its speed)."""

from __future__ import annotations

import json
import time
from typing import Any

import pandas as pd
import pytest

from augbench.analysis import training as training_tables
from augbench.measuring.engines import accelerators, training
from augbench.planning.starvation_model import Supply, predict, shared_period


def test_a_step_that_keeps_one_of_two_cores_leaves_two_workers_one() -> None:
    # 2 workers on 2 cores deliver 320 img/s (period 100 ms at batch 32); the model steps in
    # 100 ms alone and keeps one core: the workers make half a batch while it steps, the other
    # half on both cores in 50 ms more. The loop runs at 2/3 of the supply and waits a third.
    supply = Supply(320.0, 2, 32, cores=2)
    shared = predict(supply, 320.0, model_cpu_share=1.0)
    assert shared.images_per_second == pytest.approx(320.0 / 1.5)
    assert shared.data_wait_fraction == pytest.approx(1 / 3)
    assert shared.loader_period_s == pytest.approx(0.150)
    # If the step shared its core evenly with the two workers instead, it would take 150 ms of
    # the 150 ms loop: the low end of the wait.
    assert shared.data_wait_shared == pytest.approx(0.0)
    # A sleeping stand-in (or a GPU step) keeps no core: the loader's rate as measured.
    alone = predict(supply, 320.0, model_cpu_share=0.0)
    assert alone.images_per_second == pytest.approx(320.0)
    assert alone.data_wait_fraction == pytest.approx(0.0)
    # Unknown cores: no sharing modelled.
    assert predict(Supply(320.0, 2, 32), 320.0, 1.0).images_per_second == pytest.approx(320.0)


def test_workers_that_keep_up_with_the_cores_left_are_not_slowed() -> None:
    # 1 worker on 2 cores: the model's core is the one the worker does not use.
    one = Supply(320.0, 1, 32, cores=2)
    assert shared_period(one, 0.100, 1.0) == pytest.approx(0.100)
    # 2 workers, a model four times slower than the loader: the workers finish a batch on the
    # one core left well within the step.
    fast = Supply(1280.0, 2, 32, cores=2)
    assert shared_period(fast, 0.100, 1.0) == pytest.approx(0.025)
    assert predict(fast, 320.0, 1.0).images_per_second == pytest.approx(320.0)
    # No workers: load then step, nothing overlaps.
    serial = predict(Supply(320.0, 0, 32, cores=2), 320.0, 1.0)
    assert serial.images_per_second == pytest.approx(160.0)


def _row(accelerator: str, **extra: Any) -> dict:
    """A training row at 2 workers, batch 32, on a 2-core job (stand-in rate 320 img/s)."""
    return {
        "machine": "m", "dataset": "d", "regime": "training", "scope": "decode",
        "variant": accelerator.replace(":", "-") + "ms", "accelerator": accelerator,
        "library": "torchvision", "transform": "GaussianBlur", "workers": 2, "batch_size": 32,
        "allocator_setting": "glibc", "status": "ok", "median_throughput": 215.0,
        "ci_low": 210.0, "ci_high": 220.0, "data_wait_median": 0.33,
        "data_wait_ci_low": 0.32, "data_wait_ci_high": 0.34, "images_per_second": 214.0,
        "data_wait_fraction": 0.33, "model_img_per_s": 320.0, "usable_cores": 2,
        "batch_shape": json.dumps([32, 3, 224, 224]), **extra,
    }  # fmt: skip


def _supply(**extra: Any) -> dict:
    return {
        "machine": "m", "dataset": "d", "regime": "cpu_dataloader", "scope": "decode",
        "variant": "", "library": "torchvision", "transform": "GaussianBlur", "workers": 2,
        "batch_size": 32, "allocator_setting": "glibc", "status": "ok",
        "median_throughput": 320.0, "ci_low": 310.0, "ci_high": 330.0,
        "handover_idle_ms": 0.0, "handover_busy_ms": 0.0, "handover_batch_mb": 18.4,
        "batch_shape": json.dumps([32, 3, 224, 224]), "source_file": "w2.json", **extra,
    }  # fmt: skip


def test_the_table_counts_the_cores_a_cpu_step_keeps_and_not_a_sleeping_ones() -> None:
    frame = pd.DataFrame(
        [
            _row("cpu:100"),
            _row("sleep:100", variant="sleep-100ms", median_throughput=318.0),
            _supply(),
        ]
    )
    table = training_tables.predicted_vs_measured(frame).set_index("variant")
    cpu, sleep = table.loc["cpu-100ms"], table.loc["sleep-100ms"]
    assert cpu["model_cpu_share"] == 1.0 and cpu["cores"] == 2
    assert cpu["predicted_img_per_s"] == pytest.approx(320.0 / 1.5, rel=0.01)
    assert cpu["predicted_data_wait"] == pytest.approx(1 / 3, abs=0.01)
    assert cpu["within_tolerance"]
    assert sleep["model_cpu_share"] == 0.0
    assert sleep["predicted_img_per_s"] == pytest.approx(320.0, rel=0.01)
    # A measured share wins over the accelerator's default.
    measured = training_tables.predicted_vs_measured(
        pd.DataFrame([_row("cpu:100", model_cpu_share=0.5), _supply()])
    )
    assert measured["model_cpu_share"].iloc[0] == 0.5
    assert measured["model_cpu_share_source"].iloc[0] == "measured with the step alone"


def test_a_row_is_predicted_from_the_supply_of_its_own_decoder() -> None:
    """Training rows of two decoders at one setting: each is its own row, predicted from the
    DataLoader row of the same decoder and loader (sleep stand-in at 640 img/s: the supply's
    rate is the prediction)."""
    feed = {"loader": "process"}
    frame = pd.DataFrame(
        [
            _row("sleep:50", decoder="native", **feed),
            _row("sleep:50", decoder="simplejpeg", **feed),
            _supply(decoder="native", **feed),
            _supply(decoder="simplejpeg", median_throughput=400.0, ci_low=390.0, ci_high=410.0,
                    **feed),
            _supply(decoder="simplejpeg", loader="thread", median_throughput=500.0),
        ]
    )  # fmt: skip
    table = training_tables.predicted_vs_measured(frame).set_index("decoder")
    assert table.loc["native", "supply_img_per_s"] == pytest.approx(320.0)
    assert table.loc["simplejpeg", "supply_img_per_s"] == pytest.approx(400.0)
    assert table.loc["simplejpeg", "runs"] == 1


def test_a_pooled_row_keeps_one_value_per_run() -> None:
    """Each run of a training job is one process: the table lists each run's throughput and
    data wait, the median of its blocks (the unit of augbench.decision's intervals)."""
    frame = pd.DataFrame(
        [
            *(
                _row("cpu:100", timestamp=f"t{i}", throughputs=json.dumps([v - 1, v, v + 1]),
                     data_wait_fractions=json.dumps([w, w]), model_cpu_share=0.9 + 0.05 * i)
                for i, (v, w) in enumerate([(200.0, 0.30), (210.0, 0.32), (220.0, 0.35)])
            ),
            _supply(),
        ]
    )  # fmt: skip
    row = training_tables.predicted_vs_measured(frame).iloc[0]
    assert row["runs"] == 3
    assert json.loads(row["process_img_per_s"]) == [200.0, 210.0, 220.0]
    assert json.loads(row["process_data_waits"]) == [0.30, 0.32, 0.35]
    assert row["model_cpu_share"] == pytest.approx(0.95)


def test_the_cpu_stand_in_spends_its_time_on_the_cpu_and_the_sleeping_one_does_not() -> None:
    """The CPU stand-in's step is fixed work: 20 ms of its thread's CPU time however long the
    machine takes to give it (a busy machine stretches its wall time, not its work)."""
    cpu = accelerators.stand_in_accelerator("cpu:20")
    assert cpu.label == "cpu-20ms" and cpu.settings["device"] == "cpu"
    start = time.thread_time()
    cpu.step(None)
    assert time.thread_time() - start >= 0.020
    sleep = accelerators.stand_in_accelerator("sleep:20")
    start = time.thread_time()
    sleep.step(None)
    assert time.thread_time() - start < 0.010
    assert accelerators.stand_in("model") is None
    with pytest.raises(SystemExit):
        training.parse_args(["--library", "torchvision", "--workers", "0", "--accelerator",
                             "cpu:fast"])  # fmt: skip
