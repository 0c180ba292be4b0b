"""The GPU regimes: ``gpu_dataloader`` (recipes and pipelines on batches on the GPU, fed by a
DataLoader) and ``dali`` (NVIDIA DALI's own pipeline, its GPU variant and its CPU backend). Both
stream images through a fixed number of warm-ups and values, and are priced alike. Their
declarations, how their jobs are planned, what they hold in memory and how they are priced."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from augbench.paths import PIPELINE_RAW, RAW
from augbench.planning.regimes.pricing import Estimate, KindModel, PricedJob, Pricing
from augbench.planning.regimes.records import (
    RANDOMNESS,
    SCOPES,
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
from augbench.workload import decoders
from augbench.workload.adapters.base import DALI_PIPELINE, GPU_BATCHES

if TYPE_CHECKING:
    from augbench.planning.memory import Footprint

# Written once, whichever of the two regimes are configured.
GPU_TABLES = {
    "gpu_vs_cpu_ratio": Table(
        "results/tables/gpu_vs_cpu_ratio.csv", "augbench.analysis.gpu:gpu_vs_cpu_ratio"
    ),
    "gpu_memory": Table(
        "results/tables/gpu_throughput_memory.csv", "augbench.analysis.gpu:throughput_vs_memory"
    ),
}


# -- planning --------------------------------------------------------------------------------
def gpu_dataloader_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    return [
        s.job(kind, lib, dataset, {**setting, "shard": shard}, transforms)
        for lib in s.libraries_of(kind.regime)
        for setting in s.gpu_settings(lib)
        for shard, transforms in gpu_shards_of(s, setting).items()
    ]


def gpu_shards_of(s: Planner, w: Wildcards) -> dict[str, list[str]]:
    """The recipe shards of a GPU DataLoader setting: a decoder besides native measures
    ``gpu_dataloader.decoder_transforms`` (every recipe where it is null)."""
    return s.gpu_decoder_shards if w.get("decoder") else s.gpu_shards


def _streamed(s: Planner, kind: JobKind, w: Wildcards, shard_map: dict[str, list[str]]) -> dict:
    """What a GPU-regime job streams: one shard of recipes, or (role pipelines) every pipeline."""
    pipelines = kind.role == "pipelines"
    return {
        "shard": "pipelines" if pipelines else w["shard"],
        "transforms": s.pipeline_names if pipelines else shard_map[w["shard"]],
        **({"pipelines": s.pipelines_json} if pipelines else {}),
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
    }


def _repeats(s: Planner, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"values": block["values"], "warmups": block["warmups"], "policy": s.policy_json}


def gpu_dataloader_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    gpu = s.config["gpu_dataloader"]
    decoder = decoders.device_from_suffix(w.get("decoder", ""))
    return {
        "library": w["library"],
        **_streamed(s, kind, w, gpu_shards_of(s, w)),
        **{name: w[name] for name in ("scope", "workers", "randomness")},
        **({"decoder": decoder} if decoder != decoders.NATIVE else {}),
        "batch-size": gpu["batch_size"],
        "worker-crop": gpu["worker_crop"],
        **_repeats(s, gpu),
        "gpu": s.config["gpu"],
    }


def dali_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    if dali_variant(kind) not in s.dali_variants:
        return []
    return [
        s.job(kind, lib, dataset, {"shard": shard}, transforms)
        for lib in s.libraries_of(kind.regime)
        for shard, transforms in s.dali_shards.items()
    ]


def dali_variant(kind: JobKind) -> str:
    """dali -> dali-gpu, dali_cpu -> dali-cpu (also for the pipeline_ kinds)."""
    return "dali-cpu" if kind.rule.endswith("_cpu") else "dali-gpu"


def dali_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    dali = s.config["dali"]
    gpu = dali_variant(kind) == "dali-gpu"
    return {
        "variant": dali_variant(kind),
        **_streamed(s, kind, w, s.dali_shards),
        "batch-size": dali["batch_size"],
        "num-threads": dali["num_threads"],
        "prefetch-queue-depth": dali["prefetch_queue_depth"],
        **_repeats(s, dali),
        # The CUDA device and what to do without one: only the variant that uses a GPU.
        **({"device-id": dali["device_id"], "gpu": s.config["gpu"]} if gpu else {}),
    }


def dali_threads(s: Planner, w: Wildcards) -> int:
    return int(s.config["dali"]["num_threads"]) + 1


def pipeline_gpu_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x scope x workers x randomness (the single-transform settings), each
    decoded in the workers (another decoder measures single transforms only)."""
    if not s.pipelines or dataset != s.dataset:
        return []
    return [
        s.job(kind, lib, dataset, setting, s.pipeline_names)
        for lib in s.libraries_of(kind.regime)
        for setting in s.gpu_settings(lib)
        if not setting["decoder"]
    ]


def pipeline_dali_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One DALI job per variant runs every pipeline."""
    if not s.pipelines or dataset != s.dataset:
        return []
    if dali_variant(kind) not in s.dali_variants:
        return []
    return [s.job(kind, lib, dataset, {}, s.pipeline_names) for lib in s.libraries_of(kind.regime)]


# -- memory (augbench.planning.memory) -------------------------------------------------------------
def gpu_dataloader_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """Host side: torch with a CUDA context and the DataLoader's forked workers (batches live
    on the GPU)."""
    from augbench.planning.memory import Footprint

    return Footprint(w["library"], torch=True, forked=int(w["workers"]), gpu=True)


def dali_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """DALI's pipeline holds its prefetch queue of batches (plus one in flight), each batch in
    its stages' buffers: decoded, augmented (uint8) and the float32 output."""
    from augbench.planning.memory import Footprint

    dali = s.config["dali"]
    batches = dali["batch_size"] * (dali["prefetch_queue_depth"] + 1)
    return Footprint(
        w["library"], images=batches, pixels=s.mean_pixels(w["dataset"], s.num_images_for(kind)),
        copies=1 + 1 + 4, gpu=dali_variant(kind) == "dali-gpu",
    )  # fmt: skip


# -- pricing (augbench.planning.cost) --------------------------------------------------------------
def stream_images(params: Mapping[str, Any]) -> float:
    """Images one recipe streams in a GPU DataLoader or DALI job: warm-ups and values."""
    return params["num_images"] * (params.get("values", 1) + params.get("warmups", 0))


class Stream(Pricing):
    """Images x (warm-ups + values) per recipe; on a machine without CUDA the GPU kinds use
    ``cloud.assumed_img_per_s`` (labelled ``assumed``: augbench.planning.cost)."""

    name = "stream"

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        return stream_images(params) / row[MEDIAN_THROUGHPUT]

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        images = stream_images(params)
        seconds = model.overhead_s / job.share + sum(
            images * model.seconds_per_image(t, job.megapixels) for t in job.transforms
        )
        return Estimate(seconds, seconds)


# -- the declarations ------------------------------------------------------------------------
_gpu_kind = partial(job_kind, "gpu_dataloader")
_dali_kind = partial(job_kind, "dali")

GPU_DATALOADER = Regime(
    "gpu_dataloader",
    GPU_BATCHES,
    (
        _gpu_kind(
            "gpu_dataloader", "results",
            f"{RAW}/gpu_dataloader/{{library}}/{{scope}}{{decoder}}_w{{workers}}_{{randomness}}"
            "_{shard}.json",
            "{machine}/{dataset}/gpu_dataloader/{library}/{scope}{decoder}_w{workers}_{randomness}"
            "_{shard}",
            placement="gpu_dataloader", engine="augbench.measuring.engines.gpu_dataloader",
            pricing=Stream(),
            jobs=gpu_dataloader_jobs, args=gpu_dataloader_args, threads=workers_threads,
            gpu=True, memory=gpu_dataloader_memory,
            memory_fix="lower gpu_dataloader.workers", config_block="gpu_dataloader",
            constraints={"scope": SCOPES, "workers": WORKERS, "randomness": RANDOMNESS},
        ),
        # `_` before the randomness mode: its values contain `-`.
        _gpu_kind(
            "pipeline_gpu_dataloader", "pipelines",
            f"{PIPELINE_RAW}/gpu_dataloader/{{library}}/{{scope}}-w{{workers}}_{{randomness}}.json",
            "{machine}/{dataset}/pipelines/gpu_dataloader/{library}/{scope}-w{workers}_{randomness}",
            placement="gpu_dataloader", engine="augbench.measuring.engines.gpu_dataloader",
            pricing=Stream(), jobs=pipeline_gpu_jobs, args=gpu_dataloader_args,
            threads=workers_threads, gpu=True, memory=gpu_dataloader_memory,
            memory_fix="lower gpu_dataloader.workers",
            constraints={"scope": SCOPES, "workers": WORKERS, "randomness": RANDOMNESS},
        ),
    ),
    gpu=True,
    tables=GPU_TABLES,
)  # fmt: skip

DALI = Regime(
    "dali",
    DALI_PIPELINE,
    (
        _dali_kind(
            "dali", "results",
            f"{RAW}/dali/{{library}}/dali-gpu_{{shard}}.json",
            "{machine}/{dataset}/dali/{library}/dali-gpu_{shard}",
            placement="dali", engine="augbench.measuring.engines.dali",
            pricing=Stream(), jobs=dali_jobs,
            args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth", gpu=True,
            config_block="dali",
        ),
        # DALI's CPU backend (device_id=None): a separately labelled variant that runs anywhere,
        # its own rule so that only the GPU variant declares a GPU.
        _dali_kind(
            "dali_cpu", "results",
            f"{RAW}/dali/{{library}}/dali-cpu_{{shard}}.json",
            "{machine}/{dataset}/dali/{library}/dali-cpu_{shard}",
            placement="dali_cpu", engine="augbench.measuring.engines.dali",
            pricing=Stream(), jobs=dali_jobs,
            args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth",
            config_block="dali",
        ),
        _dali_kind(
            "pipeline_dali", "pipelines",
            f"{PIPELINE_RAW}/dali/{{library}}/dali-gpu.json",
            "{machine}/{dataset}/pipelines/dali/{library}/dali-gpu",
            placement="dali", engine="augbench.measuring.engines.dali", pricing=Stream(),
            jobs=pipeline_dali_jobs, args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth", gpu=True,
        ),
        _dali_kind(
            "pipeline_dali_cpu", "pipelines",
            f"{PIPELINE_RAW}/dali/{{library}}/dali-cpu.json",
            "{machine}/{dataset}/pipelines/dali/{library}/dali-cpu",
            placement="dali_cpu", engine="augbench.measuring.engines.dali", pricing=Stream(),
            jobs=pipeline_dali_jobs, args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth",
        ),
    ),
    gpu=True,
    tables=GPU_TABLES,
)  # fmt: skip
