"""The catalog and the per-library mapping tables (read without importing any library)."""

from __future__ import annotations

import pytest

from augbench.planning import regimes
from augbench.workload import adapters, catalog


def test_catalog_has_the_issue_minimum_of_common_transforms() -> None:
    required = {
        "Resize", "RandomCrop224", "RandomResizedCrop", "CenterCrop224", "HorizontalFlip",
        "VerticalFlip", "Rotate", "Affine", "GaussianBlur", "ColorJitter", "Brightness",
        "Contrast", "Grayscale", "Equalize", "JpegCompression", "Posterize", "Solarize", "Sharpen",
    }  # fmt: skip
    assert required <= set(catalog.names())
    assert len(catalog.names()) >= 15


def test_crop_kind_marks_exactly_the_crop_transforms() -> None:
    crops = {name for name, spec in catalog.TRANSFORMS.items() if spec.is_crop}
    assert crops == {"RandomCrop224", "RandomResizedCrop", "CenterCrop224"}


def test_unknown_transform_error_lists_allowed_names() -> None:
    with pytest.raises(KeyError, match="unknown transform 'Nope'.*HorizontalFlip"):
        catalog.get("Nope")


@pytest.mark.parametrize("library", adapters.names())
def test_adapter_maps_only_catalog_transforms_with_a_readable_call(library: str) -> None:
    adapter = adapters.get(library)
    assert set(adapter.mappings) <= set(catalog.CANDIDATES)
    for name, mapping in adapter.mappings.items():
        assert mapping.call.strip(), f"{library}:{name} has no call description"
    for name in catalog.CANDIDATES:
        if not adapter.supports(name):
            # The reason names the library (any capitalisation: "Kornia has no ...").
            assert library in adapter.unsupported_reason(name).lower(), (library, name)


def test_every_micro_library_has_an_adapter() -> None:
    assert set(regimes.BY_NAME["micro"].libraries) <= set(adapters.names())


def test_every_transform_is_supported_by_at_least_two_libraries() -> None:
    for name in catalog.names():
        supporters = [lib for lib in adapters.names() if adapters.get(lib).supports(name)]
        assert len(supporters) >= 2, (name, supporters)


def test_unsupported_build_raises_with_reason() -> None:
    pillow = adapters.get("pillow")
    assert not pillow.supports("ColorJitter")
    with pytest.raises(adapters.Unsupported, match="hue"):
        pillow.build("ColorJitter", catalog.get("ColorJitter").params)


# -- the eligibility rule and the generated set ------------------------------------------------
def test_paper_set_is_generated_by_the_eligibility_rule() -> None:
    expected = [
        name
        for name, spec in catalog.CANDIDATES.items()
        if not spec.pipeline_only  # steps of user pipelines only (augbench.workload.pipelines)
        and len(catalog.direct_implementations(name)) >= catalog.MIN_DIRECT_IMPLEMENTATIONS
    ]
    assert catalog.names() == expected
    assert list(catalog.TRANSFORMS) == expected
    assert len(expected) >= 50


def test_every_paper_transform_is_eligible() -> None:
    for name in catalog.names():
        libs = catalog.direct_implementations(name)
        assert len(libs) >= catalog.MIN_DIRECT_IMPLEMENTATIONS, (name, libs)
        assert set(libs) <= set(catalog.eligibility_libraries())


def test_the_original_22_names_stay_in_the_paper_set() -> None:
    original = {
        "Resize", "RandomCrop224", "RandomResizedCrop", "CenterCrop224", "HorizontalFlip",
        "VerticalFlip", "Rotate", "Affine", "GaussianBlur", "ColorJitter", "Brightness",
        "Contrast", "Saturation", "Grayscale", "Equalize", "JpegCompression", "Posterize",
        "Solarize", "Sharpen", "Invert", "AutoContrast", "ChannelShuffle",
    }  # fmt: skip
    assert original <= set(catalog.names())


def test_a_candidate_with_one_direct_implementation_is_excluded_with_a_reason() -> None:
    excluded = [n for n in catalog.CANDIDATES if n not in catalog.names()]
    assert excluded, "the rule should exclude at least the single-library candidates"
    for name in excluded:
        if not catalog.CANDIDATES[name].pipeline_only:  # pipeline steps are excluded by kind
            assert len(catalog.direct_implementations(name)) < catalog.MIN_DIRECT_IMPLEMENTATIONS
        with pytest.raises(KeyError, match=f"'{name}' is not in the paper set"):
            catalog.get(name)


def test_nine_channel_set_is_generated_from_multichannel_mappings() -> None:
    nine = catalog.names(9)
    assert set(nine) <= set(catalog.names(3))
    for name in catalog.names(3):
        libs = [
            lib
            for lib in catalog.eligibility_libraries()
            if (m := adapters.get(lib).mappings.get(name)) is not None and m.multichannel
        ]
        assert (name in nine) == (len(libs) >= catalog.MIN_DIRECT_IMPLEMENTATIONS), name
    # PIL images hold at most 4 bands.
    assert not any(m.multichannel for m in adapters.get("pillow").mappings.values())
    with pytest.raises(ValueError, match="unknown channel scenario 4"):
        catalog.names(4)


def test_random_flag_matches_the_parameters() -> None:
    # A deterministic transform has no ranges to draw from.
    for name, spec in catalog.CANDIDATES.items():
        if not spec.random:
            assert not any(
                isinstance(v, tuple) and len(v) == 2 and k not in {"size", "tile_grid"}
                for k, v in spec.params.items()
            ), name
