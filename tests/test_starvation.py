"""The "will my GPU starve?" arithmetic on a synthetic tidy table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from augbench.analysis import starvation
from augbench.analysis.starvation import data_wait_fraction
from augbench.planning.starvation_model import Model, models_from_config, predict

SKIP_REASON = "workers 4 > 2 usable cores on this machine"


def _row(workers: int, thr: float | None, status: str = "ok", **extra: object) -> dict:
    return {
        "machine": "m-2c",
        "usable_cores": 2,
        "dataset": "d-abc",
        "regime": "cpu_dataloader",
        "scope": "decode",
        "batch_size": 32,
        "variant": "",
        "library": "albumentationsx",
        "transform": "HorizontalFlip",
        "workers": workers,
        "status": status,
        "reason": "" if status == "ok" else extra.pop("reason", "x"),
        "median_throughput": thr,
        **extra,
    }


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        [
            _row(0, 100.0),
            _row(1, 180.0),
            _row(2, 320.0),
            _row(4, None, status="skipped", reason=SKIP_REASON),
            # The memory scope is not end to end: never used.
            _row(2, 5000.0, scope="memory"),
            # micro rows are not loader rows.
            _row(-1, 9000.0, regime="micro", scope="memory"),
        ]
    )


def test_wait_fraction_is_one_minus_the_rate_ratio_and_zero_when_fed() -> None:
    assert data_wait_fraction(100, 400) == pytest.approx(0.75)
    assert data_wait_fraction(400, 400) == 0.0
    assert data_wait_fraction(800, 400) == 0.0
    assert math.isnan(data_wait_fraction(float("nan"), 400))
    # Without workers nothing overlaps: load, then step.
    assert data_wait_fraction(100, 400, workers=0) == pytest.approx(0.8)


def test_the_hand_over_counts_where_workers_feed_the_model() -> None:
    # A loader of 1000 img/s (32 ms per batch of 32) with a 4 ms hand-over (idle and busy)
    # feeding a model of 500 img/s (64 ms per batch): the loop takes 68 ms per batch.
    row = {"workers": 2, "batch_size": 32, "handover_idle_ms": 4.0, "handover_busy_ms": 4.0}
    pred = predict(starvation.supply_of(row, 1000.0), 500.0)
    assert pred.images_per_second == pytest.approx(32 / 0.068)
    assert pred.data_wait_fraction == pytest.approx(4 / 68)
    # The hand-over is scaled to the row's batch bytes from the probe's.
    double = {**row, "handover_batch_mb": 1.0, "batch_shape": [32, 3, 64, 128]}
    assert starvation.supply_of(double, 1000.0).handover_idle_s == pytest.approx(0.004 * 3.0)


def test_model_from_step_time_and_batch() -> None:
    (model,) = models_from_config({"name": "m", "model_step_ms": 100, "batch_size": 25})
    assert model.img_per_s == pytest.approx(250.0)
    (direct,) = models_from_config({"model_img_per_s": 300})
    assert direct.img_per_s == 300
    targets = [{"name": "a100", "images_per_second": 2470, "source": "s"}]
    assert models_from_config({}, targets)[0].img_per_s == 2470


def test_table_per_worker_count(frame: pd.DataFrame) -> None:
    out = starvation.table(frame, [Model("m", 250.0)], dataset_images=1000)
    assert list(out["workers"]) == [0, 1, 2, 4]  # only the decode-scope loader rows
    ok = out[out["status"] == "ok"].set_index("workers")
    # No workers: the main process loads then steps (0.32 s + 0.128 s per batch of 32).
    assert ok.loc[0, "data_wait_fraction"] == pytest.approx(0.32 / 0.448)
    assert ok.loc[1, "data_wait_fraction"] == pytest.approx(1 - 180 / 250)
    assert ok.loc[2, "data_wait_fraction"] == 0.0
    assert list(ok["keeps_model_fed"]) == [False, False, True]
    assert list(ok["verdict"]) == ["starved", "starved", "fed"]
    assert ok.loc[0, "data_time_per_epoch_s"] == pytest.approx(10.0)
    # The model is the bottleneck once fed: the epoch takes dataset / model rate.
    assert ok.loc[2, "epoch_time_s"] == pytest.approx(1000 / 250)
    assert set(out["fewest_workers_keeping_fed"]) == {"2"}
    assert set(out["measured_workers"]) == {"0,1,2"}
    assert set(out["not_measured_workers"]) == {f"4: skipped ({SKIP_REASON})"}
    assert set(out["machine"]) == {"m-2c"} and set(out["usable_cores"]) == {2}


def test_skipped_rows_stay_visible_never_zero(frame: pd.DataFrame) -> None:
    out = starvation.table(frame, [Model("m", 250.0)])
    skipped = out[out["workers"] == 4].iloc[0]
    assert skipped["status"] == "skipped" and skipped["reason"] == SKIP_REASON
    assert math.isnan(skipped["data_img_per_s"]) and skipped["keeps_model_fed"] is None


def test_no_extrapolation_to_unmeasured_counts(frame: pd.DataFrame) -> None:
    # 320 img/s at 2 workers; 4 workers might reach 1000, but they were skipped here.
    out = starvation.table(frame, [Model("big", 1000.0)])
    assert set(out["fewest_workers_keeping_fed"]) == {"none of the measured counts"}
    assert not out["keeps_model_fed"].fillna(False).any()


def test_pipelines_and_regimes_are_separate_series(frame: pd.DataFrame) -> None:
    extra = pd.DataFrame(
        [
            _row(2, 900.0, pipeline="imagenet_train", transform="imagenet_train"),
            _row(-1, 700.0, regime="dali", library="dali", variant="dali-cpu"),
        ]
    )
    both = pd.concat([frame.assign(pipeline=None), extra], ignore_index=True)
    out = starvation.table(both, [Model("m", 800.0)])
    pipe = out[out["pipeline"] == "imagenet_train"]
    assert set(pipe["fewest_workers_keeping_fed"]) == {"2"}
    dali = out[out["regime"] == "dali"].iloc[0]
    assert dali["fewest_workers_keeping_fed"].startswith("n/a")
    assert dali["data_wait_fraction"] == pytest.approx(1 - 700 / 800)


def test_markdown_names_machine_cores_and_skipped_counts(frame: pd.DataFrame) -> None:
    text = "\n".join(starvation.markdown(starvation.table(frame, [Model("m", 250.0, "d")])))
    assert "m-2c (2 cores)" in text
    assert "0: 71% [71%, 71%] starved" in text and "2: 0% [0%, 0%] fed" in text
    assert SKIP_REASON in text
    assert "not monotone" not in text
    empty = starvation.markdown(starvation.table(frame.iloc[0:0], [Model("m", 1.0)]))
    assert "nothing to estimate from" in "\n".join(empty)


def test_the_verdict_has_an_interval_and_flags_more_workers_doing_worse() -> None:
    # 2 workers: 240-260 img/s against a 260 img/s model straddles the 5 % line; 4 workers
    # deliver 400 (fed); 8 workers 100 (starved): not monotone, flagged, and the answer is none.
    frame = pd.DataFrame(
        [
            _row(2, 250.0, ci_low=240.0, ci_high=260.0),
            _row(4, 400.0, ci_low=390.0, ci_high=410.0),
            _row(8, 100.0, ci_low=95.0, ci_high=105.0),
        ]
    )
    out = starvation.table(frame, [Model("m", 260.0)]).set_index("workers")
    assert list(out["verdict"]) == ["borderline", "fed", "starved"]
    assert out.loc[2, "data_wait_low"] == 0.0 and out.loc[2, "data_wait_high"] > 0.05
    assert set(out["fed_monotone"]) == {False}
    assert set(out["fewest_workers_keeping_fed"]) == {"none of the measured counts"}
    text = "\n".join(starvation.markdown(starvation.table(frame, [Model("m", 260.0)])))
    assert "not monotone in workers" in text
