"""GPU DataLoader regime job: torchvision or Kornia on CUDA, one result file per job.

One job = one library x scope x worker count x randomness mode x shard of transforms. For each
transform (recipe ``RandomCrop224 + T + Normalize``, see augbench.workload.gpu_recipes; the shard
list may include the ``Identity`` baseline, crop + Normalize only):

* scope ``memory`` (what the GPU does): the uint8 crop batches of one repetition (every selected
  image once, decoded and cropped once) are stacked and copied to the device before the clock
  starts; the timed window applies ``T`` and Normalize to those resident batches;
* scope ``decode`` (end to end, a separately labelled row): ``torch.utils.data.DataLoader``
  workers read + decode with torchvision.io and cut a fixed-size uint8 CHW crop; default
  collation stacks a batch; ``pin_memory=True`` and ``.to(cuda, non_blocking=True)``, then ``T``
  and Normalize on the device;
* decoder ``nvjpeg`` (scope ``decode``, single transforms; ``--decoder``): the workers only read
  each file's bytes, collated as a list; the main process decodes the batch on the device in one
  ``torchvision.io.decode_jpeg(list, RGB, device)`` call (nvJPEG on CUDA) and cuts the same crop
  there; the row's ``decoder`` says which decoder fed it;
* ``T`` and Normalize: torchvision ``ToDtype(float32, scale=True)`` + ``Normalize``; Kornia
  ``/255`` + ``K.Normalize``; the output materialized by augbench.workload.layout's one rule (copied
  only when it is a view of the batch or not dense, never relaid out); its device and shape are
  checked (an ``error`` row otherwise);
* ``torch.cuda.synchronize()`` before every clock stop (augbench.measuring.engines.streaming);
* peak GPU memory of the torch caching allocator (``max_memory_allocated`` /
  ``max_memory_reserved`` after ``reset_peak_memory_stats``) per row; DALI's NVML figure is a
  different quantity and has its own column.

Each measured recipe runs in its own process (augbench.measuring.engines.skeleton), so a CUDA error
in one recipe is one ``error`` row. Whether CUDA is usable is decided once by augbench.cuda_env:
without a driver or GPU every row is ``skipped`` ("no CUDA device"); with a driver that cannot run
the wheel's CUDA runtime every row is an ``error`` naming both; with ``--gpu required`` either case
fails the job instead. Nothing is run on the CPU in place of the GPU, except behind the
test-only ``--allow-cpu-device`` (the offline node's CPU dry run), whose rows say device cpu.

Randomness: Kornia draws parameters per image (``same_on_batch=False``). torchvision's v2
transforms draw one parameter set per call, so ``per-sample`` loops over the batch (one call per
image) and ``batch-shared`` calls once on the whole batch; the mode is the row's ``randomness``
and ``variant``.

"""

from __future__ import annotations

from augbench.policy import GPU_REGIME_THREADS

GPU_REGIME_THREADS.apply_environment()  # before torch loads; DataLoader workers inherit it

import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from augbench import cuda_env  # noqa: E402
from augbench.measuring.engines import cli, skeleton  # noqa: E402
from augbench.measuring.engines.streaming import StreamPlan, run_stream  # noqa: E402
from augbench.policy import SlowTransformPolicy  # noqa: E402
from augbench.workload import (  # noqa: E402
    adapters,
    catalog,
    decoders,
    gpu_recipes,
    layout,
    pipelines,
)
from augbench.workload.adapters.base import GPU_BATCHES, MASK_THRESHOLD  # noqa: E402

REGIME = "gpu_dataloader"
NORMALIZE_CALL = "Normalize on the device (torchvision ToDtype+Normalize, Kornia /255+K.Normalize)"


@dataclass(frozen=True, kw_only=True)
class GpuDataLoaderSettings(skeleton.StreamSettings, cli.LibraryFlag):
    """A gpu_dataloader job's settings: the batch-pipeline engines' shared ones, the library,
    and the regime's own."""

    scope: str
    workers: int
    randomness: str
    worker_crop: int
    allow_cpu_device: bool
    decoder: str


def parse_args(argv: list[str] | None = None) -> GpuDataLoaderSettings:
    p = cli.engine_parser(
        __doc__,
        library=True,  # a library of the regime, or its second name (A/A runs): checked below
        values=True,
        warmups=True,
        pipelines_run="that pipeline's steps on the device",
        gpu="required: fail the job when CUDA is not usable instead of writing skipped rows",
    )
    p.add_argument("--scope", required=True, choices=["decode", "memory"])
    p.add_argument("--workers", required=True, type=int)
    p.add_argument("--batch-size", required=True, type=int)
    p.add_argument("--randomness", required=True, choices=gpu_recipes.RANDOMNESS)
    p.add_argument("--worker-crop", type=int, default=256, help="input size for crop transforms")
    p.add_argument(
        "--decoder", default=decoders.NATIVE, choices=decoders.DEVICE_NAMES,
        help="native: decode in the workers; nvjpeg: the workers read bytes, the device decodes",
    )  # fmt: skip
    # Tests and the offline node's CPU dry run only (augbench.gpu_node): where no CUDA device is
    # present, measure the same code path on CPU tensors (rows say device cpu) instead of writing
    # skipped rows. Never used by the workflow.
    p.add_argument("--allow-cpu-device", type=cli.as_bool, default=False)
    args = p.parse_args(argv)
    if not adapters.has_capability(args.library, GPU_BATCHES):
        p.error(
            f"--library {args.library}: not one of {sorted(adapters.with_capability(GPU_BATCHES))} "
            "or a second name of one (<library>~<tag>)"
        )
    if args.scope == "memory" and args.workers != 0:
        p.error("--scope memory times batches already on the device: it uses no workers, pass 0")
    if args.decoder != decoders.NATIVE and (args.scope != "decode" or args.pipelines):
        p.error(f"--decoder {args.decoder}: the decode scope's single transforms only")
    allowed = gpu_recipes.randomness_of(args.library)
    if args.randomness not in allowed:
        p.error(
            f"--randomness {args.randomness} is not available for {args.library}; "
            f"allowed: {list(allowed)}"
        )
    names = cli.recipe_names(args.transforms, args.pipelines, gpu_recipes.check_name)
    return cli.settings_from(GpuDataLoaderSettings, args, transforms=names)


# -- worker side (runs in DataLoader worker processes) ----------------------------------------
def decode(path: str) -> Any:
    from torchvision.io import ImageReadMode, decode_image, read_file

    return decode_image(read_file(path), mode=ImageReadMode.RGB)


def random_crop(image: Any, crop_hw: tuple[int, int], name: str) -> Any:
    """A uniformly placed ``crop_hw`` window of a CHW uint8 tensor, as its own contiguous copy."""
    import torch

    _, h, w = image.shape
    ch, cw = crop_hw
    if h < ch or w < cw:
        raise ValueError(f"{name}: image is {w}x{h}, smaller than the {cw}x{ch} worker crop")
    top = int(torch.randint(0, h - ch + 1, ()).item())
    left = int(torch.randint(0, w - cw + 1, ()).item())
    return image[:, top : top + ch, left : left + cw].contiguous()


def read_bytes(path: str) -> Any:
    """A file's bytes as a 1-D uint8 CPU tensor (what decode_jpeg takes, on any device), in
    memory of its own: read_file's tensor maps the file, which a worker cannot hand over to the
    main process through shared memory."""
    import torch

    with open(path, "rb") as fh:
        return torch.frombuffer(bytearray(fh.read()), dtype=torch.uint8)


class FileBytes:
    """Map-style dataset of the decoder ``nvjpeg``: each file's bytes, nothing decoded."""

    def __init__(self, files: list[Path]) -> None:
        self.files = [str(f) for f in files]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> Any:
        return read_bytes(self.files[index])


def as_list(samples: list[Any]) -> list[Any]:
    """Collation of file bytes: they differ in length, so a batch stays a list."""
    return samples


def decode_on_device(data: list[Any], crop_hw: tuple[int, int], device: Any) -> Any:
    """One batch of file bytes decoded on ``device`` in one call (nvJPEG on CUDA) and cut to
    ``crop_hw`` there, stacked as a uint8 BCHW batch."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    images = decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
    return torch.stack([random_crop(image, crop_hw, "an image of the batch") for image in images])


def crop_mask(crop: Any) -> Any:
    """The mask of a pipeline with a mask target: a uint8 1xHxW label map of the crop (first
    channel above ``MASK_THRESHOLD``, the CPU regimes' map); the dataset has no masks."""
    return (crop[:1] > MASK_THRESHOLD).to(crop.dtype)


class CropDataset:
    """Map-style dataset: (read + decode | preloaded image) -> fixed-size uint8 CHW crop, or
    (crop, its mask) with ``with_mask`` (made in the worker, inside the timed window)."""

    def __init__(
        self, files: list[Path], crop_hw: tuple[int, int], scope: str, with_mask: bool = False
    ) -> None:
        self.files = [str(f) for f in files]
        self.crop_hw = crop_hw
        self.scope = scope
        self.with_mask = with_mask
        # Scope memory: decoded once here, before the workers fork (they share the pages).
        self.images = [decode(f) for f in self.files] if scope == "memory" else None

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> Any:
        image = self.images[index] if self.images is not None else decode(self.files[index])
        crop = random_crop(image, self.crop_hw, self.files[index])
        return (crop, crop_mask(crop)) if self.with_mask else crop


def worker_init(_worker_id: int) -> None:
    GPU_REGIME_THREADS.apply_runtime()


def make_loader(
    dataset: CropDataset | FileBytes,
    plan: StreamPlan,
    workers: int,
    pin_memory: bool,
    collate: Callable[[list[Any]], Any] | None = None,
) -> Any:
    """A DataLoader yielding exactly ``plan.total_batches`` full batches (indices cycle)."""
    from torch.utils.data import DataLoader

    n = len(dataset)
    indices = [i % n for i in range(plan.total_batches * plan.batch_size)]
    return DataLoader(
        dataset,  # type: ignore[arg-type]
        batch_size=plan.batch_size,
        sampler=indices,
        num_workers=workers,
        pin_memory=pin_memory,
        drop_last=True,
        worker_init_fn=worker_init if workers > 0 else None,
        collate_fn=collate,
    )


# -- device side ----------------------------------------------------------------------------------
def build_gpu_apply(
    library: str, transform: str, randomness: str, device: Any
) -> tuple[Callable[[Any], Any], str]:
    """``apply(uint8 BCHW batch on device) -> normalized float32 BCHW`` and its description: the
    library's adapter builds it (``Adapter.gpu_recipe``).

    Raises ``adapters.Unsupported`` when the library has no mapping for ``transform``.
    """
    adapter = _gpu_adapter(library)
    mean, std = list(gpu_recipes.NORMALIZE_MEAN), list(gpu_recipes.NORMALIZE_STD)
    if transform == gpu_recipes.IDENTITY:
        return adapter.gpu_recipe(None, "", randomness, device, mean, std)
    built = adapter.build(transform, catalog.get(transform).params)
    call = adapter.mappings[transform].call
    return adapter.gpu_recipe(built, call, randomness, device, mean, std)


def build_pipeline_apply(
    library: str, pipeline: pipelines.Pipeline, randomness: str, device: Any
) -> tuple[Callable[[Any], Any], str]:
    """As :func:`build_gpu_apply` for a user pipeline: its steps (each ``Adapter.build`` with the
    pipeline's parameters, in order) then its Normalize (the step's mean/std) on the device
    (``Adapter.gpu_pipeline``).

    Raises ``adapters.Unsupported`` when the library has no mapping for a step.
    """
    adapter = _gpu_adapter(library)
    body, tail = pipelines.gpu_steps(pipeline)
    if tail is None:
        raise ValueError(f"pipeline {pipeline.name} does not end with Normalize")
    built = [adapter.build_step(step.name, step.params, step.options) for step in body]
    calls = " -> ".join(str(pipelines.step_call(adapter, step)) for step in body)
    mean, std = list(tail.params["mean"]), list(tail.params["std"])
    mask = "mask" in pipeline.targets
    return adapter.gpu_pipeline(built, calls, mask, randomness, device, mean, std)


def _gpu_adapter(library: str) -> adapters.Adapter:
    if not adapters.has_capability(library, GPU_BATCHES):
        raise ValueError(f"{library} is not part of the {REGIME} regime")
    return adapters.get(library)


def resident_batches(
    files: list[Path],
    crop_hw: tuple[int, int],
    plan: StreamPlan,
    device: Any,
    with_mask: bool = False,
) -> list[Any]:
    """Scope ``memory``: one repetition's uint8 crop batches, already on ``device`` (with
    ``with_mask``: (crops, masks) pairs).

    Every selected image is decoded and cropped once (uniform random position); the batches cycle
    through them in order, so one repetition covers each image once, like the decode scope.
    """
    import torch

    crops = [random_crop(decode(str(f)), crop_hw, str(f)) for f in files]
    n = plan.batches_per_rep * plan.batch_size
    ring = [crops[i % len(crops)] for i in range(n)]
    batches: list[Any] = []
    for i in range(0, n, plan.batch_size):
        chunk = ring[i : i + plan.batch_size]
        images = torch.stack(chunk)
        if with_mask:
            masks = torch.stack([crop_mask(crop) for crop in chunk])
            batches.append((images.to(device), masks.to(device)))
        else:
            batches.append(images.to(device))
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # resident before any clock starts
    return batches


def measure_transform(
    *,
    library: str,
    transform: str,
    randomness: str,
    files: list[Path],
    scope: str,
    workers: int,
    plan: StreamPlan,
    worker_crop: int,
    policy: SlowTransformPolicy,
    device: str,
    apply_override: Callable[[Any], Any] | None = None,
    synchronize: bool = True,
    pipeline: pipelines.Pipeline | None = None,
    decoder: str = decoders.NATIVE,
) -> dict[str, Any]:
    """Time one recipe on ``device`` ("cuda:0"; "cpu" runs the same code path on CPU tensors).

    ``apply_override`` replaces the GPU part and ``synchronize=False`` drops the device sync
    before each clock stop: both exist for the sleep test and its negative control only.
    """
    import torch
    from tqdm import tqdm

    GPU_REGIME_THREADS.apply_runtime()  # a fresh recipe process applies the policy itself
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    if pipeline is not None:  # its first step crops from the workers' cut, or the base crop
        body, _tail = pipelines.gpu_steps(pipeline)
        crop_hw = gpu_recipes.pipeline_worker_crop(body, worker_crop)
        expected_hw = gpu_recipes.pipeline_output_hw(body, crop_hw)
    else:
        crop_hw = gpu_recipes.worker_crop(transform, worker_crop)
        expected_hw = gpu_recipes.output_hw(transform)
    if apply_override is None and pipeline is not None:
        apply, description = build_pipeline_apply(library, pipeline, randomness, dev)
    elif apply_override is None:
        apply, description = build_gpu_apply(library, transform, randomness, dev)
    else:
        apply, description = apply_override, "injected"
    last: list[Any] = [None]
    last_mask: list[Any] = [None]
    with_mask = pipeline is not None and "mask" in pipeline.targets
    if scope == "memory":
        ring = resident_batches(files, crop_hw, plan, dev, with_mask)
        position = [0]

        def next_batch() -> Any:
            batch = ring[position[0] % len(ring)]
            position[0] += 1
            return batch

    elif decoder == decoders.NVJPEG:  # bytes from the workers, decoded on the device
        raw = iter(make_loader(FileBytes(files), plan, workers, pin_memory=False, collate=as_list))

        def next_batch() -> Any:
            return decode_on_device(next(raw), crop_hw, dev)

    else:
        dataset = CropDataset(files, crop_hw, scope, with_mask)
        loader = make_loader(dataset, plan, workers, pin_memory=cuda)
        batches = iter(loader)

        def next_batch() -> Any:
            batch = next(batches)
            if with_mask:  # (images, masks), collated as a list
                return tuple(part.to(dev, non_blocking=True) for part in batch)
            return batch.to(dev, non_blocking=True)

    def step() -> int:
        # The one materialization rule of every regime (augbench.workload.layout): a copy only where
        # the output is a view of the batch or not dense, never a relayout. A mask target's output
        # is materialized the same way, against the mask batch.
        batch = next_batch()
        if with_mask:
            images, masks = apply(batch)
            out = layout.materialize(images, batch[0])
            last_mask[0] = layout.materialize(masks, batch[1])
        else:
            out = layout.materialize(apply(batch), batch)
        last[0] = out
        return int(out.shape[0])

    def sync() -> None:
        if cuda and synchronize:
            torch.cuda.synchronize(dev)

    if cuda:
        torch.cuda.empty_cache()  # so the reserved peak belongs to this recipe
        torch.cuda.reset_peak_memory_stats(dev)
    bar = tqdm(
        total=plan.total_batches,
        desc=f"{REGIME} | {library} | {scope} | {transform}",
        unit="batch",
        file=sys.stderr,
    )
    try:
        with torch.inference_mode():
            result = run_stream(step, sync, plan, policy, bar.update)
    finally:
        bar.close()
    memory: dict[str, Any] = {}
    if cuda:
        memory = {
            "gpu_peak_allocated_mb": torch.cuda.max_memory_allocated(dev) / 2**20,
            "gpu_peak_reserved_mb": torch.cuda.max_memory_reserved(dev) / 2**20,
            "gpu_memory_method": "torch caching allocator: max_memory_allocated/reserved since "
            "reset_peak_memory_stats (excludes the CUDA context)",
        }
    nvjpeg = scope == "decode" and decoder == decoders.NVJPEG
    details = {
        "gpu_ops": description,
        "worker_crop": list(crop_hw),
        "input": "resident uint8 batches"
        if scope == "memory"
        else "DataLoader of file bytes, decoded on the device"
        if nvjpeg
        else "DataLoader, pinned copy",
        "pin_memory": cuda and scope == "decode" and not nvjpeg,
        "synchronize": "torch.cuda.synchronize() before every clock stop" if cuda else "none (CPU)",
        **memory,
        **result.preflight,
    }
    out = last[0]
    shape, dtype = list(out.shape), str(out.dtype).replace("torch.", "")
    problems = skeleton.output_problems(
        shape=shape,
        expected_shape=[plan.batch_size, 3, *expected_hw],
        dtype=dtype,
        expected_dtype="float32",
        device=out.device.type,
        expected_device=dev.type,
    )
    if with_mask:
        mask = last_mask[0]
        mask_shape = list(mask.shape)
        details["mask_output_shape"] = mask_shape
        if mask_shape != [plan.batch_size, 1, *expected_hw] or mask.device.type != dev.type:
            problems.append(
                f"mask output is {mask_shape} on {mask.device.type}, expected "
                f"{[plan.batch_size, 1, *expected_hw]} on {dev.type}"
            )
    output = {"output_shape": shape, "output_dtype": dtype, "output_device": str(out.device)}
    return skeleton.stream_row(result, plan, details, problems, **output)


def decoder_fields(settings: GpuDataLoaderSettings) -> dict[str, str]:
    """A row's ``decoder`` (the declared name: augbench.workload.decoders.DEVICE_DECODERS, a group
    column of the tables) and ``decoder_call`` (what decoded, and where the clock stands)."""
    call = decoders.device_decoder(settings.decoder).call
    if settings.scope == "memory":
        call = f"{call}, before the clock"
    return {"decoder": settings.decoder, "decoder_call": call}


def pipeline_fields(
    settings: GpuDataLoaderSettings,
    adapter: adapters.Adapter,
    pipeline: pipelines.Pipeline,
    device_name: str | None,
    env: cuda_env.CudaEnv,
) -> dict[str, Any]:
    """What every row of a user pipeline records here: the row contract (``pipeline``,
    ``transform``, ``variant: pipeline``), the randomness mode, and exactly what is timed."""
    body, _tail = pipelines.gpu_steps(pipeline)
    worker_hw = gpu_recipes.pipeline_worker_crop(body, settings.worker_crop)
    return {
        "scope": settings.scope,
        "timed": gpu_recipes.pipeline_timed(settings.scope, worker_hw, REGIME),
        "worker_crop": list(worker_hw),
        "workers": settings.workers,
        "batch_size": settings.batch_size,
        "randomness": settings.randomness,
        "device": device_name,
        **decoder_fields(settings),
        **env.row_fields(),
        **pipelines.row_fields(pipeline, adapter, gpu=True),
        # Each randomness mode is its own comparison group, as for single transforms: a
        # batch-shared row is never ranked against a per-sample one.
        "variant": f"{pipelines.VARIANT}-{settings.randomness}",
        # The steps' calls, then the regime's own Normalize on the device (gpu_ops has the
        # measured row's exact chain); not the CPU recipe tail.
        "recipe_calls": [*(adapter.mapping_call(s.name) for s in body), NORMALIZE_CALL],
        "mapping": " -> ".join(
            str(c) for c in [*(adapter.mapping_call(s.name) for s in body), NORMALIZE_CALL]
        ),
    }


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    adapter = adapters.get(settings.library)
    inputs = skeleton.job_inputs(settings)
    transforms, policy, plan, files = inputs.transforms, inputs.policy, inputs.plan, inputs.files

    env = cuda_env.detect_torch()  # imports torch only where a driver is there to probe
    cuda_env.require(env, settings.gpu, f"{REGIME} job ({settings.library}, {settings.scope})")
    cpu_stand_in = settings.allow_cpu_device and env.verdict == "no_device"
    if env.verdict != "no_device" or cpu_stand_in:
        import torch  # noqa: F401  (loaded before the thread policy is applied to it)
    thread_settings = {"policy": GPU_REGIME_THREADS.to_dict(), **GPU_REGIME_THREADS.apply_runtime()}
    device_name = env.device_name if env.ok else f"{env.verdict}: {env.reason}"
    if env.verdict == "no_device":
        device_name = gpu_recipes.SKIP_NO_CUDA
    if cpu_stand_in:
        device_name = "cpu (--allow-cpu-device: no CUDA device, the GPU code path on CPU tensors)"
    measured = env.ok or cpu_stand_in
    # Without a usable GPU nothing of the library runs: every row is the unavailable row, and
    # importing the library (torchvision: seconds) would only delay writing it. An import failure
    # still shows here on a GPU machine, and in the same env's CPU regimes everywhere.
    import_error = skeleton.import_failure(adapter) if measured else None
    unavailable = None if measured else env.unavailable_row()
    precheck = skeleton.recipe_precheck(adapter, settings.pipelines, import_error, unavailable)
    nvjpeg = settings.decoder == decoders.NVJPEG
    job_fields = {  # every single-transform row's, after its mapping and recipe
        "scope": settings.scope,
        "timed": gpu_recipes.NVJPEG_TIMED if nvjpeg else gpu_recipes.SCOPE_TIMED[settings.scope],
        "workers": settings.workers,
        "batch_size": settings.batch_size,
        "variant": settings.randomness,
        "randomness": settings.randomness,
        "device": device_name,
        **decoder_fields(settings),
        **env.row_fields(),
    }
    own = {
        "workers": settings.workers,
        "decoder": settings.decoder,
        "batch_size": settings.batch_size,
        "randomness": settings.randomness,
        "worker_crop_for_crop_transforms": settings.worker_crop,
    }
    timing = {
        "timed": gpu_recipes.SCOPE_TIMED[settings.scope],
        "timer": "time.perf_counter, torch.cuda.synchronize() before every stop",
    }
    params = skeleton.stream_params(settings, inputs, own, timing)
    extra = {
        "variant": settings.randomness,
        "device": device_name,
        "cuda_available": env.ok,
        "cpu_stand_in": cpu_stand_in,
        "torch_cuda_version": env.cuda_runtime,
        "cuda_env": env.to_dict(),
    }

    def kwargs(name: str) -> dict[str, Any]:
        return dict(
            library=settings.library,
            transform=name,
            randomness=settings.randomness,
            files=files,
            scope=settings.scope,
            workers=settings.workers,
            plan=plan,
            worker_crop=settings.worker_crop,
            policy=policy,
            device="cpu" if cpu_stand_in else "cuda:0",
            pipeline=settings.pipelines.get(name),
            decoder=settings.decoder,
        )

    def fields(name: str) -> dict[str, Any]:
        if name in settings.pipelines:
            return pipeline_fields(settings, adapter, settings.pipelines[name], device_name, env)
        return {**skeleton.recipe_fields(adapter, name), **job_fields}

    label = f"{REGIME} | {settings.library} | {settings.scope} | {settings.randomness}"
    job = skeleton.Job(settings, adapter, REGIME, settings.scope, label)
    rows = job.run_rows(transforms, precheck, measure_transform, kwargs, fields)
    return job.finish(rows, thread_settings, params, extra)


if __name__ == "__main__":
    sys.exit(main())
