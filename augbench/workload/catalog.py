"""Catalog of benchmarked transforms: canonical names, parameters and probability semantics.

The catalog holds *candidates*. Which of them are benchmarked is not hand-kept: a transform is in
the paper set when at least ``MIN_DIRECT_IMPLEMENTATIONS`` of the libraries that transform images
on the CPU (:func:`eligibility_libraries`: their declarations' ``cpu_transforms``) implement it
directly, i.e. their adapter (``augbench.workload.adapters.<library>``) declares a mapping to the
library's own operation. Adapters convert units and may draw the canonical random parameters
(Pillow has no random API), but never implement an operation themselves; a library without a
direct implementation is an ``unsupported`` row. Mappings and mismatch notes are rendered into
``docs/transforms.md`` (``tools/maintenance/render_transforms_doc.py``).

Scenarios: ``channels=3`` is the RGB paper set; ``channels=9`` stacks the RGB image three times
along the channel axis and has its own eligible set (mappings declared ``multichannel``,
verified in the library environments by tests/test_equivalence.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

Kind = Literal["crop", "geometric", "pixel"]

MIN_DIRECT_IMPLEMENTATIONS = 2
CHANNEL_SCENARIOS: tuple[int, ...] = (3, 9)

PROBABILITY_SEMANTICS = (
    "Every transform is applied on every call (probability 1). Random parameters are drawn afresh "
    "on every call from the stated ranges; a transform marked deterministic has none. Composite "
    "transforms (PhotoMetricDistort) keep their inner per-step probabilities as stated."
)


@dataclass(frozen=True)
class TransformSpec:
    name: str
    kind: Kind
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    # Whether each call draws random parameters (two calls on one image may differ).
    random: bool = True
    # A step of user pipelines only (augbench.workload.pipelines): never in a paper set, whatever
    # the adapters map, so adding one changes no single-transform sweep.
    pipeline_only: bool = False

    @property
    def is_crop(self) -> bool:
        """Crop transforms replace the RandomCrop224 step in DataLoader recipes."""
        return self.kind == "crop"


def _spec(
    name: str,
    kind: Kind,
    description: str,
    *,
    random: bool = True,
    pipeline_only: bool = False,
    **params: Any,
) -> TransformSpec:
    return TransformSpec(
        name=name,
        kind=kind,
        params=params,
        description=description,
        random=random,
        pipeline_only=pipeline_only,
    )


# Units: angles in degrees, intensities as fractions of the full range (0-1; 20/255 for an 8-bit
# shift of 20), factors as multipliers (1 = identity), sizes in pixels (height, width), fill 0,
# bilinear interpolation unless stated.
_CANDIDATES: tuple[TransformSpec, ...] = (
    # -- geometry and crops --------------------------------------------------------------------
    _spec(
        "Resize", "geometric", "Resize to a fixed 512x512, bilinear", random=False, size=(512, 512)
    ),
    _spec("RandomCrop224", "crop", "Random 224x224 crop", size=(224, 224)),
    _spec(
        "RandomResizedCrop",
        "crop",
        "Random area/aspect crop resized to 224x224, bilinear",
        size=(224, 224),
        scale=(0.08, 1.0),
        ratio=(3 / 4, 4 / 3),
    ),
    _spec("CenterCrop224", "crop", "Central 224x224 crop", random=False, size=(224, 224)),
    _spec("HorizontalFlip", "geometric", "Mirror left-right", random=False),
    _spec("VerticalFlip", "geometric", "Mirror top-bottom", random=False),
    _spec("Transpose", "geometric", "Swap the height and width axes", random=False),
    _spec(
        "RandomRotate90",
        "geometric",
        "Rotate by k*90 degrees counter-clockwise, k uniform in {0, 1, 2, 3}",
        times=(0, 3),
    ),
    _spec(
        "Pad", "geometric", "Pad 10 px on every side with the constant 0", random=False, padding=10
    ),
    _spec(
        "LongestMaxSize",
        "geometric",
        "Resize so the longer side is 512 px, aspect kept, bilinear",
        random=False,
        max_size=512,
    ),
    _spec(
        "SmallestMaxSize",
        "geometric",
        "Resize so the shorter side is 512 px, aspect kept, bilinear",
        random=False,
        max_size=512,
    ),
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
        "Shear",
        "geometric",
        "Shear parallel to the x axis by an angle in [-20, 20] degrees about the centre, "
        "bilinear, fill 0",
        shear=20.0,
    ),
    _spec(
        "Perspective",
        "geometric",
        "Move each corner inwards by up to distortion_scale/2 of the side (torchvision's rule), "
        "warp back to the same canvas, bilinear, fill 0",
        distortion_scale=0.5,
    ),
    _spec(
        "Elastic",
        "geometric",
        "Elastic deformation: per-pixel uniform noise smoothed by a Gaussian of sigma 5 px, "
        "scaled to alpha 50 px, bilinear, fill 0",
        alpha=50.0,
        sigma=5.0,
    ),
    _spec(
        "ThinPlateSpline",
        "geometric",
        "Thin-plate-spline warp with control points displaced by up to 0.2 of the image size",
        scale=0.2,
    ),
    _spec(
        "OpticalDistortion",
        "geometric",
        "Radial lens distortion with coefficient k in [-0.05, 0.05]",
        distort=0.05,
    ),
    _spec(
        "RandomJigsaw",
        "geometric",
        "Cut the image into a 4x4 grid and randomly permute the cells",
        grid=(4, 4),
    ),
    _spec(
        "Erasing",
        "pixel",
        "Erase one random rectangle (area 2-33%, aspect 0.3-3.3) with 0",
        scale=(0.02, 0.33),
        ratio=(0.3, 3.3),
        value=0,
    ),
    # -- blur, sharpen, filters -----------------------------------------------------------------
    _spec(
        "GaussianBlur",
        "pixel",
        "Gaussian blur, sigma 2.0, 9x9 kernel",
        random=False,
        kernel_size=9,
        sigma=2.0,
    ),
    _spec("Blur", "pixel", "Box (mean) filter, 5x5", random=False, kernel_size=5),
    _spec("MedianBlur", "pixel", "Median filter, 5x5", random=False, kernel_size=5),
    _spec(
        "MotionBlur",
        "pixel",
        "Line-kernel motion blur, 7 px, angle uniform in [-180, 180) degrees, direction in [-1, 1]",
        kernel_size=7,
        angle=180.0,
        direction=1.0,
    ),
    _spec("Sharpen", "pixel", "Sharpen, blend factor 2.0 with the image", random=False, factor=2.0),
    _spec(
        "UnsharpMask",
        "pixel",
        "x + amount * (x - GaussianBlur(x)), sigma 2.0 (9x9 kernel), amount 1.0, threshold 0",
        random=False,
        kernel_size=9,
        sigma=2.0,
        amount=1.0,
    ),
    _spec(
        "EnhanceEdge",
        "pixel",
        "Pillow's EDGE_ENHANCE 3x3 kernel (full strength)",
        random=False,
    ),
    _spec("EnhanceDetail", "pixel", "Pillow's DETAIL 3x3 kernel (full strength)", random=False),
    # -- colour ----------------------------------------------------------------------------------
    _spec(
        "ColorJitter",
        "pixel",
        "Brightness/contrast/saturation factors in [0.6, 1.4], hue shift in [-0.1, 0.1] turns, "
        "applied in a random order (torchvision's blend formulas)",
        brightness=0.4,
        contrast=0.4,
        saturation=0.4,
        hue=0.1,
    ),
    _spec(
        "ColorJiggle",
        "pixel",
        "Kornia's ColorJiggle: additive brightness, scaling contrast, HSV saturation, hue shift "
        "(factors as ColorJitter)",
        brightness=0.4,
        contrast=0.4,
        saturation=0.4,
        hue=0.1,
    ),
    _spec(
        "PhotoMetricDistort",
        "pixel",
        "SSD-style: brightness [0.875, 1.125], contrast [0.5, 1.5], saturation [0.5, 1.5], hue "
        "[-0.05, 0.05] turns, channel permutation; each step with probability 0.5",
        brightness=(0.875, 1.125),
        contrast=(0.5, 1.5),
        saturation=(0.5, 1.5),
        hue=(-0.05, 0.05),
        step_p=0.5,
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
    _spec("Hue", "pixel", "Hue shift in [-0.1, 0.1] turns of the hue circle", hue=0.1),
    _spec(
        "RandomGamma",
        "pixel",
        "x -> x**gamma on [0, 1] intensities, gamma uniform in [0.8, 1.2]",
        gamma=(0.8, 1.2),
    ),
    _spec(
        "RGBShift",
        "pixel",
        "Add an independent shift in [-20, 20] (of 255) to each of R, G, B",
        shift=20 / 255,
    ),
    _spec(
        "PlankianJitter",
        "pixel",
        "Planckian (black-body) illuminant jitter: rescale R and B by a colour temperature's "
        "white point",
        mode="blackbody",
    ),
    _spec(
        "Grayscale",
        "pixel",
        "ITU-R 601-2 luma, replicated to 3 channels",
        random=False,
        num_output_channels=3,
    ),
    _spec("ChannelShuffle", "pixel", "Random permutation of the channels"),
    _spec(
        "ChannelDropout",
        "pixel",
        "Set one randomly chosen channel to 0",
        num_channels=1,
        fill=0,
    ),
    _spec("Invert", "pixel", "255 - x", random=False),
    _spec(
        "Posterize", "pixel", "Keep the 4 most significant bits per channel", random=False, bits=4
    ),
    _spec(
        "Solarize", "pixel", "Invert pixels at or above 128 (of 255)", random=False, threshold=128
    ),
    _spec("AutoContrast", "pixel", "Stretch each channel to the full range", random=False),
    _spec("Equalize", "pixel", "Histogram equalization per channel", random=False),
    _spec(
        "CLAHE",
        "pixel",
        "Contrast-limited adaptive histogram equalization, clip limit 4.0, 8x8 tiles",
        random=False,
        clip_limit=4.0,
        tile_grid=(8, 8),
    ),
    # -- noise and compression ------------------------------------------------------------------
    _spec(
        "GaussianNoise",
        "pixel",
        "Add i.i.d. per-pixel, per-channel N(0, 0.1) noise (fraction of the full range), clipped",
        mean=0.0,
        std=0.1,
    ),
    _spec(
        "SaltAndPepper",
        "pixel",
        "Set 1-6% of pixels to white or black (salt share 40-60%)",
        amount=(0.01, 0.06),
        salt_vs_pepper=(0.4, 0.6),
    ),
    _spec(
        "JpegCompression",
        "pixel",
        "JPEG encode and decode at a quality in [50, 95]",
        quality=(50, 95),
    ),
    # -- illumination, plasma and weather ---------------------------------------------------------
    _spec(
        "LinearIllumination",
        "pixel",
        "Linear brightness gradient across the image, gain 0.01-0.2, brighten or darken",
        gain=(0.01, 0.2),
    ),
    _spec(
        "CornerIllumination",
        "pixel",
        "Brightness gradient from a random corner, gain 0.01-0.2, brighten or darken",
        gain=(0.01, 0.2),
    ),
    _spec(
        "GaussianIllumination",
        "pixel",
        "Gaussian light spot, gain 0.01-0.15, centre 0.1-0.9, sigma 0.2-1.0 (of the size)",
        gain=(0.01, 0.15),
        center=(0.1, 0.9),
        sigma=(0.2, 1.0),
    ),
    _spec(
        "PlasmaBrightness",
        "pixel",
        "Add a diamond-square plasma fractal brightness map, amplitude up to 0.3",
        intensity=0.3,
    ),
    _spec(
        "PlasmaContrast",
        "pixel",
        "Modulate contrast by a diamond-square plasma fractal map, amplitude up to 0.3",
        intensity=0.3,
    ),
    _spec(
        "PlasmaShadow",
        "pixel",
        "Darken by a diamond-square plasma fractal shadow map, intensity 0.3-0.7",
        intensity=(0.3, 0.7),
    ),
    _spec("Rain", "pixel", "Draw random rain streaks (1-2k drops on a ~500 px image)"),
    _spec(
        "Snow",
        "pixel",
        "Bleach-style snow: brighten by 2x the lightness of pixels below a snow threshold drawn "
        "in [0.3, 0.5]",
        snow_coefficient=(0.3, 0.5),
        brightness=2.0,
    ),
    # -- pipeline steps (augbench.workload.pipelines; never in a paper set) ------------------------
    _spec(
        "PadIfNeeded",
        "geometric",
        "Pad with the constant 0 to at least 512x512, image at the top-left; larger sides kept",
        random=False,
        pipeline_only=True,
        size=(512, 512),
    ),
    _spec(
        "Normalize",
        "pixel",
        "(x / 255 - mean) / std per channel with ImageNet statistics, to a float32 3xHxW tensor: "
        "the library's own Normalize and tensor conversion (Adapter.recipe_tail)",
        random=False,
        pipeline_only=True,
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
    ),
    _spec(
        "ToTensor",
        "pixel",
        "Conversion to a torch tensor; only directly after Normalize, whose step already ends in a "
        "float32 3xHxW tensor (so it is timed as part of Normalize)",
        random=False,
        pipeline_only=True,
    ),
)

CANDIDATES: dict[str, TransformSpec] = {spec.name: spec for spec in _CANDIDATES}


def eligibility_libraries() -> tuple[str, ...]:
    """The libraries whose direct implementations count towards eligibility: those that transform
    images on the CPU (DALI's operators are a regime of their own), each counted once: a fork or
    drop-in build of another library (its declaration's ``sibling``) is not an implementation of
    its own, so adding one never changes the transform set; nor is a second name of a library
    (``<library>~<tag>``, the A/A calibration's), which is that library again."""
    # Imported here: the adapters read the catalog only through this module's public functions.
    from augbench.workload import adapters
    from augbench.workload.adapters.base import CPU_TRANSFORMS

    return tuple(
        name
        for name in adapters.with_capability(CPU_TRANSFORMS)
        if not adapters.declared(name).sibling and not adapters.is_alias(name)
    )


def _adapters() -> dict[str, Any]:
    return _built(eligibility_libraries())


@cache  # per set of libraries: a library registered later counts from then on
def _built(libraries: tuple[str, ...]) -> dict[str, Any]:
    from augbench.workload import adapters

    return {lib: adapters.get(lib) for lib in libraries}


def direct_implementations(name: str, channels: int = 3) -> list[str]:
    """Eligibility libraries whose adapter maps ``name`` to a direct implementation."""
    _check_channels(channels)
    out = []
    for lib, adapter in _adapters().items():
        mapping = adapter.mappings.get(name)
        if mapping is not None and (channels == 3 or mapping.multichannel):
            out.append(lib)
    return out


def eligible(channels: int = 3) -> tuple[str, ...]:
    """The generated transform set of a channel scenario, in catalog order."""
    _check_channels(channels)
    return _eligible(channels, eligibility_libraries())


@cache
def _eligible(channels: int, libraries: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(
        name
        for name, spec in CANDIDATES.items()
        if not spec.pipeline_only
        and len(direct_implementations(name, channels)) >= MIN_DIRECT_IMPLEMENTATIONS
    )


def _check_channels(channels: int) -> None:
    if channels not in CHANNEL_SCENARIOS:
        raise ValueError(f"unknown channel scenario {channels!r}; allowed: {CHANNEL_SCENARIOS}")


def get(name: str) -> TransformSpec:
    """A transform of the RGB paper set (the benchmarked catalog)."""
    if name in CANDIDATES and name in eligible(3):
        return CANDIDATES[name]
    allowed = ", ".join(eligible(3))
    if name in CANDIDATES and CANDIDATES[name].pipeline_only:
        raise KeyError(
            f"transform {name!r} is not in the paper set: it is a step of user pipelines only "
            f"(augbench.workload.pipelines); allowed: {allowed}"
        )
    if name in CANDIDATES:
        raise KeyError(
            f"transform {name!r} is not in the paper set: only "
            f"{direct_implementations(name) or 'no library'} implement it directly (need "
            f"{MIN_DIRECT_IMPLEMENTATIONS}); allowed: {allowed}"
        )
    raise KeyError(f"unknown transform {name!r}; allowed: {allowed}")


def names(channels: int = 3) -> list[str]:
    """Names of the paper set of a channel scenario (RGB by default)."""
    return list(eligible(channels))


def __getattr__(attr: str) -> Any:
    # TRANSFORMS is derived from the adapters, which import lazily; computing it on first access
    # keeps `import augbench.workload.catalog` free of import cycles.
    if attr == "TRANSFORMS":
        return {name: CANDIDATES[name] for name in eligible(3)}
    raise AttributeError(attr)
