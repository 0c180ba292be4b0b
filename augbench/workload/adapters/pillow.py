"""Pillow: PIL.Image RGB images. Pillow has no random-augmentation API, so the adapter draws the
canonical random parameters (Python's ``random``) and calls Pillow's own operation; it never
implements an operation Pillow lacks.

Native input: ``PIL.Image.open(path).convert('RGB')``, an RGB ``PIL.Image`` (Pillow's own storage).
Pillow computes eagerly, so a new output image is materialized as it is (augbench.workload.layout);
only an output that is the input image itself is copied. Converting to numpy would be a relayout
that only Pillow pays (RGB is stored as 4 bytes per pixel), so the timed scope does not.
"""

from __future__ import annotations

import io
import math
import random
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from augbench.workload.adapters.base import (
    CPU_TRANSFORMS,
    PIL_IMAGE,
    TRAINING_FEED,
    Adapter,
    Mapping,
    Transform,
)


def _image_module() -> Any:
    from PIL import Image

    return Image


def _random_crop(size: tuple[int, int]) -> Transform:
    th, tw = size

    def apply(img: Any) -> Any:
        w, h = img.size
        x = random.randint(0, w - tw)
        y = random.randint(0, h - th)
        return img.crop((x, y, x + tw, y + th))

    return apply


def _center_crop(size: tuple[int, int]) -> Transform:
    th, tw = size

    def apply(img: Any) -> Any:
        w, h = img.size
        x = round((w - tw) / 2.0)
        y = round((h - th) / 2.0)
        return img.crop((x, y, x + tw, y + th))

    return apply


def _random_resized_crop(
    size: tuple[int, int], scale: tuple[float, float], ratio: tuple[float, float]
) -> Transform:
    resample = _image_module().Resampling.BILINEAR
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))

    def box_for(w: int, h: int) -> tuple[int, int, int, int]:
        # Same sampling rule as torchvision's RandomResizedCrop: 10 tries, then a central crop.
        area = w * h
        for _ in range(10):
            target = area * random.uniform(*scale)
            aspect = math.exp(random.uniform(*log_ratio))
            cw = round(math.sqrt(target * aspect))
            ch = round(math.sqrt(target / aspect))
            if 0 < cw <= w and 0 < ch <= h:
                x = random.randint(0, w - cw)
                y = random.randint(0, h - ch)
                return x, y, x + cw, y + ch
        in_ratio = w / h
        if in_ratio < ratio[0]:
            cw, ch = w, round(w / ratio[0])
        elif in_ratio > ratio[1]:
            cw, ch = round(h * ratio[1]), h
        else:
            cw, ch = w, h
        x, y = (w - cw) // 2, (h - ch) // 2
        return x, y, x + cw, y + ch

    def apply(img: Any) -> Any:
        box = box_for(*img.size)
        return img.resize((size[1], size[0]), resample=resample, box=box)

    return apply


def _affine(
    degrees: float, translate: float, scale: tuple[float, float], shear: float
) -> Transform:
    image = _image_module()
    resample = image.Resampling.BILINEAR

    def apply(img: Any) -> Any:
        w, h = img.size
        angle = math.radians(random.uniform(-degrees, degrees))
        sx = math.radians(random.uniform(-shear, shear))
        s = random.uniform(*scale)
        tx = random.uniform(-translate, translate) * w
        ty = random.uniform(-translate, translate) * h
        cx, cy = w * 0.5, h * 0.5
        # Forward map about the centre: T(c + t) · R(angle) · Shear_x(sx) · S(s) · T(-c).
        # Pillow's AFFINE takes the inverse (output -> input) matrix.
        a = math.cos(angle) * s
        b = (math.cos(angle) * math.tan(sx) - math.sin(angle)) * s
        c = math.sin(angle) * s
        d = (math.sin(angle) * math.tan(sx) + math.cos(angle)) * s
        det = a * d - b * c
        ia, ib, ic, id_ = d / det, -b / det, -c / det, a / det
        ox, oy = cx + tx, cy + ty
        inv = (ia, ib, cx - ia * ox - ib * oy, ic, id_, cy - ic * ox - id_ * oy)
        return img.transform((w, h), image.Transform.AFFINE, inv, resample=resample, fillcolor=0)

    return apply


def _jpeg(quality: tuple[int, int]) -> Transform:
    image = _image_module()

    def apply(img: Any) -> Any:
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=random.randint(*quality))
        buf.seek(0)
        out = image.open(buf)
        out.load()
        return out

    return apply


def _enhance(kind: str, factor: tuple[float, float]) -> Transform:
    from PIL import ImageEnhance

    enhancer = getattr(ImageEnhance, kind)

    def apply(img: Any) -> Any:
        return enhancer(img).enhance(random.uniform(*factor))

    return apply


def _ops(fn: str, *args: Any) -> Transform:
    from PIL import ImageOps

    op = getattr(ImageOps, fn)
    return lambda img: op(img, *args)


def _channel_shuffle() -> Transform:
    image = _image_module()

    def apply(img: Any) -> Any:
        bands = list(img.split())
        random.shuffle(bands)
        return image.merge("RGB", bands)

    return apply


class PillowAdapter(Adapter):
    name = "pillow"
    title = "Pillow"
    color = "#CC79A7"
    capabilities = frozenset({CPU_TRANSFORMS, TRAINING_FEED})
    distribution = "pillow"
    recorded_distributions = ("numpy", "torch", "pyperf")
    decoded_layout = PIL_IMAGE
    native_format = "PIL.Image RGB"
    decoder = "PIL.Image.open(path).convert('RGB')"

    def import_library(self) -> None:
        import PIL.Image  # noqa: F401

    def decode(self, path: Path) -> Any:
        with _image_module().open(path) as img:
            return img.convert("RGB")

    def to_array(self, image: Any) -> np.ndarray:
        return np.asarray(image)

    def from_array(self, array: np.ndarray) -> Any:
        return _image_module().fromarray(np.ascontiguousarray(array), mode="RGB")

    def _unsupported_reasons(self) -> dict[str, str]:
        return {
            "PadIfNeeded": "Pillow has no pad-to-a-minimum-size operation; ImageOps.pad also "
            "resizes and ImageOps.expand takes fixed widths",
            "ColorJitter": "Pillow has no hue adjustment; composing one from HSV arithmetic would "
            "be benchmark-side code, not Pillow",
            "Hue": "Pillow has no hue adjustment",
            "PhotoMetricDistort": "Pillow has no hue adjustment, a step of this transform",
            "ColorJiggle": "Pillow has no hue adjustment",
            "RandomGamma": "Pillow has no gamma operation; a point() lookup table would be "
            "benchmark-side arithmetic",
            "ChannelDropout": "Pillow has no channel dropout",
            "RGBShift": "Pillow has no per-channel shift; point() tables would be benchmark-side "
            "arithmetic",
            "GaussianNoise": "Pillow has no additive noise (Image.effect_noise makes a noise "
            "image; adding it would be benchmark-side code)",
            "Erasing": "Pillow has no erasing transform",
        }

    # -- step options (pipelines) ----------------------------------------------------------------
    antialias_choices: ClassVar[dict[str, tuple[bool, ...]]] = {"RandomResizedCrop": (True,)}
    antialias_reasons: ClassVar[dict[str, str]] = {
        "RandomResizedCrop": "Pillow's bilinear resize always antialiases when downscaling (its "
        "filter support widens with the scale); it has no non-antialiased bilinear mode",
    }

    def _mappings(self) -> dict[str, Mapping]:
        def bilinear() -> Any:
            return _image_module().Resampling.BILINEAR

        def transpose(kind: str) -> Transform:
            method = getattr(_image_module().Transpose, kind)
            return lambda img: img.transpose(method)

        def gray(img: Any) -> Any:
            return img.convert("L").convert("RGB")

        mappings = {
            "Resize": Mapping(
                "img.resize((512, 512), Image.BILINEAR)",
                lambda p: lambda img, s=(p["size"][1], p["size"][0]): img.resize(s, bilinear()),
                note="Pillow's bilinear filter widens its support when downscaling (antialiased).",
            ),
            "RandomCrop224": Mapping(
                "img.crop(random 224x224 box)", lambda p: _random_crop(tuple(p["size"]))
            ),
            "RandomResizedCrop": Mapping(
                "img.resize((224, 224), Image.BILINEAR, box=<torchvision's sampling rule>)",
                lambda p: _random_resized_crop(
                    tuple(p["size"]), tuple(p["scale"]), tuple(p["ratio"])
                ),
            ),
            "CenterCrop224": Mapping(
                "img.crop(central 224x224 box)", lambda p: _center_crop(tuple(p["size"]))
            ),
            "HorizontalFlip": Mapping(
                "img.transpose(Image.FLIP_LEFT_RIGHT)", lambda p: transpose("FLIP_LEFT_RIGHT")
            ),
            "VerticalFlip": Mapping(
                "img.transpose(Image.FLIP_TOP_BOTTOM)", lambda p: transpose("FLIP_TOP_BOTTOM")
            ),
            "Rotate": Mapping(
                "img.rotate(uniform(-45, 45), Image.BILINEAR, fillcolor=0)",
                lambda p: (
                    lambda img, d=p["degrees"]: img.rotate(
                        random.uniform(-d, d), resample=bilinear(), fillcolor=0
                    )
                ),
            ),
            "Affine": Mapping(
                "img.transform(size, Image.AFFINE, <inverse of sampled matrix>, Image.BILINEAR)",
                lambda p: _affine(p["degrees"], p["translate"], tuple(p["scale"]), p["shear"]),
            ),
            "GaussianBlur": Mapping(
                "img.filter(ImageFilter.GaussianBlur(radius=2.0))",
                lambda p: _filter(_gaussian_filter(p["sigma"])),
                note="Pillow approximates the Gaussian with repeated box blurs and has no "
                "kernel size; radius is the standard deviation.",
            ),
            "Brightness": Mapping(
                "ImageEnhance.Brightness(img).enhance(uniform(0.8, 1.2))",
                lambda p: _enhance("Brightness", tuple(p["factor"])),
            ),
            "Contrast": Mapping(
                "ImageEnhance.Contrast(img).enhance(uniform(0.8, 1.2))",
                lambda p: _enhance("Contrast", tuple(p["factor"])),
            ),
            "Saturation": Mapping(
                "ImageEnhance.Color(img).enhance(uniform(0.5, 1.5))",
                lambda p: _enhance("Color", tuple(p["factor"])),
            ),
            "Grayscale": Mapping("img.convert('L').convert('RGB')", lambda p: gray),
            "Equalize": Mapping("ImageOps.equalize(img)", lambda p: _ops("equalize")),
            "JpegCompression": Mapping(
                "img.save(BytesIO, 'JPEG', quality=randint(50, 95)); Image.open(...).load()",
                lambda p: _jpeg(tuple(p["quality"])),
            ),
            "Posterize": Mapping(
                "ImageOps.posterize(img, 4)", lambda p: _ops("posterize", p["bits"])
            ),
            "Solarize": Mapping(
                "ImageOps.solarize(img, 128)", lambda p: _ops("solarize", p["threshold"])
            ),
            "Sharpen": Mapping(
                "ImageEnhance.Sharpness(img).enhance(2.0)",
                lambda p: _enhance("Sharpness", (p["factor"], p["factor"])),
            ),
            "Invert": Mapping("ImageOps.invert(img)", lambda p: _ops("invert")),
            "AutoContrast": Mapping("ImageOps.autocontrast(img)", lambda p: _ops("autocontrast")),
            "ChannelShuffle": Mapping(
                "Image.merge('RGB', shuffled img.split())", lambda p: _channel_shuffle()
            ),
            **_paper_set_mappings(),
        }
        # PIL images have at most 4 bands: no Pillow mapping is multichannel.
        return mappings

    # -- DataLoader recipe tail (cpu_dataloader) -------------------------------------------------
    # Pillow has no tensor type and no normalize operation. The tail is the minimal conversion a
    # Pillow user writes: the PIL image's pixels as float32, scaled and shifted per channel by
    # numpy, moved to CHW and wrapped (no copy) by torch.from_numpy. It is the same arithmetic the
    # other libraries' Normalize performs, and it is counted in Pillow's time.
    recipe_tail_call = (
        "torch.from_numpy(np.multiply(np.asarray(img), 1 / (255 std), dtype=float32) - mean / std)"
        ".permute(2, 0, 1)"
    )

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Transform:
        import torch

        std_arr = np.asarray(std, dtype=np.float32)
        scale = (1.0 / (255.0 * std_arr)).astype(np.float32)
        shift = (np.asarray(mean, dtype=np.float32) / std_arr).astype(np.float32)

        def apply(img: Any) -> Any:
            # One float32 array: the uint8 view of the image is scaled into it, shifted in
            # place and handed to torch as a CHW view (channels-last memory, like
            # AlbumentationsX's ToTensorV2 output); no other copy.
            x = np.multiply(np.asarray(img), scale, dtype=np.float32)
            x -= shift
            return torch.from_numpy(x).permute(2, 0, 1)

        return apply


def _filter(image_filter: Any) -> Transform:
    return lambda img: img.filter(image_filter)


def _gaussian_filter(sigma: float) -> Any:
    from PIL import ImageFilter

    return ImageFilter.GaussianBlur(radius=sigma)


def _transpose(kind: str) -> Transform:
    method = getattr(_image_module().Transpose, kind)
    return lambda img: img.transpose(method)


def _random_rotate90(times: tuple[int, int]) -> Transform:
    transpose = _image_module().Transpose
    methods = (None, transpose.ROTATE_90, transpose.ROTATE_180, transpose.ROTATE_270)
    choices = methods[times[0] : times[1] + 1]

    def apply(img: Any) -> Any:
        method = random.choice(choices)
        # k = 0 is the identity: a copy, so the output is never the cached input itself.
        return img.copy() if method is None else img.transpose(method)

    return apply


def _max_size(max_size: int, longest: bool) -> Transform:
    resample = _image_module().Resampling.BILINEAR

    def apply(img: Any) -> Any:
        w, h = img.size
        side = max(w, h) if longest else min(w, h)
        scale = max_size / side
        return img.resize((max(1, round(w * scale)), max(1, round(h * scale))), resample)

    return apply


def _pad(padding: int) -> Transform:
    from PIL import ImageOps

    return lambda img: ImageOps.expand(img, border=padding, fill=0)


def _perspective(distortion_scale: float) -> Transform:
    image = _image_module()

    def apply(img: Any) -> Any:
        w, h = img.size
        # Corner sampling as torchvision's RandomPerspective: each corner moves inwards by up to
        # distortion_scale * half the side.
        dx, dy = int(distortion_scale * (w // 2)), int(distortion_scale * (h // 2))
        start = [(0, 0), (w - 1, 0), (w - 1, h - 1), (0, h - 1)]
        end = [
            (random.randint(0, dx), random.randint(0, dy)),
            (w - 1 - random.randint(0, dx), random.randint(0, dy)),
            (w - 1 - random.randint(0, dx), h - 1 - random.randint(0, dy)),
            (random.randint(0, dx), h - 1 - random.randint(0, dy)),
        ]
        coeffs = _perspective_coefficients(end, start)
        return img.transform(
            (w, h), image.Transform.PERSPECTIVE, coeffs, image.Resampling.BILINEAR, fillcolor=0
        )

    return apply


def _perspective_coefficients(
    output_pts: list[tuple[int, int]], input_pts: list[tuple[int, int]]
) -> tuple[float, ...]:
    """The 8 coefficients Pillow's PERSPECTIVE takes: output (x, y) -> input point."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(output_pts, input_pts, strict=True):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs.extend([u, v])
    return tuple(np.linalg.solve(np.asarray(rows, float), np.asarray(rhs, float)).tolist())


def _paper_set_mappings() -> dict[str, Mapping]:
    from_filter = "img.filter(ImageFilter.{})"
    return {
        "Transpose": Mapping("img.transpose(Image.TRANSPOSE)", lambda p: _transpose("TRANSPOSE")),
        "RandomRotate90": Mapping(
            "img.transpose(choice([identity, ROTATE_90, ROTATE_180, ROTATE_270]))",
            lambda p: _random_rotate90(tuple(p["times"])),
        ),
        "Pad": Mapping("ImageOps.expand(img, border=10, fill=0)", lambda p: _pad(p["padding"])),
        "LongestMaxSize": Mapping(
            "img.resize(<longer side 512>, Image.BILINEAR)",
            lambda p: _max_size(p["max_size"], longest=True),
            note="Pillow's bilinear filter widens its support when downscaling (antialiased).",
        ),
        "SmallestMaxSize": Mapping(
            "img.resize(<shorter side 512>, Image.BILINEAR)",
            lambda p: _max_size(p["max_size"], longest=False),
            note="Pillow's bilinear filter widens its support when downscaling (antialiased).",
        ),
        "Shear": Mapping(
            "img.transform(size, Image.AFFINE, <inverse of sampled x-shear about the centre>, "
            "Image.BILINEAR)",
            lambda p: _affine(0.0, 0.0, (1.0, 1.0), p["shear"]),
        ),
        "Perspective": Mapping(
            "img.transform(size, Image.PERSPECTIVE, <coefficients of sampled corners>, "
            "Image.BILINEAR, fillcolor=0)",
            lambda p: _perspective(p["distortion_scale"]),
        ),
        "Blur": Mapping(
            from_filter.format("BoxBlur(2)"),
            lambda p: _filter(_image_filter("BoxBlur", (p["kernel_size"] - 1) // 2)),
            note="radius r averages a (2r+1) x (2r+1) box: radius 2 is the 5x5 kernel.",
        ),
        "MedianBlur": Mapping(
            from_filter.format("MedianFilter(5)"),
            lambda p: _filter(_image_filter("MedianFilter", p["kernel_size"])),
        ),
        "UnsharpMask": Mapping(
            from_filter.format("UnsharpMask(radius=2, percent=100, threshold=0)"),
            lambda p: _filter(
                _image_filter(
                    "UnsharpMask", radius=p["sigma"], percent=round(100 * p["amount"]), threshold=0
                )
            ),
            note="Pillow's Gaussian is a box-blur approximation with radius = sigma.",
        ),
        "EnhanceEdge": Mapping(
            from_filter.format("EDGE_ENHANCE"),
            lambda p: _filter(_image_filter_constant("EDGE_ENHANCE")),
        ),
        "EnhanceDetail": Mapping(
            from_filter.format("DETAIL"), lambda p: _filter(_image_filter_constant("DETAIL"))
        ),
    }


def _image_filter(name: str, *args: Any, **kwargs: Any) -> Any:
    from PIL import ImageFilter

    return getattr(ImageFilter, name)(*args, **kwargs)


def _image_filter_constant(name: str) -> Any:
    from PIL import ImageFilter

    return getattr(ImageFilter, name)
