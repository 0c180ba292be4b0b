"""Kornia (kornia.augmentation): float32 BCHW tensors in [0, 1], decoded by torchvision.io."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from augbench.adapters.base import Adapter, Mapping, Transform


def _k(factory: str, *args: Any, **kwargs: Any) -> Transform:
    import kornia.augmentation as K

    return getattr(K, factory)(*args, **kwargs)


class KorniaAdapter(Adapter):
    name = "kornia"
    distribution = "kornia"
    recorded_distributions = ("kornia-rs", "torch", "torchvision", "numpy", "pyperf")
    native_format = "torch.Tensor 1x3xHxW float32 in [0, 1]"
    decoder = "torchvision.io.decode_image(read_file(path), RGB), then /255 to float32 1x3xHxW"

    def import_library(self) -> None:
        import kornia.augmentation  # noqa: F401
        import torch  # noqa: F401

    def decode(self, path: Path) -> Any:
        from torchvision.io import ImageReadMode, decode_image, read_file

        chw = decode_image(read_file(str(path)), mode=ImageReadMode.RGB)
        return chw.unsqueeze(0).float().div_(255.0)

    def to_array(self, image: Any) -> np.ndarray:
        import torch

        return (image[0] * 255.0).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).numpy()

    def from_array(self, array: np.ndarray) -> Any:
        import torch

        chw = torch.from_numpy(np.ascontiguousarray(array)).permute(2, 0, 1)
        return chw.unsqueeze(0).float().div_(255.0).contiguous()

    def materialize(self, output: Any) -> Any:
        return output.contiguous()

    def _mappings(self) -> dict[str, Mapping]:
        return {
            "Resize": Mapping("K.Resize((512, 512))", lambda p: _k("Resize", tuple(p["size"]))),
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
                "K.RandomBrightness(brightness=(0.8, 1.2), p=1)",
                lambda p: _k("RandomBrightness", brightness=tuple(p["factor"]), p=1.0),
                note="Kornia's brightness is additive (x + factor - 1), not multiplicative.",
            ),
            "Contrast": Mapping(
                "K.RandomContrast(contrast=(0.8, 1.2), p=1)",
                lambda p: _k("RandomContrast", contrast=tuple(p["factor"]), p=1.0),
                note="Kornia scales intensities (x * factor) rather than blending with the "
                "mean grey level.",
            ),
            "Saturation": Mapping(
                "K.RandomSaturation(saturation=(0.5, 1.5), p=1)",
                lambda p: _k("RandomSaturation", saturation=tuple(p["factor"]), p=1.0),
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
                "K.RandomPosterize(bits=4, p=1)",
                lambda p: _k("RandomPosterize", bits=p["bits"], p=1.0),
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
        }

    # -- DataLoader recipe tail (cpu_dataloader) -------------------------------------------------
    recipe_tail_call = "K.Normalize(mean, std, p=1)(x)[0]  (x: 1x3xHxW float in [0, 1])"

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Transform:
        import torch

        normalize = _k("Normalize", mean=torch.tensor(mean), std=torch.tensor(std), p=1.0)

        def apply(image: Any) -> Any:
            # Kornia works on batches; the DataLoader collates single samples, so drop the
            # batch axis of one.
            return normalize(image)[0]

        return apply
