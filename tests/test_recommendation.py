"""The answer page: fastest library with its interval, runner-up margin or tie, the workers that
feed the target model (from the real starvation table), cost per million images, and words for
what was not measured."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from augbench.analysis import recommendation, starvation
from augbench.starvation_model import Model, target_model, target_problem

CLOUD = {
    "regimes": {
        "cpu_dataloader": {"machine_type": "n2-standard-16", "cpus": 16},
        "micro": {"machine_type": "c3-standard-4", "cpus": 4},
    },
    "prices_usd_per_hour": {"n2-standard-16": 0.8},
}


def _row(pipeline: str, library: str, workers: int, rate: float | None, **extra: object) -> dict:
    status = extra.pop("status", "ok")
    if extra.get("regime") == "micro":
        extra.setdefault("scope", "memory")
    spread = extra.pop("spread", 0.05)
    return {
        "pipeline": pipeline,
        "transform": pipeline,
        "variant": "pipeline",
        "machine": "m-2c",
        "usable_cores": 2,
        "dataset": "d-abc",
        "resolution": None,
        "randomness": None,
        "regime": "cpu_dataloader",
        "scope": "decode",
        "batch_size": 32,
        "library": library,
        "workers": workers,
        "status": status,
        "reason": "" if status == "ok" else "step 1 Foo: not in this library",
        "median_throughput": rate,
        "ci_low": rate * (1 - spread) if rate else None,
        "ci_high": rate * (1 + spread) if rate else None,
        "ci_level": 0.95,
        "allocator_setting": "glibc",
        **extra,
    }


@pytest.fixture
def rows() -> pd.DataFrame:
    return pd.DataFrame(
        [
            # "fast": a clear winner; 2 workers feed a 300 img/s model, 0 do not.
            _row("fast", "albumentationsx", 0, 200.0),
            _row("fast", "albumentationsx", 2, 600.0),
            _row("fast", "torchvision", 0, 100.0),
            _row("fast", "torchvision", 2, 300.0),
            _row("fast", "pillow", 2, None, status="unsupported"),
            # Another allocator setting is never ranked against glibc's rows.
            _row("fast", "torchvision", 2, 5000.0, allocator_setting="mimalloc"),
            # "close": the two intervals overlap: a tie.
            _row("close", "albumentationsx", 2, 500.0, spread=0.2),
            _row("close", "torchvision", 2, 480.0, spread=0.2),
            # "rough": a clear-looking margin from 50 % intervals (two epochs): not decided.
            _row("rough", "albumentationsx", 2, 600.0, ci_level=0.5),
            _row("rough", "torchvision", 2, 400.0, ci_level=0.5),
            # ... and its one-thread rows (95 %) say the same library is faster.
            _row("rough", "albumentationsx", -1, 900.0, regime="micro"),
            _row("rough", "torchvision", -1, 450.0, regime="micro"),
            # "single": one-thread rows only (no DataLoader rows), one library.
            _row("single", "kornia", -1, 50.0, regime="micro", scope="memory"),
            _row("single", "torchvision", -1, None, status="unsupported", regime="micro"),
            # "broken": no library ran it.
            _row("broken", "albumentationsx", 2, None, status="error"),
        ]
    )


PIPELINES = [
    {"name": n, "yours": y}
    for n, y in [
        ("fast", False),
        ("close", False),
        ("rough", False),
        ("single", False),
        ("broken", False),
    ]
] + [{"name": "mine", "yours": True}]


@pytest.fixture
def rec(rows: pd.DataFrame) -> pd.DataFrame:
    model = Model("m300", 300.0)
    starved = starvation.table(rows[rows["allocator_setting"] == "glibc"], [model])
    return recommendation.recommend(rows, starved, PIPELINES, model, CLOUD).set_index("pipeline")


def test_the_users_pipeline_comes_first_and_says_why_it_has_no_answer(rec: pd.DataFrame) -> None:
    assert rec.index[0] == "mine"
    mine = rec.loc["mine"]
    assert mine["status"] == "not measured" and "no rows yet" in mine["why"]
    assert list(rec.index) == ["mine", "fast", "close", "rough", "single", "broken"]


def test_fastest_library_margin_workers_and_cost(rec: pd.DataFrame) -> None:
    fast = rec.loc["fast"]
    assert fast["library"] == "albumentationsx" and fast["img_per_s"] == 600.0
    assert fast["workers"] == 2 and "2 workers" in fast["setting"]
    assert (fast["ci_low"], fast["ci_high"]) == pytest.approx((570.0, 630.0))
    # Against the runner-up at the same setting, not the mimalloc row.
    assert fast["runner_up"] == "torchvision" and fast["margin"] == pytest.approx(2.0)
    assert fast["margin_low"] < 2.0 < fast["margin_high"] and fast["margin_low"] > 1
    assert fast["versus_runner_up"] == "faster"
    assert "pillow unsupported" in fast["other_libraries"]
    # 300 img/s target: 0 workers (200 img/s) starve it, 2 workers (600 img/s) feed it.
    assert fast["fewest_workers_fed"] == 2 and fast["fed_answer"] == "2 workers"
    assert fast["data_wait"] < 0.05
    # 0.8 $/h for 16 vCPUs, 2 of them busy (2 workers + half a core, at most the 2 cores the
    # rate was measured on), at 600 img/s.
    expected = 0.8 / 16 * 2 * 1e6 / (600 * 3600)
    assert fast["usd_per_million_images"] == pytest.approx(expected)
    assert "n2-standard-16" in fast["cost_basis"]


def test_overlapping_intervals_are_a_tie(rec: pd.DataFrame) -> None:
    close = rec.loc["close"]
    assert close["versus_runner_up"] == "tie"
    assert close["margin_low"] <= 1 <= close["margin_high"]
    text = "\n".join(recommendation.markdown(rec.reset_index()))
    assert "tie (1.04x" in text


def test_a_margin_from_low_level_intervals_is_not_called(rec: pd.DataFrame) -> None:
    rough = rec.loc["rough"]
    assert rough["margin"] == pytest.approx(1.5) and rough["margin_level"] == 0.5
    assert rough["margin_low"] > 1  # looks decided, but only at 50 %
    assert rough["versus_runner_up"] == "undecided"
    text = "\n".join(recommendation.markdown(rec.reset_index()))
    assert "1.50x [" in text and "50% CI], not decided" in text
    assert rough["one_thread_margin"] == pytest.approx(2.0)
    assert rough["one_thread_versus"] == "faster"
    assert "; one thread on decoded images: albumentationsx at 2.00x torchvision's rate [" in text
    assert "95% CI], faster" in text
    short = recommendation.short_text(rec.reset_index())
    assert "1.50x torchvision, not decided; one thread 2.00x, faster" in short


def test_no_dataloader_rows_and_no_price_are_said_in_words(rec: pd.DataFrame) -> None:
    single = rec.loc["single"]
    assert single["regime"] == "micro" and single["library"] == "kornia"
    assert single["fed_answer"].startswith("not measured: no end-to-end DataLoader rows")
    assert math.isnan(single["usd_per_million_images"])
    assert single["cost_basis"] == "not priced: no cloud.prices_usd_per_hour.c3-standard-4"
    broken = rec.loc["broken"]
    assert broken["status"] == "not measured"
    assert broken["why"].startswith("no library ran it ok: albumentationsx error")
    text = "\n".join(recommendation.markdown(rec.reset_index()))
    assert "nan" not in text.lower().replace("nanosecond", "")
    assert "no other library ran it (torchvision unsupported" in text
    short = recommendation.short_text(rec.reset_index())
    assert "mine (yours): not measured" in short and "nan" not in short.lower()


def test_nothing_fed_gives_the_wait_at_the_largest_count(rows: pd.DataFrame) -> None:
    model = Model("big", 5000.0)
    starved = starvation.table(rows[rows["allocator_setting"] == "glibc"], [model])
    rec = recommendation.recommend(rows, starved, PIPELINES, model, CLOUD).set_index("pipeline")
    fast = rec.loc["fast"]
    assert fast["fewest_workers_fed"] is None or pd.isna(fast["fewest_workers_fed"])
    assert fast["fed_answer"] == "none of the measured worker counts (0, 2)"
    assert fast["wait_at_workers"] == 2 and fast["data_wait"] == pytest.approx(1 - 600 / 5000)


def test_no_pipeline_configured_is_one_sentence() -> None:
    rec = recommendation.recommend(None, None, [], Model("m", 1.0), CLOUD)
    assert rec.empty
    assert "no pipeline is configured" in "\n".join(recommendation.markdown(rec))


TARGETS = [{"name": "resnet50-a100-amp", "images_per_second": 2470}]


@pytest.mark.parametrize(
    ("target", "name", "rate"),
    [
        (None, "resnet50-a100-amp", 2470.0),
        ("resnet50-a100-amp", "resnet50-a100-amp", 2470.0),
        (300, "300-img-per-s", 300.0),
        ("450.5", "450.5-img-per-s", 450.5),
    ],
)
def test_target_is_a_model_name_or_images_per_second(target, name, rate) -> None:
    model = target_model({"target": target}, TARGETS)
    assert (model.name, model.img_per_s) == (name, rate)


@pytest.mark.parametrize("target", ["resnet-51", 0, -5, "-1", True])
def test_a_bad_target_is_one_line_naming_the_models(target) -> None:
    problem = target_problem({"target": target}, TARGETS)
    assert problem is not None and "\n" not in problem
    assert problem.startswith("config error at starvation.target:")
    assert "['resnet50-a100-amp']" in problem
