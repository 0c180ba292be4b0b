"""torchvision pipelines written as a ``torchvision.transforms.v2.Compose`` in the user's module.

The user names the object as ``pipeline=package.module:attribute`` (e.g.
``my_transforms:train_tf``). Two sides:

- driver (no torch): :func:`is_module_ref` recognises a reference (the caller checks for a file of
  that name first) and :func:`placeholder` gives a :class:`~augbench.workload.pipelines.Pipeline`
  named after the attribute, with no steps yet and ``native = {"library": "torchvision", "format":
  "module", "ref": ref}``;
- torchvision env: :func:`resolve` imports the module (``python -m`` this module, a workflow rule,
  before the other libraries' jobs) and maps each transform of the Compose to a catalog step
  where one expresses it exactly: the same operation, parameters in the catalog's names and
  units, fixed settings (bilinear interpolation, fill 0, antialiased Resize) as the torchvision
  adapter's mapping has them; a probability other than 1 is the step option ``p``
  (``v2.RandomApply([t], p)`` of one mappable ``t`` included), RandomResizedCrop's ``antialias``
  the option of that name. Anything else is an *unmapped* step (class name, its public
  attributes, the reason): it runs only in torchvision, which always runs the user's own objects
  (:func:`native_steps`, :func:`native_compose`).

Conversions with no catalog counterpart are dropped and listed in ``native["dropped"]``: leading
``v2.ToImage`` / ``v2.PILToTensor`` (the benchmark's torchvision input is already a uint8 image
tensor: PILToTensor passes it through) and trailing ``v2.ToPureTensor`` (it only unwraps a
``tv_tensors.Image``). ``v2.ToDtype(torch.float32, scale=True)`` directly followed by
``v2.Normalize(mean, std)`` is the catalog's ``Normalize`` (``TorchvisionAdapter.recipe_tail``); a
transform after it works on a normalized float tensor, where no catalog step runs, so it is
unmapped. ``native["step_index"]`` gives, for each transform of the user's Compose, the index of
its step (None: dropped), so the user's objects (:func:`native_steps`) can be timed per step.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Any

from augbench.workload import catalog, pipelines
from augbench.workload.pipelines import PipelineError, Step

LIBRARY, FORMAT = "torchvision", "module"
REF_PATTERN = re.compile(
    r"^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<attribute>[A-Za-z_]\w*)$", re.ASCII
)
LEADING_CONVERSIONS = ("ToImage", "PILToTensor")
TRAILING_CONVERSIONS = ("ToPureTensor",)


# -- driver side (stdlib + augbench) ---------------------------------------------------------
def is_module_ref(text: str) -> bool:
    """Whether ``text`` has the form ``dotted.module:attribute`` (identifiers only). Purely
    syntactic: a caller that also accepts pipeline files checks for a file of that name first."""
    return bool(REF_PATTERN.match(text))


def _split(ref: str) -> tuple[str, str]:
    match = REF_PATTERN.match(ref)
    if match is None:
        raise PipelineError(
            f"pipeline {ref!r}: not a module reference; expected package.module:attribute"
        )
    return match["module"], match["attribute"]


def placeholder(ref: str, *, source: str) -> pipelines.Pipeline:
    """The pipeline of ``ref`` before its module is imported: named after the attribute, no
    steps (:func:`resolve` fills them in the torchvision env)."""
    _, name = _split(ref)
    if not pipelines.NAME_PATTERN.match(name):
        raise PipelineError(
            f"pipeline {source}: the attribute {name!r} of {ref!r} names the pipeline and must "
            f"match {pipelines.NAME_PATTERN.pattern}; rename it"
        )
    if name in catalog.CANDIDATES:
        raise PipelineError(
            f"pipeline {source}: the attribute {name!r} of {ref!r} is a catalog transform's name; "
            "pipelines and single transforms share the transform column, so rename it"
        )
    return pipelines.Pipeline(
        name=name,
        steps=(),
        description=f"the user's torchvision v2 Compose {ref}",
        source=source,
        native={"library": LIBRARY, "format": FORMAT, "ref": ref},
    )


# -- torchvision env: loading ----------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _kind(obj: Any) -> str:
    cls = type(obj)
    where = "" if cls.__module__ == "builtins" else f"{cls.__module__}."
    hint = ""
    if cls.__module__.startswith("torchvision.transforms") and ".v2" not in cls.__module__:
        hint = " (torchvision.transforms v1: build it from torchvision.transforms.v2)"
    return f"a {where}{cls.__qualname__}{hint}"


def load_compose(ref: str, search_path: Sequence[str] = ()) -> Any:
    """The user's ``v2.Compose`` named by ``ref``, imported with ``search_path`` and the current
    working directory at the front of ``sys.path`` (left there: the module may import lazily)."""
    module_name, attribute = _split(ref)
    for entry in reversed([*(str(Path(p).resolve()) for p in search_path), os.getcwd()]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    where = f"torchvision pipeline {ref!r}"
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        raise PipelineError(
            f"{where}: module {module_name!r} does not import: {_one_line(exc)}"
        ) from None
    if not hasattr(module, attribute):
        raise PipelineError(f"{where}: module {module_name!r} has no attribute {attribute!r}")
    obj = getattr(module, attribute)
    from torchvision.transforms import v2

    if not isinstance(obj, v2.Compose):
        raise PipelineError(
            f"{where}: {attribute!r} is {_kind(obj)}, not a torchvision.transforms.v2.Compose"
        )
    return obj


# -- torchvision env: mapping ----------------------------------------------------------------
# A rule maps one transform to its catalog Step, or returns why no catalog step expresses it.
Rule = Callable[[Any], "Step | str"]
_PIL_FILTERS = {0: "nearest", 2: "bilinear", 3: "bicubic"}  # PIL constants v2 also accepts


def _interpolation(t: Any) -> str | None:
    """Why ``t`` does not resample like the catalog (bilinear, fill 0), or None."""
    mode = getattr(t.interpolation, "value", t.interpolation)
    mode = _PIL_FILTERS.get(mode, mode) if isinstance(mode, int) else str(mode)
    if mode != "bilinear":
        return f"interpolation {mode!r}: the catalog step resamples bilinearly"
    fill = getattr(t, "fill", 0)
    if not _zero(fill):
        return f"fill {fill!r}: the catalog step fills with 0"
    if getattr(t, "center", None) is not None:
        return f"center {t.center!r}: the catalog step turns about the image centre"
    return None


def _zero(fill: Any) -> bool:
    """Whether a v2 ``fill`` (a number, per-channel values, None or a per-type dict) is 0."""
    if isinstance(fill, dict):
        return all(_zero(v) for v in fill.values())
    if isinstance(fill, list | tuple):
        return all(_zero(v) for v in fill)
    return fill is None or fill == 0  # None: the kernels' own zero padding


def _half(bounds: Sequence[float], centre: float = 0.0) -> float | None:
    """``w`` where ``bounds`` is ``[centre - w, centre + w]``, else None."""
    lo, hi = (float(b) for b in bounds)
    if not math.isclose(centre - lo, hi - centre, abs_tol=1e-9):
        return None
    return round(hi - centre, 12)  # v2 stored centre ± w: w as the user wrote it (0.4, not 0.39..)


def _prob(p: float) -> dict[str, Any]:
    return {} if float(p) == 1.0 else {"p": float(p)}


def _floats(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values]


def _resized_crop(t: Any) -> Step | str:
    return _interpolation(t) or Step(
        "RandomResizedCrop",
        {"size": list(t.size), "scale": _floats(t.scale), "ratio": _floats(t.ratio)},
        # antialias=None means no antialiasing on tensors (the benchmark's input).
        {"antialias": t.antialias is True},
    )


def _resize(t: Any) -> Step | str:
    if problem := _interpolation(t):
        return problem
    if t.antialias is not True:
        return f"antialias={t.antialias!r}: the catalog's resizes are antialiased"
    size, max_size = t.size, t.max_size
    if size is not None and len(size) == 2 and max_size is None:
        return Step("Resize", {"size": list(size)})
    if size is not None and len(size) == 1 and max_size is None:
        return Step("SmallestMaxSize", {"max_size": size[0]})
    if size is None:
        return Step("LongestMaxSize", {"max_size": max_size})
    return f"size={size!r} with max_size={max_size!r}: no catalog step caps a shorter-side resize"


def _random_crop(t: Any) -> Step | str:
    if t.padding is not None or t.pad_if_needed:
        return "pads before cropping; the catalog's RandomCrop224 does not pad"
    return Step("RandomCrop224", {"size": list(t.size)})


def _color_jitter(t: Any) -> Step | str:
    ranges = {k: getattr(t, k) for k in ("brightness", "contrast", "saturation", "hue")}
    given = {k: v for k, v in ranges.items() if v is not None}
    if not given:
        return "no factor set: the identity"
    if len(given) == 1 and "hue" not in given:
        (key, bounds), *_ = given.items()
        return Step(key.capitalize(), {"factor": _floats(bounds)})
    halves = {k: _half(v, 0.0 if k == "hue" else 1.0) for k, v in given.items()}
    if None in halves.values():
        uneven = ", ".join(f"{k}={tuple(given[k])}" for k, h in halves.items() if h is None)
        return f"{uneven}: the catalog takes ranges symmetric about the identity"
    if len(given) == 1:
        return Step("Hue", {"hue": halves["hue"]})
    return Step("ColorJitter", {k: halves.get(k) or 0.0 for k in ranges})


def _gaussian_blur(t: Any) -> Step | str:
    (kx, ky), (s0, s1) = t.kernel_size, t.sigma
    if kx != ky or s0 != s1:
        return f"kernel {t.kernel_size!r}, sigma {t.sigma!r}: the catalog's is square, sigma fixed"
    return Step("GaussianBlur", {"kernel_size": kx, "sigma": float(s0)})


def _rotation(t: Any) -> Step | str:
    degrees = _half(t.degrees)
    if problem := _interpolation(t):
        return problem
    if t.expand or degrees is None:
        return (
            f"expand={t.expand}, degrees {t.degrees!r}: the catalog's Rotate keeps the canvas "
            "and draws from [-d, d]"
        )
    return Step("Rotate", {"degrees": degrees})


def _affine(t: Any) -> Step | str:
    if problem := _interpolation(t):
        return problem
    degrees = _half(t.degrees)
    translate = t.translate or (0.0, 0.0)
    scale = _floats(t.scale or (1.0, 1.0))
    shear = list(t.shear or (0.0, 0.0))
    x_shear = _half(shear[:2]) if len(shear) == 2 or shear[2:] == [0.0, 0.0] else None
    if degrees is None or translate[0] != translate[1] or x_shear is None:
        return (
            f"degrees {t.degrees!r}, translate {t.translate!r}, shear {t.shear!r}: the catalog "
            "takes ±degrees, one translate for both axes and a symmetric x-shear"
        )
    if degrees == 0 and translate[0] == 0 and scale == [1.0, 1.0] and x_shear:
        return Step("Shear", {"shear": x_shear})
    return Step(
        "Affine",
        {"degrees": degrees, "translate": float(translate[0]), "scale": scale, "shear": x_shear},
    )


def _erasing(t: Any) -> Step | str:
    if t.value is None or any(v != 0 for v in t.value):
        return f"value {t.value!r}: the catalog's Erasing fills with 0"
    params = {"scale": _floats(t.scale), "ratio": _floats(t.ratio), "value": 0}
    return Step("Erasing", params, _prob(t.p))


def _noise(t: Any) -> Step | str:
    if not t.clip:
        return "clip=False: the catalog's GaussianNoise clips to the value range"
    return Step("GaussianNoise", {"mean": float(t.mean), "std": float(t.sigma)})


def _grayscale(t: Any) -> Step | str:
    if t.num_output_channels != 3:
        return f"num_output_channels={t.num_output_channels}: the catalog's Grayscale gives 3"
    return Step("Grayscale", {"num_output_channels": 3})


def _pad(t: Any) -> Step | str:
    padding = [t.padding] if isinstance(t.padding, int) else list(t.padding)
    if len(padding) != 1 or t.padding_mode != "constant" or not _zero(t.fill):
        return (
            f"padding {t.padding!r}, {t.padding_mode}, fill {t.fill!r}: the catalog pads every "
            "side by the same width with 0"
        )
    return Step("Pad", {"padding": padding[0]})


def _elastic(t: Any) -> Step | str:
    if problem := _interpolation(t):
        return problem
    if t.alpha[0] != t.alpha[1] or t.sigma[0] != t.sigma[1]:
        return f"alpha {t.alpha!r}, sigma {t.sigma!r}: the catalog's are the same on both axes"
    return Step("Elastic", {"alpha": float(t.alpha[0]), "sigma": float(t.sigma[0])})


def _random_apply(t: Any) -> Step | str:
    if len(t.transforms) != 1:
        return f"applies {len(t.transforms)} transforms with one probability; no catalog step does"
    inner = _map_one(t.transforms[0])
    if inner.unmapped or inner.name == pipelines.TAIL_STEP:
        return f"wraps {inner.name}, which no catalog step with a probability expresses"
    p = float(t.p) * inner.probability
    return replace(inner, options={**inner.options, **_prob(p)})


def _flag(name: str) -> Rule:
    """A transform applied with probability ``p``, no parameters (e.g. RandomHorizontalFlip)."""
    return lambda t: Step(name, {}, _prob(t.p))


_RULES: dict[str, Rule] = {
    "RandomResizedCrop": _resized_crop,
    "Resize": _resize,
    "RandomCrop": _random_crop,
    "CenterCrop": lambda t: Step("CenterCrop224", {"size": list(t.size)}),
    "RandomHorizontalFlip": _flag("HorizontalFlip"),
    "RandomVerticalFlip": _flag("VerticalFlip"),
    "RandomRotation": _rotation,
    "RandomAffine": _affine,
    "RandomPerspective": lambda t: (
        _interpolation(t)
        or Step("Perspective", {"distortion_scale": float(t.distortion_scale)}, _prob(t.p))
    ),
    "ElasticTransform": _elastic,
    "Pad": _pad,
    "RandomErasing": _erasing,
    "GaussianBlur": _gaussian_blur,
    "ColorJitter": _color_jitter,
    "RandomPhotometricDistort": lambda t: Step(
        "PhotoMetricDistort",
        {
            **{k: _floats(getattr(t, k)) for k in ("brightness", "contrast", "saturation", "hue")},
            "step_p": float(t.p),
        },
    ),
    "Grayscale": _grayscale,
    # The input's channel count is kept: 3, the benchmark's RGB image, as the catalog gives.
    "RandomGrayscale": lambda t: Step("Grayscale", {"num_output_channels": 3}, _prob(t.p)),
    "GaussianNoise": _noise,
    "RandomEqualize": _flag("Equalize"),
    "RandomInvert": _flag("Invert"),
    "RandomAutocontrast": _flag("AutoContrast"),
    "RandomPosterize": lambda t: Step("Posterize", {"bits": t.bits}, _prob(t.p)),
    # On the uint8 input (the catalog's units: of 255).
    "RandomSolarize": lambda t: Step("Solarize", {"threshold": t.threshold}, _prob(t.p)),
    "RandomAdjustSharpness": lambda t: Step(
        "Sharpen", {"factor": float(t.sharpness_factor)}, _prob(t.p)
    ),
    "RandomChannelPermutation": lambda t: Step("ChannelShuffle"),
    "JPEG": lambda t: Step("JpegCompression", {"quality": list(t.quality)}),
    "RandomApply": _random_apply,
}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {getattr(k, "__name__", str(k)): _jsonable(v) for k, v in value.items()}
    return repr(value)


def _unmapped(t: Any, reason: str) -> Step:
    attributes = {k: _jsonable(v) for k, v in vars(t).items() if not k.startswith("_")}
    attributes.pop("training", None)
    return Step(type(t).__name__, attributes, unmapped=reason)


def _is_v2(t: Any, *names: str) -> bool:
    from torchvision.transforms import v2

    name = type(t).__name__
    return name in names and getattr(v2, name, None) is type(t)


def _map_one(t: Any) -> Step:
    """The catalog Step of one transform, or an unmapped Step saying why there is none."""
    name = type(t).__name__
    if not _is_v2(t, name):  # the user's own class, or a subclass of a v2 one
        kind = f"{type(t).__module__}.{type(t).__qualname__}"
        return _unmapped(t, f"{kind} is not a torchvision.transforms.v2 class")
    rule = _RULES.get(name)
    if rule is None:
        return _unmapped(t, f"no catalog step expresses v2.{name}")
    result = rule(t)
    return _unmapped(t, f"v2.{name}: {result}") if isinstance(result, str) else result


def _is_float_scale(t: Any) -> bool:
    import torch

    return _is_v2(t, "ToDtype") and t.dtype is torch.float32 and t.scale is True


def map_compose(compose: Any) -> tuple[list[Step], list[str], list[int | None]]:
    """(the steps of ``compose``, notes on the transforms dropped as conversions, the index of
    each transform's step: None where it was dropped)."""
    transforms, dropped = list(compose.transforms), []
    start, end = 0, len(transforms)
    while start < end and _is_v2(transforms[start], *LEADING_CONVERSIONS):
        dropped.append(
            f"v2.{type(transforms[start]).__name__} (first): the benchmark's torchvision input "
            "is already a uint8 image tensor"
        )
        start += 1
    while end > start and _is_v2(transforms[end - 1], *TRAILING_CONVERSIONS):
        dropped.append(
            f"v2.{type(transforms[end - 1]).__name__} (last): the benchmark's torchvision "
            "images are plain tensors already"
        )
        end -= 1
    steps: list[Step] = []
    step_index: list[int | None] = [None] * len(transforms)
    normalized, i = False, start
    while i < end:
        t, after = transforms[i], transforms[i + 1] if i + 1 < end else None
        if not normalized and _is_float_scale(t) and _is_v2(after, "Normalize"):
            mean, std = _floats(after.mean), _floats(after.std)
            if {len(mean), len(std)} <= {1, 3}:  # one value: v2 broadcasts it to each channel
                steps.append(
                    Step(
                        pipelines.TAIL_STEP,
                        {"mean": mean * (3 // len(mean)), "std": std * (3 // len(std))},
                    )
                )
                step_index[i : i + 2] = [len(steps) - 1] * 2
                normalized, i = True, i + 2
                continue
        step_index[i] = len(steps)
        if normalized:
            reason = "after Normalize (a float tensor): catalog steps work on the image before it"
            steps.append(_unmapped(t, reason))
        else:
            steps.append(_map_one(t))
        i += 1
    return steps, dropped, step_index


def to_steps(compose: Any) -> list[Step]:
    """The pipeline steps of the user's ``v2.Compose`` (:func:`map_compose` without its notes)."""
    return map_compose(compose)[0]


def resolve(ref: str, *, source: str, search_path: Sequence[str] = ()) -> pipelines.Pipeline:
    """:func:`placeholder` with its steps: the mapping of the Compose ``ref`` names."""
    base = placeholder(ref, source=source)
    compose = load_compose(ref, search_path)
    steps, dropped, step_index = map_compose(compose)
    if not steps:
        raise PipelineError(
            f"pipeline {source}: the Compose {ref} holds only conversions ({'; '.join(dropped)}), "
            "nothing to benchmark"
        )
    native = {
        **base.native,
        "search_path": [str(Path(p).resolve()) for p in search_path],
        "dropped": dropped,
        "step_index": step_index,
        "repr": repr(compose),
    }
    return replace(base, steps=tuple(steps), native=native)


def native_compose(pipeline: pipelines.Pipeline) -> Any:
    """The user's own ``v2.Compose`` of a pipeline :func:`resolve` gave."""
    native = pipeline.native
    if (native.get("library"), native.get("format")) != (LIBRARY, FORMAT):
        raise PipelineError(f"pipeline {pipeline.name!r} is not a torchvision module pipeline")
    return load_compose(native["ref"], native.get("search_path", ()))


def native_steps(pipeline: pipelines.Pipeline) -> list[tuple[str, Any]]:
    """(class name, the user's transform object) for each transform of the Compose, in order
    (conversions :func:`map_compose` dropped included)."""
    return [(type(t).__name__, t) for t in native_compose(pipeline).transforms]


# -- CLI (torchvision env) -------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="package.module:attribute of a torchvision v2 Compose")
    parser.add_argument("--source", help="how rows name the pipeline (default: REF)")
    parser.add_argument("--out", required=True, type=Path, help="JSON file to write")
    parser.add_argument("--search-path", action="append", default=[], metavar="DIR")
    args = parser.parse_args(argv)
    try:
        source = args.source or args.ref
        pipeline = resolve(args.ref, source=source, search_path=args.search_path)
        doc: dict[str, Any] = {"pipeline": pipeline.to_dict()}
    except PipelineError as exc:
        doc = {"error": " ".join(str(exc).split())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
