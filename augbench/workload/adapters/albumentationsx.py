"""AlbumentationsX: HWC uint8 numpy arrays decoded by OpenCV.

Native input: the reader AlbumentationsX documents, ``cv2.imread`` + ``cv2.cvtColor(BGR2RGB)``: a
C-contiguous HxWx3 uint8 array. Outputs that are views of it (HorizontalFlip's negative-stride
view) are copied by the materialization rule (augbench.workload.layout); fresh arrays are not.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from augbench.workload.adapters.base import (
    CPU_TRANSFORMS,
    HWC_NUMPY,
    MASK_THRESHOLD,
    TRAINING_FEED,
    Adapter,
    Composed,
    Mapping,
    Transform,
    photometric_ranges,
)

# Keyword names another release of the ``albumentations`` module spells differently, per
# transform: {factory: {AlbumentationsX's name: that release's name}}. An adapter of such a release
# (augbench.workload.adapters.albumentations_mit) sets it while its mappings build; empty for
# AlbumentationsX itself.
KEYWORD_SPELLING: ContextVar[dict[str, dict[str, str]] | None] = ContextVar(
    "keyword_spelling", default=None
)


def _albx(factory: str, **kwargs: Any) -> Transform:
    """``A.<factory>(**kwargs, p=1)`` applied to one image, returning the image."""
    import albumentations as A

    renamed = (KEYWORD_SPELLING.get() or {}).get(factory, {})
    kwargs = {renamed.get(key, key): value for key, value in kwargs.items()}
    transform = getattr(A, factory)(**kwargs, p=1.0)

    def apply(image: np.ndarray) -> np.ndarray:
        return transform(image=image)["image"]

    # The transform draws from its own generators (not Python's or numpy's global ones); tests
    # reach it here to seed them.
    apply.albumentations_transform = transform  # type: ignore[attr-defined]
    return apply


def _cv2_flag(name: str) -> int:
    import cv2

    return getattr(cv2, name)


class AlbumentationsXAdapter(Adapter):
    name = "albumentationsx"
    title = "AlbumentationsX"
    color = "#0072B2"
    capabilities = frozenset({CPU_TRANSFORMS, TRAINING_FEED})
    # Its analytics thread on each A.Compose(...) (read when its settings load).
    telemetry_off: ClassVar[dict[str, str]] = {
        "ALBUMENTATIONS_NO_TELEMETRY": "1",
        "ALBUMENTATIONS_OFFLINE": "1",
    }
    distribution = "albumentationsx"
    cpu_reference = True  # the CPU baseline of the GPU regimes' tables
    recorded_distributions = ("albucore", "opencv-python-headless", "numpy", "torch", "pyperf")
    decoded_layout = HWC_NUMPY
    native_format = "numpy HWC uint8 (RGB)"
    decoder = "cv2.imread + cv2.cvtColor(BGR2RGB)"

    def import_library(self) -> None:
        import albumentations  # noqa: F401
        import cv2  # noqa: F401

    def decode(self, path: Path) -> np.ndarray:
        import cv2

        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            raise ValueError(f"OpenCV could not decode {path}")
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    def to_array(self, image: np.ndarray) -> np.ndarray:
        return image

    def from_array(self, array: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(array)

    # -- mask target (pipelines) ---------------------------------------------------------------
    driven_targets = frozenset({"mask"})
    mask_call = "transform(image=image, mask=mask) (mask: uint8 HxWx1)"

    def make_mask(self, image: np.ndarray) -> np.ndarray:
        # Keeps a channel axis: AlbumentationsX 2.5.1 (albucore warp_affine) raises IndexError
        # warping a 2-D mask.
        return (image[..., :1] > MASK_THRESHOLD).astype(np.uint8)

    def with_mask(self, transform: Transform) -> Any:
        own = getattr(transform, "albumentations_transform", None)
        if own is None:  # the recipe tail: no mask meaning
            return None

        def apply(image: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            out = own(image=image, mask=mask)
            return out["image"], out["mask"]

        return apply

    # -- step options and composition (pipelines) ----------------------------------------------
    antialias_choices: ClassVar[dict[str, tuple[bool, ...]]] = {"RandomResizedCrop": (False, True)}
    probability_call = "A.<Step>(..., p=p)"
    compose_call = (
        "A.Compose([<steps>, A.Normalize(mean, std, max_pixel_value=255), ToTensorV2()])"
        "(image=image)['image']"
    )

    def with_probability(self, transform: Transform, p: float) -> Transform:
        own = getattr(transform, "albumentations_transform", None)
        if own is None:
            return super().with_probability(transform, p)
        own.p = p  # the transform's own probability, drawn from its own generator
        return transform

    def compose_definition(self, obj: Any) -> Any:
        import albumentations as A

        try:  # A.to_dict: what A.save writes; A.from_dict rebuilds the same Compose
            return A.to_dict(obj)
        except Exception as exc:  # e.g. an A.Lambda (diagnostic step) is not serializable
            return f"not serializable: {type(exc).__name__}: {exc}"

    def compose(self, steps: list[Transform], mask: bool = False) -> Composed:
        import albumentations as A

        parts: list[Any] = []
        for step in steps:
            own = getattr(step, "albumentations_transform", None)
            if own is not None:
                parts.append(own)
            elif hasattr(step, "albumentations_parts"):  # the recipe tail
                parts.extend(step.albumentations_parts)
            else:  # a diagnostic step (Sleep): not a library transform
                parts.append(A.Lambda(image=_image_only(step), p=1.0))
        return Composed(
            A.Compose(parts), self.compose_call, _compose_mask if mask else _compose_image
        )

    def _mappings(self) -> dict[str, Mapping]:
        linear = "cv2.INTER_LINEAR"
        const = "cv2.BORDER_CONSTANT"
        mappings = {
            "Resize": Mapping(
                f"A.Resize(512, 512, interpolation={linear})",
                lambda p: _albx(
                    "Resize",
                    height=p["size"][0],
                    width=p["size"][1],
                    interpolation=_cv2_flag("INTER_LINEAR"),
                ),
            ),
            "RandomCrop224": Mapping(
                "A.RandomCrop(224, 224)",
                lambda p: _albx("RandomCrop", height=p["size"][0], width=p["size"][1]),
            ),
            "RandomResizedCrop": Mapping(
                f"A.RandomResizedCrop((224, 224), scale=(0.08, 1), ratio=(3/4, 4/3), "
                f"interpolation={linear})",
                lambda p: _albx(
                    "RandomResizedCrop",
                    size=tuple(p["size"]),
                    scale=tuple(p["scale"]),
                    ratio=tuple(p["ratio"]),
                    interpolation=_cv2_flag("INTER_LINEAR"),
                    # the `antialias` step option: INTER_AREA when downscaling (a box filter)
                    area_for_downscale="image" if p.get("antialias") else None,
                ),
            ),
            "CenterCrop224": Mapping(
                "A.CenterCrop(224, 224)",
                lambda p: _albx("CenterCrop", height=p["size"][0], width=p["size"][1]),
            ),
            "HorizontalFlip": Mapping("A.HorizontalFlip()", lambda p: _albx("HorizontalFlip")),
            "VerticalFlip": Mapping("A.VerticalFlip()", lambda p: _albx("VerticalFlip")),
            "Rotate": Mapping(
                f"A.Rotate(angle_range=(-45, 45), interpolation={linear}, border_mode={const}, "
                "fill=0)",
                lambda p: _albx(
                    "Rotate",
                    angle_range=(-p["degrees"], p["degrees"]),
                    interpolation=_cv2_flag("INTER_LINEAR"),
                    border_mode=_cv2_flag("BORDER_CONSTANT"),
                    fill=0,
                ),
            ),
            "Affine": Mapping(
                "A.Affine(rotate=(-25, 25), translate_percent=(-0.1, 0.1), scale=(0.8, 1.2), "
                f"shear={{'x': (-10, 10), 'y': (0, 0)}}, interpolation={linear}, "
                f"border_mode={const}, fill=0)",
                lambda p: _albx(
                    "Affine",
                    rotate=(-p["degrees"], p["degrees"]),
                    translate_percent=(-p["translate"], p["translate"]),
                    scale=tuple(p["scale"]),
                    shear={"x": (-p["shear"], p["shear"]), "y": (0.0, 0.0)},
                    interpolation=_cv2_flag("INTER_LINEAR"),
                    border_mode=_cv2_flag("BORDER_CONSTANT"),
                    fill=0,
                ),
            ),
            "GaussianBlur": Mapping(
                "A.GaussianBlur(blur_range=(9, 9), sigma_range=(2.0, 2.0))",
                lambda p: _albx(
                    "GaussianBlur",
                    blur_range=(p["kernel_size"], p["kernel_size"]),
                    sigma_range=(p["sigma"], p["sigma"]),
                ),
            ),
            "ColorJitter": Mapping(
                "A.ColorJitter(brightness_range=(0.6, 1.4), contrast_range=(0.6, 1.4), "
                "saturation_range=(0.6, 1.4), hue_range=(-0.1, 0.1))",
                lambda p: _albx(
                    "ColorJitter",
                    brightness_range=(1 - p["brightness"], 1 + p["brightness"]),
                    contrast_range=(1 - p["contrast"], 1 + p["contrast"]),
                    saturation_range=(1 - p["saturation"], 1 + p["saturation"]),
                    hue_range=(-p["hue"], p["hue"]),
                ),
                note="Applies the four adjustments in a random order, as torchvision does.",
            ),
            "Brightness": Mapping(
                "A.ColorJitter(brightness_range=(0.8, 1.2), contrast_range=(1, 1), "
                "saturation_range=(1, 1), hue_range=(0, 0))",
                lambda p: _albx(
                    "ColorJitter",
                    brightness_range=tuple(p["factor"]),
                    contrast_range=(1.0, 1.0),
                    saturation_range=(1.0, 1.0),
                    hue_range=(0.0, 0.0),
                ),
                note="A.RandomBrightnessContrast is additive (x + b*255); the multiplicative "
                "definition is ColorJitter's brightness, used here.",
            ),
            "Contrast": Mapping(
                "A.ColorJitter(brightness_range=(1, 1), contrast_range=(0.8, 1.2), "
                "saturation_range=(1, 1), hue_range=(0, 0))",
                lambda p: _albx(
                    "ColorJitter",
                    brightness_range=(1.0, 1.0),
                    contrast_range=tuple(p["factor"]),
                    saturation_range=(1.0, 1.0),
                    hue_range=(0.0, 0.0),
                ),
            ),
            "Saturation": Mapping(
                "A.ColorJitter(brightness_range=(1, 1), contrast_range=(1, 1), "
                "saturation_range=(0.5, 1.5), hue_range=(0, 0))",
                lambda p: _albx(
                    "ColorJitter",
                    brightness_range=(1.0, 1.0),
                    contrast_range=(1.0, 1.0),
                    saturation_range=tuple(p["factor"]),
                    hue_range=(0.0, 0.0),
                ),
            ),
            "Grayscale": Mapping(
                "A.ToGray(num_output_channels=3, method='weighted_average')",
                lambda p: _albx(
                    "ToGray",
                    num_output_channels=p["num_output_channels"],
                    method="weighted_average",
                ),
            ),
            "Equalize": Mapping(
                "A.Equalize(mode='cv', by_channels=True)",
                lambda p: _albx("Equalize", mode="cv", by_channels=True),
            ),
            "JpegCompression": Mapping(
                "A.ImageCompression(compression_type='jpeg', quality_range=(50, 95))",
                lambda p: _albx(
                    "ImageCompression",
                    compression_type="jpeg",
                    quality_range=tuple(p["quality"]),
                ),
            ),
            "Posterize": Mapping(
                "A.Posterize(num_bits=(4, 4))",
                lambda p: _albx("Posterize", num_bits=(p["bits"], p["bits"])),
            ),
            "Solarize": Mapping(
                "A.Solarize(threshold_range=(128/255, 128/255))",
                lambda p: _albx(
                    "Solarize", threshold_range=(p["threshold"] / 255, p["threshold"] / 255)
                ),
                note="Threshold is a fraction of the maximum value (128/255).",
            ),
            "Sharpen": Mapping(
                "A.Sharpen(alpha_range=(0.5, 0.5), lightness_range=(1, 1), method='kernel')",
                lambda p: _albx(
                    "Sharpen",
                    alpha_range=(0.5, 0.5),
                    lightness_range=(1.0, 1.0),
                    method="kernel",
                ),
                note="Laplacian-style 3x3 kernel blended at alpha 0.5; torchvision/Pillow blend "
                "with a 3x3 smoothing kernel by factor 2. Similar strength, not the same filter.",
            ),
            "Invert": Mapping("A.InvertImg()", lambda p: _albx("InvertImg")),
            "AutoContrast": Mapping(
                "A.AutoContrast(cutoff=0, method='pil')",
                lambda p: _albx("AutoContrast", cutoff=0, method="pil"),
            ),
            "ChannelShuffle": Mapping("A.ChannelShuffle()", lambda p: _albx("ChannelShuffle")),
            # A pipeline step (catalog.pipeline_only): never in the paper set.
            "PadIfNeeded": Mapping(
                f"A.PadIfNeeded(min_height=512, min_width=512, position='top_left', "
                f"border_mode={const}, fill=0)",
                lambda p: _albx(
                    "PadIfNeeded",
                    min_height=p["size"][0],
                    min_width=p["size"][1],
                    position="top_left",
                    border_mode=_cv2_flag("BORDER_CONSTANT"),
                    fill=0,
                ),
            ),
            **_paper_set_mappings(),
        }
        return _mark_multichannel(mappings)

    def _unsupported_reasons(self) -> dict[str, str]:
        return {
            "ColorJiggle": "AlbumentationsX has no additive-brightness/HSV-saturation jitter; its "
            "ColorJitter follows torchvision's blend formulas (the ColorJitter row)",
        }

    # -- DataLoader recipe tail (cpu_dataloader) -------------------------------------------------
    recipe_tail_call = (
        "A.Compose([A.Normalize(mean, std, max_pixel_value=255), "
        "albumentations.pytorch.ToTensorV2()])"
    )

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Transform:
        import albumentations as A
        from albumentations.pytorch import ToTensorV2

        tail = A.Compose(
            [A.Normalize(mean=mean, std=std, max_pixel_value=255.0, p=1.0), ToTensorV2(p=1.0)]
        )

        def apply(image: np.ndarray) -> Any:
            return tail(image=image)["image"]

        # Its transforms join a pipeline's A.Compose as they are (compose above); not named
        # albumentations_transform, so the mask passes the tail untouched in the steps pass.
        apply.albumentations_parts = list(tail.transforms)  # type: ignore[attr-defined]
        return apply


def _image_only(fn: Transform) -> Any:
    def apply(image: np.ndarray, **_: Any) -> Any:
        return fn(image)

    return apply


def _compose_image(compose: Any, image: np.ndarray) -> Any:
    return compose(image=image)["image"]


def _compose_mask(compose: Any, sample: dict[str, Any]) -> dict[str, Any]:
    out = compose(image=sample["image"], mask=sample["mask"])
    return {"image": out["image"], "mask": out["mask"]}


def _geometry(**kwargs: Any) -> dict[str, Any]:
    """Bilinear interpolation and a constant 0 border: the catalog's geometric defaults."""
    return {
        "interpolation": _cv2_flag("INTER_LINEAR"),
        "border_mode": _cv2_flag("BORDER_CONSTANT"),
        "fill": 0,
        **kwargs,
    }


def _jitter(**ranges: tuple[float, float]) -> Transform:
    """A.ColorJitter with every adjustment not named set to identity."""
    identity = {
        "brightness_range": (1.0, 1.0),
        "contrast_range": (1.0, 1.0),
        "saturation_range": (1.0, 1.0),
        "hue_range": (0.0, 0.0),
    }
    return _albx("ColorJitter", **{**identity, **ranges})


# A transform of this set accepts any channel count and acts per channel (the 9-channel scenario).
_MULTICHANNEL = frozenset(
    {
        "Resize", "RandomCrop224", "RandomResizedCrop", "CenterCrop224", "HorizontalFlip",
        "VerticalFlip", "Transpose", "RandomRotate90", "Pad", "LongestMaxSize", "SmallestMaxSize",
        "Rotate", "Affine", "Shear", "Perspective", "Elastic", "ThinPlateSpline",
        "OpticalDistortion", "RandomJigsaw", "Erasing", "GaussianBlur", "Blur", "MedianBlur",
        "MotionBlur", "Sharpen", "UnsharpMask", "EnhanceEdge", "EnhanceDetail", "Invert",
        "Posterize", "Solarize", "AutoContrast", "ChannelShuffle", "ChannelDropout", "RandomGamma",
        "GaussianNoise", "SaltAndPepper", "LinearIllumination", "CornerIllumination",
        "GaussianIllumination", "PlasmaBrightness", "PlasmaContrast", "PlasmaShadow",
    }
)  # fmt: skip


def _mark_multichannel(mappings: dict[str, Mapping]) -> dict[str, Mapping]:
    return {name: replace(m, multichannel=name in _MULTICHANNEL) for name, m in mappings.items()}


def _paper_set_mappings() -> dict[str, Mapping]:
    linear, const = "cv2.INTER_LINEAR", "cv2.BORDER_CONSTANT"
    geo = f"interpolation={linear}, border_mode={const}, fill=0"
    return {
        "Transpose": Mapping("A.Transpose()", lambda p: _albx("Transpose")),
        "RandomRotate90": Mapping(
            "A.RandomRotate90(group_elements=('e', 'r90', 'r180', 'r270'))",
            lambda p: _albx(
                "RandomRotate90",
                group_elements=tuple(_ROT90[k] for k in range(p["times"][0], p["times"][1] + 1)),
            ),
        ),
        "Pad": Mapping(
            f"A.Pad(padding=10, fill=0, border_mode={const})",
            lambda p: _albx(
                "Pad", padding=p["padding"], fill=0, border_mode=_cv2_flag("BORDER_CONSTANT")
            ),
        ),
        "LongestMaxSize": Mapping(
            f"A.LongestMaxSize(max_size=512, interpolation={linear})",
            lambda p: _albx(
                "LongestMaxSize",
                max_size=p["max_size"],
                interpolation=_cv2_flag("INTER_LINEAR"),
            ),
            note="Not antialiased when downscaling (OpenCV INTER_LINEAR).",
        ),
        "SmallestMaxSize": Mapping(
            f"A.SmallestMaxSize(max_size=512, interpolation={linear})",
            lambda p: _albx(
                "SmallestMaxSize",
                max_size=p["max_size"],
                interpolation=_cv2_flag("INTER_LINEAR"),
            ),
            note="Not antialiased when downscaling (OpenCV INTER_LINEAR).",
        ),
        "Shear": Mapping(
            f"A.Affine(shear={{'x': (-20, 20), 'y': (0, 0)}}, rotate=0, scale=1, {geo})",
            lambda p: _albx(
                "Affine",
                **_geometry(
                    shear={"x": (-p["shear"], p["shear"]), "y": (0.0, 0.0)},
                    rotate=(0.0, 0.0),
                    scale=(1.0, 1.0),
                ),
            ),
        ),
        "Perspective": Mapping(
            f"A.Perspective(scale=(0.157, 0.157), keep_size=True, {geo})",
            lambda p: _albx(
                "Perspective",
                **_geometry(scale=(_perspective_sigma(p), _perspective_sigma(p)), keep_size=True),
            ),
            note="Corner offsets are |N(0, s)| of the size in either direction, not uniform "
            "inwards; s = distortion_scale/4 / sqrt(2/pi) gives the same mean offset (1/8 of the "
            "side) as torchvision's rule.",
        ),
        "Elastic": Mapping(
            f"A.ElasticTransform(displacement_range=(0.02, 0.05), control_grid_shape=(7, 7), "
            f"{geo})",
            lambda p: _albx(
                "ElasticTransform",
                **_geometry(displacement_range=(0.02, 0.05), control_grid_shape=(7, 7)),
            ),
            note="AlbumentationsX 2.5 replaced alpha/sigma by a cubic B-spline field from a 7x7 "
            "control grid bounded at 2-5% of the shorter side: smooth displacements of a "
            "comparable magnitude, not the same noise model.",
        ),
        "ThinPlateSpline": Mapping(
            f"A.ThinPlateSpline(scale_range=(0.2, 0.2), num_control_points=4, {geo})",
            lambda p: _albx(
                "ThinPlateSpline",
                **_geometry(scale_range=(p["scale"], p["scale"]), num_control_points=4),
            ),
            note="4x4 control grid; Kornia uses a fixed 3x3 grid.",
        ),
        "OpticalDistortion": Mapping(
            f"A.OpticalDistortion(distort_range=(-0.05, 0.05), mode='camera', {geo})",
            lambda p: _albx(
                "OpticalDistortion",
                **_geometry(distort_range=(-p["distort"], p["distort"]), mode="camera"),
            ),
        ),
        "RandomJigsaw": Mapping(
            "A.RandomGridShuffle(grid=(4, 4))",
            lambda p: _albx("RandomGridShuffle", grid=tuple(p["grid"])),
            note="Cells at the right/bottom edge absorb the remainder when the size is not a "
            "multiple of the grid.",
        ),
        "Erasing": Mapping(
            "A.Erasing(scale=(0.02, 0.33), ratio=(0.3, 3.3), fill=0)",
            lambda p: _albx(
                "Erasing", scale=tuple(p["scale"]), ratio=tuple(p["ratio"]), fill=p["value"]
            ),
        ),
        "Blur": Mapping(
            "A.Blur(blur_range=(5, 5))",
            lambda p: _albx("Blur", blur_range=(p["kernel_size"], p["kernel_size"])),
        ),
        "MedianBlur": Mapping(
            "A.MedianBlur(blur_range=(5, 5))",
            lambda p: _albx("MedianBlur", blur_range=(p["kernel_size"], p["kernel_size"])),
        ),
        "MotionBlur": Mapping(
            "A.MotionBlur(blur_range=(7, 7), angle_range=(0, 360), direction_range=(-1, 1), "
            "allow_shifted=False)",
            lambda p: _albx(
                "MotionBlur",
                blur_range=(p["kernel_size"], p["kernel_size"]),
                angle_range=(0.0, 2 * p["angle"]),
                direction_range=(-p["direction"], p["direction"]),
                allow_shifted=False,
            ),
            note="Angles in [0, 360) are the same directions as [-180, 180).",
        ),
        "UnsharpMask": Mapping(
            "A.UnsharpMask(blur_range=(9, 9), sigma_range=(2, 2), alpha_range=(1, 1), threshold=0)",
            lambda p: _albx(
                "UnsharpMask",
                blur_range=(p["kernel_size"], p["kernel_size"]),
                sigma_range=(p["sigma"], p["sigma"]),
                alpha_range=(p["amount"], p["amount"]),
                threshold=0,
            ),
        ),
        "EnhanceEdge": Mapping(
            "A.Enhance(mode='edge', alpha_range=(1, 1))",
            lambda p: _albx("Enhance", mode="edge", alpha_range=(1.0, 1.0)),
            note="Reflect-101 borders; Pillow clamps at the border.",
        ),
        "EnhanceDetail": Mapping(
            "A.Enhance(mode='detail', alpha_range=(1, 1))",
            lambda p: _albx("Enhance", mode="detail", alpha_range=(1.0, 1.0)),
            note="Reflect-101 borders; Pillow clamps at the border.",
        ),
        "PhotoMetricDistort": Mapping(
            "A.PhotoMetricDistort(brightness_range=(0.875, 1.125), contrast_range=(0.5, 1.5), "
            "saturation_range=(0.5, 1.5), hue_range=(-0.05, 0.05), distort_p=0.5)",
            lambda p: _albx(
                "PhotoMetricDistort", **photometric_ranges(p, "_range"), distort_p=p["step_p"]
            ),
        ),
        "Hue": Mapping(
            "A.ColorJitter(brightness_range=(1, 1), contrast_range=(1, 1), "
            "saturation_range=(1, 1), hue_range=(-0.1, 0.1))",
            lambda p: _jitter(hue_range=(-p["hue"], p["hue"])),
        ),
        "RandomGamma": Mapping(
            "A.RandomGamma(gamma_range=(80, 120))",
            lambda p: _albx("RandomGamma", gamma_range=(p["gamma"][0] * 100, p["gamma"][1] * 100)),
            note="gamma_range is in percent (80 = 0.8).",
        ),
        "RGBShift": Mapping(
            "A.RGBShift(r_shift_range=(-20, 20), g_shift_range=(-20, 20), b_shift_range=(-20, 20))",
            lambda p: _albx(
                "RGBShift",
                **{
                    f"{c}_shift_range": (-p["shift"] * 255, p["shift"] * 255)
                    for c in ("r", "g", "b")
                },
            ),
            note="Shifts in 8-bit units for uint8 images (20 = 20/255).",
        ),
        "PlankianJitter": Mapping(
            "A.PlanckianJitter(mode='blackbody', sampling_method='uniform')",
            lambda p: _albx("PlanckianJitter", mode=p["mode"], sampling_method="uniform"),
            note="Samples a temperature uniformly in a continuous range; Kornia picks one of its "
            "tabulated black-body white points.",
        ),
        "ChannelDropout": Mapping(
            "A.ChannelDropout(channel_drop_range=(1, 1), fill=0)",
            lambda p: _albx(
                "ChannelDropout",
                channel_drop_range=(p["num_channels"], p["num_channels"]),
                fill=p["fill"],
            ),
        ),
        "CLAHE": Mapping(
            "A.CLAHE(clip_range=(4, 4), tile_grid_size=(8, 8))",
            lambda p: _albx(
                "CLAHE",
                clip_range=(p["clip_limit"], p["clip_limit"]),
                tile_grid_size=tuple(p["tile_grid"]),
            ),
            note="Equalizes the L channel of CIELAB (OpenCV), not each RGB channel.",
        ),
        "GaussianNoise": Mapping(
            "A.GaussNoise(std_range=(0.1, 0.1), mean_range=(0, 0), per_channel=True)",
            lambda p: _albx(
                "GaussNoise",
                std_range=(p["std"], p["std"]),
                mean_range=(p["mean"], p["mean"]),
                per_channel=True,
            ),
        ),
        "SaltAndPepper": Mapping(
            "A.SaltAndPepper(amount_range=(0.01, 0.06), salt_vs_pepper_range=(0.4, 0.6))",
            lambda p: _albx(
                "SaltAndPepper",
                amount_range=tuple(p["amount"]),
                salt_vs_pepper_range=tuple(p["salt_vs_pepper"]),
            ),
        ),
        "LinearIllumination": Mapping(
            "A.Illumination(mode='linear', intensity_range=(0.01, 0.2), effect_type='both', "
            "angle_range=(0, 360))",
            lambda p: _albx(
                "Illumination",
                mode="linear",
                intensity_range=tuple(p["gain"]),
                effect_type="both",
                angle_range=(0.0, 360.0),
            ),
            note="Gradient at any angle; Kornia's runs along one image axis.",
        ),
        "CornerIllumination": Mapping(
            "A.Illumination(mode='corner', intensity_range=(0.01, 0.2), effect_type='both')",
            lambda p: _albx(
                "Illumination", mode="corner", intensity_range=tuple(p["gain"]), effect_type="both"
            ),
        ),
        "GaussianIllumination": Mapping(
            "A.Illumination(mode='gaussian', intensity_range=(0.01, 0.15), effect_type='both', "
            "center_range=(0.1, 0.9), sigma_range=(0.2, 1.0))",
            lambda p: _albx(
                "Illumination",
                mode="gaussian",
                intensity_range=tuple(p["gain"]),
                effect_type="both",
                center_range=tuple(p["center"]),
                sigma_range=tuple(p["sigma"]),
            ),
        ),
        "PlasmaBrightness": Mapping(
            "A.PlasmaBrightnessContrast(brightness_range=(-0.3, 0.3), contrast_range=(0, 0), "
            "roughness=3.0)",
            lambda p: _albx(
                "PlasmaBrightnessContrast",
                brightness_range=(-p["intensity"], p["intensity"]),
                contrast_range=(0.0, 0.0),
                roughness=3.0,
            ),
            note="roughness is a decay exponent here and a range of fractal roughness in Kornia; "
            "textures differ in scale.",
        ),
        "PlasmaContrast": Mapping(
            "A.PlasmaBrightnessContrast(brightness_range=(0, 0), contrast_range=(-0.3, 0.3), "
            "roughness=3.0)",
            lambda p: _albx(
                "PlasmaBrightnessContrast",
                brightness_range=(0.0, 0.0),
                contrast_range=(-p["intensity"], p["intensity"]),
                roughness=3.0,
            ),
            note="Kornia's contrast map has no amplitude parameter.",
        ),
        "PlasmaShadow": Mapping(
            "A.PlasmaShadow(shadow_intensity_range=(0.3, 0.7), roughness=3.0)",
            lambda p: _albx(
                "PlasmaShadow", shadow_intensity_range=tuple(p["intensity"]), roughness=3.0
            ),
        ),
        "Rain": Mapping(
            "A.RandomRain(slant_range=(-10, 10), drop_width=1, blur_value=7, "
            "brightness_coefficient=0.7, rain_type='default')",
            lambda p: _albx(
                "RandomRain",
                slant_range=(-10.0, 10.0),
                drop_width=1,
                blur_value=7,
                brightness_coefficient=0.7,
                rain_type="default",
            ),
            note="Draws slanted grey streaks, blurs and darkens the image; Kornia draws "
            "unblurred bright drops. Same effect family, different renderings.",
        ),
        "Snow": Mapping(
            "A.RandomSnow(snow_point_range=(0.3, 0.5), brightness_coeff=2.0, method='bleach')",
            lambda p: _albx(
                "RandomSnow",
                snow_point_range=tuple(p["snow_coefficient"]),
                brightness_coeff=p["brightness"],
                method="bleach",
            ),
        ),
    }


_ROT90 = ("e", "r90", "r180", "r270")


def _perspective_sigma(p: dict[str, Any]) -> float:
    # torchvision moves a corner by U(0, d/2) of the side (mean d/4); E|N(0, s)| = s*sqrt(2/pi).
    return round(p["distortion_scale"] / 4 / math.sqrt(2 / math.pi), 3)
