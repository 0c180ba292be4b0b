"""The cpu_dataloader engine's baselines: the transport baseline (once per job), the decode
floor and the memory-scope companion's images (per decode job, timed per recipe in its rounds)."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from augbench import adapters, recipes
from augbench.engines.dataloader.plumbing import Recipe, RecipeDataset, identity
from augbench.engines.dataloader.timing import RecipeError, measure_loader

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
    args: argparse.Namespace,
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
    runs = argparse.Namespace(**{**vars(args), "num_runs": args.baseline_runs})
    measured = measure_loader(runs, dataset, record_dir, bar)
    return {
        "transport_throughput": statistics.median(measured["throughputs"]),
        "transport_throughputs": measured["throughputs"],
    }


_FLOOR_DECODE: Callable[[Any], Any] | None = None  # inherited by the forked floor processes


def _decode_all(paths: list[Any]) -> int:
    assert _FLOOR_DECODE is not None
    for path in paths:
        _FLOOR_DECODE(path)
    return len(paths)


class DecodeFloor:
    """Pure decoding of one epoch's files in ``processes`` processes, nothing else.

    One process: a loop in this process. More: forked processes, started (untimed) when the
    floor is created, each decode 1/processes of the files; the clock spans the submission to the
    last one finishing. Create it before any DataLoader so the pool forks a process without
    loader threads; ``close()`` ends the pool.
    """

    def __init__(self, decode: Callable[[Any], Any], paths: list[Any], processes: int) -> None:
        global _FLOOR_DECODE
        _FLOOR_DECODE = decode
        self.paths = paths
        self.processes = processes
        self.chunks = [paths[i::processes] for i in range(processes)]
        self.pool: Any = None
        if processes > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(processes, mp_context=context)
            list(self.pool.map(_decode_all, [c[:1] for c in self.chunks]))  # start them all

    def epoch(self) -> tuple[int, float, float]:
        """Images decoded, seconds, and 0.0 (no batches: the shape of ``timed_epoch``)."""
        start = time.perf_counter()
        if self.pool is None:
            done = _decode_all(self.paths)
        else:
            done = sum(self.pool.map(_decode_all, self.chunks))
        return done, time.perf_counter() - start, 0.0

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


def decode_floor(
    decode: Callable[[Any], Any], paths: list[Any], processes: int, runs: int
) -> list[float]:
    """``runs`` decode-floor throughputs (img/s) of ``paths`` in ``processes`` processes."""
    floor = DecodeFloor(decode, paths, processes)
    try:
        out = []
        for _ in range(runs):
            images, seconds, _ = floor.epoch()
            out.append(images / seconds)
        return out
    finally:
        floor.close()


BASELINE_FIELDS: tuple[str, ...] = ("transport_throughput", "transport_throughputs")


def measure_baselines(
    args: argparse.Namespace,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    cores: int,
    record_dir: Path,
    bar: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Job-level baselines: (fields every row of the job carries, metadata with the details).

    The transport baseline is measured once per job; the decode floor and the memory-scope
    companion are measured per recipe, interleaved with its epochs (``DecodeCompanions``)."""
    fields: dict[str, Any] = dict.fromkeys(BASELINE_FIELDS)
    meta: dict[str, Any] = {"runs": args.baseline_runs}
    if args.baseline_runs < 1:
        meta["note"] = "baselines off (--baseline-runs 0)"
        return fields, meta
    try:
        fields.update(measure_transport(args, adapter, items, load, record_dir, bar))
        meta["transport"] = {
            "sample": f"fixed {TRANSPORT_SIZE}x{TRANSPORT_SIZE} window + "
            f"{adapter.recipe_tail_call}",
            "crop_in_timed_window": args.scope == "decode",
        }
    except Exception as exc:
        meta["transport"] = {"error": str(RecipeError("transport baseline", exc))}
    if args.scope == "decode":
        meta["decode_floor"] = {
            "decoder": adapter.decoder,
            "processes": max(1, min(args.workers, cores)),
            "measured": "per recipe, interleaved with its decode-scope epochs",
        }
    return fields, meta


class DecodeCompanions:
    """What a decode job times next to each recipe for the composition check: the job's images
    decoded once, untimed (the memory-scope companion's items), and the decode floor over one
    epoch's files."""

    def __init__(
        self, args: argparse.Namespace, paths: list[Any], decode: Callable[[Any], Any], cores: int
    ) -> None:
        start = time.perf_counter()
        self.images = [decode(p) for p in paths]
        self.preload_seconds = time.perf_counter() - start
        self.processes = max(1, min(args.workers, cores))
        epoch = [paths[i % len(paths)] for i in range(args.batches_per_run * args.batch_size)]
        self.floor = DecodeFloor(decode, epoch, self.processes)

    def close(self) -> None:
        self.floor.close()
