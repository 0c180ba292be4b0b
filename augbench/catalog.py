"""Catalog of benchmarked transforms: canonical names and parameters.

Each library's adapter (``augbench.adapters.<library>``) maps a catalog entry to that library's own
call, converting units; where a library has no direct implementation the adapter has no builder and
the row is ``unsupported``. Known semantic mismatches are stated next to each mapping and rendered
into ``docs/transforms.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["crop", "geometric", "pixel"]


@dataclass(frozen=True)
class TransformSpec:
    name: str
    kind: Kind
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def is_crop(self) -> bool:
        """Crop transforms replace the RandomCrop224 step in DataLoader recipes."""
        return self.kind == "crop"


def _spec(name: str, kind: Kind, description: str, **params: Any) -> TransformSpec:
    return TransformSpec(name=name, kind=kind, params=params, description=description)


# Applied with probability 1; random parameters are drawn per call from the stated ranges.
# Angles in degrees, factors as multipliers (1 = identity), fill value 0, bilinear interpolation
# unless stated, output size in pixels (height, width).
_SPECS: tuple[TransformSpec, ...] = (
    _spec("Resize", "geometric", "Resize to a fixed 512x512, bilinear", size=(512, 512)),
    _spec("RandomCrop224", "crop", "Random 224x224 crop", size=(224, 224)),
    _spec(
        "RandomResizedCrop",
        "crop",
        "Random area/aspect crop resized to 224x224, bilinear",
        size=(224, 224),
        scale=(0.08, 1.0),
        ratio=(3 / 4, 4 / 3),
    ),
    _spec("CenterCrop224", "crop", "Central 224x224 crop", size=(224, 224)),
    _spec("HorizontalFlip", "geometric", "Mirror left-right"),
    _spec("VerticalFlip", "geometric", "Mirror top-bottom"),
    _spec(
        "Rotate",
        "geometric",
        "Rotate by an angle in [-45, 45] degrees about the centre, same canvas, bilinear, fill 0",
        degrees=45.0,
    ),
    _spec(
        "Affine",
        "geometric",
        "Random affine: rotation ±25°, translation ±10% per axis, scale 0.8-1.2, x-shear ±10°",
        degrees=25.0,
        translate=0.1,
        scale=(0.8, 1.2),
        shear=10.0,
    ),
    _spec(
        "GaussianBlur",
        "pixel",
        "Gaussian blur, sigma 2.0, 9x9 kernel",
        kernel_size=9,
        sigma=2.0,
    ),
    _spec(
        "ColorJitter",
        "pixel",
        "Brightness/contrast/saturation factors in [0.6, 1.4], hue shift in [-0.1, 0.1] turns",
        brightness=0.4,
        contrast=0.4,
        saturation=0.4,
        hue=0.1,
    ),
    _spec(
        "Brightness",
        "pixel",
        "Multiply intensities by a factor in [0.8, 1.2]",
        factor=(0.8, 1.2),
    ),
    _spec(
        "Contrast",
        "pixel",
        "Blend with the mean grey level by a factor in [0.8, 1.2]",
        factor=(0.8, 1.2),
    ),
    _spec(
        "Saturation",
        "pixel",
        "Blend with the greyscale image by a factor in [0.5, 1.5]",
        factor=(0.5, 1.5),
    ),
    _spec(
        "Grayscale", "pixel", "ITU-R 601-2 luma, replicated to 3 channels", num_output_channels=3
    ),
    _spec("Equalize", "pixel", "Histogram equalization per channel"),
    _spec(
        "JpegCompression",
        "pixel",
        "JPEG encode and decode at a quality in [50, 95]",
        quality=(50, 95),
    ),
    _spec("Posterize", "pixel", "Keep the 4 most significant bits per channel", bits=4),
    _spec("Solarize", "pixel", "Invert pixels at or above 128 (of 255)", threshold=128),
    _spec("Sharpen", "pixel", "Sharpen, blend factor 2.0 with the image", factor=2.0),
    _spec("Invert", "pixel", "255 - x"),
    _spec("AutoContrast", "pixel", "Stretch each channel to the full range"),
    _spec("ChannelShuffle", "pixel", "Random permutation of the RGB channels"),
)

TRANSFORMS: dict[str, TransformSpec] = {spec.name: spec for spec in _SPECS}


def get(name: str) -> TransformSpec:
    try:
        return TRANSFORMS[name]
    except KeyError:
        allowed = ", ".join(TRANSFORMS)
        raise KeyError(f"unknown transform {name!r}; allowed: {allowed}") from None


def names() -> list[str]:
    return list(TRANSFORMS)
