"""The cpu_dataloader engine's timing: the untimed warm-up epoch, timed epochs of every
interleaved arm (regime, bare loop, memory-scope companion, decode floor) in alternating order,
and the stopping rule that ends them."""

from __future__ import annotations

import functools
import gc
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from augbench.intervals import percentiles
from augbench.measuring.allocator import PAGE_BYTES, tree_minor_faults
from augbench.measuring.engines import skeleton
from augbench.measuring.engines.dataloader.plumbing import (
    EpochSampler,
    LoaderSettings,
    RecipeDataset,
    process_tree_cpu_seconds,
    process_tree_pss_mb,
    process_tree_rss_mb,
    regime_loader,
)
from augbench.measuring.stopping import StoppingRule, batches_ahead, epoch_batches
from augbench.paired import paired_ratio
from augbench.results import non_ok_row

if TYPE_CHECKING:
    from augbench.measuring.engines.dataloader.decode_floor import DecodeFloor

TIMING_NOTE = (
    "throughput = images / seconds from iter(loader) to the last batch received in the main "
    "process, per timed epoch of a whole number of batches per worker (augbench.measuring.stopping."
    "epoch_batches: every worker makes the same number of batches, so the epoch times every "
    "worker throughout); steady_throughputs = per timed epoch, the images received after its "
    "first round of batches (one per worker) over the seconds since that round arrived: the "
    "rate of a loader read without stopping, without the epoch's start; an untimed warm-up "
    "epoch of max(1, workers) "
    "batches precedes them (persistent workers are started there, outside the window); between "
    "epochs the workers have nothing in flight, so one loader never works while another is "
    "timed; first_batch_s = warm-up epoch's iter(loader) -> first batch, including worker "
    "start-up"
)


class RecipeError(Exception):
    """A recipe failed at a named stage; the row keeps the stage and the library's message."""

    def __init__(self, stage: str, exc: BaseException) -> None:
        super().__init__(f"{stage}: {skeleton.describe(exc)}")
        self.stage = stage
        self.tb = skeleton.traceback_tail(exc)

    def row(self, **extra: Any) -> dict[str, Any]:
        """The recipe's ``error`` row: the stage, the library's message, the traceback's end."""
        return non_ok_row("error", str(self), traceback=self.tb, **extra)


def check_batch(batch: Any, batch_size: int) -> dict[str, Any]:
    """The collated batch is what every recipe must produce: float32 Bx3xHxW."""
    import torch

    if not isinstance(batch, torch.Tensor) or batch.dtype != torch.float32 or batch.ndim != 4:
        raise TypeError(
            f"recipe output collated to {type(batch).__name__} "
            f"{getattr(batch, 'dtype', '')} {tuple(getattr(batch, 'shape', ()))}; expected a "
            "float32 Bx3xHxW tensor"
        )
    if batch.shape[0] > batch_size or batch.shape[1] != 3:
        raise ValueError(f"unexpected batch shape {tuple(batch.shape)}")
    return {"batch_shape": list(batch.shape), "batch_dtype": str(batch.dtype)}


class Stream:
    """A DataLoader read without end (its sampler endless): the hand-over probe's loader
    (augbench.measuring.engines.dataloader.baselines.measure_handover), whose batches are read at a
    pace of the probe's choosing with nothing else timed meanwhile."""

    def __init__(self, loader: Any, workers: int, prefetch_factor: int) -> None:
        self.loader = loader
        self.workers = workers
        self.ahead = batches_ahead(workers, prefetch_factor)
        self.batches: Iterator[Any] | None = None

    def warm_up(self, batches: int, batch_size: int, stage: str) -> tuple[float, dict[str, Any]]:
        """Start the stream (workers start here) and take ``batches`` batches, untimed: the
        first batch's latency from iter(loader), worker start-up included, and its check."""
        try:
            start = time.perf_counter()
            self.batches = iter(self.loader)
            first = next(self.batches)
            first_batch_s = time.perf_counter() - start
            batch_info = check_batch(first, batch_size)
            del first
            for _ in range(batches - 1):
                next(self.batches)
        except Exception as exc:
            raise RecipeError(stage, exc) from exc
        return first_batch_s, batch_info

    def window(self, batches: int) -> tuple[int, float]:
        """Images and seconds of ``batches`` batches read back to back, after the ones in
        flight are taken untimed (the clock starts at the next one's arrival)."""
        assert self.batches is not None, "warm_up() starts the stream"
        for _ in range(self.ahead):
            next(self.batches)
        if self.ahead:
            next(self.batches)
        images = 0
        start = time.perf_counter()
        for _ in range(batches):
            images += next(self.batches).shape[0]
        return images, time.perf_counter() - start

    def close(self) -> None:
        """End the stream: its workers shut down with the iterator."""
        self.batches = None
        self.loader = None


def timed_epoch(
    loader: Any,
    waits: list[float] | None = None,
    steady: list[float] | None = None,
    first_round: int = 1,
) -> tuple[int, float]:
    """Images and seconds from iter(loader) to the last batch of one epoch. ``waits`` (when
    given) receives each batch's wait after the first: the seconds the main process spent in
    next(loader) for it, which is what a synchronous training step stalls on (the first batch's
    wait holds the epoch's start). ``steady`` (when given) receives the epoch's
    :func:`steady_rate` past its first ``first_round`` batches."""
    images = 0
    first = True
    arrivals: list[tuple[int, float]] = []
    start = last = time.perf_counter()
    for batch in loader:
        now = time.perf_counter()
        images += batch.shape[0]
        arrivals.append((images, now))
        if not first and waits is not None:
            waits.append(now - last)
        first = False
        del batch
        last = time.perf_counter()
    elapsed = time.perf_counter() - start
    if steady is not None:
        rate = steady_rate(arrivals, first_round)
        if rate is not None:
            steady.append(rate)
    return images, elapsed


def steady_rate(arrivals: list[tuple[int, float]], first_round: int) -> float | None:
    """Images per second from the arrival of the epoch's first round of batches (one batch per
    worker, ``first_round`` of them, all started together from idle) to its last batch: the
    rate of a loader that never stops, as a training loop reads it. An epoch from iter() pays
    its start (the workers resumed, their first batches made from idle) once; a stream does not
    (docs/training.md). None where the epoch has no batch past its first round."""
    if len(arrivals) <= first_round:
        return None
    images_then, then = arrivals[first_round - 1]
    images, last = arrivals[-1]
    return (images - images_then) / (last - then) if last > then else None


def counted_epoch(
    loader: Any,
    waits: list[float],
    faults: dict[str, int],
    steady: list[float] | None = None,
    first_round: int = 1,
) -> tuple[int, float]:
    """:func:`timed_epoch`, with the minor page faults of the main process and its workers
    counted around it, outside its clock (augbench.measuring.allocator)."""
    before, cpu_before = tree_minor_faults(), process_tree_cpu_seconds()
    images, elapsed = timed_epoch(loader, waits, steady, first_round)
    faults["cpu_seconds"] += process_tree_cpu_seconds() - cpu_before
    faults["seconds"] += elapsed
    faults["minor_faults"] += tree_minor_faults() - before
    faults["images"] += images
    return images, elapsed


def warm_up(loader: Any, batch_size: int, stage: str) -> tuple[float, dict[str, Any]]:
    """One untimed epoch: its first-batch latency (worker start-up included) and batch check."""
    try:
        start = time.perf_counter()
        iterator = iter(loader)
        first = next(iterator)
        first_batch_s = time.perf_counter() - start
        batch_info = check_batch(first, batch_size)
        for _ in iterator:
            pass
        del iterator, first
    except Exception as exc:
        raise RecipeError(stage, exc) from exc
    return first_batch_s, batch_info


def output_pages_of_batch(batch_info: dict[str, Any]) -> float | None:
    """Pages of one collated output image (float32 CxHxW) of a checked batch."""
    shape = batch_info.get("batch_shape") or []
    if len(shape) < 2:
        return None
    return math.prod(shape[1:]) * 4 / PAGE_BYTES


def wait_percentiles_ms(waits: list[float]) -> dict[str, float]:
    """The batch waits in milliseconds: ``n``, ``max`` and the percentiles the sample supports
    (augbench.intervals.percentiles: p95 from 20 waits, p99 from 100)."""
    return {k: (v if k == "n" else 1000.0 * v) for k, v in percentiles(waits).items()}


@dataclass(frozen=True, kw_only=True)
class EpochSettings(LoaderSettings):
    """What :func:`measure_loader` times with: the regime's loader, and its timed epochs
    (``batches_per_run`` batches each, between ``min_runs`` and ``num_runs`` of them)."""

    batches_per_run: int
    num_runs: int
    min_runs: int


ARM_LABELS: dict[str, str] = {
    "regime": "",
    "bare": "bare-loop ",
    "memory": "memory-scope companion ",
    "floor": "decode-floor ",
}


def measure_loader(
    settings: EpochSettings,
    dataset: RecipeDataset,
    record_dir: Path,
    bar: Any,
    bare: Any = None,
    bare_runs: int = 0,
    memory: RecipeDataset | None = None,
    floor: DecodeFloor | None = None,
    window: int | None = None,
) -> dict[str, Any]:
    """Warm-up epoch, then timed epochs until the stopping rule ends them; every batch is
    consumed in the window. An epoch holds ``window`` batches (a whole number per worker:
    ``augbench.measuring.stopping.window_batches``), by default ``epoch_batches(batches_per_run,
    workers)``: every worker makes the same number, so the epoch (from iter() to its last batch,
    the workers starting together) runs at the rate they deliver; a loader between epochs has
    nothing in flight, so it never works while another arm is timed.

    Companions, each warmed up like the regime's loader and timed in the same rounds, in the
    order regime, bare, memory, floor and reversed every other round (A B B A ...), so each
    pair of epochs of one round sees the same machine state:

    - ``bare`` (a ``bare_loop.UserDataset``): a stock DataLoader over the same recipe;
    - ``memory`` (decode jobs): the same recipe on pre-decoded images through a loader with the
      regime's own settings (the memory-scope term of the decode composition);
    - ``floor`` (decode jobs): the epoch's files decoded and nothing else.

    Companions take part in the first ``bare_runs`` rounds. Rounds stop at ``num_runs``, or
    earlier, after at least ``min_runs`` (policy.DATALOADER_MIN_RUNS), once the
    regime's throughputs and its paired ratios to the bare loop are both precise enough
    (augbench.measuring.stopping.StoppingRule, looked at every ``min_runs`` rounds).
    """
    workers = settings.workers
    window = window or epoch_batches(settings.batches_per_run, workers)
    images_per_run = window * settings.batch_size
    warmup_batches = max(1, workers)
    sampler = EpochSampler(len(dataset), warmup_batches * settings.batch_size)
    loader = regime_loader(settings, dataset, sampler, record_dir)
    bare_loader = memory_loader = None
    arms: dict[str, Callable[[], tuple[int, float]]] = {}
    try:
        first_batch_s, batch_info = warm_up(loader, settings.batch_size, "warm-up epoch")
        sampler.n_items = images_per_run
        batch_waits: list[float] = []
        steady: list[float] = []
        faults: dict[str, float] = {
            "minor_faults": 0,
            "images": 0,
            "cpu_seconds": 0.0,
            "seconds": 0.0,
        }

        arms["regime"] = functools.partial(
            counted_epoch, loader, batch_waits, faults, steady, max(1, workers)
        )
        if bare is not None and bare_runs > 0:
            from augbench.measuring.engines.bare_loop import user_loader

            bare.length = warmup_batches * settings.batch_size
            bare_loader = user_loader(
                bare,
                batch_size=settings.batch_size,
                workers=workers,
                prefetch_factor=settings.prefetch_factor,
                persistent=settings.persistent_workers,
            )
            # Its workers start here, as the regime's did.
            warm_up(bare_loader, settings.batch_size, "bare-loop warm-up epoch")
            bare.length = images_per_run
            arms["bare"] = functools.partial(timed_epoch, bare_loader)
        if memory is not None and bare_runs > 0:
            memory_sampler = EpochSampler(len(memory), warmup_batches * settings.batch_size)
            memory_loader = regime_loader(settings, memory, memory_sampler, record_dir)
            warm_up(memory_loader, settings.batch_size, "memory-scope companion warm-up epoch")
            memory_sampler.n_items = images_per_run
            arms["memory"] = functools.partial(timed_epoch, memory_loader)
        if floor is not None and bare_runs > 0:
            arms["floor"] = floor.epoch

        rule = StoppingRule(min(settings.min_runs, settings.num_runs), settings.num_runs)
        values: dict[str, list[float]] = {name: [] for name in arms}
        times: list[float] = []
        run = 0
        while True:
            order = list(arms) if run < bare_runs else ["regime"]
            if run % 2:
                order.reverse()
            for which in order:
                stage = f"{ARM_LABELS[which]}timed epoch {run + 1}"
                try:
                    images, elapsed = arms[which]()
                except Exception as exc:
                    raise RecipeError(stage, exc) from exc
                if images != images_per_run:
                    raise RecipeError(
                        stage,
                        RuntimeError(f"received {images} images, expected {images_per_run}"),
                    )
                values[which].append(images / elapsed)
                if which == "regime":
                    times.append(elapsed)
            run += 1
            bar.set_postfix_str(f"{dataset.label} run {run}: {values['regime'][-1]:.0f}/s")
            if precise_enough(rule, values, companions_left=run < bare_runs):
                break
        total_rss = process_tree_rss_mb()  # persistent workers are still alive here
        total_pss = process_tree_pss_mb()
    finally:
        arms.clear()  # the partials hold the loaders
        del loader, bare_loader, memory_loader  # shuts persistent workers down
        gc.collect()
    return {
        "throughputs": values["regime"],
        "times": times,
        "first_batch_s": first_batch_s,
        # Each timed epoch past its first round: what the loader delivers as a stream.
        "steady_throughputs": steady,
        # The wait in next() of every batch after each timed epoch's first.
        "batch_wait_ms": wait_percentiles_ms(batch_waits),
        "batch_waits_counted": len(batch_waits),
        # Minor page faults per image over the regime's timed epochs, workers included.
        "minor_faults_per_image": faults["minor_faults"] / faults["images"]
        if faults["images"]
        else None,
        "output_pages": output_pages_of_batch(batch_info),
        "warmup_batches": warmup_batches,
        "window_batches": window,
        "images_per_run": images_per_run,
        "total_rss_mb": total_rss,
        # The whole tree's footprint with shared pages divided (None: no PSS here).
        "total_pss_mb": total_pss,
        # Cores the process tree kept busy over the regime's timed epochs (CPU seconds of the
        # main process and its workers / the epochs' seconds; the clock's reads included).
        "cpu_utilisation": faults["cpu_seconds"] / faults["seconds"] if faults["seconds"] else None,
        "bare_throughputs": values.get("bare", []),
        "memory_throughputs": values.get("memory", []),
        "floor_throughputs": values.get("floor", []),
        "timed_rounds": run,
        "stopped_by": "relative_ci" if run < settings.num_runs else "num_runs",
        **batch_info,
    }


def precise_enough(
    rule: StoppingRule, values: dict[str, list[float]], companions_left: bool
) -> bool:
    """The regime's throughputs meet the rule, and (while the bare loop still runs) so do the
    paired regime / bare ratios the row reports."""
    if not rule.done(values["regime"]):
        return False
    if not companions_left or "bare" not in values:
        return True
    return rule.done(paired_ratio(values["regime"], values["bare"]).ratios)
