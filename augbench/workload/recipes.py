"""Training-style recipes of the DataLoader regimes, built from catalog transforms.

A recipe is keyed by one catalog transform ``T``:

- ``RandomCrop224 + T + Normalize + ToTensor`` when ``T`` is not a crop;
- ``T + Normalize + ToTensor`` when ``T`` is a crop (it replaces the crop).

Every step before the tail is the catalog transform as the library's adapter builds it; the tail
is the library's own Normalize/ToTensor equivalent (``Adapter.recipe_tail``), which turns the
library's native image into a float32 3xHxW torch tensor normalized with ImageNet statistics, so
PyTorch's default collation stacks fixed-shape batches.
"""

from __future__ import annotations

from augbench.workload import catalog

# ImageNet channel statistics on the [0, 1] scale (the torchvision reference training recipe).
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)

# The crop every non-crop recipe starts with: it gives every sample the same 224x224 shape.
BASE_CROP = "RandomCrop224"
# The side of every recipe's samples: the base crop's, and every crop transform's output size
# (the memory model sizes a DataLoader's batches with it:
# augbench.planning.regimes.cpu_dataloader.dataloader_memory).
OUTPUT_SIZE = 224
TAIL: tuple[str, ...] = ("Normalize", "ToTensor")


def steps(transform: str) -> list[str]:
    """Catalog transforms applied before the tail, in order."""
    spec = catalog.get(transform)
    return [spec.name] if spec.is_crop else [BASE_CROP, spec.name]


def recipe_name(transform: str) -> str:
    """Human-readable recipe, e.g. ``RandomCrop224 + HorizontalFlip + Normalize + ToTensor``."""
    return " + ".join([*steps(transform), *TAIL])
