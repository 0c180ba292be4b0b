"""The loader plumbing of the cpu_dataloader engine: the recipe and its dataset, the epoch
sampler, the worker start-up (thread policy and its record), the regime's DataLoader, and the
job's items per scope. Module level throughout, so the pieces are picklable under any
multiprocessing start method."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.measuring import media, pipeline_builders
from augbench.policy import DATALOADER_THREADS
from augbench.results import usable_cores  # noqa: F401  (the engines import it from here)
from augbench.workload import adapters, catalog, decoders, pipelines, recipes


@dataclass(frozen=True, kw_only=True)
class LoaderSettings:
    """What the regime's DataLoader is built with (:func:`regime_loader`): the fields of the
    settings records of the engines that use it (cpu_dataloader, training)."""

    workers: int
    batch_size: int
    prefetch_factor: int
    persistent_workers: bool
    batch_timeout: float


@dataclass(eq=False)
class Recipe:
    """The recipe's steps then its tail, applied to one native image."""

    steps: list[Callable[[Any], Any]]
    tail: Callable[[Any], Any]

    def __call__(self, image: Any) -> Any:
        for step in self.steps:
            image = step(image)
        return self.tail(image)


@dataclass(eq=False)
class RecipeDataset:
    """Map-style dataset: ``load(items[i])`` (identity or decode) followed by the recipe."""

    items: list[Any]
    load: Callable[[Any], Any]
    recipe: Recipe
    label: str = ""

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        return self.recipe(self.load(self.items[index]))


def identity(item: Any) -> Any:
    """The memory scope's load step: the item is the preloaded image."""
    return item


class EpochSampler:
    """Indices ``0..n_items-1`` modulo the dataset size, in order.

    ``n_items`` is set before each epoch (short warm-up epoch, then timed epochs), as
    DistributedSampler.set_epoch is; the main process reads it when an epoch starts.
    """

    def __init__(self, dataset_size: int, n_items: int) -> None:
        self.dataset_size = dataset_size
        self.n_items = n_items

    def __iter__(self) -> Iterator[int]:
        return (i % self.dataset_size for i in range(self.n_items))

    def __len__(self) -> int:
        return self.n_items


class EndlessSampler:
    """Indices ``0, 1, ...`` modulo the dataset size without end: a loader read at a pace of
    the reader's choosing, as a training loop reads one (the hand-over probe)."""

    def __init__(self, dataset_size: int) -> None:
        self.dataset_size = dataset_size

    def __iter__(self) -> Iterator[int]:
        return (i % self.dataset_size for i in itertools.count())


def worker_init(worker_id: int, record_dir: str) -> None:
    """Apply the thread policy inside a worker and record what is in force there."""
    from augbench.measuring import allocator

    applied = DATALOADER_THREADS.apply_runtime()
    # The allocator the worker runs under (a forked worker inherits its parent's; this proves it).
    record = {
        "worker_id": worker_id,
        "pid": os.getpid(),
        **applied,
        "allocator": allocator.label(allocator.in_force()),
    }
    path = Path(record_dir) / f"worker-{os.getpid()}.json"
    path.write_text(json.dumps(record))


def regime_loader(
    settings: LoaderSettings,
    dataset: RecipeDataset,
    sampler: EpochSampler | EndlessSampler,
    record_dir: Path,
) -> Any:
    """The regime's DataLoader: the job's batch size, workers, prefetch, persistence and batch
    timeout; every worker applies the thread policy and records it in ``record_dir``. A thread
    loader (a cpu_dataloader setting's ``loader``, augbench.measuring.engines.dataloader.threads)
    instead: the same batch size, prefetch depth and timeout, one thread per worker."""
    from torch.utils.data import DataLoader

    workers = settings.workers
    # What makes the samples in parallel (augbench.workload.loaders): the cpu_dataloader settings'
    # field (training's loader is always process workers).
    loader = getattr(settings, "loader", "process")
    if loader != "process":
        from augbench.measuring.engines.dataloader.threads import thread_loader

        return thread_loader(
            loader,
            dataset,
            sampler,
            settings.batch_size,
            workers,
            settings.prefetch_factor,
            settings.batch_timeout,
        )
    return DataLoader(
        dataset,
        batch_size=settings.batch_size,
        sampler=sampler,
        num_workers=workers,
        prefetch_factor=settings.prefetch_factor if workers else None,
        persistent_workers=settings.persistent_workers if workers else False,
        worker_init_fn=functools.partial(worker_init, record_dir=str(record_dir))
        if workers
        else None,
        timeout=settings.batch_timeout if workers else 0,
        pin_memory=False,
    )


def worker_records(record_dir: Path) -> list[dict[str, Any]]:
    """Thread settings reported by each worker process (one file per worker pid)."""
    records = [json.loads(p.read_text()) for p in sorted(record_dir.glob("worker-*.json"))]
    # Identical settings across workers and recipes: keep one per distinct setting, with a count.
    distinct: dict[str, dict[str, Any]] = {}
    for rec in records:
        key = json.dumps({k: v for k, v in rec.items() if k not in ("worker_id", "pid")})
        entry = distinct.setdefault(key, {**json.loads(key), "worker_processes": 0})
        entry["worker_processes"] += 1
    return list(distinct.values())


def start_method() -> str | None:
    """The multiprocessing start method the DataLoader workers use."""
    import multiprocessing

    return multiprocessing.get_start_method(allow_none=True) or "fork (platform default)"


def process_tree_pss_mb() -> float | None:
    """Proportional set size of this process plus its live children (shared pages divided among
    the processes sharing them, so the sum is the tree's footprint); None where the kernel
    reports none (then the row's ``total_rss_mb`` stands)."""
    try:
        import psutil
    except ImportError:
        return None
    total = 0
    try:
        me = psutil.Process()
        for process in (me, *me.children(recursive=True)):
            with contextlib.suppress(psutil.NoSuchProcess):
                total += process.memory_full_info().pss
    except (psutil.Error, AttributeError, OSError):  # no smaps (not Linux, or not permitted)
        return None
    return total / 2**20


def process_tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its live children so far: over a window,
    its difference / the window's seconds is the cores the loader kept busy."""
    try:
        import psutil
    except ImportError:
        times = os.times()
        return times.user + times.system
    me = psutil.Process()
    total = 0.0
    for process in (me, *me.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):
            cpu = process.cpu_times()
            total += cpu.user + cpu.system
    return total


def process_tree_rss_mb() -> float | None:
    """Resident memory of this process plus its live children (workers), shared pages counted
    once per process."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a worker may exit meanwhile
            total += child.memory_info().rss
    return total / 2**20


def build_recipe(
    adapter: adapters.Adapter, transform: str, pipeline: pipelines.Pipeline | None = None
) -> Recipe:
    """The recipe of ``transform`` (``augbench.workload.recipes``) or of a user pipeline, built from
    the library's own transform objects."""
    if pipeline is not None:  # a user pipeline is the whole recipe, tail included
        return Recipe(*pipeline_builders.recipe_parts(adapter, pipeline))
    steps = []
    for name in recipes.steps(transform):
        spec = catalog.get(name)
        steps.append(adapter.build(spec.name, spec.params))
    return Recipe(steps, adapter.recipe_tail(recipes.IMAGENET_MEAN, recipes.IMAGENET_STD))


def load_items(
    adapter: adapters.Adapter, manifest: Path, num_images: int, scope: str, decoder: str = "native"
) -> tuple[list[Any], Callable[[Any], Any], dict[str, Any]]:
    """Dataset items and the per-sample load step for the scope; preloading is untimed. The
    decode scope's load step is the library's own decode, or ``decoder``'s
    (augbench.workload.decoders.LoadStep: its decode and the conversion to the library's input)."""
    files = media.select_files(manifest, num_images)
    if scope == "decode":
        if decoder == decoders.NATIVE:
            info = {"decoder": decoder, "decoder_call": adapter.decoder}
            return [str(f) for f in files], adapter.decode, info
        step = decoders.LoadStep(decoder, adapter.name)
        info = {
            "decoder": decoder,
            "decoder_call": step.decoder.call,
            "decoder_version": step.decoder.version(),
            "converted_from": step.layout if step.layout != step.target else None,
        }
        return [str(f) for f in files], step, info
    start = time.perf_counter()
    images = [adapter.decode(f) for f in files]
    return (
        images,
        identity,
        {
            "decoder": decoders.NATIVE,
            "decoder_call": adapter.decoder,
            "preload_seconds": time.perf_counter() - start,
            "preloaded_images": len(images),
        },
    )
