"""The catalog and the per-library mapping tables (read without importing any library)."""

from __future__ import annotations

import pytest

from augbench import adapters, catalog, matrix


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
    assert set(adapter.mappings) <= set(catalog.names())
    for name, mapping in adapter.mappings.items():
        assert mapping.call.strip(), f"{library}:{name} has no call description"
    for name in catalog.names():
        if not adapter.supports(name):
            assert library in adapter.unsupported_reason(name) or "Pillow" in (
                adapter.unsupported_reason(name)
            )


def test_every_micro_library_has_an_adapter() -> None:
    assert set(matrix.REGIME_LIBRARIES["micro"]) <= set(adapters.names())


def test_every_transform_is_supported_by_at_least_two_libraries() -> None:
    for name in catalog.names():
        supporters = [lib for lib in adapters.names() if adapters.get(lib).supports(name)]
        assert len(supporters) >= 2, (name, supporters)


def test_unsupported_build_raises_with_reason() -> None:
    pillow = adapters.get("pillow")
    assert not pillow.supports("ColorJitter")
    with pytest.raises(adapters.Unsupported, match="hue"):
        pillow.build("ColorJitter", catalog.get("ColorJitter").params)
