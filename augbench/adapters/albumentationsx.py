"""AlbumentationsX: HWC uint8 numpy arrays decoded by OpenCV."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from augbench.adapters.base import Adapter, Mapping, Transform


def _albx(factory: str, **kwargs: Any) -> Transform:
    """``A.<factory>(**kwargs, p=1)`` applied to one image, returning the image."""
    import albumentations as A

    transform = getattr(A, factory)(**kwargs, p=1.0)

    def apply(image: np.ndarray) -> np.ndarray:
        return transform(image=image)["image"]

    return apply


def _cv2_flag(name: str) -> int:
    import cv2

    return getattr(cv2, name)


class AlbumentationsXAdapter(Adapter):
    name = "albumentationsx"
    distribution = "albumentationsx"
    recorded_distributions = ("albucore", "opencv-python-headless", "numpy", "torch", "pyperf")
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

    def materialize(self, output: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(output)

    def _mappings(self) -> dict[str, Mapping]:
        linear = "cv2.INTER_LINEAR"
        const = "cv2.BORDER_CONSTANT"
        return {
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

        return apply
