"""DALI regime job: one variant (``dali-gpu`` or ``dali-cpu``), one shard of transforms.

For each transform a DALI pipeline is built (recipe ``RandomCrop224 + T + Normalize``, see
augbench.gpu_recipes; mappings in augbench.adapters.dali):

    fn.readers.file(files=<the staged images>) -> fn.decoders.image(device="mixed" | "cpu", RGB)
    -> fn.crop(224, random position)  [a crop transform replaces this step]
    -> T -> fn.crop_mirror_normalize(float32, CHW, ImageNet mean/std)

and driven through augbench.engines.streaming for exactly the planned number of batches.
Every batch's output is consumed inside the timer: ``Pipeline.run()`` is called without a
``cuda_stream``, so DALI returns it host-synchronous (the GPU work for it is finished), and the
dense output tensor is taken (zero-copy). In the GPU variant the output's stream is also
synchronized explicitly where DALI exposes it. GPU memory comes from NVML (this process's used
memory, sampled after the run; DALI's memory pools do not shrink during a run).

``dali-gpu`` without a CUDA device: every row is ``skipped`` ("no CUDA device"). ``dali-cpu``
(``device_id=None``, CPU operators only) is a separately labelled variant that runs anywhere.
"""

from __future__ import annotations

from augbench.policy import GPU_REGIME_THREADS

GPU_REGIME_THREADS.apply_environment()  # before DALI / numpy load

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from augbench import adapters, catalog, gpu_recipes, media  # noqa: E402
from augbench.adapters.dali import DaliAdapter, DaliContext  # noqa: E402
from augbench.engines.common import job_metadata  # noqa: E402
from augbench.engines.streaming import StreamPlan, run_stream  # noqa: E402
from augbench.policy import SlowTransformPolicy  # noqa: E402
from augbench.results import (  # noqa: E402
    non_ok_row,
    ok_row,
    result_file,
    status_line,
    write_json_atomic,
)

REGIME = "dali"
VARIANTS: dict[str, str] = {
    "dali-gpu": "mixed",  # variant -> decoder device; later operators follow their input
    "dali-cpu": "cpu",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    p.add_argument("--transforms", required=True, help="comma-separated catalog names")
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--num-images", required=True, type=int)
    p.add_argument("--batch-size", required=True, type=int)
    p.add_argument("--num-threads", required=True, type=int, help="DALI CPU threads")
    p.add_argument("--prefetch-queue-depth", type=int, default=2)
    p.add_argument("--device-id", type=int, default=0, help="CUDA device of dali-gpu")
    p.add_argument("--values", type=int, default=3, help="measured repetitions")
    p.add_argument("--warmups", type=int, default=1, help="untimed repetitions before them")
    p.add_argument("--policy", default="{}", help="SlowTransformPolicy fields as JSON")
    p.add_argument("--machine", required=True)
    p.add_argument("--shard", default="")
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--env-marker", type=Path, default=None)
    return p.parse_args(argv)


def build_pipeline(
    files: list[Path],
    transform: str,
    *,
    variant: str,
    batch_size: int,
    num_threads: int,
    device_id: int,
    prefetch_queue_depth: int,
) -> Any:
    """The recipe as a built DALI pipeline with one output (float32 NCHW batch).

    Raises ``adapters.Unsupported`` when DALI has no mapping for ``transform``.
    """
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali.pipeline import Pipeline

    adapter = DaliAdapter()
    spec = catalog.get(transform)
    apply = adapter.build(spec.name, spec.params)
    base = catalog.get(gpu_recipes.BASE_CROP)
    base_crop = adapter.build(base.name, base.params)
    gpu = variant == "dali-gpu"
    pipe = Pipeline(
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=device_id if gpu else None,
        prefetch_queue_depth=prefetch_queue_depth,
    )
    with pipe:
        encoded, _labels = fn.readers.file(
            files=[str(f) for f in files], random_shuffle=False, name="Reader"
        )
        images = fn.decoders.image(encoded, device=VARIANTS[variant], output_type=types.RGB)
        if spec.is_crop:
            images = apply(images, DaliContext(input_hw=None))
        else:
            images = base_crop(images, DaliContext(input_hw=None))
            images = apply(images, DaliContext(input_hw=gpu_recipes.base_crop_size()))
        out = fn.crop_mirror_normalize(
            images,
            dtype=types.FLOAT,
            output_layout="CHW",
            mean=[m * 255.0 for m in gpu_recipes.NORMALIZE_MEAN],
            std=[s * 255.0 for s in gpu_recipes.NORMALIZE_STD],
        )
        pipe.set_outputs(out)
    pipe.build()
    return pipe


def cuda_device_count() -> int:
    from nvidia.dali import backend

    try:
        return int(backend.GetCUDADeviceCount())
    except Exception:  # no driver at all
        return 0


class NvmlMemory:
    """GPU memory of this process through NVML (includes the CUDA context)."""

    def __init__(self, device_id: int) -> None:
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        if visible.startswith(("GPU-", "MIG-")):
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(visible)
        else:
            # NVML numbers devices physically; CUDA_VISIBLE_DEVICES=N makes N our device 0.
            index = int(visible) if visible.isdigit() and device_id == 0 else device_id
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(self.handle)
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.baseline_used_mb = self._device_used_mb()

    def _device_used_mb(self) -> float:
        return self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used / 2**20

    def sample(self) -> tuple[float, str]:
        """(MB, method): this process's used memory, else device used minus the start baseline."""
        try:
            procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
            mine = [p.usedGpuMemory for p in procs if p.pid == os.getpid() and p.usedGpuMemory]
        except self.nvml.NVMLError:
            mine = []
        if mine:
            return sum(mine) / 2**20, "nvml: this process's usedGpuMemory (includes the context)"
        return (
            self._device_used_mb() - self.baseline_used_mb,
            "nvml: device used memory minus its value before the first pipeline "
            "(process view unavailable, e.g. in a container PID namespace)",
        )


def measure_transform(
    *,
    files: list[Path],
    transform: str,
    variant: str,
    plan: StreamPlan,
    num_threads: int,
    device_id: int,
    prefetch_queue_depth: int,
    policy: SlowTransformPolicy,
    memory: NvmlMemory | None,
) -> dict[str, Any]:
    import numpy as np
    from nvidia.dali import backend
    from tqdm import tqdm

    gpu = variant == "dali-gpu"
    pipe = build_pipeline(
        files,
        transform,
        variant=variant,
        batch_size=plan.batch_size,
        num_threads=num_threads,
        device_id=device_id,
        prefetch_queue_depth=prefetch_queue_depth,
    )
    last: dict[str, Any] = {}
    sync_method = "host-synchronous: Pipeline.run() without cuda_stream"
    explicit_sync: Callable[[Any], None] | None = None
    if gpu:
        # Decided once, outside any timer: synchronize the output's stream where DALI exposes it.
        (probe,) = pipe.run()
        try:
            backend.CUDAStreamSynchronize(probe.stream)
            explicit_sync = backend.CUDAStreamSynchronize
            sync_method += " + CUDAStreamSynchronize(output.stream)"
        except Exception as exc:
            sync_method += f" (explicit stream sync unavailable: {type(exc).__name__})"

    def step() -> int:
        (out,) = pipe.run()
        dense = out.as_tensor()  # the whole batch as one dense tensor, no copy
        if explicit_sync is not None:
            explicit_sync(out.stream)
        else:
            np.asarray(dense)  # CPU output: a zero-copy view of the finished batch
        last["shape"] = dense.shape()
        last["dtype"] = dense.dtype
        return len(out)

    bar = tqdm(
        total=plan.total_batches,
        desc=f"{REGIME} | {variant} | {transform}",
        unit="batch",
        file=sys.stderr,
    )
    try:
        result = run_stream(step, lambda: None, plan, policy, bar.update)
    finally:
        bar.close()
    details: dict[str, Any] = {
        "pipeline": pipeline_description(transform, variant),
        "sync_method": sync_method,
        "prefetch_queue_depth": prefetch_queue_depth,
        **result.preflight,
    }
    if gpu and memory is not None:
        used_mb, method = memory.sample()
        details.update(gpu_peak_reserved_mb=used_mb, gpu_memory_method=method)
    if result.early_stop_reason is not None:
        return non_ok_row("early_stopped", result.early_stop_reason, **details)
    shape = [int(d) for d in last["shape"]]
    expected = [plan.batch_size, 3, *gpu_recipes.output_hw(transform)]
    dtype = str(last["dtype"]).rsplit(".", 1)[-1].lower()
    if shape != expected or dtype not in ("float", "float32"):
        return non_ok_row(
            "error", f"recipe output is {shape} {dtype}, expected {expected} float32", **details
        )
    return ok_row(
        result.throughputs,
        result.times,
        warmup_iterations=plan.warmup_reps,
        num_images=result.images_per_rep,
        output_shape=shape,
        output_dtype="float32",
        **details,
    )


def pipeline_description(transform: str, variant: str) -> str:
    adapter = DaliAdapter()
    spec = catalog.get(transform)
    steps = [
        "fn.readers.file",
        f"fn.decoders.image(device={VARIANTS[variant]!r}, output_type=RGB)",
    ]
    if not spec.is_crop:
        steps.append(adapter.mappings[gpu_recipes.BASE_CROP].call)
    steps.append(adapter.mappings[transform].call)
    steps.append("fn.crop_mirror_normalize(dtype=FLOAT, output_layout='CHW', ImageNet mean/std)")
    return " -> ".join(steps)


def _error_row(exc: BaseException) -> dict[str, Any]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return non_ok_row("error", f"{type(exc).__name__}: {exc}", traceback=tb[-4000:])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    adapter = DaliAdapter()
    transforms = [t for t in args.transforms.split(",") if t]
    for name in transforms:
        catalog.get(name)  # unknown names fail the job loudly, before any measuring
    policy = SlowTransformPolicy(**json.loads(args.policy))
    plan = StreamPlan.for_images(
        args.num_images, args.batch_size, warmup_reps=args.warmups, reps=args.values, policy=policy
    )
    files = media.select_files(args.manifest, args.num_images)
    gpu = args.variant == "dali-gpu"

    import_error: str | None = None
    try:
        adapter.import_library()
    except Exception as exc:
        import_error = f"import failed: {type(exc).__name__}: {exc}"
    has_cuda = import_error is None and cuda_device_count() > 0
    memory: NvmlMemory | None = None
    nvml_error: str | None = None
    device_name = "cpu (DALI CPU backend)"
    if gpu:
        device_name = gpu_recipes.SKIP_NO_CUDA
        if has_cuda:
            try:
                memory = NvmlMemory(args.device_id)
                device_name = memory.name
            except Exception as exc:  # timing still runs; rows say why memory is missing
                nvml_error = f"NVML unavailable: {type(exc).__name__}: {exc}"
                device_name = f"cuda:{args.device_id} ({nvml_error})"
    thread_settings = {
        "policy": GPU_REGIME_THREADS.to_dict(),
        "environment": GPU_REGIME_THREADS.environment(),
        "dali_num_threads": args.num_threads,
    }

    results: dict[str, dict[str, Any]] = {}
    for name in transforms:
        if import_error is not None:
            row = non_ok_row("error", import_error)
        elif not adapter.supports(name):
            row = non_ok_row("unsupported", adapter.unsupported_reason(name))
        elif gpu and not has_cuda:
            row = non_ok_row("skipped", gpu_recipes.SKIP_NO_CUDA)
        else:
            try:
                row = measure_transform(
                    files=files,
                    transform=name,
                    variant=args.variant,
                    plan=plan,
                    num_threads=args.num_threads,
                    device_id=args.device_id,
                    prefetch_queue_depth=args.prefetch_queue_depth,
                    policy=policy,
                    memory=memory,
                )
            except adapters.Unsupported as exc:
                row = non_ok_row("unsupported", str(exc))
            except Exception as exc:  # one failing recipe never loses the others
                row = _error_row(exc)
            if gpu:
                # The recipe's pipeline is gone: return its pooled device memory, so the next
                # recipe's NVML reading is its own.
                gc.collect()
                from nvidia.dali import backend

                backend.ReleaseUnusedMemory()
        row.setdefault("mapping", adapter.mapping_call(name))
        row.update(
            recipe=gpu_recipes.recipe(name),
            scope="decode",
            workers=args.num_threads,
            batch_size=args.batch_size,
            variant=args.variant,
            randomness="per-sample",
            device=device_name,
            decoder=f"fn.decoders.image(device={VARIANTS[args.variant]!r})",
        )
        if nvml_error is not None and row["status"] == "ok":
            row["gpu_memory_method"] = nvml_error
        results[name] = row
        print(status_line(f"{REGIME} | {args.variant}", name, row), file=sys.stderr, flush=True)

    metadata = job_metadata(
        adapter=adapter,
        regime=REGIME,
        scope="decode",
        machine=args.machine,
        manifest=args.manifest,
        num_images=args.num_images,
        benchmark_params={
            "num_images": args.num_images,
            "batch_size": args.batch_size,
            "workers": args.num_threads,
            "num_threads": args.num_threads,
            "prefetch_queue_depth": args.prefetch_queue_depth,
            "device_id": args.device_id if gpu else None,
            "values": args.values,
            "warmups": args.warmups,
            "stream_plan": plan.to_dict(),
            "timer": "time.perf_counter around host-synchronous Pipeline.run() calls",
            "slow_transform_policy": policy.to_dict(),
            "shard": args.shard,
            "transforms": transforms,
        },
        thread_settings=thread_settings,
        env_marker=args.env_marker,
        extra={"variant": args.variant, "device": device_name, "cuda_available": has_cuda},
    )
    write_json_atomic(args.output, result_file(metadata, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
