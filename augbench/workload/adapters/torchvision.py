"""torchvision (transforms.v2): CHW uint8 tensors decoded by torchvision.io.

Native input: what ``torchvision.io.decode_image`` returns, as it is: a 3xHxW uint8 tensor whose
memory is channels-last (HWC, strides ``(1, W*3, 3)``); ``v2.PILToTensor`` gives the same layout.
That is what a torchvision user's transforms receive, so that is what is timed (the micro
regime's ``contiguous`` layout variant shows the row-major alternative).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from augbench.workload.adapters.base import (
    CHW_TENSOR,
    CPU_TRANSFORMS,
    GPU_BATCHES,
    TRAINING_FEED,
    Adapter,
    Composed,
    Mapping,
    Transform,
    photometric_ranges,
)


def _tv(factory: str, *args: Any, **kwargs: Any) -> Transform:
    import torchvision.transforms.v2 as T

    return getattr(T, factory)(*args, **kwargs)


def _bilinear() -> Any:
    import torchvision.transforms.v2 as T

    return T.InterpolationMode.BILINEAR


def _warp(factory: str, *args: Any, **kwargs: Any) -> Transform:
    """A geometric v2 transform that resamples bilinearly and fills with 0 (the catalog's
    interpolation and fill)."""
    return _tv(factory, *args, interpolation=_bilinear(), fill=0, **kwargs)


class TorchvisionAdapter(Adapter):
    name = "torchvision"
    title = "torchvision"
    color = "#D55E00"
    capabilities = frozenset({CPU_TRANSFORMS, GPU_BATCHES, TRAINING_FEED})
    layout_variants = True  # its decoder returns channels-last memory
    # v2 transforms draw one parameter set per call: per image (a loop) or one per batch.
    gpu_randomness = ("per-sample", "batch-shared")
    distribution = "torchvision"
    recorded_distributions = ("torch", "numpy", "pillow", "pyperf")
    node_packages: ClassVar[dict[str, str]] = {"torchvision": "torchvision"}
    node_unfit = (
        "each torchvision wheel is built against one torch release: a node runs its own "
        "torchvision, beside its own torch"
    )
    # uint8 tensors, but colour and blur transforms compute in float32 (the memory model).
    working_value_bytes = 4
    decoded_layout = CHW_TENSOR
    native_format = "torch.Tensor 3xHxW uint8 (RGB), channels-last memory (strides (1, W*3, 3))"
    decoder = "torchvision.io.decode_image(read_file(path), RGB) (libjpeg-turbo for JPEG)"

    def import_library(self) -> None:
        import torch  # noqa: F401
        import torchvision.transforms.v2  # noqa: F401

    def decode(self, path: Path) -> Any:
        from torchvision.io import ImageReadMode, decode_image, read_file

        return decode_image(read_file(str(path)), mode=ImageReadMode.RGB)

    def to_array(self, image: Any) -> np.ndarray:
        return image.permute(1, 2, 0).contiguous().numpy()

    def from_array(self, array: np.ndarray) -> Any:
        import torch

        # decode_image's own layout: an HWC buffer seen as CHW (no copy, strides (1, W*C, C)).
        return torch.from_numpy(np.ascontiguousarray(array)).permute(2, 0, 1)

    # -- step options and composition (pipelines) ----------------------------------------------
    antialias_choices: ClassVar[dict[str, tuple[bool, ...]]] = {"RandomResizedCrop": (True, False)}
    probability_call = (
        "the transform's own p (e.g. v2.RandomHorizontalFlip(p)), else v2.RandomApply([t], p)"
    )
    compose_call = (
        "v2.Compose([<steps>, v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])"
    )

    def with_probability(self, transform: Transform, p: float) -> Transform:
        import torchvision.transforms.v2 as T

        if isinstance(transform, T.Transform) and hasattr(transform, "p"):
            transform.p = p
            return transform
        return T.RandomApply([transform], p=p)

    def compose_definition(self, obj: Any) -> Any:
        return repr(obj)  # v2 transforms print their arguments

    def compose(self, steps: list[Transform], mask: bool = False) -> Composed:
        import torchvision.transforms.v2 as T

        flat: list[Any] = []
        for step in steps:  # the recipe tail is a v2.Compose: its transforms join this one
            flat.extend(step.transforms if isinstance(step, T.Compose) else [step])
        return Composed(T.Compose(flat), self.compose_call, _call)

    def _mappings(self) -> dict[str, Mapping]:
        bl = "InterpolationMode.BILINEAR"
        mappings = {
            "Resize": Mapping(
                f"v2.Resize((512, 512), interpolation={bl}, antialias=True)",
                lambda p: _tv(
                    "Resize", tuple(p["size"]), interpolation=_bilinear(), antialias=True
                ),
                note="Antialiased when downscaling (torchvision's default); OpenCV's "
                "INTER_LINEAR is not.",
            ),
            "RandomCrop224": Mapping(
                "v2.RandomCrop(224)", lambda p: _tv("RandomCrop", tuple(p["size"]))
            ),
            "RandomResizedCrop": Mapping(
                f"v2.RandomResizedCrop(224, scale=(0.08, 1), ratio=(3/4, 4/3), "
                f"interpolation={bl}, antialias=True)",
                lambda p: _tv(
                    "RandomResizedCrop",
                    tuple(p["size"]),
                    scale=tuple(p["scale"]),
                    ratio=tuple(p["ratio"]),
                    interpolation=_bilinear(),
                    antialias=p.get("antialias", True),
                ),
            ),
            "CenterCrop224": Mapping(
                "v2.CenterCrop(224)", lambda p: _tv("CenterCrop", tuple(p["size"]))
            ),
            "HorizontalFlip": Mapping(
                "v2.RandomHorizontalFlip(p=1)", lambda p: _tv("RandomHorizontalFlip", p=1.0)
            ),
            "VerticalFlip": Mapping(
                "v2.RandomVerticalFlip(p=1)", lambda p: _tv("RandomVerticalFlip", p=1.0)
            ),
            "Rotate": Mapping(
                f"v2.RandomRotation(45, interpolation={bl}, fill=0)",
                lambda p: _warp("RandomRotation", p["degrees"]),
            ),
            "Affine": Mapping(
                "v2.RandomAffine(25, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=(-10, 10), "
                f"interpolation={bl}, fill=0)",
                lambda p: _warp(
                    "RandomAffine",
                    p["degrees"],
                    translate=(p["translate"], p["translate"]),
                    scale=tuple(p["scale"]),
                    shear=(-p["shear"], p["shear"]),
                ),
            ),
            "GaussianBlur": Mapping(
                "v2.GaussianBlur(9, sigma=(2.0, 2.0))",
                lambda p: _tv("GaussianBlur", p["kernel_size"], sigma=(p["sigma"], p["sigma"])),
            ),
            "ColorJitter": Mapping(
                "v2.ColorJitter(0.4, 0.4, 0.4, 0.1)",
                lambda p: _tv(
                    "ColorJitter", p["brightness"], p["contrast"], p["saturation"], p["hue"]
                ),
            ),
            "Brightness": Mapping(
                "v2.ColorJitter(brightness=(0.8, 1.2))",
                lambda p: _tv("ColorJitter", brightness=tuple(p["factor"])),
            ),
            "Contrast": Mapping(
                "v2.ColorJitter(contrast=(0.8, 1.2))",
                lambda p: _tv("ColorJitter", contrast=tuple(p["factor"])),
            ),
            "Saturation": Mapping(
                "v2.ColorJitter(saturation=(0.5, 1.5))",
                lambda p: _tv("ColorJitter", saturation=tuple(p["factor"])),
            ),
            "Grayscale": Mapping(
                "v2.Grayscale(num_output_channels=3)",
                lambda p: _tv("Grayscale", num_output_channels=p["num_output_channels"]),
            ),
            "Equalize": Mapping("v2.RandomEqualize(p=1)", lambda p: _tv("RandomEqualize", p=1.0)),
            "JpegCompression": Mapping(
                "v2.JPEG(quality=(50, 95))", lambda p: _tv("JPEG", quality=tuple(p["quality"]))
            ),
            "Posterize": Mapping(
                "v2.RandomPosterize(4, p=1)", lambda p: _tv("RandomPosterize", p["bits"], p=1.0)
            ),
            "Solarize": Mapping(
                "v2.RandomSolarize(128, p=1)",
                lambda p: _tv("RandomSolarize", p["threshold"], p=1.0),
            ),
            "Sharpen": Mapping(
                "v2.RandomAdjustSharpness(2.0, p=1)",
                lambda p: _tv("RandomAdjustSharpness", p["factor"], p=1.0),
            ),
            "Invert": Mapping("v2.RandomInvert(p=1)", lambda p: _tv("RandomInvert", p=1.0)),
            "AutoContrast": Mapping(
                "v2.RandomAutocontrast(p=1)", lambda p: _tv("RandomAutocontrast", p=1.0)
            ),
            "ChannelShuffle": Mapping(
                "v2.RandomChannelPermutation()", lambda p: _tv("RandomChannelPermutation")
            ),
            **_paper_set_mappings(),
        }
        return _mark_multichannel(mappings)

    def _unsupported_reasons(self) -> dict[str, str]:
        return {
            "PadIfNeeded": "torchvision has no pad-to-a-minimum-size transform; v2.Pad takes fixed "
            "widths, and computing them per image would compose the step from helpers",
            "Transpose": "torchvision has no transpose transform (v2.functional has no "
            "transpose kernel); a tensor view is not an image operation",
            "RandomRotate90": "torchvision has no lossless 90-degree rotation; "
            "v2.RandomRotation resamples through an affine grid",
            "ColorJiggle": "torchvision's ColorJitter uses blend formulas (the ColorJitter "
            "row), not Kornia's additive-brightness ColorJiggle",
        }

    # -- DataLoader recipe tail (cpu_dataloader) -------------------------------------------------
    recipe_tail_call = (
        "v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])"
    )

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Transform:
        import torch

        # Images are already uint8 CHW tensors (torchvision.io), so v2.ToTensor's job is the
        # dtype conversion with scaling to [0, 1].
        return _tv(
            "Compose",
            [_tv("ToDtype", torch.float32, scale=True), _tv("Normalize", list(mean), list(std))],
        )

    # -- GPU batches (gpu_dataloader, the training regime's GPU feed) -------------------------
    def gpu_recipe(
        self, built: Transform | None, call: str, randomness: str, device: Any,
        mean: list[float], std: list[float],
    ) -> tuple[Callable[[Any], Any], str]:  # fmt: skip
        normalize = self.recipe_tail(tuple(mean), tuple(std))  # ToDtype + Normalize, batched
        if built is None:
            return normalize, "identity: ToDtype -> Normalize"
        return _batch_apply(built, call, randomness, normalize)

    def gpu_pipeline(
        self, built: list[Transform], calls: str, mask: bool, randomness: str, device: Any,
        mean: list[float], std: list[float],
    ) -> tuple[Callable[[Any], Any], str]:  # fmt: skip
        # The library's own container around the steps (Normalize stays separate: the
        # randomness modes apply the steps per sample or per batch, Normalize per batch).
        chain = _tv("Compose", built)
        normalize = self.recipe_tail(tuple(mean), tuple(std))
        return _batch_apply(chain, f"v2.Compose([{calls}]) ", randomness, normalize)


def _batch_apply(
    fn: Callable[[Any], Any], call: str, randomness: str, normalize: Callable[[Any], Any]
) -> tuple[Callable[[Any], Any], str]:
    """v2 transforms draw one parameter set per call: ``per-sample`` calls ``fn`` once per
    image, ``batch-shared`` once on the batch; then ToDtype + Normalize."""
    import torch

    if randomness == "per-sample":

        def apply(batch: Any) -> Any:
            return normalize(torch.stack([fn(image) for image in batch]))

        return apply, f"torch.stack([{call}(img) for img in batch]) -> ToDtype -> Normalize"

    def apply_shared(batch: Any) -> Any:
        return normalize(fn(batch))

    return apply_shared, f"{call}(batch) -> ToDtype -> Normalize"


def _call(compose: Any, image: Any) -> Any:
    return compose(image)


def _tvf(name: str) -> Any:
    import torchvision.transforms.v2.functional as F

    return getattr(F, name)


def _random_gamma(gamma: tuple[float, float]) -> Transform:
    # torchvision has the operation (F.adjust_gamma) but no random class; the adapter draws the
    # canonical parameter per call, as it does for Pillow.
    adjust = _tvf("adjust_gamma")
    return lambda img: adjust(img, random.uniform(*gamma))


# Operations defined per channel on tensors of any channel count (the 9-channel scenario).
_MULTICHANNEL = frozenset(
    {
        "Resize", "RandomCrop224", "RandomResizedCrop", "CenterCrop224", "HorizontalFlip",
        "VerticalFlip", "Pad", "LongestMaxSize", "SmallestMaxSize", "Rotate", "Affine", "Shear",
        "Perspective", "Elastic", "Erasing", "GaussianBlur", "Invert", "Posterize", "Solarize",
        "Equalize", "ChannelShuffle", "RandomGamma",
        "GaussianNoise",
    }
)  # fmt: skip


def _mark_multichannel(mappings: dict[str, Mapping]) -> dict[str, Mapping]:
    return {name: replace(m, multichannel=name in _MULTICHANNEL) for name, m in mappings.items()}


def _paper_set_mappings() -> dict[str, Mapping]:
    bl = "InterpolationMode.BILINEAR"
    return {
        "Pad": Mapping(
            "v2.Pad(10, fill=0, padding_mode='constant')",
            lambda p: _tv("Pad", p["padding"], fill=0, padding_mode="constant"),
        ),
        "LongestMaxSize": Mapping(
            f"v2.Resize(None, max_size=512, interpolation={bl}, antialias=True)",
            lambda p: _tv(
                "Resize", None, max_size=p["max_size"], interpolation=_bilinear(), antialias=True
            ),
            note="Antialiased when downscaling (torchvision's default).",
        ),
        "SmallestMaxSize": Mapping(
            f"v2.Resize(512, interpolation={bl}, antialias=True)",
            lambda p: _tv("Resize", p["max_size"], interpolation=_bilinear(), antialias=True),
            note="Antialiased when downscaling (torchvision's default).",
        ),
        "Shear": Mapping(
            f"v2.RandomAffine(0, shear=(-20, 20), interpolation={bl}, fill=0)",
            lambda p: _warp("RandomAffine", 0, shear=(-p["shear"], p["shear"])),
        ),
        "Perspective": Mapping(
            f"v2.RandomPerspective(distortion_scale=0.5, p=1, interpolation={bl}, fill=0)",
            lambda p: _warp("RandomPerspective", distortion_scale=p["distortion_scale"], p=1.0),
        ),
        "Elastic": Mapping(
            f"v2.ElasticTransform(alpha=50, sigma=5, interpolation={bl}, fill=0)",
            lambda p: _warp("ElasticTransform", alpha=p["alpha"], sigma=p["sigma"]),
        ),
        "Erasing": Mapping(
            "v2.RandomErasing(p=1, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0)",
            lambda p: _tv(
                "RandomErasing",
                p=1.0,
                scale=tuple(p["scale"]),
                ratio=tuple(p["ratio"]),
                value=p["value"],
            ),
        ),
        "PhotoMetricDistort": Mapping(
            "v2.RandomPhotometricDistort(brightness=(0.875, 1.125), contrast=(0.5, 1.5), "
            "saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=0.5)",
            lambda p: _tv("RandomPhotometricDistort", **photometric_ranges(p), p=p["step_p"]),
            note="p is the probability of each step; the transform itself always runs.",
        ),
        "Hue": Mapping("v2.ColorJitter(hue=0.1)", lambda p: _tv("ColorJitter", hue=p["hue"])),
        "RandomGamma": Mapping(
            "v2.functional.adjust_gamma(img, uniform(0.8, 1.2))",
            lambda p: _random_gamma(tuple(p["gamma"])),
            note="No random class in torchvision: the adapter draws gamma per call.",
        ),
        "GaussianNoise": Mapping(
            "v2.GaussianNoise(mean=0, sigma=0.1, clip=True)",
            lambda p: _tv("GaussianNoise", mean=p["mean"], sigma=p["std"], clip=True),
        ),
    }
