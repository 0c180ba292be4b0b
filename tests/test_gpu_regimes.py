"""GPU regimes, the parts that need neither a GPU nor a library env: the DALI mapping table,
the recipe definition, the stream timer (synchronization inside the clock), config blocks and
the GPU-vs-CPU tables."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pandas as pd
import pytest

from augbench import adapters, catalog, gpu_recipes
from augbench.analysis import gpu
from augbench.config import ConfigError, resolve
from augbench.engines.streaming import StreamPlan, run_stream
from augbench.policy import SlowTransformPolicy

REPO = Path(__file__).resolve().parents[1]


# -- DALI mapping ---------------------------------------------------------------------------
def test_dali_maps_catalog_transforms_to_dali_operators() -> None:
    dali = adapters.get("dali")
    assert set(dali.mappings) <= set(catalog.names())
    for name, mapping in dali.mappings.items():
        assert mapping.call.startswith("fn."), name
    assert dali.mappings["HorizontalFlip"].call == "fn.flip(horizontal=1)"
    assert dali.mappings["GaussianBlur"].call == "fn.gaussian_blur(window_size=9, sigma=2.0)"
    assert "hue=fn.random.uniform(-36, 36) degrees" in dali.mappings["ColorJitter"].call


def test_transforms_dali_cannot_express_are_unsupported_with_a_reason() -> None:
    dali = adapters.get("dali")
    unsupported = {name for name in catalog.names() if not dali.supports(name)}
    # Point operations DALI has no operator for are unsupported, never rebuilt from arithmetic;
    # the rest of the paper set that DALI lacks (Elastic, CLAHE, Rain, ...) is unsupported too.
    assert {
        "Posterize",
        "Solarize",
        "Sharpen",
        "Invert",
        "AutoContrast",
        "ChannelShuffle",
    } <= unsupported
    assert set(dali.mappings) | unsupported == set(catalog.names())
    for name in unsupported:
        assert "dali has no" in dali.unsupported_reason(name)
        with pytest.raises(adapters.Unsupported, match="dali has no"):
            dali.build(name, catalog.get(name).params)


def test_dali_is_registered_as_an_adapter_without_importing_dali() -> None:
    import sys

    assert "dali" in adapters.names()
    adapters.get("dali")
    assert "nvidia.dali" not in sys.modules


# -- recipes -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("transform", "recipe", "worker_crop", "output"),
    [
        ("Rotate", "RandomCrop224 + Rotate + Normalize", (224, 224), (224, 224)),
        ("Resize", "RandomCrop224 + Resize + Normalize", (224, 224), (512, 512)),
        ("RandomResizedCrop", "RandomResizedCrop + Normalize", (256, 256), (224, 224)),
        ("CenterCrop224", "CenterCrop224 + Normalize", (256, 256), (224, 224)),
        ("RandomCrop224", "RandomCrop224 + Normalize", (256, 256), (224, 224)),
    ],
)
def test_recipe_strings_and_shapes(
    transform: str, recipe: str, worker_crop: tuple[int, int], output: tuple[int, int]
) -> None:
    assert gpu_recipes.recipe(transform) == recipe
    assert gpu_recipes.worker_crop(transform, 256) == worker_crop
    assert gpu_recipes.output_hw(transform) == output


def test_kornia_is_per_sample_only_and_torchvision_has_both_modes() -> None:
    assert gpu_recipes.LIBRARY_RANDOMNESS["kornia"] == ("per-sample",)
    assert set(gpu_recipes.LIBRARY_RANDOMNESS["torchvision"]) == set(gpu_recipes.RANDOMNESS)


# -- stream timer ---------------------------------------------------------------------------------
POLICY = SlowTransformPolicy()


def test_plan_covers_first_batch_preflight_warmup_and_repetitions() -> None:
    plan = StreamPlan.for_images(12, 4, warmup_reps=1, reps=2, policy=POLICY)
    assert (plan.batches_per_rep, plan.preflight_batches) == (3, 3)
    assert plan.total_batches == 1 + 3 + (1 + 2) * 3


def test_plan_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        StreamPlan.for_images(12, 0, warmup_reps=1, reps=2, policy=POLICY)


def test_sync_runs_before_every_clock_stop_and_its_time_is_measured() -> None:
    """The CPU stand-in for the CUDA sleep test: work that only completes in sync() (as queued
    GPU work does) must be inside each repetition's time."""
    plan = StreamPlan.for_images(8, 4, warmup_reps=1, reps=3, policy=POLICY)
    events: list[str] = []
    pending: list[float] = []

    def step() -> int:
        events.append("step")
        pending.append(0.02)  # "launched" work, finished only by sync
        return 4

    def sync() -> None:
        events.append("sync")
        time.sleep(sum(pending))
        pending.clear()

    result = run_stream(step, sync, plan, POLICY)
    assert events.count("step") == plan.total_batches
    assert events[-1] == "sync"
    assert len(result.times) == 3 == len(result.throughputs)
    for seconds in result.times:
        assert seconds >= plan.batches_per_rep * 0.02
    assert result.images_per_rep == plan.batches_per_rep * 4
    assert result.preflight["preflight_items"] == plan.preflight_batches * 4


def test_slow_preflight_stops_early_without_measuring() -> None:
    policy = SlowTransformPolicy(preflight_items=2, max_seconds_per_item=0.001)
    plan = StreamPlan.for_images(8, 1, warmup_reps=1, reps=2, policy=policy)
    calls = []

    def step() -> int:
        calls.append(1)
        time.sleep(0.005)
        return 1

    result = run_stream(step, lambda: None, plan, policy)
    assert result.early_stop_reason and "s/item" in result.early_stop_reason
    assert len(calls) == 1 + plan.preflight_batches
    assert result.throughputs == []


# -- config ---------------------------------------------------------------------------------------
BASE = {
    "machine": "auto",
    "dataset": {"archive": None},
    "libraries": ["torchvision", "kornia", "dali"],
    "regimes": ["gpu_dataloader", "dali"],
    "envs": {},
}


@pytest.mark.parametrize("preset", ["smoke", "default", "paper"])
def test_presets_have_gpu_blocks(preset: str) -> None:
    cfg = resolve({**BASE, "preset": preset}, REPO)
    assert cfg["gpu_dataloader"]["batch_size"] >= 1
    assert cfg["gpu_dataloader"]["workers"]
    assert set(cfg["dali"]["variants"]) == {"dali-gpu", "dali-cpu"}


def test_gpu_blocks_get_defaults_when_absent(tmp_path: Path) -> None:
    cfg = resolve({**BASE, "preset": "smoke", "gpu_dataloader": {"batch_size": 8}}, REPO)
    assert cfg["gpu_dataloader"]["batch_size"] == 8
    assert cfg["gpu_dataloader"]["torchvision_randomness"] == ["per-sample", "batch-shared"]
    assert cfg["gpu_dataloader"]["worker_crop"] == 256


def test_unknown_dali_variant_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"dali\.variants\[0\]: 'dali-tpu' is not one of"):
        resolve({**BASE, "preset": "smoke", "dali": {"variants": ["dali-tpu"]}}, REPO)


# -- tables ---------------------------------------------------------------------------------------
def _row(regime: str, library: str, transform: str, status: str, median: float | None, **kw):
    base = dict(
        machine="m",
        regime=regime,
        scope="decode",
        library=library,
        transform=transform,
        status=status,
        reason="" if status == "ok" else f"why {status}",
        median_throughput=median,
        std_throughput=0.0 if median else None,
        workers=-1,
        batch_size=-1,
        variant="",
        device="cpu",
        gpu_peak_allocated_mb=None,
        gpu_peak_reserved_mb=None,
    )
    base.update(kw)
    return base


def test_ratio_uses_albumentationsx_cpu_and_keeps_skipped_rows() -> None:
    tidy = pd.DataFrame(
        [
            _row("micro", "albumentationsx", "HorizontalFlip", "ok", 1000.0, scope="memory"),
            _row("micro", "albumentationsx", "GaussianBlur", "ok", 400.0, scope="memory"),
            _row("cpu_dataloader", "albumentationsx", "GaussianBlur", "ok", 200.0, workers=2),
            _row("cpu_dataloader", "albumentationsx", "GaussianBlur", "ok", 300.0, workers=4),
            _row("gpu_dataloader", "kornia", "HorizontalFlip", "skipped", None, workers=1),
            _row("dali", "dali", "HorizontalFlip", "ok", 500.0, variant="dali-cpu"),
            _row("dali", "dali", "GaussianBlur", "ok", 600.0, variant="dali-cpu"),
            _row("dali", "dali", "Posterize", "unsupported", None, variant="dali-cpu"),
        ]
    )
    table = gpu.gpu_vs_cpu_ratio(tidy).set_index(["library", "transform"])
    assert len(table) == 4  # every GPU-regime row, none of the CPU ones
    flip = table.loc[("dali", "HorizontalFlip")]
    assert flip["ratio"] == pytest.approx(0.5)
    assert flip["cpu_reference"] == "albumentationsx micro/memory"
    blur = table.loc[("dali", "GaussianBlur")]  # cpu_dataloader preferred, fastest worker count
    assert blur["ratio"] == pytest.approx(2.0)
    assert blur["cpu_reference"] == "albumentationsx cpu_dataloader/decode workers=4"
    skipped = table.loc[("kornia", "HorizontalFlip")]
    assert skipped["status"] == "skipped" and math.isnan(skipped["ratio"])
    assert skipped["ratio_status"] == "N/A: skipped"
    assert table.loc[("dali", "Posterize")]["ratio_status"] == "N/A: unsupported"


def test_ratio_without_a_cpu_reference_says_so() -> None:
    tidy = pd.DataFrame([_row("dali", "dali", "Rotate", "ok", 10.0, variant="dali-cpu")])
    row = gpu.gpu_vs_cpu_ratio(tidy).iloc[0]
    assert math.isnan(row["ratio"])
    assert row["ratio_status"].startswith("N/A: no ok albumentationsx")


def test_memory_table_lists_gpu_rows_with_memory_columns() -> None:
    tidy = pd.DataFrame(
        [
            _row("micro", "albumentationsx", "HorizontalFlip", "ok", 1000.0),
            _row(
                "gpu_dataloader",
                "torchvision",
                "HorizontalFlip",
                "ok",
                3000.0,
                gpu_peak_allocated_mb=120.0,
                gpu_peak_reserved_mb=160.0,
                device="NVIDIA H100",
            ),
            _row("dali", "dali", "HorizontalFlip", "skipped", None, variant="dali-gpu"),
        ]
    )
    table = gpu.throughput_vs_memory(tidy)
    assert list(table.columns) == list(gpu.MEMORY_COLUMNS)
    assert set(table["regime"]) == {"gpu_dataloader", "dali"}
    tv = table[table["library"] == "torchvision"].iloc[0]
    assert (tv["gpu_peak_allocated_mb"], tv["gpu_peak_reserved_mb"]) == (120.0, 160.0)
    assert math.isnan(table[table["library"] == "dali"].iloc[0]["median_throughput"])


def test_docs_list_every_dali_mapping_and_unsupported_reason() -> None:
    text = (REPO / "docs" / "gpu_regimes.md").read_text()
    dali = adapters.get("dali")
    for name in catalog.names():
        expected = (
            dali.mappings[name].call if dali.supports(name) else dali.unsupported_reason(name)
        )
        assert expected in text, name
