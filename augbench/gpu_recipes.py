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

from typing import Literal

from augbench import catalog

# ImageNet statistics, as fractions of 255 (torchvision's Normalize convention).
NORMALIZE_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
NORMALIZE_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)

BASE_CROP = "RandomCrop224"
Randomness = Literal["per-sample", "batch-shared"]
RANDOMNESS: tuple[str, ...] = ("per-sample", "batch-shared")
SKIP_NO_CUDA = "no CUDA device"

# Randomness modes each gpu_dataloader library can run: Kornia samples per image by design;
# torchvision's v2 transforms draw one parameter set per call, so both modes exist for it.
LIBRARY_RANDOMNESS: dict[str, tuple[str, ...]] = {
    "torchvision": ("per-sample", "batch-shared"),
    "kornia": ("per-sample",),
}


def recipe(transform: str) -> str:
    """The recipe string recorded with every row, e.g. ``RandomCrop224 + Rotate + Normalize``."""
    spec = catalog.get(transform)
    steps = [spec.name] if spec.is_crop else [BASE_CROP, spec.name]
    return " + ".join([*steps, "Normalize"])


def base_crop_size() -> tuple[int, int]:
    return tuple(catalog.get(BASE_CROP).params["size"])  # type: ignore[return-value]


def worker_crop(transform: str, crop_transform_input: int) -> tuple[int, int]:
    """Size of the uint8 crop DataLoader workers cut before the GPU applies ``transform``."""
    if catalog.get(transform).is_crop:
        return (crop_transform_input, crop_transform_input)
    return base_crop_size()


def output_hw(transform: str) -> tuple[int, int]:
    """Height and width of every image the recipe outputs (same in every regime)."""
    spec = catalog.get(transform)
    if "size" in spec.params and spec.name != BASE_CROP:
        return tuple(spec.params["size"])  # type: ignore[return-value]
    return base_crop_size()
