"""MIT Albumentations: albumentations 2.0.8, the last release under the MIT licence, beside
AlbumentationsX (its AGPL/commercial continuation) on the same machine.

Both install the ``albumentations`` module with the same call API (``A.<Transform>(...)``,
``A.Compose``, ``image=...``), so the adapter is AlbumentationsX's (decoder, composition, recipe
tail, mask target) and only what 2.0.8 does differently is stated here: the keyword names it
spells differently (``KEYWORD_SPELLING``: ``blur_limit`` where AlbumentationsX says
``blur_range``), the mappings whose 2.0.8 call differs in more than names (Elastic,
RandomRotate90), and the transforms 2.0.8 does not have. 2.0.8 ignores an argument it does not
know with a warning, so its env checks that no mapping warns (tests/test_library_envs.py).

Its env is resolved on its own (the two cannot share one module) under the numpy/torch versions
every env shares, so a difference between the two is the library's.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from augbench.workload.adapters.albumentationsx import KEYWORD_SPELLING as SPELLING_IN_USE
from augbench.workload.adapters.albumentationsx import AlbumentationsXAdapter, _albx, _geometry
from augbench.workload.adapters.base import LOCK_SHARED, Mapping, Transform, Unsupported

# {transform: {AlbumentationsX's keyword: 2.0.8's keyword}}: the same parameter, the same values.
KEYWORD_SPELLING: dict[str, dict[str, str]] = {
    "Rotate": {"angle_range": "limit"},
    "GaussianBlur": {"blur_range": "blur_limit", "sigma_range": "sigma_limit"},
    "ColorJitter": {
        "brightness_range": "brightness",
        "contrast_range": "contrast",
        "saturation_range": "saturation",
        "hue_range": "hue",
    },
    "Sharpen": {"alpha_range": "alpha", "lightness_range": "lightness"},
    "OpticalDistortion": {"distort_range": "distort_limit"},
    "Blur": {"blur_range": "blur_limit"},
    "MedianBlur": {"blur_range": "blur_limit"},
    "MotionBlur": {"blur_range": "blur_limit"},
    "UnsharpMask": {
        "blur_range": "blur_limit",
        "sigma_range": "sigma_limit",
        "alpha_range": "alpha",
    },
    "RandomGamma": {"gamma_range": "gamma_limit"},
    "RGBShift": {f"{c}_shift_range": f"{c}_shift_limit" for c in "rgb"},
    "CLAHE": {"clip_range": "clip_limit"},
    "SaltAndPepper": {"amount_range": "amount", "salt_vs_pepper_range": "salt_vs_pepper"},
}
# Transforms AlbumentationsX added after 2.0.8 (the catalog's names).
NOT_IN_2_0_8 = {
    "EnhanceEdge": "A.Enhance",
    "EnhanceDetail": "A.Enhance",
    "PhotoMetricDistort": "A.PhotoMetricDistort",
}
# Transforms 2.0.8 has but does not apply as the catalog defines them on the benchmark's uint8
# images: a row would time another transform (tests/test_equivalence.py finds them).
NOT_THE_CATALOGS_IN_2_0_8 = {
    "PlasmaBrightness": "albumentations_mit: albumentations 2.0.8's PlasmaBrightnessContrast "
    "leaves a uint8 image unchanged on its darkening draws (20 of 40 calls in its env): not the "
    "catalog's transform",
    "PlasmaContrast": "albumentations_mit: albumentations 2.0.8's PlasmaBrightnessContrast "
    "changes a uint8 image's contrast by at most one 8-bit level (6 calls in its env; "
    "AlbumentationsX's, up to 29): not the catalog's transform",
}


def spelled(mapping: Mapping) -> Mapping:
    """AlbumentationsX's mapping in 2.0.8's keyword names: its build, its call and its note."""
    call, note = mapping.call, mapping.note
    for factory, renamed in KEYWORD_SPELLING.items():
        if f"A.{factory}(" in call:
            for old, new in renamed.items():
                call = call.replace(f"{old}=", f"{new}=")
                note = re.sub(rf"\b{old}\b", new, note)
    return Mapping(call, _spelled(mapping.build), note, mapping.multichannel)


class AlbumentationsMitAdapter(AlbumentationsXAdapter):
    name = "albumentations_mit"
    title = "Albumentations 2.0.8 (MIT)"
    color = "#56B4E9"
    distribution = "albumentations"
    sibling = "albumentationsx"
    cpu_reference = False  # AlbumentationsX is the GPU tables' CPU baseline, not its fork
    # Its import asks PyPI for a newer release (albumentations.check_version) unless this is set.
    telemetry_off: ClassVar[dict[str, str]] = {"NO_ALBUMENTATIONS_UPDATE": "1"}
    lock_mode = LOCK_SHARED  # the same module as AlbumentationsX: resolved apart from it

    def _mappings(self) -> dict[str, Mapping]:
        left_out = {*NOT_IN_2_0_8, *NOT_THE_CATALOGS_IN_2_0_8}
        own = {name: spelled(m) for name, m in super()._mappings().items() if name not in left_out}
        linear, const = "cv2.INTER_LINEAR", "cv2.BORDER_CONSTANT"
        own["Elastic"] = Mapping(
            f"A.ElasticTransform(alpha=50, sigma=5, noise_distribution='uniform', "
            f"interpolation={linear}, border_mode={const}, fill=0)",
            lambda p: _albx(
                "ElasticTransform",
                **_geometry(alpha=p["alpha"], sigma=p["sigma"], noise_distribution="uniform"),
            ),
            note="2.0.8 has the catalog's own model: per-pixel uniform noise smoothed by a "
            "Gaussian of sigma and scaled by alpha.",
            multichannel=True,
        )
        own["RandomRotate90"] = Mapping("A.RandomRotate90()", _rotate90, multichannel=True)
        return own

    def _unsupported_reasons(self) -> dict[str, str]:
        return {
            "ColorJiggle": "albumentations_mit (albumentations 2.0.8) has no additive-brightness/"
            "HSV-saturation jitter; its ColorJitter follows torchvision's blend formulas (the "
            "ColorJitter row)",
            **{
                name: f"albumentations_mit: albumentations 2.0.8 has no {call} (AlbumentationsX "
                "added it later)"
                for name, call in NOT_IN_2_0_8.items()
            },
            **NOT_THE_CATALOGS_IN_2_0_8,
        }


def _spelled(build: Any) -> Any:
    """AlbumentationsX's build of a mapping, with 2.0.8's keyword names."""

    def build_208(params: dict[str, Any]) -> Transform:
        token = SPELLING_IN_USE.set(KEYWORD_SPELLING)
        try:
            return build(params)
        finally:
            SPELLING_IN_USE.reset(token)

    return build_208


def _rotate90(params: dict[str, Any]) -> Transform:
    # 2.0.8 draws k uniformly from {0, 1, 2, 3} and takes no other choice.
    if tuple(params["times"]) != (0, 3):
        raise Unsupported("albumentations 2.0.8's RandomRotate90 draws k from {0, 1, 2, 3} only")
    return _albx("RandomRotate90")
