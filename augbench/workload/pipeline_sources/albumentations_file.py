"""Pipelines written in AlbumentationsX's own format: what ``A.save`` / ``A.to_dict`` write.

A file holds ``{"__version__": ..., "transform": {"__class_fullname__": "Compose", "transforms":
[...], ...}}``. Each child of the Compose becomes one pipeline step:

- a catalog step where one expresses the child exactly: the same operation, its parameters
  convertible to the catalog's names and units, and every other parameter that changes the image
  at the value the catalog's AlbumentationsX mapping uses
  (``augbench.workload.adapters.albumentationsx``); ``p`` becomes the step option ``p`` and
  RandomResizedCrop's ``area_for_downscale`` the option ``antialias``
  (``augbench.workload.pipelines.STEP_OPTIONS``);
- otherwise an unmapped step (``Step.unmapped`` says why, naming the first parameter or the class
  without a catalog equivalent), which only AlbumentationsX runs.

Driver side (no albumentations needed): :func:`is_albumentations_data`, :func:`parse`. Library
side (the AlbumentationsX env): :func:`native_steps`, :func:`native_compose`, which build the
user's own objects from the saved dicts.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from augbench.workload import catalog, pipelines

LIBRARY, FORMAT = "albumentationsx", "albumentations"
CLASS_KEY = "__class_fullname__"
_LINEAR, _CONSTANT = 1, 0  # cv2.INTER_LINEAR, cv2.BORDER_CONSTANT: the catalog mappings' values
# Settings that do not change the image: mask-, bbox- and volume-only ones (no target of these
# files is driven, see parse).
_NO_IMAGE_EFFECT = frozenset(
    {"mask_interpolation", "fill_mask", "transpose_mask", "rotate_method", "blur_z_range",
     "sigma_z_range", "volume_mode"}
)  # fmt: skip
_CLASS_NOTES = {
    "CoarseDropout": "CoarseDropout draws a number of holes sized as fractions of the sides; the "
    "catalog Erasing erases one rectangle drawn by area and aspect",
}


class _NoEquivalent(Exception):
    """A child no catalog step expresses; the message is the unmapped reason."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(value: Any, expected: Any) -> bool:
    """Whether a saved value is the catalog mapping's (numbers compare by value: 0.0 is 0)."""
    if isinstance(expected, list):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(expected)
            and all(_same(v, e) for v, e in zip(value, expected, strict=True))
        )
    if _number(expected):
        return _number(value) and value == expected
    return type(value) is type(expected) and value == expected


# -- value conversions (each raises _NoEquivalent naming the AlbumentationsX key) ---------------
def _range(key: str, value: Any) -> list[float]:
    if isinstance(value, list | tuple) and len(value) == 2 and all(map(_number, value)):
        return list(value)
    raise _NoEquivalent(f"{key}={_short(value)} is not a (low, high) range")


def _point(key: str, value: Any) -> float:
    low, high = _range(key, value)
    if low != high:
        raise _NoEquivalent(f"{key}={_short(value)} is a range; the catalog step takes one value")
    return low


def _half_width(key: str, value: Any, centre: float = 0.0) -> float:
    """``d`` of a range ``[centre - d, centre + d]`` (rounded off float noise: 1.4 - 1 = 0.4)."""
    low, high = _range(key, value)
    width = high - centre
    if width < 0 or not math.isclose(centre - low, width, rel_tol=1e-9, abs_tol=1e-12):
        raise _NoEquivalent(f"{key}={_short(value)} is not symmetric about {centre:g}")
    return round(width, 12)


def _pixels(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise _NoEquivalent(f"{key}={_short(value)} is not a size in pixels")


def _size(key: str, value: Any) -> list[int]:
    """(height, width) in pixels."""
    if isinstance(value, list | tuple) and len(value) == 2:
        return [_pixels(key, v) for v in value]
    raise _NoEquivalent(f"{key}={_short(value)} is not a (height, width) size")


def _constant(key: str, value: Any) -> float:
    if _number(value):
        return value
    raise _NoEquivalent(f"{key}={_short(value)} is not a constant (the catalog fills with one)")


def _axes(key: str, value: Any) -> tuple[Any, Any]:
    """The ``{"x": ..., "y": ...}`` form A.to_dict writes for Affine's per-axis settings."""
    if isinstance(value, Mapping) and set(value) == {"x", "y"}:
        return value["x"], value["y"]
    raise _NoEquivalent(f"{key}={_short(value)} is not the {{x, y}} form A.save writes")


def _affine(a: dict[str, Any]) -> dict[str, Any]:
    scale_x, scale_y = _axes("scale", a["scale"])
    if scale_x != scale_y:
        raise _NoEquivalent("scale differs between x and y; the catalog Affine scales both alike")
    shear_x, shear_y = _axes("shear", a["shear"])
    if _range("shear", shear_y) != [0, 0]:
        raise _NoEquivalent(f"shear y={_short(shear_y)}; the catalog Affine shears along x only")
    if a["translate_percent"] is None:  # A.Affine's own default: translate_px of 0
        px = _axes("translate_px", a["translate_px"])
        if any(_range("translate_px", v) != [0, 0] for v in px):
            raise _NoEquivalent(
                "translate_px: the catalog Affine translates by fractions of the size"
            )
        translate = 0.0
    else:
        if a["translate_px"] is not None:
            raise _NoEquivalent("translate_px is set besides translate_percent")
        move_x, move_y = _axes("translate_percent", a["translate_percent"])
        if move_x != move_y:
            raise _NoEquivalent(
                "translate_percent differs between x and y; the catalog Affine "
                "translates both alike"
            )
        translate = _half_width("translate_percent", move_x)
    return {
        "degrees": _half_width("rotate", a["rotate"]),
        "translate": translate,
        "scale": _range("scale", scale_x),
        "shear": _half_width("shear", shear_x),
    }


def _gaussian_blur(a: dict[str, Any]) -> dict[str, Any]:
    kernel = _point("blur_range", a["blur_range"])
    if kernel <= 0 or kernel != int(kernel):
        raise _NoEquivalent(
            f"blur_range={_short(a['blur_range'])} derives the kernel from sigma; "
            "the catalog GaussianBlur has a fixed kernel size"
        )
    return {"kernel_size": int(kernel), "sigma": _point("sigma_range", a["sigma_range"])}


def _random_resized_crop(a: dict[str, Any]) -> dict[str, Any]:
    area = a["area_for_downscale"]
    if area not in (None, "image", "image_mask"):
        raise _NoEquivalent(
            f"area_for_downscale={_short(area)} is not None, 'image' or 'image_mask'"
        )
    return {
        "size": _size("size", a["size"]),
        "scale": _range("scale", a["scale"]),
        "ratio": _range("ratio", a["ratio"]),
        "antialias": area is not None,  # a step option (pipelines.STEP_OPTIONS)
    }


def _max_size(a: dict[str, Any]) -> dict[str, Any]:
    if isinstance(a["max_size"], list | tuple):
        raise _NoEquivalent(f"max_size={_short(a['max_size'])} draws one of several sizes")
    return {"max_size": _pixels("max_size", a["max_size"])}


@dataclass(frozen=True)
class _Rule:
    """How one catalog step expresses an AlbumentationsX class: ``convert`` turns the saved
    arguments named in ``reads`` into catalog parameters (and step options); ``fixed`` are the
    values the catalog mapping uses; ``ignored`` keys have no effect given ``fixed``."""

    step: str
    convert: Callable[[dict[str, Any]], dict[str, Any]] = lambda a: {}
    reads: tuple[str, ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)
    ignored: frozenset[str] = frozenset()


_RESAMPLE = {"interpolation": _LINEAR, "area_for_downscale": None}
_WARP = {"interpolation": _LINEAR, "border_mode": _CONSTANT, "fill": 0}
_NO_PAD = frozenset({"pad_position", "border_mode", "fill"})  # unused with pad_if_needed False
_IDENTITY = {"brightness": [1, 1], "contrast": [1, 1], "saturation": [1, 1], "hue": [0, 0]}


def _crop(step: str) -> _Rule:
    return _Rule(step, _height_width, ("height", "width"), {"pad_if_needed": False}, _NO_PAD)


def _height_width(a: dict[str, Any]) -> dict[str, Any]:
    return {"size": _size("height, width", [a["height"], a["width"]])}


def _jitter_one(step: str, which: str) -> _Rule:
    """A ColorJitter changing only ``which``: the catalog's Brightness/Contrast/Saturation."""
    key = f"{which}_range"
    fixed = {f"{k}_range": v for k, v in _IDENTITY.items() if k != which}
    return _Rule(step, lambda a: {"factor": _range(key, a[key])}, (key,), fixed)


# Per class, the catalog steps tried in order; the first rule's reason is reported when none fits.
_RULES: dict[str, tuple[_Rule, ...]] = {
    "RandomResizedCrop": (
        _Rule("RandomResizedCrop", _random_resized_crop,
              ("size", "scale", "ratio", "area_for_downscale"),
              {"interpolation": _LINEAR, "sampling_method": "standard"}),
    ),
    "HorizontalFlip": (_Rule("HorizontalFlip"),),
    "VerticalFlip": (_Rule("VerticalFlip"),),
    "Transpose": (_Rule("Transpose"),),
    "InvertImg": (_Rule("Invert"),),
    "ChannelShuffle": (_Rule("ChannelShuffle", fixed={"channel_order": None}),),
    "Resize": (
        _Rule("Resize", _height_width, ("height", "width"), _RESAMPLE),
    ),
    "RandomCrop": (_crop("RandomCrop224"),),
    "CenterCrop": (_crop("CenterCrop224"),),
    "LongestMaxSize": (
        _Rule("LongestMaxSize", _max_size, ("max_size",), {"max_size_hw": None, **_RESAMPLE}),
    ),
    "SmallestMaxSize": (
        _Rule("SmallestMaxSize", _max_size, ("max_size",), {"max_size_hw": None, **_RESAMPLE}),
    ),
    "PadIfNeeded": (
        _Rule("PadIfNeeded",
              lambda a: {"size": _size("min_height, min_width",
                                       [a["min_height"], a["min_width"]])},
              ("min_height", "min_width"),
              {"position": "top_left", "border_mode": _CONSTANT, "fill": 0,
               "pad_height_divisor": None, "pad_width_divisor": None}),
    ),
    "Normalize": (
        _Rule("Normalize", lambda a: {"mean": a["mean"], "std": a["std"]}, ("mean", "std"),
              {"max_pixel_value": 255, "normalization": "standard", "clip_range": None}),
    ),
    "ToTensorV2": (_Rule(pipelines.TENSOR_STEP),),
    "ColorJitter": (
        _Rule("ColorJitter",
              lambda a: {
                  "brightness": _half_width("brightness_range", a["brightness_range"], 1.0),
                  "contrast": _half_width("contrast_range", a["contrast_range"], 1.0),
                  "saturation": _half_width("saturation_range", a["saturation_range"], 1.0),
                  "hue": _half_width("hue_range", a["hue_range"]),
              },
              tuple(f"{k}_range" for k in _IDENTITY)),
        _jitter_one("Brightness", "brightness"),
        _jitter_one("Contrast", "contrast"),
        _jitter_one("Saturation", "saturation"),
    ),
    "GaussianBlur": (_Rule("GaussianBlur", _gaussian_blur, ("blur_range", "sigma_range")),),
    "Affine": (
        _Rule("Affine", _affine,
              ("rotate", "scale", "shear", "translate_percent", "translate_px"),
              {**_WARP, "fit_output": False, "keep_ratio": True, "balanced_scale": False}),
    ),
    "Rotate": (
        _Rule("Rotate", lambda a: {"degrees": _half_width("angle_range", a["angle_range"])},
              ("angle_range",), {**_WARP, "crop_border": False}),
    ),
    "GaussNoise": (
        _Rule("GaussianNoise",
              lambda a: {"mean": _point("mean_range", a["mean_range"]),
                         "std": _point("std_range", a["std_range"])},
              ("mean_range", "std_range"), {"per_channel": True}),
    ),
    "Erasing": (
        _Rule("Erasing",
              lambda a: {"scale": _range("scale", a["scale"]), "ratio": _range("ratio", a["ratio"]),
                         "value": _constant("fill", a["fill"])},
              ("scale", "ratio", "fill")),
    ),
}  # fmt: skip


def _apply(rule: _Rule, args: dict[str, Any], where: str) -> pipelines.Step:
    """The catalog step of ``rule`` for a child's saved arguments, checked as pipelines.parse
    checks a step of the benchmark's own format; raises _NoEquivalent with the reason."""
    for key in (*rule.reads, *rule.fixed, "p"):
        if key not in args:  # a hand-written file: the library default is not known here
            raise _NoEquivalent(f"{key} is not in the file (A.save writes every argument)")
    for key, value in args.items():
        if key in rule.fixed and not _same(value, rule.fixed[key]):
            raise _NoEquivalent(
                f"{key}={_short(value)}: the catalog {rule.step} uses {_short(rule.fixed[key])}"
            )
        if key not in {"p", *rule.reads, *rule.fixed, *rule.ignored, *_NO_IMAGE_EFFECT}:
            raise _NoEquivalent(
                f"{key}={_short(value)} has no equivalent in the catalog {rule.step}"
            )
    p = args["p"]
    if rule.step in (pipelines.TAIL_STEP, pipelines.TENSOR_STEP) and p != 1:
        raise _NoEquivalent(f"p={_short(p)}: the catalog {rule.step} is always applied")
    given = rule.convert(args)
    defaults = catalog.CANDIDATES[rule.step].params
    for key, value in given.items():
        if key not in pipelines.STEP_OPTIONS and not pipelines.shape_ok(defaults[key], value):
            raise _NoEquivalent(
                f"{key}={_short(value)} does not have the shape of the catalog {rule.step}'s "
                f"{_short(defaults[key])}"
            )
    options = {"p": p} if p != 1 else {}
    return pipelines.parse_step({rule.step: {**given, **options}}, where, False)


def _class_name(child: Mapping[str, Any]) -> str:
    return str(child[CLASS_KEY]).rsplit(".", 1)[-1]  # older files write a dotted path


def _child_step(child: Any, where: str) -> pipelines.Step:
    if not isinstance(child, Mapping):
        raise pipelines.PipelineError(
            f"{where} {_short(child)}: expected a mapping with {CLASS_KEY} (what A.save writes), "
            f"got a {type(child).__name__}"
        )
    if not isinstance(child.get(CLASS_KEY), str):
        raise pipelines.PipelineError(
            f"{where} (unnamed): a transform needs a {CLASS_KEY} string; "
            f"keys: {sorted(map(str, child))}"
        )
    name = _class_name(child)
    where = f"{where} {name!r}"
    if "transforms" in child:
        if not isinstance(child["transforms"], list):
            raise pipelines.PipelineError(f"{where}: transforms must be a list")
        return _unmap(child, f"nested container {name}: no catalog step groups other steps")
    args = {k: v for k, v in child.items() if k != CLASS_KEY}
    reasons = []
    for rule in _RULES.get(name, ()):
        try:
            return _apply(rule, args, where)
        except _NoEquivalent as exc:
            reasons.append(f"{name} {exc}")
    default = f"{name} has no catalog equivalent"
    return _unmap(child, reasons[0] if reasons else _CLASS_NOTES.get(name, default))


def _unmap(child: Mapping[str, Any], reason: str) -> pipelines.Step:
    """A child kept as the library's own step: its class name and saved arguments."""
    args = {k: v for k, v in child.items() if k != CLASS_KEY}
    return pipelines.Step(_class_name(child), args, unmapped=reason)


def _order(steps: list[pipelines.Step], children: list[Any]) -> list[pipelines.Step]:
    """pipelines' rule on the catalog Normalize (a tensor: only ToTensor follows it) and ToTensor
    (only directly after Normalize); a child breaking it stays unmapped (AlbumentationsX runs
    it)."""
    tail, tensor = pipelines.TAIL_STEP, pipelines.TENSOR_STEP
    out = list(steps)
    for i, step in enumerate(out):
        after = out[i + 1 :]
        head = 1 if after and after[0].name == tensor and not after[0].unmapped else 0
        if step.name == tail and not step.unmapped and len(after) > head:
            out[i] = _unmap(
                children[i],
                f"Normalize is followed by {after[head].name}: the catalog Normalize ends in a "
                "tensor, so only ToTensor may follow it",
            )
    for i, step in enumerate(out):
        previous = out[i - 1] if i else None
        if (
            step.name == tensor
            and not step.unmapped
            and (previous is None or previous.name != tail or previous.unmapped)
        ):
            out[i] = _unmap(children[i], "the catalog ToTensor must directly follow Normalize")
    return out


# -- driver side -------------------------------------------------------------------------------
def is_albumentations_data(data: Any) -> bool:
    """Whether loaded YAML/JSON is an A.save / A.to_dict dump (not the benchmark's own format)."""
    return (
        isinstance(data, Mapping)
        and isinstance(data.get("transform"), Mapping)
        and CLASS_KEY in data["transform"]
    )


def parse(data: dict[str, Any], *, source: str, name: str) -> pipelines.Pipeline:
    """The pipeline of an A.save file's content; ``name`` is the caller's (the file's stem)."""
    if not isinstance(name, str) or not pipelines.NAME_PATTERN.match(name):
        raise pipelines.PipelineError(
            f"pipeline {source}: name {name!r} must match {pipelines.NAME_PATTERN.pattern}"
        )
    if name in catalog.CANDIDATES:
        raise pipelines.PipelineError(
            f"pipeline {source}: name {name!r} is a catalog transform; rename the file"
        )
    where = f"pipeline {name!r} ({source})"
    if not is_albumentations_data(data):
        raise pipelines.PipelineError(
            f"{where}: expected what A.save writes, a mapping with transform.{CLASS_KEY}"
        )
    top = data["transform"]
    if _class_name(top) != "Compose":
        raise pipelines.PipelineError(
            f"{where}: the top-level transform is {top[CLASS_KEY]}, not Compose; save an A.Compose"
        )
    if top.get("p", 1) != 1:
        raise pipelines.PipelineError(
            f"{where}: Compose p={top['p']!r}; the benchmark applies a pipeline to every image, "
            "so save the Compose with p=1"
        )
    children = top.get("transforms")
    if not isinstance(children, list) or not children:
        raise pipelines.PipelineError(f"{where}: Compose transforms must be a non-empty list")
    steps = [_child_step(c, f"{where} step {i}") for i, c in enumerate(children, start=1)]
    version = data.get("__version__", "unknown version")
    return pipelines.Pipeline(
        name=name,
        steps=tuple(_order(steps, children)),
        # Masks are not declared by A.save files, and Compose's additional_targets (and bbox /
        # keypoint params) are not driven: the pipeline is run on images only.
        targets=(),
        description=f"AlbumentationsX Compose written with A.save (AlbumentationsX {version})",
        source=source,
        native={"library": LIBRARY, "format": FORMAT, "spec": copy.deepcopy(dict(top))},
    )


# -- library side (the AlbumentationsX env) ------------------------------------------------------
def _spec(pipeline: pipelines.Pipeline) -> dict[str, Any]:
    native = pipeline.native
    if native.get("library") != LIBRARY or native.get("format") != FORMAT:
        raise pipelines.PipelineError(f"pipeline {pipeline.name!r} was not written with A.save")
    return native["spec"]


def _build(A: Any, transform: Mapping[str, Any], label: str) -> Any:
    """``A.from_dict`` of one saved transform; failures become one-line PipelineErrors."""
    with warnings.catch_warnings():
        # AlbumentationsX only warns about an argument it does not know and drops it.
        warnings.filterwarnings(
            "error", message=".*are not valid for transform", category=UserWarning
        )
        try:
            return A.from_dict({"transform": copy.deepcopy(dict(transform))})
        except KeyError as exc:
            key = exc.args[0] if exc.args else ""
            why = (
                f"found a nested transform without {CLASS_KEY}"
                if key == CLASS_KEY
                else f"has no transform named {key!r}"
            )
        except Exception as exc:
            why = f"could not build it ({type(exc).__name__}: {' '.join(str(exc).split())})"
    raise pipelines.PipelineError(f"{label}: AlbumentationsX {A.__version__} {why}")


def native_steps(pipeline: pipelines.Pipeline) -> list[tuple[str, Any]]:
    """(step name, the AlbumentationsX transform) per child of the saved Compose, each built from
    its own saved dict; a child that does not build raises a PipelineError naming it
    (``step <i> <class>: AlbumentationsX <version> ...``)."""
    import albumentations as A

    children = _spec(pipeline)["transforms"]
    return [
        (step.name, _build(A, child, f"step {i} {_class_name(child)}"))
        for i, (child, step) in enumerate(zip(children, pipeline.steps, strict=True), start=1)
    ]


def native_compose(pipeline: pipelines.Pipeline) -> Any:
    """The user's whole Compose exactly as saved; the children are built one by one first, so an
    error names its step."""
    import albumentations as A

    native_steps(pipeline)
    return _build(A, _spec(pipeline), "Compose")
