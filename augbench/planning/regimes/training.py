"""The ``training`` regime: a real training loop (or a stand-in step) fed by a DataLoader, CPU and
GPU feeds. Its declaration, how its jobs are planned, what they hold in memory and how they are
priced (the engine's three passes: augbench.measuring.engines.training)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from augbench import policy
from augbench.measuring.stopping import model_alone_counts, training_counts
from augbench.paths import RAW
from augbench.planning.regimes.cpu_dataloader import arm_seconds
from augbench.planning.regimes.pricing import (
    Estimate,
    Key,
    KindModel,
    Learned,
    PricedJob,
    Pricing,
    median_of,
)
from augbench.planning.regimes.records import (
    WORKERS,
    Job,
    JobKind,
    Planner,
    Regime,
    Table,
    Wildcards,
    job_kind,
    workers_threads,
)
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters, decoders
from augbench.workload.adapters.base import DALI_PIPELINE, GPU_BATCHES, TRAINING_FEED

if TYPE_CHECKING:
    from augbench.planning.memory import Footprint

NAME = "training"


# -- planning --------------------------------------------------------------------------------
def training_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x worker count x decoder, every training recipe (catalog recipes and
    user pipelines) in it: the library's own decode, each other decoder of
    ``cpu_dataloader.decoders`` at the worker counts the cpu_dataloader regime measures it at
    (the supply its rows are predicted from), and nvJPEG (``gpu_dataloader.decoders``) for the
    GPU feed of the libraries that augment on the GPU."""
    transforms = list(s.config["training"]["transforms"])
    base = adapters.base_of
    return [
        s.job(kind, lib, dataset, {"workers": str(workers), "decoder": decoder}, transforms)
        for lib in s.libraries_of(kind.regime)
        for workers, decoder in decoder_settings(s.config)
        # A library whose own pipeline decodes (DALI) takes no other decoder; nvJPEG feeds the
        # libraries with a GPU augmentation path.
        if not decoder
        or (
            adapters.has_capability(base(lib), GPU_BATCHES)
            if decoder == decoders.device_suffix(decoders.NVJPEG)
            else adapters.get(base(lib)).decoded_layout
        )
    ]


def decoder_settings(config: Mapping[str, Any]) -> list[tuple[int, str]]:
    """(workers, decoder's result-name part) of every training job of a library: the training
    worker counts with the library's own decode (part ''), then each other configured decoder at
    the training worker counts that ``cpu_dataloader.feed_workers`` lists (all where it is
    empty) and the regime's decode scope measures, then nvJPEG at every training worker count
    where the GPU feed is configured and ``gpu_dataloader.decoders`` names it."""
    dl = config["cpu_dataloader"]
    workers = list(config["training"]["workers"])
    measured = set(dl.get("feed_workers") or dl["workers"]) if "decode" in dl["scopes"] else set()
    on_device = decoders.NVJPEG in (config["gpu_dataloader"].get("decoders") or []) and (
        "gpu" in config["training"]["feeds"]
    )
    return (
        [(w, "") for w in workers]
        + [
            (w, decoders.suffix(name))
            for name in decoders.non_native(dl.get("decoders") or [])
            for w in workers
            if w in measured
        ]
        + [(w, decoders.device_suffix(decoders.NVJPEG)) for w in workers if on_device]
    )


def feeds_of(config: Mapping[str, Any], decoder_part: str) -> str:
    """The feeds a training job runs: nvJPEG feeds the GPU feed only, another CPU decoder the cpu
    feed only (the GPU feed's workers cut crops), the library's own decode every configured
    feed."""
    if not decoder_part:
        return ",".join(config["training"]["feeds"])
    return "gpu" if decoders.any_from_suffix(decoder_part) == decoders.NVJPEG else "cpu"


def training_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    t = s.config["training"]
    transforms = list(t["transforms"])
    used = [p for p in s.pipelines if p["name"] in transforms]
    return {
        "library": w["library"],
        "machine": w["machine"],
        "workers": w["workers"],
        **({"decoder": decoders.any_from_suffix(w["decoder"])} if w.get("decoder") else {}),
        "transforms": transforms,
        "num-images": s.num_images_for(kind),
        "batch-size": t["batch_size"],
        "prefetch-factor": s.config["cpu_dataloader"]["prefetch_factor"],
        "accelerator": t["accelerator"],
        "model": t["model"],
        "cpu-input-size": t["cpu_input_size"],
        "steps": t["steps"],
        "warmup-steps": t["warmup_steps"],
        "model-steps": t["model_steps"],
        "blocks": t["blocks"],
        "feeds": feeds_of(s.config, w.get("decoder", "")),
        "worker-crop": s.config["gpu_dataloader"]["worker_crop"],
        **({"pipelines": json.dumps(used, sort_keys=True)} if used else {}),
    }


# -- memory (augbench.planning.memory) -------------------------------------------------------------
def training_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """The DataLoader of the decode scope (forked workers, batches in flight) and the model's
    training state in the main process (policy.TRAINING_MODEL_MB: weights, gradients, momentum
    and activations at the batch size). The state is always counted: the device is chosen when
    the job runs (CUDA where usable), so a job placed on a GPU machine may still train on the
    CPU; where the job can have a GPU (its placement's, or, for a job that runs where the
    workflow runs, an NVIDIA driver on this machine: ``Planner.host_gpu``) the host's CUDA
    context is counted too, as for the GPU regimes."""
    from augbench.planning.memory import Footprint
    from augbench.workload import recipes

    t = s.config["training"]
    workers = int(w["workers"])
    batch = t["batch_size"]
    in_flight = (workers * s.config["cpu_dataloader"]["prefetch_factor"] + 2) * batch
    model = "sleep" if str(t["accelerator"]).startswith("sleep:") else "resnet18"
    if t["model"] == "resnet50":  # on a CPU machine: ~2.5x resnet18's training state
        model = "resnet50"
    placed = "gpu" in s.config["cloud"]["regimes"].get(kind.placement, {})
    # A CUDA context where the job can have one: its placement's GPU, or this machine's driver.
    gpu = placed if s.host_gpu is None else s.host_gpu
    declared = adapters.declared(w["library"])
    # A library with its own pipeline loader (DALI) runs its workers as threads, not forks.
    own_loader = DALI_PIPELINE in declared.capabilities
    return Footprint(
        w["library"], torch=declared.env_has_torch,
        forked=0 if own_loader else workers,
        worker_private_mb=policy.TRAINING_WORKER_PRIVATE_MB,
        batches_mb=in_flight * recipes.OUTPUT_SIZE**2 * 12.0 / 2**20,  # float32 224 px
        extra_mb=policy.TRAINING_MODEL_MB[model] * batch / 32, gpu=gpu,
    )  # fmt: skip


# -- pricing (augbench.planning.cost) --------------------------------------------------------------
def training_row_work(row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of a training row's three passes (augbench.measuring.engines.training.measure_feed):
    the step alone, the loader alone and the loop's warm-up and timed steps."""
    batch = row.get("batch_size") or params["batch_size"]
    step = (row.get("model_step_ms") or 0.0) / 1000.0
    rate = row.get("loader_img_per_s")
    loader = row.get("loader_batches", 0) * batch / rate if rate else 0.0
    steps = row.get("warmup_iterations", 0) + row.get("timed_steps", params.get("steps", 0))
    return (
        # The step alone's warm-up as the row records it (rows without the field took one).
        ((row.get("model_warmup_steps") or 1) + params.get("model_steps", 0)) * step
        + loader
        + steps * batch / row[MEDIAN_THROUGHPUT]
    )


class Training(Pricing):
    """Per recipe and feed, the engine's three passes (augbench.measuring.engines.training, counted
    by augbench.measuring.stopping.training_counts and model_alone_counts): the step alone (its
    warm-up and model steps), the loader alone, and warm-up + timed steps of the loop, whose rate is
    the starvation model's prediction (augbench.planning.starvation_model.predict) from the loader's
    measured seconds per image at that setting and the step's (a ``sleep:<ms>`` stand-in's own; a
    model's measured per accelerator, model name and device, else the measured loop's rate), all
    counts from the job's own flags."""

    name = "training"
    prices_without_rows = True

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        return training_row_work(row, params)

    def learn_row(
        self, learned: Learned, key: Key, name: str, row: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> None:  # fmt: skip
        if not row.get("loader_img_per_s"):
            return
        # The CPU feed's loader is the recipe's (the GPU feed's cuts crops only).
        setting = f"decode-w{row.get('workers', params.get('workers'))}"
        # Another decoder's job is priced as the library's own decode at its setting.
        native = (row.get("decoder") or decoders.NATIVE) == decoders.NATIVE
        if row.get("feed", "cpu") == "cpu" and native:
            recipe = row.get("transform", name)
            learned.arms[key][f"{recipe}|{setting}|loader"].append(1 / row["loader_img_per_s"])
        accelerator = str(row.get("accelerator") or params.get("accelerator"))
        if row.get("model_step_ms") and not accelerator.startswith("sleep:"):
            batch = row.get("batch_size") or params["batch_size"]
            on_gpu = str(row.get("device", "cpu")).startswith("cuda")
            step = f"{accelerator}|{params.get('model', 'auto')}|"
            step += "cuda" if on_gpu else "cpu"
            learned.steps[key][step].append(row["model_step_ms"] / 1000.0 / batch)

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        return training_estimate(model, job, params)


def training_estimate(model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
    """The job's recipes on each feed: the engine's three passes (module docstring), the loop at
    the starvation model's rate for the loader's and the step's seconds per image. A GPU feed is
    priced as the CPU feed (on a machine without CUDA its rows are skipped in no time)."""
    from augbench.planning.starvation_model import Supply, predict

    if not model.arm_s and not model.per_image_s:  # a job's wall time only (an older model file)
        return Estimate(model.overhead_s, model.overhead_s)
    # The engine's flags of the job (regimes.training_args, as Job.params names them).
    batch, workers = int(params["batch_size"]), int(params["workers"])
    warmup, loader_batches = training_counts(
        workers, int(params["warmup_steps"]), int(params["prefetch_factor"])
    )
    timed, model_steps = int(params["steps"]), int(params["model_steps"])
    accelerator = str(params["accelerator"])
    sleep = accelerator.removeprefix("sleep:")
    feeds = params["feeds"]
    feeds = feeds.split(",") if isinstance(feeds, str) else list(feeds)
    seconds = model.overhead_s / job.share
    for transform in job.transforms:
        loader = arm_seconds(
            model, transform, f"decode-w{workers}", "loader", job.megapixels,
            int(params.get("target_cores") or 0),
        )  # fmt: skip
        if sleep != accelerator:  # the stand-in sleeps its own time per batch
            step = float(sleep) / 1000.0 / batch
        else:
            step = step_seconds(model, f"{accelerator}|{params.get('model', 'auto')}", params)
            step = model.seconds_per_image(transform) if step is None else step
        supply = Supply(1.0 / loader, workers, batch)
        loop = batch / predict(supply, 1.0 / max(step, 1e-9)).images_per_second
        alone = sum(model_alone_counts(int(params["warmup_steps"]), model_steps))
        per_feed = alone * batch * step + loader_batches * batch * loader
        seconds += len(feeds) * (per_feed + (warmup + timed) * loop)
    return Estimate(seconds, seconds)


def step_seconds(model: KindModel, name: str, params: Mapping[str, Any]) -> float | None:
    """A real model's step in seconds per image on the job's device (``target_device``: the
    placement's in a cloud estimate; none: the measuring machine's): as measured there; on a
    GPU where only a CPU step was measured, 0: the loop at the loader's pace (a GPU steps
    ResNet-50 faster than a loader feeds it, docs/training.md); None: price the measured loop."""
    device = str(params.get("target_device") or "")
    measured = {k.rsplit("|", 1)[1]: v for k, v in model.step_s.items() if k.startswith(f"{name}|")}
    if not device:
        return median_of(measured.values()) or None
    if device in measured:
        return measured[device]
    return 0.0 if device == "cuda" else None


# -- the declaration ---------------------------------------------------------------------------
_kind = partial(job_kind, NAME)

TRAINING = Regime(
    NAME,
    TRAINING_FEED,
    (
        _kind(
            "training", "results",
            f"{RAW}/training/{{library}}/w{{workers}}{{decoder}}.json",
            "{machine}/{dataset}/training/{library}/w{workers}{decoder}",
            placement="training", engine="augbench.measuring.engines.training", pricing=Training(),
            jobs=training_jobs, args=training_args, threads=workers_threads,
            thread_policy="dataloader", memory=training_memory,
            constraints={"workers": WORKERS, "decoder": decoders.PATTERN},
            config_block="training",
            images_key="training.num_images",
            memory_fix="lower training.batch_size or the largest training.workers",
            caps_workers="always", runs_key="training.runs",
        ),
    ),
    tables={
        "training": Table(
            "results/tables/training.csv", "augbench.analysis.training:predicted_vs_measured"
        )
    },
    figures=("throughput",),
)  # fmt: skip
