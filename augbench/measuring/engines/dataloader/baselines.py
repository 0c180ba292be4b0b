"""The cpu_dataloader engine's baselines: the transport baseline (once per job), the decode
floor and the memory-scope companion's images (per decode job, timed per recipe in its rounds)."""

from __future__ import annotations

import dataclasses
import math
import mmap
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from augbench.measuring.engines.dataloader.decode_floor import DecodeFloor
from augbench.measuring.engines.dataloader.plumbing import (
    EndlessSampler,
    LoaderSettings,
    Recipe,
    RecipeDataset,
    identity,
    regime_loader,
)
from augbench.measuring.engines.dataloader.settings import DataLoaderSettings
from augbench.measuring.engines.dataloader.timing import (
    EpochSettings,
    RecipeError,
    Stream,
    measure_loader,
)
from augbench.measuring.stopping import (
    epoch_batches,
    handover_idle_wait,
    handover_window_batches,
)
from augbench.policy import HANDOVER_BUSY_PACE, HANDOVER_PROBES
from augbench.workload import adapters, recipes

TRANSPORT_SIZE = 224  # the recipes' output side: the transport sample has the recipes' shape


def fixed_crop(image: Any, size: int = TRANSPORT_SIZE) -> Any:
    """The top-left ``size`` x ``size`` window in the library's native format, copied into its
    own memory as a crop transform returns it (numpy HWC, torch ...xCxHxW, or a PIL image)."""
    if hasattr(image, "crop") and hasattr(image, "getbands"):  # PIL
        return image.crop((0, 0, size, size))
    if hasattr(image, "contiguous"):  # torch tensor, channels first
        return image[..., :size, :size].contiguous()
    return image[:size, :size].copy()  # numpy HWC


class CroppedLoad:
    """The scope's load step followed by ``fixed_crop`` (the transport baseline's decode path)."""

    def __init__(self, load: Callable[[Any], Any]) -> None:
        self.load = load

    def __call__(self, item: Any) -> Any:
        return fixed_crop(self.load(item))


def measure_transport(
    settings: DataLoaderSettings,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    record_dir: Path,
    bar: Any,
) -> dict[str, Any]:
    """The recipe's tail alone on a fixed 224 crop, through the regime's own loader."""
    tail = adapter.recipe_tail(recipes.IMAGENET_MEAN, recipes.IMAGENET_STD)
    if load is identity:  # memory scope: crop before any clock, the sample is the tail only
        items, sample_load = [fixed_crop(image) for image in items], load
    else:
        sample_load = CroppedLoad(load)
    dataset = RecipeDataset(items, sample_load, Recipe([], tail), label="transport")
    runs = dataclasses.replace(settings, num_runs=settings.baseline_runs)
    measured = measure_loader(runs, dataset, record_dir, bar)
    return {
        "transport_throughput": statistics.median(measured["throughputs"]),
        "transport_throughputs": measured["throughputs"],
    }


def decode_floor(
    decode: Callable[[Any], Any], paths: list[Any], processes: int, runs: int
) -> list[float]:
    """``runs`` decode-floor throughputs (img/s) of ``paths`` in ``processes`` processes."""
    floor = DecodeFloor(decode, paths, processes)
    try:
        out = []
        for _ in range(runs):
            images, seconds = floor.epoch()
            out.append(images / seconds)
        return out
    finally:
        floor.close()


BASELINE_FIELDS: tuple[str, ...] = ("transport_throughput", "transport_throughputs")


def measure_baselines(
    settings: DataLoaderSettings,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    cores: int,
    record_dir: Path,
    bar: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Job-level baselines: (fields every row of the job carries, metadata with the details).

    The transport baseline is measured once per job (with ``--baseline-runs``); the hand-over
    probe once per decode job with workers, whatever ``--baseline-runs`` says (the starvation
    and training predictions need it); the decode floor and the memory-scope companion are
    measured per recipe, interleaved with its windows (``DecodeCompanions``)."""
    fields: dict[str, Any] = dict.fromkeys((*BASELINE_FIELDS, *HANDOVER_FIELDS))
    meta: dict[str, Any] = {"runs": settings.baseline_runs}
    if settings.scope == "decode" and settings.workers > 0:
        try:
            started = time.perf_counter()
            fields.update(measure_handover(settings, adapter, items, load, record_dir))
            meta["handover"] = {
                "seconds": time.perf_counter() - started,
                "sample": f"fixed {TRANSPORT_SIZE}x{TRANSPORT_SIZE} window + "
                f"{adapter.recipe_tail_call}",
                "idle": "next() after the workers finished everything in flight",
                "busy": f"next() while reading at {HANDOVER_BUSY_PACE}x the stream's batch period",
            }
        except Exception as exc:
            meta["handover"] = {"error": str(RecipeError("hand-over probe", exc))}
    if settings.baseline_runs < 1:
        meta["note"] = "transport baseline off (--baseline-runs 0)"
        return fields, meta
    try:
        fields.update(measure_transport(settings, adapter, items, load, record_dir, bar))
        meta["transport"] = {
            "sample": f"fixed {TRANSPORT_SIZE}x{TRANSPORT_SIZE} window + "
            f"{adapter.recipe_tail_call}",
            "crop_in_timed_window": settings.scope == "decode",
        }
    except Exception as exc:
        meta["transport"] = {"error": str(RecipeError("transport baseline", exc))}
    if settings.scope == "decode":
        meta["decode_floor"] = {
            "decoder": adapter.decoder,
            "processes": max(1, min(settings.workers, cores)),
            "measured": "per recipe, interleaved with its decode-scope windows",
        }
    return fields, meta


HANDOVER_FIELDS: tuple[str, ...] = (
    "handover_idle_ms",
    "handover_busy_ms",
    "handover_batch_mb",
    "handover_probes",
)


def first_read_seconds(batch: Any) -> float:
    """Seconds to read one value of every memory page of a batch just handed over: a model
    step's first read of it (the H2D copy, the first layer) maps the worker's shared-memory
    pages into this process, a cost in the step's time that neither the hand-over in next() nor
    a step on a resident batch pays. NaN where the batch is not one contiguous tensor."""
    if not hasattr(batch, "is_contiguous") or not batch.is_contiguous():
        return math.nan
    flat = batch.reshape(-1)
    stride = max(1, mmap.PAGESIZE // batch.element_size())
    start = time.perf_counter()
    flat[::stride].sum().item()
    return time.perf_counter() - start


def measure_handover(
    settings: LoaderSettings,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    record_dir: Path,
) -> dict[str, Any]:
    """The main process's time in next() for a batch that is ready (policy.HANDOVER_PROBES):
    the transport sample (a fixed 224 crop through the recipe's tail, a recipe's output shape)
    through the regime's loader, read after the workers have gone idle, then read at
    policy.HANDOVER_BUSY_PACE times the stream's own batch period while they work. Each timed
    next() also frees the batch before it, as a training loop's ``batch = next(loader)`` does.
    Then the same paced reading once more with each batch read as a model reads it
    (:func:`first_read_seconds`, timed): the first read, and next() when the batch it frees was
    read (a read batch's pages are mapped here, and unmapping them costs more), which is what
    a loop of a real model pays; a stand-in that only sleeps never reads its batches."""
    tail = adapter.recipe_tail(recipes.IMAGENET_MEAN, recipes.IMAGENET_STD)
    sample_load = identity if load is identity else CroppedLoad(load)
    chosen = [fixed_crop(i) for i in items] if load is identity else items
    dataset = RecipeDataset(chosen, sample_load, Recipe([], tail), label="hand-over")
    stream = Stream(
        regime_loader(settings, dataset, EndlessSampler(len(chosen)), record_dir),
        settings.workers,
        settings.prefetch_factor,
    )
    try:
        _, batch_info = stream.warm_up(
            max(1, settings.workers), settings.batch_size, "hand-over warm-up"
        )
        batches = handover_window_batches(settings.workers)
        _, seconds = stream.window(batches)
        period = seconds / batches
        assert stream.batches is not None
        clock = time.perf_counter
        idle: list[float] = []
        held = None
        for _ in range(HANDOVER_PROBES):
            time.sleep(handover_idle_wait(stream.ahead, period))
            start = clock()
            held = next(stream.batches)
            idle.append(clock() - start)
        pace = HANDOVER_BUSY_PACE * period
        for _ in range(stream.ahead + 1):  # settle into the paced reading
            held = next(stream.batches)
            time.sleep(pace)
        busy: list[float] = []
        for _ in range(HANDOVER_PROBES):
            start = clock()
            held = next(stream.batches)
            busy.append(clock() - start)
            time.sleep(pace)
        read_handover: list[float] = []
        first_reads = [first_read_seconds(held)]  # the batch the first probe frees, read too
        for _ in range(HANDOVER_PROBES):
            start = clock()
            held = next(stream.batches)
            read_handover.append(clock() - start)
            first_reads.append(first_read_seconds(held))
            time.sleep(pace)
        del held
    finally:
        stream.close()
    shape = batch_info["batch_shape"]
    return {
        "handover_idle_ms": 1000.0 * statistics.median(idle),
        "handover_busy_ms": 1000.0 * statistics.median(busy),
        "handover_batch_mb": math.prod(shape) * 4 / 2**20,
        # A batch that is not one tensor (NaN) has neither: what a model's read costs unknown.
        **(
            {
                "handover_read_ms": 1000.0 * statistics.median(read_handover),
                "handover_first_read_ms": 1000.0 * statistics.median(first_reads[1:]),
            }
            if all(math.isfinite(v) for v in first_reads)
            else {"handover_read_ms": None, "handover_first_read_ms": None}
        ),
        "handover_probes": HANDOVER_PROBES,
    }


class DecodeCompanions:
    """What a decode job times next to each recipe for the composition check: the job's images
    decoded once, untimed (the memory-scope companion's items), and the decode floor over one
    epoch's files."""

    def __init__(
        self,
        settings: EpochSettings,
        paths: list[Any],
        decode: Callable[[Any], Any],
        cores: int,
    ) -> None:
        start = time.perf_counter()
        self.images = [decode(p) for p in paths]
        self.preload_seconds = time.perf_counter() - start
        self.processes = max(1, min(settings.workers, cores))
        self.paths = paths
        window = epoch_batches(settings.batches_per_run, settings.workers)
        self.floor = DecodeFloor(decode, self.epoch(window * settings.batch_size), self.processes)

    def epoch(self, images: int) -> list[Any]:
        """One epoch's files: ``images`` of the job's, cycled."""
        return [self.paths[i % len(self.paths)] for i in range(images)]

    def size_epoch(self, images: int) -> None:
        """The floor's epoch as long as the recipe's timed epoch (a window sized by time, or by
        an earlier process, holds more or fewer batches than the configured one)."""
        self.floor.use(self.epoch(images))

    def close(self) -> None:
        self.floor.close()
