"""DALI regime job: one variant (``dali-gpu`` or ``dali-cpu``), one shard of transforms.

For each transform a DALI pipeline is built (recipe ``RandomCrop224 + T + Normalize``, see
augbench.workload.gpu_recipes; mappings in augbench.workload.adapters.dali):

    fn.readers.file(files=<the staged images>) -> fn.decoders.image(device="mixed" | "cpu", RGB)
    -> fn.crop(224, random position)  [a crop transform replaces this step]
    -> T -> fn.crop_mirror_normalize(float32, CHW, ImageNet mean/std)

and driven through augbench.measuring.engines.streaming for exactly the planned number of batches
(:func:`time_pipeline`). The shard list may include the ``Identity`` baseline (crop + Normalize,
no transform step).

Synchronisation: ``Pipeline.run()`` is called without a ``cuda_stream``; DALI 2.4 documents its
outputs as host-synchronous in that case (``Pipeline.run`` docstring: "If skipped, the results are
host-synchronous"), i.e. when ``run()`` returns, the work that produced the returned batch is
finished, on the GPU too. No further synchronisation is done or claimed. What ``run()`` does not
wait for is the prefetching of later batches (``prefetch_queue_depth``); over a repetition of
many batches that is the pipeline's steady state, which is what is measured. The output's device
(GPU or CPU TensorList), shape and dtype are checked for every row.

GPU memory comes from NVML (this process's used memory, CUDA context included, sampled after the
run; DALI's memory pools do not shrink during a run). It is recorded as ``gpu_nvml_used_mb``,
never in the torch allocator's ``gpu_peak_*`` columns: the two are different quantities.

Whether CUDA is usable is decided once by augbench.cuda_env (runtime: the CUDA major of the
``nvidia-dali-cuda1xy`` wheel). ``dali-gpu`` without a driver or GPU: every row is ``skipped``
("no CUDA device"); with a driver too old for the wheel: ``error`` rows naming both; with
``--gpu required`` either case fails the job. Each measured recipe runs in its own process
(augbench.measuring.engines.skeleton). ``dali-cpu`` (``device_id=None``, CPU operators only) is a
separately labelled variant that runs anywhere.
"""

from __future__ import annotations

from augbench.policy import GPU_REGIME_THREADS

GPU_REGIME_THREADS.apply_environment()  # before DALI / numpy load

import os  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from augbench import cuda_env  # noqa: E402
from augbench.measuring.engines import cli, skeleton  # noqa: E402
from augbench.measuring.engines.streaming import StreamPlan, StreamResult, run_stream  # noqa: E402
from augbench.policy import SlowTransformPolicy  # noqa: E402
from augbench.workload import catalog, gpu_recipes, pipelines  # noqa: E402
from augbench.workload.adapters.dali import DaliAdapter, DaliContext  # noqa: E402

REGIME = "dali"
SYNC_METHOD = (
    "host-synchronous: Pipeline.run() without cuda_stream returns finished outputs "
    "(later batches may be prefetching)"
)
VARIANTS: dict[str, str] = {
    "dali-gpu": "mixed",  # variant -> decoder device; later operators follow their input
    "dali-cpu": "cpu",
}


@dataclass(frozen=True, kw_only=True)
class DaliSettings(skeleton.StreamSettings):
    """A DALI job's settings: the batch-pipeline engines' shared ones (the library is DALI, its
    variant names the backend) and DALI's own."""

    variant: str
    num_threads: int
    prefetch_queue_depth: int
    device_id: int


def parse_args(argv: list[str] | None = None) -> DaliSettings:
    p = cli.engine_parser(
        __doc__,
        library=False,  # the library is DALI; the variant names its backend
        values=True,
        warmups=True,
        pipelines_run="that pipeline's steps in the DALI pipeline",
        gpu="required: a dali-gpu job fails when CUDA is not usable instead of writing rows",
    )
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    p.add_argument("--batch-size", required=True, type=int)
    p.add_argument("--num-threads", required=True, type=int, help="DALI CPU threads")
    p.add_argument("--prefetch-queue-depth", type=int, default=2)
    p.add_argument("--device-id", type=int, default=0, help="CUDA device of dali-gpu")
    args = p.parse_args(argv)
    names = cli.recipe_names(args.transforms, args.pipelines, gpu_recipes.check_name)
    return cli.settings_from(DaliSettings, args, transforms=names)


def build_pipeline(
    files: list[Path],
    transform: str,
    *,
    variant: str,
    batch_size: int,
    num_threads: int,
    device_id: int,
    prefetch_queue_depth: int,
    pipeline: pipelines.Pipeline | None = None,
) -> Any:
    """The recipe as a built DALI pipeline with one output (float32 NCHW batch). With a user
    ``pipeline``, its steps replace ``T`` (a first step that is not a crop gets the base crop
    before it, as a single transform does) and its Normalize's mean/std are used.

    Raises ``adapters.Unsupported`` when DALI has no mapping for ``transform``.
    """
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali.pipeline import Pipeline

    adapter = DaliAdapter()
    identity = transform == gpu_recipes.IDENTITY
    spec = None if identity or pipeline is not None else catalog.get(transform)
    apply = None if spec is None else adapter.build(spec.name, spec.params)
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
        mean, std = gpu_recipes.NORMALIZE_MEAN, gpu_recipes.NORMALIZE_STD
        if pipeline is not None:
            body, tail = pipelines.gpu_steps(pipeline)
            if tail is None:
                raise ValueError(f"pipeline {pipeline.name} does not end with Normalize")
            mean, std = tuple(tail.params["mean"]), tuple(tail.params["std"])
            hw: tuple[int, int] | None = None  # decoded sizes vary per image
            if not gpu_recipes.pipeline_starts_with_crop(body):
                images = base_crop(images, DaliContext(input_hw=None))
                hw = gpu_recipes.base_crop_size()
            for step in body:
                step_fn = adapter.build_step(step.name, step.params, step.options)
                images = step_fn(images, DaliContext(input_hw=hw))
                hw = gpu_recipes.step_output_hw(step.name, step.params, hw or (0, 0))
        elif spec is not None and spec.is_crop:
            images = apply(images, DaliContext(input_hw=None))
        else:
            images = base_crop(images, DaliContext(input_hw=None))
            if apply is not None:
                images = apply(images, DaliContext(input_hw=gpu_recipes.base_crop_size()))
        out = fn.crop_mirror_normalize(
            images,
            dtype=types.FLOAT,
            output_layout="CHW",
            mean=[m * 255.0 for m in mean],
            std=[s * 255.0 for s in std],
        )
        pipe.set_outputs(out)
    pipe.build()
    return pipe


def dali_probe() -> tuple[int, str | None]:
    """(CUDA device count as DALI sees it, NVML name of device 0 where NVML answers)."""
    from nvidia.dali import backend

    count = int(backend.GetCUDADeviceCount())
    name = None
    try:
        import pynvml

        pynvml.nvmlInit()
        raw = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
    except Exception:  # the name is a nicety; the count decides
        pass
    return count, name


def detect_cuda(adapter: DaliAdapter) -> cuda_env.CudaEnv:
    wheel = next((d for d in adapter.versions() if d.startswith("nvidia-dali-cuda")), "")
    return cuda_env.detect(
        cuda_env.dali_runtime(wheel), dali_probe, runtime_source=f"the {wheel} wheel"
    )


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


def time_pipeline(
    pipe: Any, plan: StreamPlan, policy: SlowTransformPolicy, label: str
) -> tuple[StreamResult, dict[str, Any]]:
    """The engine's timed loop over a built pipeline with one output (also used by the tests).

    ``run()`` without ``cuda_stream`` returns host-synchronous outputs, so no sync step is
    needed before a clock stops; each batch's dense tensor is taken inside the window.
    """
    from tqdm import tqdm

    last: dict[str, Any] = {}

    def step() -> int:
        (out,) = pipe.run()
        dense = out.as_tensor()  # the whole batch as one dense tensor, no copy
        last.update(shape=dense.shape(), dtype=dense.dtype, kind=type(out).__name__)
        return len(out)

    bar = tqdm(total=plan.total_batches, desc=label, unit="batch", file=sys.stderr)
    try:
        result = run_stream(step, lambda: None, plan, policy, bar.update)
    finally:
        bar.close()
    return result, last


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
    pipeline: pipelines.Pipeline | None = None,
) -> dict[str, Any]:
    gpu = variant == "dali-gpu"
    memory: NvmlMemory | None = None
    nvml_error: str | None = None
    if gpu:
        try:  # before the pipeline exists, so the device-wide fallback has its baseline
            memory = NvmlMemory(device_id)
        except Exception as exc:  # timing still runs; the row says why memory is missing
            nvml_error = f"NVML unavailable: {type(exc).__name__}: {exc}"
    pipe = build_pipeline(
        files,
        transform,
        variant=variant,
        batch_size=plan.batch_size,
        num_threads=num_threads,
        device_id=device_id,
        prefetch_queue_depth=prefetch_queue_depth,
        pipeline=pipeline,
    )
    result, last = time_pipeline(pipe, plan, policy, f"{REGIME} | {variant} | {transform}")
    details: dict[str, Any] = {
        # A user pipeline's rows carry its name in `pipeline` (the row contract).
        **(
            {"pipeline": pipeline_description(transform, variant)}
            if pipeline is None
            else {"dali_pipeline": user_pipeline_description(pipeline, variant)}
        ),
        "sync_method": SYNC_METHOD,
        "prefetch_queue_depth": prefetch_queue_depth,
        **result.preflight,
    }
    if memory is not None:
        used_mb, method = memory.sample()
        details.update(gpu_nvml_used_mb=used_mb, gpu_memory_method=method)
    elif nvml_error is not None:
        details["gpu_memory_method"] = nvml_error
    shape = [int(d) for d in last["shape"]]
    dtype = str(last["dtype"]).rsplit(".", 1)[-1].lower()
    kind = "GPU" if gpu else "CPU"
    problems = skeleton.output_problems(
        shape=shape,
        expected_shape=[plan.batch_size, 3, *expected_output_hw(transform, pipeline)],
        dtype="float32" if dtype == "float" else dtype,  # DALI's DALIDataType.FLOAT
        expected_dtype="float32",
        device=last["kind"],
        expected_device=f"TensorList{kind}",
    )
    output = {"output_shape": shape, "output_dtype": "float32", "output_device": last["kind"]}
    return skeleton.stream_row(result, plan, details, problems, **output)


def pipeline_description(transform: str, variant: str) -> str:
    adapter = DaliAdapter()
    steps = [
        "fn.readers.file",
        f"fn.decoders.image(device={VARIANTS[variant]!r}, output_type=RGB)",
    ]
    if transform == gpu_recipes.IDENTITY or not catalog.get(transform).is_crop:
        steps.append(adapter.mappings[gpu_recipes.BASE_CROP].call)
    if transform != gpu_recipes.IDENTITY:
        steps.append(adapter.mappings[transform].call)
    steps.append("fn.crop_mirror_normalize(dtype=FLOAT, output_layout='CHW', ImageNet mean/std)")
    return " -> ".join(steps)


def expected_output_hw(transform: str, pipeline: pipelines.Pipeline | None) -> tuple[int, int]:
    if pipeline is None:
        return gpu_recipes.output_hw(transform)
    body, _tail = pipelines.gpu_steps(pipeline)
    # A first crop step sets the size itself (its input size does not matter).
    return gpu_recipes.pipeline_output_hw(body, gpu_recipes.base_crop_size())


def user_pipeline_calls(pipeline: pipelines.Pipeline) -> list[str]:
    adapter = DaliAdapter()
    body, _tail = pipelines.gpu_steps(pipeline)
    calls = [str(adapter.mapping_call(s.name)) for s in body]
    if not gpu_recipes.pipeline_starts_with_crop(body):
        calls.insert(0, adapter.mappings[gpu_recipes.BASE_CROP].call)
    return [*calls, NORMALIZE_CALL]


def user_pipeline_description(pipeline: pipelines.Pipeline, variant: str) -> str:
    steps = [
        "fn.readers.file",
        f"fn.decoders.image(device={VARIANTS[variant]!r}, output_type=RGB)",
        *user_pipeline_calls(pipeline),
    ]
    return " -> ".join(steps)


def pipeline_fields(
    settings: DaliSettings, pipeline: pipelines.Pipeline, device_name: str
) -> dict[str, Any]:
    """What every row of a user pipeline records here (row contract, what is timed)."""
    calls = user_pipeline_calls(pipeline)
    return {
        "scope": "decode",
        "timed": gpu_recipes.pipeline_timed("decode", gpu_recipes.base_crop_size(), REGIME),
        "workers": settings.num_threads,
        "batch_size": settings.batch_size,
        "dali_variant": settings.variant,
        "randomness": "per-sample",
        "device": device_name,
        "decoder": f"fn.decoders.image(device={VARIANTS[settings.variant]!r})",
        **pipelines.row_fields(pipeline, DaliAdapter(), gpu=True),
        # dali-gpu and dali-cpu are separate comparison groups, as for single transforms.
        "variant": f"{pipelines.VARIANT}-{settings.variant}",
        "recipe_calls": calls,
        "mapping": " -> ".join(calls),
    }


NORMALIZE_CALL = "fn.crop_mirror_normalize(dtype=FLOAT, output_layout='CHW', mean/std x 255)"


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    adapter = DaliAdapter()
    inputs = skeleton.job_inputs(settings)
    transforms, policy, plan, files = inputs.transforms, inputs.policy, inputs.plan, inputs.files
    gpu = settings.variant == "dali-gpu"
    import_error = skeleton.import_failure(adapter)
    env: cuda_env.CudaEnv | None = None
    device_name = "cpu (DALI CPU backend)"
    if gpu and import_error is None:
        env = detect_cuda(adapter)
        cuda_env.require(env, settings.gpu, f"{REGIME} job ({settings.variant})")
        device_name = (env.device_name or f"cuda:{settings.device_id}") if env.ok else env.reason
        if env.verdict == "no_device":
            device_name = gpu_recipes.SKIP_NO_CUDA
    thread_settings = {
        **skeleton.thread_record(GPU_REGIME_THREADS),
        "dali_num_threads": settings.num_threads,
    }

    unavailable = None if env is None or env.ok else env.unavailable_row()
    precheck = skeleton.recipe_precheck(adapter, settings.pipelines, import_error, unavailable)
    env_fields = env.row_fields() if env is not None else {}
    job_fields = {  # every single-transform row's, after its mapping and recipe
        "scope": "decode",
        "timed": gpu_recipes.SCOPE_TIMED["decode"].replace(
            "DataLoader workers, collation, pinned host-to-device copy", "the DALI pipeline"
        ),
        "workers": settings.num_threads,
        "batch_size": settings.batch_size,
        "variant": settings.variant,
        "randomness": "per-sample",
        "device": device_name,
        "decoder": f"fn.decoders.image(device={VARIANTS[settings.variant]!r})",
        **env_fields,
    }
    own = {
        "batch_size": settings.batch_size,
        "workers": settings.num_threads,
        "num_threads": settings.num_threads,
        "prefetch_queue_depth": settings.prefetch_queue_depth,
        "device_id": settings.device_id if gpu else None,
    }
    timing = {"timer": f"time.perf_counter around Pipeline.run() calls; {SYNC_METHOD}"}
    params = skeleton.stream_params(settings, inputs, own, timing)
    extra = {
        "variant": settings.variant,
        "device": device_name,
        "cuda_available": bool(env and env.ok),
        **({"cuda_env": env.to_dict()} if env is not None else {}),
    }

    def kwargs(name: str) -> dict[str, Any]:
        return dict(
            files=files,
            transform=name,
            variant=settings.variant,
            plan=plan,
            num_threads=settings.num_threads,
            device_id=settings.device_id,
            prefetch_queue_depth=settings.prefetch_queue_depth,
            policy=policy,
            pipeline=settings.pipelines.get(name),
        )

    def fields(name: str) -> dict[str, Any]:
        if name in settings.pipelines:
            return {
                **pipeline_fields(settings, settings.pipelines[name], device_name),
                **env_fields,
            }
        return {**skeleton.recipe_fields(adapter, name), **job_fields}

    job = skeleton.Job(settings, adapter, REGIME, "decode", f"{REGIME} | {settings.variant}")
    rows = job.run_rows(transforms, precheck, measure_transform, kwargs, fields)
    return job.finish(rows, thread_settings, params, extra)


if __name__ == "__main__":
    sys.exit(main())
