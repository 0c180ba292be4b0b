"""training regime job: a real training step fed by a library's DataLoader, one worker count.

Per recipe (a catalog recipe or a user pipeline), the loader is built exactly as in the
cpu_dataloader regime's ``decode`` scope (``augbench.measuring.engines.dataloader``: the files read
and decoded in the workers by the library's decoder or ``--decoder``'s, the recipe, default
collation) and feeds an **accelerator** (``--accelerator``, built by
augbench.measuring.engines.accelerators):

- ``model``: a real training step, forward + backward + SGD step of a torchvision model with
  random weights (no download): ResNet-50 on CUDA with AMP and channels_last; on CPU ResNet-18
  with the batch resized to ``--cpu-input-size`` inside the step (a reduced input, so a step
  lasts what a CPU can do). The batch is moved to the device inside the step and CUDA is
  synchronized before the step's clock stops;
- ``sleep:<ms>``: a stand-in accelerator that sleeps ``ms`` per batch (``time.sleep`` releases
  the GIL, as a GPU step does), for machines without one and for the tests;
- ``cpu:<ms>``: a stand-in for a model that trains on this machine's CPU: ``ms`` of the main
  process's own CPU time per batch (one thread, as a CPU model's step under the job's thread
  policy), so it competes with the loader's workers for the cores exactly as that step does,
  at a rate of the check's choosing.

Three measurements per recipe, in the same job:

1. **model only**: the step on a resident batch of the recipe's output shape, repeated: the model's
   ceiling in images/s;
2. **loader only**: the loader's batches consumed with no step: the data rate;
3. **training**: ``next(loader)`` then the step, ``--warmup-steps`` untimed, then ``--steps``
   timed steps. Per step the time blocked in ``next(loader)`` (batch wait) and the step time;
   the row's throughput is images over the window's wall time, its values the throughputs of
   ``--blocks`` consecutive blocks of steps (their spread is the row's CI), its
   ``data_wait_fraction`` the blocked time over the wall time.

No prediction is made here: a prediction from rates measured in the same job can hardly fail.
The analysis (augbench.analysis.training) predicts each row out of sample, from the
cpu_dataloader regime's rows of the same recipe, workers and batch (another job) and this row's
model-alone rate (or the stand-in's nominal rate), and compares. The loader-alone rate here is a
diagnostic. Each recipe runs in a process of its own (forked from the job's process before any
measurement; on CUDA, in the job's process in turn, since CUDA does not survive a fork), so no
row inherits another's allocator history. Rows of different accelerators or devices never
compete: the row's ``variant`` names them (e.g. ``resnet18-112px-cpu``, ``sleep-20ms``).
"""

from __future__ import annotations

# The package exports the thread policy before numpy, torch or cv2 is imported.
import augbench.measuring.engines.dataloader  # noqa: F401  # isort: skip

import itertools
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from augbench.intervals import median_interval
from augbench.measuring.engines import cli, skeleton
from augbench.measuring.engines.accelerators import (
    MODELS,
    Accelerator,
    choose_device,
    model_accelerator,
    out_of_memory_errors,
    stand_in,
    stand_in_accelerator,
)
from augbench.measuring.engines.dataloader.job import decoder_problem
from augbench.measuring.engines.dataloader.plumbing import (
    EpochSampler,
    LoaderSettings,
    RecipeDataset,
    build_recipe,
    load_items,
    process_tree_rss_mb,
    regime_loader,
    usable_cores,
    worker_records,
)
from augbench.measuring.engines.dataloader.timing import wait_percentiles_ms
from augbench.measuring.stopping import model_alone_counts, training_counts
from augbench.policy import DATALOADER_THREADS
from augbench.results import non_ok_row, ok_row
from augbench.workload import adapters, catalog, decoders
from augbench.workload.adapters.base import DALI_PIPELINE

REGIME = "training"
# Where the recipe runs: in the DataLoader workers (cpu) or on the accelerator's device (gpu).
FEEDS: dict[str, str] = {"cpu": "", "gpu": " · gpu-feed"}


@dataclass(frozen=True, kw_only=True)
class TrainingSettings(cli.ShardSettings, cli.LibraryFlag, cli.PipelinesFlag, LoaderSettings):
    """A training job's settings: the shared flags, the loader's, the accelerator's, its feeds."""

    accelerator: str
    model: str
    cpu_input_size: int
    steps: int
    warmup_steps: int
    model_steps: int
    blocks: int
    device: str
    feeds: tuple[str, ...] = field(metadata={cli.FROM_FLAG: cli.comma_list})
    decoder: str
    worker_crop: int
    allow_cpu_device_feed: bool


def parse_args(argv: list[str] | None = None) -> TrainingSettings:
    p = cli.engine_parser(__doc__, pipelines_run="that pipeline as its recipe")
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--persistent-workers", type=cli.as_bool, default=True)
    p.add_argument("--batch-timeout", type=float, default=300.0)
    p.add_argument("--accelerator", default="model", help="model, sleep:<ms> or cpu:<ms>")
    p.add_argument("--model", default="auto", choices=["auto", *sorted(set(MODELS.values()))])
    p.add_argument("--cpu-input-size", type=int, default=112)
    p.add_argument("--steps", type=int, default=20, help="timed training steps per recipe")
    p.add_argument("--warmup-steps", type=int, default=3)
    p.add_argument("--model-steps", type=int, default=5, help="timed model-only steps")
    p.add_argument("--blocks", type=int, default=5, help="blocks of steps: the row's values")
    p.add_argument("--device", default="auto", help="auto (CUDA when usable), cuda or cpu")
    p.add_argument(
        "--feeds",
        default="cpu",
        help="comma-separated: cpu (the recipe in the workers) and/or gpu (workers cut a crop, "
        "the recipe runs on the accelerator's device: torchvision and Kornia, on CUDA)",
    )
    p.add_argument("--worker-crop", type=int, default=256, help="the GPU feed's crop side")
    p.add_argument(
        "--decoder",
        choices=(*decoders.NAMES, decoders.NVJPEG),
        default=decoders.NATIVE,
        help="what decodes the cpu feed's files (augbench.workload.decoders; native: the "
        "library's own, as in the cpu_dataloader regime's rows of the same name), or nvjpeg: the "
        "GPU feed's workers read bytes and the device decodes each batch",
    )
    # Tests only: run the GPU feed's device-side chain on CPU tensors (its rows say device cpu).
    p.add_argument("--allow-cpu-device-feed", type=cli.as_bool, default=False)
    args = p.parse_args(argv)
    feeds = cli.comma_list(args.feeds)
    if not feeds or set(feeds) - set(FEEDS):
        p.error(f"--feeds {args.feeds!r}: expected a comma-separated subset of {list(FEEDS)}")
    if args.decoder == decoders.NVJPEG and list(feeds) != ["gpu"]:
        p.error("--decoder nvjpeg: the gpu feed's only (--feeds gpu)")
    if args.decoder not in (decoders.NATIVE, decoders.NVJPEG) and "gpu" in feeds:
        p.error(f"--decoder {args.decoder}: the cpu feed's only; the GPU feed's workers cut crops")
    if args.accelerator != "model" and not stand_in(args.accelerator):
        p.error(f"--accelerator {args.accelerator!r}: expected model, sleep:<ms> or cpu:<ms>")
    if args.steps < args.blocks or args.blocks < 2:
        p.error("--steps must be at least --blocks, and --blocks at least 2")
    names = cli.recipe_names(args.transforms, args.pipelines, catalog.get)
    return cli.settings_from(TrainingSettings, args, transforms=names)


# -- the three measurements ----------------------------------------------------------------------
@dataclass
class Window:
    """The training window: per timed step, seconds blocked in next(loader) and seconds of the
    step, and images per step; wall time from the window's first next() to its last step."""

    waits: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    images: list[int] = field(default_factory=list)
    wall: float = 0.0

    @property
    def throughput(self) -> float:
        return sum(self.images) / self.wall

    @property
    def data_wait_fraction(self) -> float:
        return sum(self.waits) / self.wall

    def block_throughputs(self, blocks: int) -> tuple[list[float], list[float], list[float]]:
        """(images/s, seconds, data-wait fraction) of ``blocks`` consecutive blocks of steps:
        the row's values and the values of its data wait's interval."""
        n = len(self.steps)
        edges = [round(i * n / blocks) for i in range(blocks + 1)]
        rates, times, waits = [], [], []
        for lo, hi in itertools.pairwise(edges):
            seconds = sum(self.waits[lo:hi]) + sum(self.steps[lo:hi])
            rates.append(sum(self.images[lo:hi]) / seconds)
            times.append(seconds)
            waits.append(sum(self.waits[lo:hi]) / seconds)
        return rates, times, waits


def train(batches: Iterator[Any], step: Callable[[Any], None], warmup: int, steps: int) -> Window:
    """``warmup`` untimed steps, then ``steps`` timed ones: each ``next(batches)`` (the wait)
    then ``step(batch)`` (which synchronizes its device before returning)."""
    clock = time.perf_counter
    for _ in range(warmup):
        step(next(batches))
    window = Window()
    start = clock()
    for _ in range(steps):
        before = clock()
        batch = next(batches)
        got = clock()
        step(batch)
        done = clock()
        window.waits.append(got - before)
        window.steps.append(done - got)
        window.images.append(images_in(batch))
    window.wall = clock() - start
    return window


def images_in(batch: Any) -> int:
    """Images in a batch: a tensor's (or DALI batch's) first dimension, a list's length (the
    GPU feed's file bytes with nvJPEG)."""
    return int(batch.shape[0]) if hasattr(batch, "shape") else len(batch)


def loader_rate(batches: Iterator[Any], ahead: int, count: int) -> float:
    """Images per second of ``count`` batches consumed with no step, after the ``ahead`` that
    the workers may already hold (taken untimed: counted, they would put the rate above what
    the workers make) and the one in the making: the loader's pace as a stream, as the
    cpu_dataloader row's steady rate is."""
    for _ in range(ahead + 1):
        next(batches)
    images = 0
    start = time.perf_counter()
    for _ in range(count):
        images += images_in(next(batches))
    return images / (time.perf_counter() - start)


def model_rate(
    step: Callable[[Any], None], batch: Any, warmup: int, steps: int
) -> tuple[float, list[float], float]:
    """(images/s at the median step, every timed step's seconds, the step's CPU share) of the
    step alone on a resident batch, after ``warmup`` untimed steps (stopping.model_alone_counts).
    The CPU share is the process's CPU seconds (every thread) over the wall seconds of the timed
    steps: the cores the step keeps busy, which the loader's workers cannot use while it runs (a
    model on the CPU about 1 under the one-thread policy, a sleeping stand-in about 0)."""
    for _ in range(warmup):
        step(batch)
    times = []
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for _ in range(steps):
        start = time.perf_counter()
        step(batch)
        times.append(time.perf_counter() - start)
    share = (time.process_time() - cpu_start) / (time.perf_counter() - wall_start)
    return images_in(batch) / statistics.median(times), times, share


def endless(loader: Any) -> Iterator[Any]:
    """The loader's batches without end (a new epoch when one ends), as a training loop sees
    them."""
    while True:
        yield from loader


# -- one recipe ------------------------------------------------------------------------------------
@dataclass
class Feed:
    """How batches reach the step: ``loader`` (a DataLoader), ``resident`` (one batch as the
    loader yields it, for the step-alone measurement), ``prepare`` (what the main process does
    to a batch before the model, inside the step's clock: nothing for the CPU feed; the copy to
    the device and the GPU augmentation for the GPU feed) and what the row says of it."""

    loader: Any
    resident: Any
    prepare: Callable[[Any], Any]
    fields: dict[str, Any]


def cpu_feed(
    settings: TrainingSettings,
    adapter: adapters.Adapter,
    name: str,
    items: list[Any],
    load: Callable[[Any], Any],
    record_dir: Path,
    batches: int,
) -> Feed:
    """The cpu_dataloader decode scope's loader: workers read, decode and run the whole recipe
    (the library's composition for a pipeline); the step gets float32 batches."""
    import torch

    recipe = build_recipe(adapter, name, settings.pipelines.get(name))
    resident = torch.stack([recipe(load(items[0]))] * settings.batch_size)
    dataset = RecipeDataset(items, load, recipe, label=name)
    sampler = EpochSampler(len(items), batches * settings.batch_size)
    return Feed(
        regime_loader(settings, dataset, sampler, record_dir),
        resident,
        lambda batch: batch,
        {
            "feed": "cpu",
            "feed_timed": "workers: read + decode + the recipe; step: the model",
            "feed_device": "cpu",
        },
    )


def gpu_feed(
    settings: TrainingSettings, library: str, name: str, files: list[Path], device: str,
    batches: int,
) -> Feed:  # fmt: skip
    """The gpu_dataloader decode scope's loader: workers read, decode and cut a fixed-size
    uint8 crop; in the step, the batch goes to the device and the recipe's steps and Normalize
    run there (the library's own container), sharing the device with the model."""
    import torch

    from augbench.measuring.engines import gpu_dataloader as gpu
    from augbench.workload import gpu_recipes, pipelines

    pipeline = settings.pipelines.get(name)
    randomness = gpu_recipes.randomness_of(library)[0]
    if pipeline is not None:
        body, _ = pipelines.gpu_steps(pipeline)
        crop = gpu_recipes.pipeline_worker_crop(body, settings.worker_crop)
        apply, call = gpu.build_pipeline_apply(library, pipeline, randomness, device)
    else:
        crop = gpu_recipes.worker_crop(name, settings.worker_crop)
        apply, call = gpu.build_gpu_apply(library, name, randomness, device)
    from torch.utils.data import DataLoader

    nvjpeg = settings.decoder == decoders.NVJPEG
    # nvJPEG: the workers read the files' bytes; the step decodes the batch on the device.
    dataset = gpu.FileBytes(files) if nvjpeg else gpu.CropDataset(files, crop, "decode")
    workers = settings.workers
    loader = DataLoader(
        dataset,  # type: ignore[arg-type]
        batch_size=settings.batch_size,
        sampler=[i % len(dataset) for i in range(batches * settings.batch_size)],
        num_workers=workers,
        prefetch_factor=settings.prefetch_factor if workers else None,
        persistent_workers=bool(workers),
        pin_memory=device == "cuda" and not nvjpeg,
        worker_init_fn=gpu.worker_init if workers else None,
        collate_fn=gpu.as_list if nvjpeg else None,
    )
    first = [dataset[i % len(dataset)] for i in range(settings.batch_size)]
    if nvjpeg:
        resident: Any = first

        def prepare(batch: Any) -> Any:
            return apply(gpu.decode_on_device(batch, crop, device))

        timed = (
            f"workers: read the files' bytes; step: decode_jpeg on {device} (nvJPEG), a "
            f"{crop[0]}x{crop[1]} crop there, {call}, then the model"
        )
    else:
        resident = torch.stack(first)
        if device == "cuda":  # the loop's batches arrive pinned: the step alone copies the same
            resident = resident.pin_memory()

        def prepare(batch: Any) -> Any:
            return apply(batch.to(device, non_blocking=True))

        timed = (
            f"workers: read + decode + a {crop[0]}x{crop[1]} uint8 crop; step: copy to {device}, "
            f"{call}, then the model"
        )
    return Feed(
        loader,
        resident,
        prepare,
        {
            "feed": "gpu",
            "feed_timed": timed,
            "worker_crop": list(crop),
            "randomness": randomness,
            "feed_device": device,
            **(on_device_decoder() if nvjpeg else {}),
        },
    )


def on_device_decoder() -> dict[str, str]:
    """The decoder fields of a GPU feed row decoded on the device (nvJPEG)."""
    return {
        "decoder": decoders.NVJPEG,
        "decoder_call": decoders.device_decoder(decoders.NVJPEG).call,
    }


class DaliBatch:
    """One DALI output batch (a TensorList, finished: ``Pipeline.run`` is host-synchronous),
    with the shape and dtype a training step and the row read."""

    def __init__(self, tensors: Any) -> None:
        self.tensors = tensors
        self.shape = (len(tensors), *tensors[0].shape())
        self.dtype = "float32"


def dali_batches(pipe: Any) -> Iterator[DaliBatch]:
    while True:
        (out,) = pipe.run()
        yield DaliBatch(out)


def dali_feed(
    settings: TrainingSettings, name: str, files: list[Path], variant: str, batches: int
) -> Feed:
    """The DALI regime's pipeline as the loader: reader, decoder, the recipe and
    crop_mirror_normalize in DALI's own threads (``workers`` of them: DALI's num_threads),
    ``dali-cpu`` for the cpu feed, ``dali-gpu`` for the gpu feed."""
    from augbench.measuring.engines import dali

    pipe = dali.build_pipeline(
        files,
        name if name not in settings.pipelines else "Identity",  # a pipeline replaces the recipe
        variant=variant,
        batch_size=settings.batch_size,
        num_threads=max(1, settings.workers),
        device_id=0,
        prefetch_queue_depth=settings.prefetch_factor,
        pipeline=settings.pipelines.get(name),
    )
    stream = dali_batches(pipe)
    resident = next(stream)
    return Feed(
        stream,
        resident,
        lambda batch: batch,
        {
            "feed": "cpu" if variant == "dali-cpu" else "gpu",
            "feed_timed": f"{variant}: one DALI pipeline (reader, decoder, the recipe, "
            f"crop_mirror_normalize) in {max(1, settings.workers)} DALI threads; step: the "
            "accelerator",
            "feed_device": "cpu" if variant == "dali-cpu" else "cuda",
            "dali_variant": variant,
        },
    )


def measure_feed(
    settings: TrainingSettings,
    make_feed: Callable[[int], Feed],
    accelerator: Accelerator,
) -> dict[str, Any]:
    """The three measurements on one feed: the step alone (on the feed's resident batch,
    prepared as in training), the loader alone, then the training window on the same loader
    (the batches the loader-only pass leaves prefetched are drained by the warm-up steps)."""
    workers, prefetch = settings.workers, settings.prefetch_factor
    warmup, loader_batches = training_counts(workers, settings.warmup_steps, prefetch)
    ahead = prefetch * workers  # what the workers hold before the loader pass
    total = 1 + workers + ahead + 1 + loader_batches + warmup + settings.steps
    total += prefetch * max(1, workers)  # what the workers prefetch at the end
    feed = make_feed(total)
    synchronize = _device_synchronizer(feed.fields.get("feed_device"))

    def step(batch: Any) -> None:
        accelerator.step(feed.prepare(batch))
        # The device's work (the GPU feed's augmentation, a stand-in that only sleeps) is
        # finished before the step's clock stops; a model step synchronizes itself as well.
        synchronize()

    try:
        alone_warmup, alone_steps = model_alone_counts(settings.warmup_steps, settings.model_steps)
        ceiling, model_steps_s, cpu_share = model_rate(
            step, feed.resident, alone_warmup, alone_steps
        )
    except out_of_memory_errors() as exc:
        return non_ok_row("error", f"the model does not fit the GPU: {exc}".split("\n")[0])
    batches = endless(feed.loader)
    first = next(batches)  # worker start-up, outside every window
    for _ in range(workers):  # the batches the other workers prepared meanwhile
        next(batches)
    data_rate = loader_rate(batches, ahead, loader_batches)
    window = train(batches, step, warmup, settings.steps)
    tree_rss = process_tree_rss_mb()  # the workers are alive here
    del batches, feed.loader
    rates, times, block_waits = window.block_throughputs(settings.blocks)
    wait = median_interval(block_waits)
    return ok_row(
        rates,
        times,
        warmup_iterations=warmup,
        images_per_second=window.throughput,
        data_wait_fraction=window.data_wait_fraction,
        # The data wait per block: its median and interval say how sure the fed verdict is.
        data_wait_fractions=block_waits,
        data_wait_median=wait.estimate,
        **wait.fields("data_wait_"),
        step_ms=wait_percentiles_ms(window.steps),
        batch_wait_ms=wait_percentiles_ms(window.waits),
        # Diagnostics of this job, never the prediction's inputs (augbench.analysis.training).
        loader_img_per_s=data_rate,
        loader_batches=loader_batches,
        model_img_per_s=ceiling,
        model_step_ms=1000.0 * statistics.median(model_steps_s),
        # The cores the step alone kept busy: the prediction's share of the cores the model
        # takes from the workers where they share a CPU (augbench.planning.starvation_model).
        model_cpu_share=cpu_share,
        # The step alone's spread (its timed steps): set beside step_ms, the loop's own steps.
        model_step_spread_ms=wait_percentiles_ms(model_steps_s),
        model_warmup_steps=alone_warmup,
        timed_steps=settings.steps,
        process_tree_rss_mb=tree_rss,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        # A batch of file bytes (the GPU feed's nvJPEG) is a list: its length.
        batch_shape=list(first.shape) if hasattr(first, "shape") else [len(first)],
        batch_dtype=str(first.dtype) if hasattr(first, "dtype") else "file bytes",
        **feed.fields,
    )


def _device_synchronizer(device: str | None) -> Callable[[], None]:
    """What waits for the device's queued work: torch.cuda.synchronize on CUDA, else nothing."""
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def feed_row(
    settings: TrainingSettings,
    adapter: adapters.Adapter,
    name: str,
    feed: str,
    items: list[Any],
    load: Callable[[Any], Any],
    accelerator: Accelerator,
    record_dir: Path,
) -> dict[str, Any]:
    """One recipe through one feed: its measured row, or the row that says why not."""
    from augbench.workload import gpu_recipes

    if DALI_PIPELINE in adapter.capabilities:  # its own pipeline loader, not torch's
        return dali_row(settings, adapter, name, feed, items, accelerator)
    if feed == "gpu":
        if not gpu_recipes.randomness_of(settings.library):
            return non_ok_row(
                "unsupported",
                f"{settings.library} has no GPU augmentation path (the GPU feed runs torchvision "
                "and Kornia on the device)",
            )
        device = accelerator.settings.get("device", choose_device(settings.device))
        if device != "cuda" and not settings.allow_cpu_device_feed:
            return non_ok_row(
                "skipped", "no CUDA device: the GPU feed augments on the accelerator's device"
            )
        files = [Path(item) for item in items]

        def make(batches: int) -> Feed:
            return gpu_feed(settings, settings.library, name, files, device, batches)

    else:

        def make(batches: int) -> Feed:
            return cpu_feed(settings, adapter, name, items, load, record_dir, batches)

    pipeline = settings.pipelines.get(name)
    if pipeline is not None:  # a pipeline the library (or its GPU path) cannot run as defined
        from augbench.workload import pipelines

        check = pipelines.gpu_support_problem if feed == "gpu" else pipelines.support_problem
        problem = check(adapter, pipeline)
        if problem is not None:
            status, reason, extra = problem
            return non_ok_row(status, reason, **extra)
    try:
        return measure_feed(settings, make, accelerator)
    except Exception as exc:
        return skeleton.stage_error_row("training", exc)


def dali_row(
    settings: TrainingSettings,
    adapter: adapters.Adapter,
    name: str,
    feed: str,
    items: list[Any],
    accelerator: Accelerator,
) -> dict[str, Any]:
    """A recipe fed by DALI: its own threads stand for the workers (0 has no DALI meaning);
    the GPU feed is DALI's GPU variant, which needs CUDA."""
    if settings.workers == 0:
        return non_ok_row(
            "unsupported",
            "DALI always runs its own threads (num_threads >= 1): its worker counts start at 1",
        )
    variant = "dali-gpu" if feed == "gpu" else "dali-cpu"
    if variant == "dali-gpu":
        from augbench.measuring.engines import dali

        if dali.dali_probe()[0] == 0:
            return non_ok_row("skipped", "no CUDA device: the GPU feed is DALI's GPU variant")
    pipeline = settings.pipelines.get(name)
    if pipeline is not None:
        from augbench.workload import pipelines

        problem = pipelines.gpu_support_problem(adapter, pipeline)
        if problem is not None:
            status, reason, extra = problem
            return non_ok_row(status, reason, **extra)
    files = [Path(item) for item in items]

    def make(batches: int) -> Feed:
        return dali_feed(settings, name, files, variant, batches)

    try:
        return measure_feed(settings, make, accelerator)
    except Exception as exc:
        return skeleton.stage_error_row("training", exc)


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    from tqdm import tqdm

    adapter = adapters.get(settings.library)
    transforms = list(settings.transforms)
    cores = usable_cores()
    thread_settings: dict[str, Any] = {
        **skeleton.thread_record(DATALOADER_THREADS),
        "applied_in": "main process before imports; every worker via worker_init_fn",
    }
    setup_error: tuple[str, str] | None = None  # (status, reason) of every row
    unsupported: str | None = None
    accelerator: Accelerator | None = None
    items: list[Any] = []
    decoded: dict[str, Any] = {"decoder": settings.decoder}
    load: Callable[[Any], Any] = lambda item: item  # noqa: E731
    over_cap = settings.workers > cores
    device = "cpu"
    if not over_cap:
        try:
            skeleton.import_library(adapter)
            thread_settings["main_process"] = DATALOADER_THREADS.apply_runtime()
            device = choose_device(settings.device)
            spec = stand_in(settings.accelerator)
            if not spec and not adapter.env_has_torch:
                unsupported = (
                    f"the {adapter.title} env has no torch (it is locked on its own), so no "
                    f"model steps there; {adapter.title} feeds the sleep:<ms> and cpu:<ms> "
                    "stand-ins"
                )
            accelerator = (
                stand_in_accelerator(settings.accelerator)
                if spec
                else None
                if unsupported
                else model_accelerator(device, settings.cpu_input_size, settings.model)
            )
            # The loader is the cpu_dataloader decode scope's, with the same decoder (the GPU
            # feed's nvJPEG decodes on the device: its workers read the files).
            cpu_decoder = (
                decoders.NATIVE if settings.decoder == decoders.NVJPEG else settings.decoder
            )
            setup_error = decoder_problem(cpu_decoder, settings.library)
            if setup_error is None:
                items, load, decoded = load_items(
                    adapter, settings.manifest, settings.num_images, "decode", cpu_decoder
                )
        except Exception as exc:
            setup_error = skeleton.setup_problem("setup failed", exc)
    variant = accelerator.label if accelerator is not None else settings.accelerator
    part = "" if settings.decoder == decoders.NATIVE else f"-{settings.decoder}"
    label = f"{REGIME} | {settings.library} | w{settings.workers}{part} | {variant}"
    job = skeleton.Job(settings, adapter, REGIME, "decode", label)
    units = [f"{name}{FEEDS[feed]}" for feed in settings.feeds for name in transforms]
    bar = tqdm(units, desc=label, unit="recipe")
    with tempfile.TemporaryDirectory(prefix=f"train-{settings.library}-") as tmp:
        record_dir = Path(tmp)

        def row_of(unit: str) -> dict[str, Any]:
            name = unit.removesuffix(FEEDS["gpu"])
            feed = "gpu" if unit.endswith(FEEDS["gpu"]) else "cpu"
            if over_cap:
                row = non_ok_row(
                    "skipped", f"{settings.workers} workers > {cores} usable cores on this machine"
                )
            elif unsupported is not None:
                row = non_ok_row("unsupported", unsupported)
            elif setup_error is not None or accelerator is None:
                row = non_ok_row(*(setup_error or ("error", "no accelerator")))
            else:
                bar.set_postfix_str(unit)
                model = accelerator

                def measure() -> dict[str, Any]:
                    return feed_row(settings, adapter, name, feed, items, load, model, record_dir)

                # A fork per recipe where CUDA is not in use (it does not survive a fork).
                row = measure() if device == "cuda" else skeleton.in_fresh_fork(measure, unit)
            pipeline = settings.pipelines.get(name)
            if pipeline is not None:
                from augbench.workload import pipelines

                row.update(pipelines.row_fields(pipeline, adapter, gpu=feed == "gpu"))
            row.update(
                transform=name,
                feed=feed,
                **(decoded if feed == "cpu" else {}),
                workers=settings.workers,
                batch_size=settings.batch_size,
                # Never ranked across accelerators, devices or feeds.
                variant=f"{variant}{FEEDS[feed]}",
                **(accelerator.settings if accelerator is not None else {}),
                **_gpu_peak(),
            )
            row.setdefault("peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            return row

        rows = skeleton.each_row(bar, row_of, job.row_log(bar))
        thread_settings["workers"] = worker_records(record_dir)
    return job.finish(
        rows,
        thread_settings,
        params={
            "workers": settings.workers,
            "batch_size": settings.batch_size,
            "prefetch_factor": settings.prefetch_factor,
            "persistent_workers": settings.persistent_workers,
            "accelerator": settings.accelerator,
            "cpu_input_size": settings.cpu_input_size,
            "model": settings.model,
            "steps": settings.steps,
            "warmup_steps": settings.warmup_steps,
            "model_steps": settings.model_steps,
            "blocks": settings.blocks,
            "feeds": list(settings.feeds),
            "decoder": settings.decoder,
            "worker_crop": settings.worker_crop,
            "transforms": transforms,
            "timing": "images over the wall time of the timed steps (next(loader) + step, CUDA "
            "synchronized); values: throughputs of consecutive blocks of steps",
        },
        extra={"variant": variant, "usable_cores": cores},
    )


def _gpu_peak() -> dict[str, Any]:
    if "torch" not in sys.modules:
        return {}
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"gpu_peak_allocated_mb": torch.cuda.max_memory_allocated() / 2**20}


if __name__ == "__main__":
    sys.exit(main())
