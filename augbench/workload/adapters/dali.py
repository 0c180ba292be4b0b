"""NVIDIA DALI: catalog transforms as DALI operators inside a pipeline.

DALI has no per-image call: a mapping's ``build(params)`` returns a function that adds the
transform's operators to the pipeline being defined, ``apply(images, ctx) -> images``, where
``images`` is a DALI DataNode (HWC uint8 RGB; on the GPU after the ``mixed`` decoder, on the CPU in
the CPU-backend variant) and ``ctx`` says what the pipeline knows statically (the input size).
Random parameters come from ``fn.random.*`` and are drawn per sample.

Transforms DALI has no operator for are ``unsupported`` with the reason; they are never rebuilt
from arithmetic expressions or generic filters. Every mapped operator has CPU and GPU backends,
so the two variants measure the same set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from augbench.workload.adapters.base import (
    DALI_PIPELINE,
    LOCK_ALONE,
    TRAINING_FEED,
    Adapter,
    Mapping,
)


@dataclass(frozen=True)
class DaliContext:
    """What a mapping may rely on when adding its operators."""

    input_hw: tuple[int, int] | None  # fixed input size, or None when sizes vary per sample


def _fn() -> Any:
    import nvidia.dali.fn as fn

    return fn


def _types() -> Any:
    import nvidia.dali.types as types

    return types


def _uniform(low: float, high: float) -> Any:
    return _fn().random.uniform(range=(float(low), float(high)))


def _linear() -> Any:
    return _types().INTERP_LINEAR


def _resize(p: dict[str, Any]) -> Any:
    h, w = p["size"]
    return lambda images, ctx: _fn().resize(
        images, resize_x=w, resize_y=h, interp_type=_linear(), antialias=True
    )


def _random_crop(p: dict[str, Any]) -> Any:
    h, w = p["size"]
    return lambda images, ctx: _fn().crop(
        images, crop=(h, w), crop_pos_x=_uniform(0, 1), crop_pos_y=_uniform(0, 1)
    )


def _random_resized_crop(p: dict[str, Any]) -> Any:
    return lambda images, ctx: _fn().random_resized_crop(
        images,
        size=tuple(p["size"]),
        random_area=tuple(p["scale"]),
        random_aspect_ratio=tuple(p["ratio"]),
        interp_type=_linear(),
        antialias=p.get("antialias", True),
    )


def _center_crop(p: dict[str, Any]) -> Any:
    return lambda images, ctx: _fn().crop(images, crop=tuple(p["size"]))


def _random_flip(horizontal: bool, p: float) -> Any:
    """A flip applied with probability p: DALI's own per-sample coin flip as the flip flag."""

    def apply(images: Any, ctx: Any) -> Any:
        coin = _fn().random.coin_flip(probability=p)
        return _fn().flip(
            images, horizontal=coin if horizontal else 0, vertical=0 if horizontal else coin
        )

    return apply


def _flip(horizontal: int, vertical: int) -> Any:
    return lambda images, ctx: _fn().flip(images, horizontal=horizontal, vertical=vertical)


def _rotate(p: dict[str, Any]) -> Any:
    d = p["degrees"]
    return lambda images, ctx: _fn().rotate(
        images, angle=_uniform(-d, d), keep_size=True, fill_value=0, interp_type=_linear()
    )


def _affine(p: dict[str, Any]) -> Any:
    def apply(images: Any, ctx: DaliContext) -> Any:
        if ctx.input_hw is None:
            raise ValueError("the Affine mapping needs a fixed input size (its centre)")
        fn, types = _fn(), _types()
        h, w = ctx.input_hw
        centre = [w / 2.0, h / 2.0]  # DALI transforms take (x, y)
        scale = _uniform(*p["scale"])
        # x-shear only: a random angle in x, 0 in y.
        shear = fn.random.uniform(range=(-p["shear"], p["shear"]), shape=[2]) * types.Constant(
            np.array([1.0, 0.0], dtype=np.float32)
        )
        offset = fn.random.uniform(range=(-p["translate"], p["translate"]), shape=[2]) * (
            types.Constant(np.array([w, h], dtype=np.float32))
        )
        matrix = fn.transforms.combine(
            fn.transforms.scale(scale=fn.stack(scale, scale), center=centre),
            fn.transforms.shear(angles=shear, center=centre),
            fn.transforms.rotation(angle=_uniform(-p["degrees"], p["degrees"]), center=centre),
            fn.transforms.translation(offset=offset),
        )
        # The combined matrix maps source to destination points.
        return fn.warp_affine(
            images, matrix=matrix, inverse_map=False, fill_value=0, interp_type=_linear()
        )

    return apply


def _gaussian_blur(p: dict[str, Any]) -> Any:
    return lambda images, ctx: _fn().gaussian_blur(
        images, window_size=p["kernel_size"], sigma=p["sigma"]
    )


def _color_jitter(p: dict[str, Any]) -> Any:
    b, c, s, hue = p["brightness"], p["contrast"], p["saturation"], p["hue"]
    return lambda images, ctx: _fn().color_twist(
        images,
        brightness=_uniform(1 - b, 1 + b),
        contrast=_uniform(1 - c, 1 + c),
        saturation=_uniform(1 - s, 1 + s),
        hue=_uniform(-hue * 360.0, hue * 360.0),  # DALI's hue is in degrees
    )


def _jpeg(p: dict[str, Any]) -> Any:
    low, high = p["quality"]
    return lambda images, ctx: _fn().jpeg_compression_distortion(
        images,
        quality=_fn().random.uniform(values=list(range(low, high + 1)), dtype=_types().INT32),
    )


class DaliAdapter(Adapter):
    name = "dali"
    title = "NVIDIA DALI"
    color = "#E69F00"
    # Its loader feeds the sleep stand-in only (its env has no torch for a model step).
    capabilities = frozenset({DALI_PIPELINE, TRAINING_FEED})
    lock_mode = LOCK_ALONE  # its own CUDA stack
    env_has_torch = False
    distribution = "nvidia-dali-cuda120"
    node_packages: ClassVar[dict[str, str]] = {"nvidia-dali-cuda120": "nvidia.dali"}
    node_unfit = (
        "about 1.1 GB with its CUDA 12 libraries: far over the bundle limit, so the dali regime "
        "(and DALI-fed training) cannot run on the node"
    )
    recorded_distributions = (
        "numpy",
        "nvidia-nvimgcodec-cu12",
        "nvidia-npp-cu12",
        "nvidia-ml-py",
        "pyperf",
    )
    native_format = "DALI TensorList HWC uint8 (RGB), normalized to float32 CHW"
    decoder = "fn.decoders.image (nvImageCodec): device='mixed' on the GPU, 'cpu' otherwise"

    def import_library(self) -> None:
        import nvidia.dali.fn  # noqa: F401

    def decode(self, path: Path) -> Any:
        raise NotImplementedError("DALI decodes inside its pipeline (fn.decoders.image)")

    def to_array(self, image: Any) -> np.ndarray:
        raise NotImplementedError("DALI images live in pipeline TensorLists")

    def from_array(self, array: np.ndarray) -> Any:
        raise NotImplementedError("DALI images live in pipeline TensorLists")

    def materialize(self, output: Any, source: Any) -> Any:
        raise NotImplementedError("see augbench.measuring.engines.dali (whole-batch outputs)")

    # -- step options (pipelines) ----------------------------------------------------------------
    antialias_choices: ClassVar[dict[str, tuple[bool, ...]]] = {"RandomResizedCrop": (True, False)}
    probability_call = "fn.flip(horizontal=fn.random.coin_flip(probability=p)) (flips only)"
    compose_call = "one DALI pipeline: reader, decoder, the steps, fn.crop_mirror_normalize"
    _FLIPS: ClassVar[dict[str, bool]] = {"HorizontalFlip": True, "VerticalFlip": False}

    def option_problem(self, transform: str, options: dict[str, Any]) -> str | None:
        if float(options.get("p", 1.0)) < 1.0 and transform not in self._FLIPS:
            return (
                "augbench applies a DALI step to every sample; a probability is honoured only "
                "for flips (fn.random.coin_flip as the flip flag)"
            )
        return super().option_problem(transform, options)

    def build_step(
        self, transform: str, params: dict[str, Any], options: dict[str, Any] | None = None
    ) -> Any:
        options = options or {}
        p = float(options.get("p", 1.0))
        if p < 1.0 and transform in self._FLIPS:
            return _random_flip(self._FLIPS[transform], p)
        return super().build_step(transform, params, options)

    def _mappings(self) -> dict[str, Mapping]:
        lin = "interp_type=INTERP_LINEAR"
        u = "fn.random.uniform"
        return {
            "Resize": Mapping(
                f"fn.resize(resize_x=512, resize_y=512, {lin}, antialias=True)",
                _resize,
                note="Antialiased when downscaling, like torchvision.",
            ),
            "RandomCrop224": Mapping(
                f"fn.crop(crop=(224, 224), crop_pos_x={u}(0, 1), crop_pos_y={u}(0, 1))",
                _random_crop,
            ),
            "RandomResizedCrop": Mapping(
                "fn.random_resized_crop(size=(224, 224), random_area=(0.08, 1), "
                f"random_aspect_ratio=(3/4, 4/3), {lin}, antialias=True)",
                _random_resized_crop,
            ),
            "CenterCrop224": Mapping("fn.crop(crop=(224, 224))", _center_crop),
            "HorizontalFlip": Mapping("fn.flip(horizontal=1)", lambda p: _flip(1, 0)),
            "VerticalFlip": Mapping("fn.flip(horizontal=0, vertical=1)", lambda p: _flip(0, 1)),
            "Rotate": Mapping(
                f"fn.rotate(angle={u}(-45, 45), keep_size=True, fill_value=0, {lin})",
                _rotate,
            ),
            "Affine": Mapping(
                "fn.warp_affine(matrix=fn.transforms.combine(scale 0.8-1.2, x-shear ±10°, "
                f"rotation ±25° about the centre, translation ±10%), inverse_map=False, "
                f"fill_value=0, {lin})",
                _affine,
            ),
            "GaussianBlur": Mapping("fn.gaussian_blur(window_size=9, sigma=2.0)", _gaussian_blur),
            "ColorJitter": Mapping(
                f"fn.color_twist(brightness={u}(0.6, 1.4), contrast={u}(0.6, 1.4), "
                f"saturation={u}(0.6, 1.4), hue={u}(-36, 36) degrees)",
                _color_jitter,
                note="One fused operator in a fixed order (torchvision randomizes the order); "
                "contrast pivots on mid-grey (128), not the image mean.",
            ),
            "Brightness": Mapping(
                f"fn.brightness(brightness={u}(0.8, 1.2))",
                lambda p: (
                    lambda images, ctx: _fn().brightness(images, brightness=_uniform(*p["factor"]))
                ),
            ),
            "Contrast": Mapping(
                f"fn.contrast(contrast={u}(0.8, 1.2))",
                lambda p: (
                    lambda images, ctx: _fn().contrast(images, contrast=_uniform(*p["factor"]))
                ),
                note="Pivots on mid-grey (contrast_center = 128 for uint8), not the image mean.",
            ),
            "Saturation": Mapping(
                f"fn.saturation(saturation={u}(0.5, 1.5))",
                lambda p: (
                    lambda images, ctx: _fn().saturation(images, saturation=_uniform(*p["factor"]))
                ),
                note="Scales chroma in YIQ space rather than blending with the grey image.",
            ),
            "Grayscale": Mapping(
                "fn.saturation(saturation=0)",
                lambda p: lambda images, ctx: _fn().saturation(images, saturation=0.0),
                note="DALI's saturation works in YIQ: factor 0 keeps Y, the ITU-R 601 luma, on "
                "all three channels (within one grey level of rounding). "
                "fn.color_space_conversion(GRAY) would give one channel, not three.",
            ),
            "Equalize": Mapping(
                "fn.equalize()", lambda p: lambda images, ctx: _fn().equalize(images)
            ),
            "JpegCompression": Mapping(
                "fn.jpeg_compression_distortion(quality=fn.random.uniform(values=50..95))",
                _jpeg,
            ),
        }

    def _unsupported_reasons(self) -> dict[str, str]:
        arithmetic = (
            "dali has no {what} operator; building it from arithmetic expressions would be an "
            "emulation, not the library's implementation"
        )
        return {
            "Posterize": arithmetic.format(what="posterize"),
            "Solarize": arithmetic.format(what="solarize"),
            "Invert": arithmetic.format(what="invert"),
            "AutoContrast": arithmetic.format(what="autocontrast"),
            "Sharpen": "dali has no sharpen operator; a hand-written fn.filter kernel would be an "
            "emulation",
            "ChannelShuffle": "dali has no random channel-permutation operator",
        }
