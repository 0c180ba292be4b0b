"""Kornia (kornia.augmentation): float32 1x3xHxW tensors in [0, 1], decoded by kornia.io.

Native input: what Kornia's documented reader gives its users, ``kornia.io.load_image(path,
ImageLoadType.RGB32)`` (kornia-rs; float32 3xHxW in [0, 1]) with a batch axis added (``[None]``,
as Kornia's own examples do). Its memory is channels-last: strides ``(3*H*W, 1, W*3, 3)``. The
pixels equal torchvision's ``decode_image`` / 255 exactly (checked on the default dataset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from augbench.workload.adapters.base import (
    BCHW_FLOAT,
    CPU_TRANSFORMS,
    GPU_BATCHES,
    MASK_THRESHOLD,
    TRAINING_FEED,
    Adapter,
    Composed,
    Mapping,
    Transform,
)


def _to_unit_float(image: Any) -> Any:
    """uint8 -> float32 in [0, 1], keeping the memory order (kornia.io's RGB32 conversion)."""
    return image.float().div_(255.0)


def _k(factory: str, *args: Any, **kwargs: Any) -> Transform:
    import kornia.augmentation as K

    return getattr(K, factory)(*args, **kwargs)


class KorniaAdapter(Adapter):
    name = "kornia"
    title = "Kornia"
    color = "#009E73"
    capabilities = frozenset({CPU_TRANSFORMS, GPU_BATCHES, TRAINING_FEED})
    layout_variants = True  # its decoder returns channels-last memory
    gpu_randomness = ("per-sample",)  # its augmentations sample per image by design
    distribution = "kornia"
    recorded_distributions = ("kornia-rs", "torch", "torchvision", "numpy", "pyperf")
    # Pure-Python Kornia and kornia-rs's wheel need no particular torch: they travel to a GPU node.
    node_packages: ClassVar[dict[str, str]] = {"kornia": "kornia", "kornia-rs": "kornia_rs"}
    value_bytes = 4  # float32
    working_value_bytes = 4
    decoded_layout = BCHW_FLOAT
    native_format = (
        "torch.Tensor 1x3xHxW float32 in [0, 1], channels-last memory (strides (3HW, 1, 3W, 3))"
    )
    decoder = "kornia.io.load_image(path, ImageLoadType.RGB32)[None] (kornia-rs)"

    def import_library(self) -> None:
        import kornia.augmentation  # noqa: F401
        import torch  # noqa: F401

    def decode(self, path: Path) -> Any:
        import kornia.io

        return kornia.io.load_image(str(path), kornia.io.ImageLoadType.RGB32, "cpu")[None]

    def decode_8bit(self, path: Path) -> Any:
        import kornia.io

        return kornia.io.load_image(str(path), kornia.io.ImageLoadType.RGB8, "cpu")[None]

    # What RGB32 adds to RGB8, exactly (same pixels and strides): timed by the pipeline
    # breakdown as the first step, as the other libraries time their own float conversion.
    input_conversion = ("to float32 [0, 1] (what kornia.io's RGB32 decode adds)", _to_unit_float)

    def to_array(self, image: Any) -> np.ndarray:
        import torch

        return (image[0] * 255.0).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).numpy()

    def from_array(self, array: np.ndarray) -> Any:
        import torch

        # load_image's own layout: the float conversion keeps the HWC memory order of the
        # decoded buffer (strides (3HW, 1, 3W, 3)), the batch axis is a view.
        chw = torch.from_numpy(np.ascontiguousarray(array)).permute(2, 0, 1)
        return chw.float().div_(255.0)[None]

    # -- mask target (pipelines) ---------------------------------------------------------------
    driven_targets = frozenset({"mask"})
    gpu_driven_targets = frozenset({"mask"})  # engines/gpu_dataloader.py: same joint call
    mask_call = (
        "K.AugmentationSequential(step, data_keys=['input', 'mask'])(image, mask) "
        "(mask: float32 1x1xHxW in {0, 1})"
    )

    def make_mask(self, image: Any) -> Any:
        import torch

        if image.dtype == torch.uint8:  # decode_8bit's image (the pipeline breakdown's input)
            return (image[:, :1] > MASK_THRESHOLD).float()
        # Pixels are v / 255 for 8-bit values v: v > MASK_THRESHOLD exactly where v / 255 is above
        # (MASK_THRESHOLD + 0.5) / 255, the same map as the other libraries'.
        return (image[:, :1] > (MASK_THRESHOLD + 0.5) / 255.0).float()

    def with_mask(self, transform: Transform) -> Any:
        """Kornia's own joint API: one ``AugmentationSequential`` per step (the breakdown times
        steps one by one), which applies the step's geometry to the mask with nearest
        resampling and leaves it alone for intensity steps. Plain functions (the recipe tail,
        ``unsharp_mask``) have no mask meaning."""
        import torch

        if not isinstance(transform, torch.nn.Module):
            return None
        import kornia.augmentation as K

        # Called as joint(image, mask), it returns [image, mask].
        return K.AugmentationSequential(transform, data_keys=["input", "mask"])

    # -- step options and composition (pipelines) ----------------------------------------------
    antialias_choices: ClassVar[dict[str, tuple[bool, ...]]] = {"RandomResizedCrop": (False,)}
    antialias_reasons: ClassVar[dict[str, str]] = {
        "RandomResizedCrop": "K.RandomResizedCrop has no antialias option (kornia 0.9 resizes "
        "the crop without low-pass filtering)",
    }
    probability_call = "K.<Step>(..., p=p)"
    compose_call = (
        "K.AugmentationSequential(<steps>, K.Normalize(mean, std), data_keys=[...])(x)[0]"
    )

    def with_probability(self, transform: Transform, p: float) -> Transform:
        module = _augmentation_with_p(transform)
        if module is None:
            return super().with_probability(transform, p)
        module.p = p  # read at every call (kornia's batch probability generator)
        return transform

    def compose(self, steps: list[Transform], mask: bool = False) -> Composed:
        import torch

        modules = [getattr(step, "kornia_module", step) for step in steps]
        if not all(isinstance(m, torch.nn.Module) for m in modules):
            # A plain function step (unsharp_mask, a diagnostic sleep): no container holds it.
            return super().compose(steps, mask)
        import kornia.augmentation as K

        keys = ["input", "mask"] if mask else ["input"]
        sequence = K.AugmentationSequential(*modules, data_keys=keys)
        return Composed(sequence, self.compose_call, _compose_mask if mask else _compose_image)

    def _mappings(self) -> dict[str, Mapping]:
        mappings = {
            "Resize": Mapping(
                "K.Resize((512, 512), align_corners=False)",
                lambda p: _k("Resize", tuple(p["size"]), align_corners=False),
                note="Not antialiased when downscaling. align_corners=False: the half-pixel grid "
                "of OpenCV, torchvision and Pillow (Kornia's default True stretches corners).",
            ),
            "RandomCrop224": Mapping(
                "K.RandomCrop((224, 224), p=1)",
                lambda p: _k("RandomCrop", tuple(p["size"]), p=1.0),
            ),
            "RandomResizedCrop": Mapping(
                "K.RandomResizedCrop((224, 224), scale=(0.08, 1), ratio=(3/4, 4/3), p=1)",
                lambda p: _k(
                    "RandomResizedCrop",
                    tuple(p["size"]),
                    scale=tuple(p["scale"]),
                    ratio=tuple(p["ratio"]),
                    p=1.0,
                ),
            ),
            "CenterCrop224": Mapping(
                "K.CenterCrop((224, 224), p=1)",
                lambda p: _k("CenterCrop", tuple(p["size"]), p=1.0),
            ),
            "HorizontalFlip": Mapping(
                "K.RandomHorizontalFlip(p=1)", lambda p: _k("RandomHorizontalFlip", p=1.0)
            ),
            "VerticalFlip": Mapping(
                "K.RandomVerticalFlip(p=1)", lambda p: _k("RandomVerticalFlip", p=1.0)
            ),
            "Rotate": Mapping(
                "K.RandomRotation(degrees=45, resample='bilinear', p=1)",
                lambda p: _k("RandomRotation", degrees=p["degrees"], resample="bilinear", p=1.0),
            ),
            "Affine": Mapping(
                "K.RandomAffine(degrees=25, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=10, "
                "resample='bilinear', p=1)",
                lambda p: _k(
                    "RandomAffine",
                    degrees=p["degrees"],
                    translate=(p["translate"], p["translate"]),
                    scale=tuple(p["scale"]),
                    shear=p["shear"],
                    resample="bilinear",
                    p=1.0,
                ),
            ),
            "GaussianBlur": Mapping(
                "K.RandomGaussianBlur((9, 9), (2.0, 2.0), p=1)",
                lambda p: _k(
                    "RandomGaussianBlur",
                    (p["kernel_size"], p["kernel_size"]),
                    (p["sigma"], p["sigma"]),
                    p=1.0,
                ),
            ),
            "ColorJitter": Mapping(
                "K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1)",
                lambda p: _k(
                    "ColorJitter", p["brightness"], p["contrast"], p["saturation"], p["hue"], p=1.0
                ),
            ),
            "Brightness": Mapping(
                "K.ColorJitter(brightness=(0.8, 1.2), p=1)",
                lambda p: _k("ColorJitter", brightness=tuple(p["factor"]), p=1.0),
                note="K.ColorJitter carries torchvision's multiplicative formula; "
                "K.RandomBrightness is additive (x + factor - 1) and is not used.",
            ),
            "Contrast": Mapping(
                "K.ColorJitter(contrast=(0.8, 1.2), p=1)",
                lambda p: _k("ColorJitter", contrast=tuple(p["factor"]), p=1.0),
                note="Blends with the grey mean as torchvision does; K.RandomContrast scales raw "
                "values and is not used.",
            ),
            "Saturation": Mapping(
                "K.ColorJitter(saturation=(0.5, 1.5), p=1)",
                lambda p: _k("ColorJitter", saturation=tuple(p["factor"]), p=1.0),
            ),
            "Grayscale": Mapping("K.RandomGrayscale(p=1)", lambda p: _k("RandomGrayscale", p=1.0)),
            "Equalize": Mapping("K.RandomEqualize(p=1)", lambda p: _k("RandomEqualize", p=1.0)),
            "JpegCompression": Mapping(
                "K.RandomJPEG(jpeg_quality=(50, 95), p=1)",
                lambda p: _k(
                    "RandomJPEG", jpeg_quality=tuple(float(q) for q in p["quality"]), p=1.0
                ),
                note="Differentiable JPEG approximation in float, not a libjpeg round trip.",
            ),
            "Posterize": Mapping(
                "K.RandomPosterize(bits=(4, 4), p=1)",
                lambda p: _k("RandomPosterize", bits=(float(p["bits"]),) * 2, p=1.0),
                note="A scalar bits=4 would draw bits from (4, 8); the (4, 4) range fixes it.",
            ),
            "Solarize": Mapping(
                "K.RandomSolarize(thresholds=0.0, additions=0.0, p=1)",
                lambda p: _k("RandomSolarize", thresholds=0.0, additions=0.0, p=1.0),
                note="thresholds is a deviation from 0.5; 0.0 gives the fixed 0.5 threshold.",
            ),
            "Sharpen": Mapping(
                "K.RandomSharpness(sharpness=(2.0, 2.0), p=1)",
                lambda p: _k("RandomSharpness", sharpness=(p["factor"], p["factor"]), p=1.0),
            ),
            "Invert": Mapping("K.RandomInvert(p=1)", lambda p: _k("RandomInvert", p=1.0)),
            "AutoContrast": Mapping(
                "K.RandomAutoContrast(p=1)", lambda p: _k("RandomAutoContrast", p=1.0)
            ),
            "ChannelShuffle": Mapping(
                "K.RandomChannelShuffle(p=1)", lambda p: _k("RandomChannelShuffle", p=1.0)
            ),
            # A pipeline step (catalog.pipeline_only): never in the paper set.
            "PadIfNeeded": Mapping(
                "K.PadTo((512, 512), pad_mode='constant', pad_value=0, crop_if_exceeds=False)",
                lambda p: _k(
                    "PadTo",
                    tuple(p["size"]),
                    pad_mode="constant",
                    pad_value=0.0,
                    crop_if_exceeds=False,
                ),
                note="Pads on the right and bottom (image at the top-left), as the catalog states.",
            ),
            **_paper_set_mappings(),
        }
        return _mark_multichannel(mappings)

    def _unsupported_reasons(self) -> dict[str, str]:
        return {
            "Pad": "K.PadTo pads only on the right and bottom up to a target size; Kornia has "
            "no symmetric fixed-width pad augmentation",
            "Transpose": "Kornia has no transpose augmentation",
            "OpticalDistortion": "Kornia has no lens-distortion augmentation with a radial "
            "coefficient; K.RandomFisheye scales coordinates by 1 + r**gamma with no strength "
            "parameter, a different model",
            "EnhanceEdge": "Kornia has no EDGE_ENHANCE filter",
            "EnhanceDetail": "Kornia has no DETAIL filter",
            "PhotoMetricDistort": "Kornia has no SSD-style photometric distortion",
        }

    # Size on which Kornia's normalized-grid elastic alpha equals torchvision's pixel alpha.

    # -- DataLoader recipe tail (cpu_dataloader) -------------------------------------------------
    recipe_tail_call = "K.Normalize(mean, std, p=1)(x)[0]  (x: 1x3xHxW float in [0, 1])"

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Transform:
        import torch

        normalize = _k("Normalize", mean=torch.tensor(mean), std=torch.tensor(std), p=1.0)

        def apply(image: Any) -> Any:
            # Kornia works on batches; the DataLoader collates single samples, so drop the
            # batch axis of one.
            return normalize(image)[0]

        apply.kornia_module = normalize  # type: ignore[attr-defined]  # joins a composition
        return apply

    # -- GPU batches (gpu_dataloader, the training regime's GPU feed) -------------------------
    def gpu_recipe(
        self, built: Transform | None, call: str, randomness: str, device: Any,
        mean: list[float], std: list[float],
    ) -> tuple[Callable[[Any], Any], str]:  # fmt: skip
        import torch

        normalize = _gpu_normalize(mean, std, device)
        if built is None:

            def apply_identity(batch: Any) -> Any:
                return normalize(batch.float().div_(255.0))

            return apply_identity, "identity: batch/255 -> K.Normalize"
        # Most mappings are nn.Modules (moved with .to); a few are plain functions
        # (kornia.filters.unsharp_mask), which follow their input's device by themselves.
        module = built.to(device) if isinstance(built, torch.nn.Module) else built
        # Random Kornia augmentations default to same_on_batch=False (per-image parameters);
        # deterministic ones (Resize, CenterCrop) report True, which changes nothing for them.
        same = getattr(module, "same_on_batch", None)

        def apply(batch: Any) -> Any:
            return normalize(module(batch.float().div_(255.0)))

        return apply, f"{call} (same_on_batch={same}) on batch/255 -> K.Normalize"

    def gpu_pipeline(
        self, built: list[Transform], calls: str, mask: bool, randomness: str, device: Any,
        mean: list[float], std: list[float],
    ) -> tuple[Callable[[Any], Any], str]:  # fmt: skip
        import torch

        normalize = _gpu_normalize(mean, std, device)
        modules = [t.to(device) if isinstance(t, torch.nn.Module) else t for t in built]
        # The library's own container (K.AugmentationSequential) with Normalize as its last
        # member, called once per batch; plain function steps fall back to a loop below.
        sequence = self.compose([*modules, normalize], mask=mask).obj
        import kornia.augmentation as K

        if isinstance(sequence, K.AugmentationSequential):
            return _sequence_apply(sequence, mask, calls)
        if mask:
            return self._mask_apply(modules, normalize, calls)

        def apply(batch: Any) -> Any:
            x = batch.float().div_(255.0)
            for module in modules:
                x = module(x)
            return normalize(x)

        return apply, f"batch/255 -> {calls} (same_on_batch=False) -> K.Normalize"

    def _mask_apply(
        self, modules: list[Any], normalize: Any, calls: str
    ) -> tuple[Callable[[Any], Any], str]:
        """Each step through Kornia's own joint call, as the CPU regimes' mask units
        (``with_mask``: ``AugmentationSequential(step, data_keys=["input", "mask"])``), the mask
        a float32 Bx1xHxW batch; plain functions leave the mask alone."""
        steps = [(module, self.with_mask(module)) for module in modules]

        def apply(batch: Any) -> Any:
            images, masks = batch
            images, masks = images.float().div_(255.0), masks.float()
            for module, joint in steps:
                if joint is None:
                    images = module(images)
                else:
                    images, masks = joint(images, masks)
            return normalize(images), masks

        return apply, (
            f"(batch/255, mask) -> {calls} (each K.AugmentationSequential(step, "
            "data_keys=['input', 'mask']), same_on_batch=False) -> K.Normalize on the images"
        )


def _gpu_normalize(mean: list[float], std: list[float], device: Any) -> Any:
    import torch

    return _k("Normalize", mean=torch.tensor(mean), std=torch.tensor(std)).to(device)


def _sequence_apply(sequence: Any, mask: bool, calls: str) -> tuple[Callable[[Any], Any], str]:
    """A Kornia pipeline as one ``K.AugmentationSequential`` on device batches (images scaled to
    [0, 1] first); with a mask target the batch is (images, masks) and so is the result."""
    keys = "['input', 'mask']" if mask else "['input']"
    described = (
        f"batch/255 -> K.AugmentationSequential({calls} -> K.Normalize, data_keys={keys}) "
        "(same_on_batch=False)"
    )
    if mask:

        def apply_with_mask(batch: Any) -> Any:
            images, masks = batch
            return tuple(sequence(images.float().div_(255.0), masks.float()))

        return apply_with_mask, described

    def apply(batch: Any) -> Any:
        return sequence(batch.float().div_(255.0))

    return apply, described


ELASTIC_REFERENCE_SIDE = 512

# Operations defined per channel on tensors of any channel count (the 9-channel scenario).
_MULTICHANNEL = frozenset(
    {
        "Resize", "RandomCrop224", "RandomResizedCrop", "CenterCrop224", "HorizontalFlip",
        "VerticalFlip", "RandomRotate90", "LongestMaxSize", "SmallestMaxSize", "Rotate", "Affine",
        "Shear", "Perspective", "Elastic", "ThinPlateSpline", "RandomJigsaw", "Erasing",
        "GaussianBlur", "Blur", "MedianBlur", "MotionBlur", "UnsharpMask", "Invert",
        "Posterize", "Solarize", "AutoContrast", "Equalize", "ChannelShuffle", "ChannelDropout",
        "RandomGamma", "GaussianNoise", "Sharpen", "CLAHE", "LinearIllumination",
        "CornerIllumination", "GaussianIllumination", "PlasmaBrightness", "PlasmaContrast",
        "PlasmaShadow",
    }
)  # fmt: skip


def _mark_multichannel(mappings: dict[str, Mapping]) -> dict[str, Mapping]:
    return {name: replace(m, multichannel=name in _MULTICHANNEL) for name, m in mappings.items()}


def _clipped_noise(mean: float, std: float) -> Transform:
    import torch

    class ClampToUnit(torch.nn.Module):
        """Clamps to [0, 1], the value range of Kornia's float images."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.clamp_(0.0, 1.0)

    import kornia.augmentation as K

    return K.ImageSequential(K.RandomGaussianNoise(mean=mean, std=std, p=1.0), ClampToUnit())


def _augmentation_with_p(module: Any) -> Any:
    """The module whose ``p`` decides whether a step applies: the augmentation itself, or the
    first augmentation of a container step (the clipped noise's clamp is idempotent)."""
    import kornia.augmentation as K

    if isinstance(module, K.ImageSequential):
        return next((m for m in module.children() if hasattr(m, "p_batch")), None)
    return module if hasattr(module, "p_batch") else None


def _compose_image(compose: Any, image: Any) -> Any:
    return compose(image)[0]


def _compose_mask(compose: Any, sample: dict[str, Any]) -> dict[str, Any]:
    image, mask = compose(sample["image"], sample["mask"])
    return {"image": image[0], "mask": mask}


def _unsharp(kernel_size: int, sigma: float) -> Transform:
    from kornia.filters import unsharp_mask

    return lambda img: unsharp_mask(img, (kernel_size, kernel_size), (sigma, sigma))


def _paper_set_mappings() -> dict[str, Mapping]:
    return {
        "RandomRotate90": Mapping(
            "K.RandomRotation90(times=(0, 3), p=1)",
            lambda p: _k("RandomRotation90", times=tuple(p["times"]), p=1.0),
            note="Rotates within the input canvas: on a non-square image the output keeps H x W "
            "(corners cut, borders filled) instead of swapping the sides.",
        ),
        "LongestMaxSize": Mapping(
            "K.LongestMaxSize(512, align_corners=False)",
            lambda p: _k("LongestMaxSize", p["max_size"], align_corners=False),
            note="Not antialiased when downscaling; half-pixel grid (align_corners=False).",
        ),
        "SmallestMaxSize": Mapping(
            "K.SmallestMaxSize(512, align_corners=False)",
            lambda p: _k("SmallestMaxSize", p["max_size"], align_corners=False),
            note="Not antialiased when downscaling; half-pixel grid (align_corners=False).",
        ),
        "Shear": Mapping(
            "K.RandomShear(shear=(-20, 20), resample='bilinear', p=1)",
            lambda p: _k(
                "RandomShear", shear=(-p["shear"], p["shear"]), resample="bilinear", p=1.0
            ),
        ),
        "Perspective": Mapping(
            "K.RandomPerspective(distortion_scale=0.5, resample='bilinear', p=1)",
            lambda p: _k(
                "RandomPerspective",
                distortion_scale=p["distortion_scale"],
                resample="bilinear",
                p=1.0,
            ),
        ),
        "Elastic": Mapping(
            "K.RandomElasticTransform(kernel_size=(41, 41), sigma=(5, 5), "
            "alpha=(50/512, 50/512), p=1)",
            lambda p: _k(
                "RandomElasticTransform",
                kernel_size=(int(8 * p["sigma"] + 1),) * 2,
                sigma=(p["sigma"], p["sigma"]),
                alpha=(p["alpha"] / ELASTIC_REFERENCE_SIDE,) * 2,
                p=1.0,
            ),
            note="alpha is in normalized grid units: alpha/512 equals torchvision's pixel alpha "
            "(which it divides by the side) on a 512 px side; kernel 8*sigma+1 as torchvision.",
        ),
        "ThinPlateSpline": Mapping(
            "K.RandomThinPlateSpline(scale=0.2, p=1)",
            lambda p: _k("RandomThinPlateSpline", scale=p["scale"], p=1.0),
        ),
        "RandomJigsaw": Mapping(
            "K.RandomJigsaw(grid=(4, 4), p=1)",
            lambda p: _k("RandomJigsaw", grid=tuple(p["grid"]), p=1.0),
            note="Raises unless height and width are multiples of the grid: such images are "
            "error rows, never silently resized.",
        ),
        "Erasing": Mapping(
            "K.RandomErasing(scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, p=1)",
            lambda p: _k(
                "RandomErasing",
                scale=tuple(p["scale"]),
                ratio=tuple(p["ratio"]),
                value=float(p["value"]),
                p=1.0,
            ),
        ),
        "Blur": Mapping(
            "K.RandomBoxBlur((5, 5), p=1)",
            lambda p: _k("RandomBoxBlur", (p["kernel_size"], p["kernel_size"]), p=1.0),
        ),
        "MedianBlur": Mapping(
            "K.RandomMedianBlur((5, 5), p=1)",
            lambda p: _k("RandomMedianBlur", (p["kernel_size"], p["kernel_size"]), p=1.0),
        ),
        "MotionBlur": Mapping(
            "K.RandomMotionBlur(7, angle=180, direction=1, p=1)",
            lambda p: _k(
                "RandomMotionBlur",
                p["kernel_size"],
                angle=p["angle"],
                direction=p["direction"],
                p=1.0,
            ),
        ),
        "UnsharpMask": Mapping(
            "kornia.filters.unsharp_mask(img, (9, 9), (2, 2))",
            lambda p: _unsharp(p["kernel_size"], p["sigma"]),
            note="Fixed gain 1 (amount 1.0) and no clamp: values overshoot [0, 1] next to edges.",
        ),
        "ColorJiggle": Mapping(
            "K.ColorJiggle(0.4, 0.4, 0.4, 0.1, p=1)",
            lambda p: _k(
                "ColorJiggle", p["brightness"], p["contrast"], p["saturation"], p["hue"], p=1.0
            ),
        ),
        "Hue": Mapping(
            "K.RandomHue(hue=(-0.1, 0.1), p=1)",
            lambda p: _k("RandomHue", hue=(-p["hue"], p["hue"]), p=1.0),
        ),
        "RandomGamma": Mapping(
            "K.RandomGamma(gamma=(0.8, 1.2), p=1)",
            lambda p: _k("RandomGamma", gamma=tuple(p["gamma"]), p=1.0),
        ),
        "RGBShift": Mapping(
            "K.RandomRGBShift(r_shift_limit=20/255, g_shift_limit=20/255, b_shift_limit=20/255, "
            "p=1)",
            lambda p: _k(
                "RandomRGBShift",
                r_shift_limit=p["shift"],
                g_shift_limit=p["shift"],
                b_shift_limit=p["shift"],
                p=1.0,
            ),
        ),
        "PlankianJitter": Mapping(
            "K.RandomPlanckianJitter(mode='blackbody', p=1)",
            lambda p: _k("RandomPlanckianJitter", mode=p["mode"], p=1.0),
        ),
        "ChannelDropout": Mapping(
            "K.RandomChannelDropout(num_drop_channels=1, fill_value=0, p=1)",
            lambda p: _k(
                "RandomChannelDropout",
                num_drop_channels=p["num_channels"],
                fill_value=float(p["fill"]),
                p=1.0,
            ),
        ),
        "CLAHE": Mapping(
            "K.RandomClahe(clip_limit=(4, 4), grid_size=(8, 8), p=1)",
            lambda p: _k(
                "RandomClahe",
                clip_limit=(p["clip_limit"], p["clip_limit"]),
                grid_size=tuple(p["tile_grid"]),
                p=1.0,
            ),
            note="Equalizes every channel separately; AlbumentationsX equalizes CIELAB lightness.",
        ),
        "GaussianNoise": Mapping(
            "K.ImageSequential(K.RandomGaussianNoise(mean=0, std=0.1, p=1), clamp to [0, 1])",
            lambda p: _clipped_noise(p["mean"], p["std"]),
            note="Kornia's noise is not clipped; a clamp to [0, 1] follows it, so every library "
            "keeps its dtype's range (the uint8 libraries saturate).",
        ),
        "SaltAndPepper": Mapping(
            "K.RandomSaltAndPepperNoise(amount=(0.01, 0.06), salt_vs_pepper=(0.4, 0.6), p=1)",
            lambda p: _k(
                "RandomSaltAndPepperNoise",
                amount=tuple(p["amount"]),
                salt_vs_pepper=tuple(p["salt_vs_pepper"]),
                p=1.0,
            ),
        ),
        "LinearIllumination": Mapping(
            "K.RandomLinearIllumination(gain=(0.01, 0.2), sign=(-1, 1), p=1)",
            lambda p: _k(
                "RandomLinearIllumination", gain=tuple(p["gain"]), sign=(-1.0, 1.0), p=1.0
            ),
        ),
        "CornerIllumination": Mapping(
            "K.RandomLinearCornerIllumination(gain=(0.01, 0.2), sign=(-1, 1), p=1)",
            lambda p: _k(
                "RandomLinearCornerIllumination", gain=tuple(p["gain"]), sign=(-1.0, 1.0), p=1.0
            ),
        ),
        "GaussianIllumination": Mapping(
            "K.RandomGaussianIllumination(gain=(0.01, 0.15), center=(0.1, 0.9), "
            "sigma=(0.2, 1.0), sign=(-1, 1), p=1)",
            lambda p: _k(
                "RandomGaussianIllumination",
                gain=tuple(p["gain"]),
                center=tuple(p["center"]),
                sigma=tuple(p["sigma"]),
                sign=(-1.0, 1.0),
                p=1.0,
            ),
        ),
        "PlasmaBrightness": Mapping(
            "K.RandomPlasmaBrightness(roughness=(0.1, 0.7), intensity=(0, 0.3), p=1)",
            lambda p: _k(
                "RandomPlasmaBrightness",
                roughness=(0.1, 0.7),
                intensity=(0.0, p["intensity"]),
                p=1.0,
            ),
        ),
        "PlasmaContrast": Mapping(
            "K.RandomPlasmaContrast(roughness=(0.1, 0.7), p=1)",
            lambda p: _k("RandomPlasmaContrast", roughness=(0.1, 0.7), p=1.0),
            note="No amplitude parameter: the canonical 0.3 cannot be set.",
        ),
        "PlasmaShadow": Mapping(
            "K.RandomPlasmaShadow(roughness=(0.1, 0.7), shade_intensity=(-0.7, -0.3), "
            "shade_quantity=(0, 1), p=1)",
            lambda p: _k(
                "RandomPlasmaShadow",
                roughness=(0.1, 0.7),
                shade_intensity=(-p["intensity"][1], -p["intensity"][0]),
                shade_quantity=(0.0, 1.0),
                p=1.0,
            ),
            note="shade_intensity is negative (darkening) in Kornia's convention.",
        ),
        "Rain": Mapping(
            "K.RandomRain(number_of_drops=(1000, 2000), drop_height=(5, 20), "
            "drop_width=(-5, 5), p=1)",
            lambda p: _k(
                "RandomRain",
                number_of_drops=(1000, 2000),
                drop_height=(5, 20),
                drop_width=(-5, 5),
                p=1.0,
            ),
        ),
        "Snow": Mapping(
            "K.RandomSnow(snow_coefficient=(0.3, 0.5), brightness=(2, 2), p=1)",
            lambda p: _k(
                "RandomSnow",
                snow_coefficient=tuple(p["snow_coefficient"]),
                brightness=(p["brightness"],) * 2,
                p=1.0,
            ),
        ),
    }
