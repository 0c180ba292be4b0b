"""The recipe the GPU regimes time, defined once for gpu_dataloader and dali.

Every recipe is ``RandomCrop224 + <T> + Normalize`` (ImageNet mean/std, float32 CHW output), and a
crop transform replaces the RandomCrop224 step, as in the CPU DataLoader regime. What differs by
regime is only where each step runs:

* gpu_dataloader: DataLoader workers read + decode and cut a fixed-size uint8 crop (so the
  default collation can stack a batch); the batch is copied to pinned memory, sent to the GPU,
  and there ``T`` and Normalize run. For a crop transform the workers cut a larger fixed-size
  crop (``worker_crop``) for ``T`` to crop from, because whole images of different sizes cannot be
  collated into one tensor.
* dali: the DALI pipeline reads, decodes, crops, applies ``T`` and normalizes; DALI handles
  variable-size batches, so a crop transform works on the whole decoded image.
"""

from __future__ import annotations

from typing import Any, Literal

from augbench.cuda_env import SKIP_NO_CUDA as SKIP_NO_CUDA  # the skip reason is cuda_env's
from augbench.workload import adapters, catalog
from augbench.workload.adapters.base import GPU_BATCHES

# ImageNet statistics, as fractions of 255 (torchvision's Normalize convention).
NORMALIZE_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
NORMALIZE_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)

BASE_CROP = "RandomCrop224"
# The GPU baseline: the base crop and Normalize with no transform between them, measured per
# library and scope, so a reader sees how much of a row is transport and how much the transform.
IDENTITY = "Identity"
Randomness = Literal["per-sample", "batch-shared"]
RANDOMNESS: tuple[str, ...] = ("per-sample", "batch-shared")

# What each scope of the GPU regimes times (recorded as the row's `timed` field).
SCOPE_TIMED: dict[str, str] = {
    "memory": "the transform and Normalize on uint8 crop batches already resident on the device "
    "(cut and copied before the clock starts; no decode, no host-to-device copy)",
    "decode": "end to end: read + decode + crop in DataLoader workers, collation, pinned "
    "host-to-device copy, then the transform and Normalize on the device",
}
# The decode scope with the nvjpeg decoder (augbench.workload.decoders.DEVICE_DECODERS).
NVJPEG_TIMED = (
    "end to end: the files' bytes read in DataLoader workers, collated as a list; one batched "
    "torchvision.io.decode_jpeg on the device (nvJPEG), the crop on the device, then the "
    "transform and Normalize on the device"
)

# Library calls that cannot run on CUDA tensors, found by reading the library's code (no GPU
# here to find them by failing): rows are `unsupported` with the reason, never silent CPU work.
GPU_UNSUPPORTED: dict[tuple[str, str], str] = {
    ("torchvision", "JpegCompression"): (
        "v2.JPEG cannot run on CUDA tensors in torchvision 0.28: encode_jpeg of a CUDA image "
        "returns CUDA bytes (nvJPEG) and decode_jpeg refuses input that is not on the CPU; a "
        "CPU round trip would not be a GPU transform"
    ),
}


def randomness_of(library: str) -> tuple[str, ...]:
    """The randomness modes the GPU DataLoader can run a library in, its default first (its
    declaration's ``gpu_randomness``; none for a library without GPU batches)."""
    known = adapters.has_capability(library, GPU_BATCHES)
    return adapters.declared(library).gpu_randomness if known else ()


def check_name(transform: str) -> None:
    """Unknown names fail a job loudly, before any measuring."""
    if transform != IDENTITY:
        catalog.get(transform)


def gpu_unsupported_reason(library: str, transform: str) -> str | None:
    return GPU_UNSUPPORTED.get((adapters.base_of(library), transform))


def unsupported_reason(adapter: Any, transform: str) -> str | None:
    """Why ``adapter``'s library cannot run ``transform`` in a GPU regime, or None (Identity
    always runs)."""
    if transform == IDENTITY:
        return None
    if not adapter.supports(transform):
        return str(adapter.unsupported_reason(transform))
    return gpu_unsupported_reason(adapter.name, transform)


def recipe(transform: str) -> str:
    """The recipe string recorded with every row, e.g. ``RandomCrop224 + Rotate + Normalize``."""
    if transform == IDENTITY:
        return f"{BASE_CROP} + Normalize (identity baseline)"
    spec = catalog.get(transform)
    steps = [spec.name] if spec.is_crop else [BASE_CROP, spec.name]
    return " + ".join([*steps, "Normalize"])


def base_crop_size() -> tuple[int, int]:
    return tuple(catalog.get(BASE_CROP).params["size"])  # type: ignore[return-value]


def worker_crop(transform: str, crop_transform_input: int) -> tuple[int, int]:
    """Size of the uint8 crop DataLoader workers cut before the GPU applies ``transform``."""
    if transform != IDENTITY and catalog.get(transform).is_crop:
        return (crop_transform_input, crop_transform_input)
    return base_crop_size()


def output_hw(transform: str) -> tuple[int, int]:
    """Height and width of every image the recipe outputs (same in every regime).

    Size-changing transforms act on the square base crop: Pad adds its padding on every side,
    LongestMaxSize and SmallestMaxSize scale the square to ``max_size`` on both sides.
    """
    h, w = base_crop_size()
    if transform == IDENTITY:
        return h, w
    spec = catalog.get(transform)
    if "size" in spec.params and spec.name != BASE_CROP:
        return tuple(spec.params["size"])  # type: ignore[return-value]
    if spec.name == "Pad":
        pad = int(spec.params["padding"])
        return h + 2 * pad, w + 2 * pad
    if spec.name in ("LongestMaxSize", "SmallestMaxSize"):
        side = int(spec.params["max_size"])
        return side, side
    return h, w


# -- user pipelines (augbench.workload.pipelines) in the GPU regimes -------------------------------
def step_output_hw(name: str, params: dict[str, Any], hw: tuple[int, int]) -> tuple[int, int]:
    """Height and width after one step on ``hw`` images (the rules of :func:`output_hw`, on any
    input size): a ``size`` parameter is the output, PadIfNeeded pads up to it, Pad adds its
    padding, Longest/SmallestMaxSize scale the longest/shortest side to ``max_size``."""
    h, w = hw
    if name == "PadIfNeeded":
        th, tw = params["size"]
        return max(h, int(th)), max(w, int(tw))
    if "size" in params:
        return int(params["size"][0]), int(params["size"][1])
    if name == "Pad":
        pad = int(params["padding"])
        return h + 2 * pad, w + 2 * pad
    if name in ("LongestMaxSize", "SmallestMaxSize"):
        side = max(h, w) if name == "LongestMaxSize" else min(h, w)
        scale = int(params["max_size"]) / side
        return round(h * scale), round(w * scale)
    return h, w


def pipeline_starts_with_crop(steps: list[Any]) -> bool:
    # A diagnostic first step (Sleep) is not in the catalog: not a crop (its row is unsupported).
    first = catalog.CANDIDATES.get(steps[0].name) if steps else None
    return first is not None and first.is_crop


def pipeline_worker_crop(steps: list[Any], crop_transform_input: int) -> tuple[int, int]:
    """The fixed-size uint8 crop gpu_dataloader workers cut before a pipeline's GPU steps:
    ``crop_transform_input`` square when the first step is a crop (it crops from that), else the
    base crop (224), as for a single transform."""
    if pipeline_starts_with_crop(steps):
        return (crop_transform_input, crop_transform_input)
    return base_crop_size()


def pipeline_output_hw(steps: list[Any], input_hw: tuple[int, int]) -> tuple[int, int]:
    """Height and width of every image a pipeline outputs from ``input_hw`` inputs."""
    hw = input_hw
    for step in steps:
        hw = step_output_hw(step.name, step.params, hw)
    return hw


def pipeline_timed(scope: str, worker_hw: tuple[int, int], regime: str) -> str:
    """The ``timed`` field of a pipeline row: what runs inside the clock, and what was cut."""
    h, w = worker_hw
    if regime == "dali":
        return (
            "end to end in one DALI pipeline: read + decode, then the pipeline's steps (a first "
            f"step that is not a crop gets a random {w}x{h} crop before it), then Normalize "
            "(fn.crop_mirror_normalize)"
        )
    cut = f"a random {w}x{h} uint8 crop cut in DataLoader workers"
    if scope == "memory":
        return (
            f"the pipeline's steps and Normalize on uint8 batches already resident on the device "
            f"({cut.replace('cut in DataLoader workers', 'cut')} per image before the clock "
            "starts; no decode, no host-to-device copy)"
        )
    return (
        f"end to end: read + decode and {cut}, collation, pinned host-to-device copy, then the "
        "pipeline's steps and Normalize on the device"
    )
