"""Pipelines written with AlbumentationsX's A.save
(augbench.workload.pipeline_sources.albumentations_file): the driver-side mapping of each child to a
catalog step or an unmapped step, the errors on malformed files, and, in the AlbumentationsX env
(tests/helpers/albx_file_probe.py), real A.save files, the catalog mappings' own transforms, and the
native builders."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, env_python

from augbench.measuring.telemetry import off_environment
from augbench.workload import catalog, pipelines
from augbench.workload.pipeline_sources import albumentations_file as albx

SOURCE = "config/pipelines/mine.yaml"

# Children as AlbumentationsX 2.5.1's A.to_dict writes them.
RRC = {"__class_fullname__": "RandomResizedCrop", "p": 1.0, "area_for_downscale": None,
       "interpolation": 1, "mask_interpolation": 0, "ratio": [0.75, 1.3333333333333333],
       "sampling_method": "standard", "scale": [0.25, 1.0], "size": [192, 160]}  # fmt: skip
HFLIP = {"__class_fullname__": "HorizontalFlip", "p": 0.5}
RANDOM_CROP = {"__class_fullname__": "RandomCrop", "p": 1.0, "border_mode": 0, "fill": 0.0,
               "fill_mask": 0.0, "height": 128, "pad_if_needed": False, "pad_position": "center",
               "width": 96}  # fmt: skip
LONGEST = {"__class_fullname__": "LongestMaxSize", "p": 1.0, "area_for_downscale": None,
           "interpolation": 1, "mask_interpolation": 0, "max_size": 1024,
           "max_size_hw": None}  # fmt: skip
PAD = {"__class_fullname__": "PadIfNeeded", "p": 1.0, "border_mode": 0, "fill": 0.0,
       "fill_mask": 0.0, "min_height": 1024, "min_width": 1024, "pad_height_divisor": None,
       "pad_width_divisor": None, "position": "top_left"}  # fmt: skip
AFFINE = {"__class_fullname__": "Affine", "p": 0.7, "balanced_scale": False, "border_mode": 0,
          "fill": 0.0, "fill_mask": None, "fit_output": False, "interpolation": 1,
          "keep_ratio": True, "mask_interpolation": 0, "rotate": [-15.0, 15.0],
          "rotate_method": "largest_box", "scale": {"x": [0.9, 1.1], "y": [0.9, 1.1]},
          "shear": {"x": [-5.0, 5.0], "y": [0.0, 0.0]},
          "translate_percent": {"x": [-0.05, 0.05], "y": [-0.05, 0.05]},
          "translate_px": None}  # fmt: skip
JITTER = {"__class_fullname__": "ColorJitter", "p": 0.8, "brightness_range": [0.6, 1.4],
          "contrast_range": [0.6, 1.4], "hue_range": [-0.1, 0.1],
          "saturation_range": [0.7, 1.3]}  # fmt: skip
BLUR = {"__class_fullname__": "GaussianBlur", "p": 0.5, "blur_range": [5, 5],
        "blur_z_range": None, "sigma_range": [1.5, 1.5], "sigma_z_range": None,
        "volume_mode": "slice"}  # fmt: skip
NOISE = {"__class_fullname__": "GaussNoise", "p": 0.2, "mean_range": [0.0, 0.0],
         "per_channel": True, "std_range": [0.05, 0.05]}  # fmt: skip
DROPOUT = {"__class_fullname__": "CoarseDropout", "p": 0.5, "fill": 0.0, "fill_mask": None,
           "hole_height_range": [0.1, 0.2], "hole_width_range": [0.1, 0.2],
           "num_holes_range": [1, 2]}  # fmt: skip
NORMALIZE = {"__class_fullname__": "Normalize", "p": 1.0, "clip_range": None,
             "max_pixel_value": 255.0, "mean": [0.5, 0.5, 0.5], "normalization": "standard",
             "std": [0.25, 0.25, 0.25]}  # fmt: skip
TO_TENSOR = {"__class_fullname__": "ToTensorV2", "p": 1.0, "transpose_mask": False}


def saved(*children: Any, **compose: Any) -> dict[str, Any]:
    """What A.save writes for ``A.Compose(children)``."""
    top = {"__class_fullname__": "Compose", "p": 1.0, "transforms": list(children),
           "additional_targets": {}, "bbox_params": None, "keypoint_params": None, "seed": None,
           "strict": False, "is_check_shapes": True, **compose}  # fmt: skip
    return {"__version__": "2.5.1", "transform": copy.deepcopy(top)}


def parse(data: dict[str, Any]) -> pipelines.Pipeline:
    return albx.parse(data, source=SOURCE, name="mine")


def with_changes(child: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(child), **changes}


# -- driver side -------------------------------------------------------------------------------
def test_a_realistic_file_maps_to_catalog_steps_with_params_and_options() -> None:
    children = [RRC, HFLIP, RANDOM_CROP, LONGEST, PAD, AFFINE, JITTER, BLUR, NOISE, NORMALIZE,
                TO_TENSOR]  # fmt: skip
    data = saved(*children)
    pipeline = parse(data)
    got = {s.name: (s.params, s.options) for s in pipeline.steps}
    assert [s.name for s in pipeline.steps] == [
        "RandomResizedCrop", "HorizontalFlip", "RandomCrop224", "LongestMaxSize", "PadIfNeeded",
        "Affine", "ColorJitter", "GaussianBlur", "GaussianNoise", "Normalize", "ToTensor",
    ]  # fmt: skip
    assert not any(s.unmapped for s in pipeline.steps)
    rrc = {"size": [192, 160], "scale": [0.25, 1.0], "ratio": [0.75, 1.3333333333333333]}
    assert got["RandomResizedCrop"] == (rrc, {"antialias": False})
    assert got["HorizontalFlip"] == ({}, {"p": 0.5})
    assert got["RandomCrop224"] == ({"size": [128, 96]}, {})
    assert got["LongestMaxSize"] == ({"max_size": 1024}, {})
    assert got["PadIfNeeded"] == ({"size": [1024, 1024]}, {})
    affine = {"degrees": 15.0, "translate": 0.05, "scale": [0.9, 1.1], "shear": 5.0}
    assert got["Affine"] == (affine, {"p": 0.7})
    jitter = {"brightness": 0.4, "contrast": 0.4, "saturation": 0.3, "hue": 0.1}
    assert got["ColorJitter"] == (jitter, {"p": 0.8})
    assert got["GaussianBlur"] == ({"kernel_size": 5, "sigma": 1.5}, {"p": 0.5})
    assert got["GaussianNoise"] == ({"mean": 0.0, "std": 0.05}, {"p": 0.2})
    assert got["Normalize"] == ({"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}, {})
    assert [u[0] for u in pipeline.units()][-1] == "Normalize+ToTensor"
    assert pipeline.targets == ()
    assert pipeline.source == SOURCE and "A.save" in pipeline.description
    assert pipeline.native == {"library": "albumentationsx", "format": "albumentations",
                               "spec": data["transform"]}  # fmt: skip
    assert pipelines.Pipeline.from_dict(json.loads(json.dumps(pipeline.to_dict()))) == pipeline


def test_catalog_defaults_fill_parameters_and_antialias_follows_area_for_downscale() -> None:
    for area in ("image", "image_mask"):
        step = parse(saved(with_changes(RRC, area_for_downscale=area, p=0.9))).steps[0]
        assert step.options == {"antialias": True, "p": 0.9}
    flip = parse(saved(with_changes(HFLIP, p=1.0))).steps[0]
    assert flip == pipelines.Step("HorizontalFlip", {}, {})
    # Only brightness changes and its range is not symmetric about 1: the catalog Brightness.
    jitter = with_changes(JITTER, brightness_range=[0.5, 2.0], contrast_range=[1.0, 1.0],
                          saturation_range=[1.0, 1.0], hue_range=[0.0, 0.0])  # fmt: skip
    step = parse(saved(jitter)).steps[0]
    assert (step.name, step.params, step.unmapped) == ("Brightness", {"factor": [0.5, 2.0]}, "")
    assert catalog.CANDIDATES["Brightness"].params.keys() == step.params.keys()


@pytest.mark.parametrize(
    ("child", "reason"),
    [
        (DROPOUT, "CoarseDropout draws a number of holes"),
        ({"__class_fullname__": "Sharpen", "p": 0.5}, "Sharpen has no catalog equivalent"),
        (
            with_changes(RRC, interpolation=2),
            "interpolation=2: the catalog RandomResizedCrop uses 1",
        ),
        (with_changes(RRC, sampling_method="uniform_scale"), "sampling_method='uniform_scale'"),
        (with_changes(PAD, position="center"), "position='center'"),
        (with_changes(LONGEST, max_size=None, max_size_hw=[512, None]), "max_size_hw=[512, None]"),
        (with_changes(RANDOM_CROP, pad_if_needed=True), "pad_if_needed=True"),
        (with_changes(AFFINE, shear={"x": [0, 0], "y": [-5, 5]}), "shears along x only"),
        (
            with_changes(JITTER, brightness_range=[0.5, 2.0]),
            "brightness_range=[0.5, 2.0] is not symmetric about 1",
        ),
        (with_changes(BLUR, blur_range=[0, 0]), "blur_range=[0, 0] derives the kernel"),
        (with_changes(NOISE, per_channel=False), "per_channel=False"),
        (with_changes(NOISE, std_range=[0.1, 0.2]), "std_range=[0.1, 0.2] is a range"),
        (with_changes(HFLIP, foo=1), "foo=1 has no equivalent in the catalog HorizontalFlip"),
        ({"__class_fullname__": "HorizontalFlip"}, "p is not in the file"),
        (with_changes(NORMALIZE, mean=0.5), "mean=0.5 does not have the shape"),
        (with_changes(NORMALIZE, max_pixel_value=1.0), "max_pixel_value=1.0"),
        (with_changes(RRC, scale="abc"), "scale='abc' is not a (low, high) range"),
        ({"__class_fullname__": "OneOf", "p": 0.5, "transforms": [HFLIP]}, "nested container"),
    ],
)
def test_children_no_catalog_step_expresses_are_kept_unmapped(
    child: dict[str, Any], reason: str
) -> None:
    step = parse(saved(HFLIP, child)).steps[1]
    assert step.unmapped.startswith(child["__class_fullname__"] + " ") or "nested" in step.unmapped
    assert reason in step.unmapped
    assert "\n" not in step.unmapped
    assert step.name == child["__class_fullname__"]
    assert step.params == {k: v for k, v in child.items() if k != "__class_fullname__"}
    assert step.options == {}


def test_normalize_and_to_tensor_follow_the_pipeline_rules_or_stay_unmapped() -> None:
    late = parse(saved(NORMALIZE, HFLIP, TO_TENSOR)).steps
    assert [(s.name, bool(s.unmapped)) for s in late] == [
        ("Normalize", True), ("HorizontalFlip", False), ("ToTensorV2", True),
    ]  # fmt: skip
    assert "followed by HorizontalFlip" in late[0].unmapped
    assert "must directly follow Normalize" in late[2].unmapped
    sometimes = parse(saved(HFLIP, with_changes(NORMALIZE, p=0.5))).steps[1]
    assert "p=0.5: the catalog Normalize is always applied" in sometimes.unmapped
    alone = parse(saved(HFLIP, NORMALIZE)).steps
    assert alone[1] == pipelines.Step("Normalize", {"mean": [0.5] * 3, "std": [0.25] * 3})


@pytest.mark.parametrize(
    ("children", "message"),
    [
        ([HFLIP, HFLIP, {"p": 1.0}], "step 3 (unnamed): a transform needs a __class_fullname__"),
        ([HFLIP, "HorizontalFlip"], "step 2 'HorizontalFlip': expected a mapping"),
        ([{"__class_fullname__": "OneOf", "transforms": "x"}], "step 1 'OneOf': transforms must"),
        ([with_changes(HFLIP, p=1.5)], "step 1 'HorizontalFlip': step 'HorizontalFlip' option 'p'"),
    ],
)
def test_malformed_children_name_step_index_and_class(children: list[Any], message: str) -> None:
    with pytest.raises(pipelines.PipelineError) as info:
        parse(saved(*children))
    assert str(info.value).startswith(f"pipeline 'mine' ({SOURCE}) ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"__version__": "2.5.1", "transform": {"__class_fullname__": "OneOf", "transforms": []}},
         "the top-level transform is OneOf, not Compose"),
        (saved(), "transforms must be a non-empty list"),
        ({"transform": {"__class_fullname__": "Compose", "transforms": {"a": 1}}},
         "transforms must be a non-empty list"),
        (saved(HFLIP, p=0.5), "Compose p=0.5"),
        ({"name": "mine", "steps": ["HorizontalFlip"]}, "expected what A.save writes"),
    ],
)  # fmt: skip
def test_files_that_are_not_a_saved_compose_are_refused(data: Any, message: str) -> None:
    with pytest.raises(pipelines.PipelineError, match=f"pipeline 'mine' \\({SOURCE}\\)") as info:
        parse(data)
    assert message in str(info.value)


def test_is_albumentations_data_and_name_checks() -> None:
    assert albx.is_albumentations_data(saved(HFLIP))
    assert not albx.is_albumentations_data({"name": "x", "steps": ["HorizontalFlip"]})
    assert not albx.is_albumentations_data({"transform": {"transforms": []}})
    assert not albx.is_albumentations_data(["transform"])
    with pytest.raises(pipelines.PipelineError, match="is a catalog transform"):
        albx.parse(saved(HFLIP), source=SOURCE, name="Affine")
    with pytest.raises(pipelines.PipelineError, match="must match"):
        albx.parse(saved(HFLIP), source=SOURCE, name="my file")


# -- AlbumentationsX env ------------------------------------------------------------------------
ALBX_PYTHON = env_python("albumentationsx")
needs_env = pytest.mark.usefixtures("albumentationsx_env")  # built here when absent
# Catalog steps whose AlbumentationsX mapping is a single class this module maps back.
ROUND_TRIP = [
    "RandomResizedCrop", "HorizontalFlip", "VerticalFlip", "Transpose", "Invert",
    "ChannelShuffle", "Resize", "RandomCrop224", "CenterCrop224", "LongestMaxSize",
    "SmallestMaxSize", "PadIfNeeded", "ColorJitter", "Brightness", "Contrast", "Saturation",
    "GaussianBlur", "Affine", "Rotate", "GaussianNoise", "Erasing",
]  # fmt: skip


def probe(tmp_path: Path, request: dict[str, Any]) -> dict[str, Any]:
    request_path, report_path = tmp_path / "request.json", tmp_path / "report.json"
    request_path.write_text(json.dumps(request))
    proc = subprocess.run(
        [str(ALBX_PYTHON), str(REPO / "tests/helpers/albx_file_probe.py"), str(request_path),
         str(report_path)],
        capture_output=True, text=True, timeout=300, env={**os.environ, **off_environment()},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(report_path.read_text())


@pytest.fixture(scope="module")
def real_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A Compose written by the real A.save (yaml), and the catalog mappings' own transforms."""
    folder = tmp_path_factory.mktemp("albx")
    path = folder / "my_train.yaml"
    report = probe(folder, {"save": str(path), "catalog": ROUND_TRIP})
    return path, report


def load(path: Path) -> pipelines.Pipeline:
    return albx.parse(yaml.safe_load(path.read_text()), source=str(path), name=path.stem)


@needs_env
@pytest.mark.envs
def test_a_real_saved_file_parses_into_the_expected_steps(
    real_file: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = real_file
    pipeline = load(path)
    assert pipeline.name == "my_train"
    assert [(s.name, s.options, bool(s.unmapped)) for s in pipeline.steps] == [
        ("RandomResizedCrop", {"antialias": True}, False),
        ("HorizontalFlip", {"p": 0.5}, False),
        ("ColorJitter", {"p": 0.8}, False),
        ("CoarseDropout", {}, True),
        ("Normalize", {}, False),
        ("ToTensor", {}, False),
    ]  # fmt: skip
    assert pipeline.steps[0].params["scale"] == [0.2, 1.0]
    assert pipeline.steps[2].params == {"brightness": 0.2, "contrast": 0.2, "saturation": 0.2,
                                        "hue": 0.05}  # fmt: skip
    assert pipeline.steps[4].params == dict(
        (k, list(v)) for k, v in catalog.CANDIDATES["Normalize"].params.items()
    )


@needs_env
@pytest.mark.envs
def test_the_catalog_mappings_own_transforms_map_back_to_their_catalog_steps(
    real_file: tuple[Path, dict[str, Any]],
) -> None:
    _, report = real_file
    # Symmetric single-adjustment ColorJitters are the catalog ColorJitter first (also exact).
    identity = {"brightness": 0.0, "contrast": 0.0, "saturation": 0.0, "hue": 0.0}
    as_jitter = {
        "Brightness": ("ColorJitter", {**identity, "brightness": 0.2}),
        "Contrast": ("ColorJitter", {**identity, "contrast": 0.2}),
        "Saturation": ("ColorJitter", {**identity, "saturation": 0.5}),
    }
    for name in ROUND_TRIP:
        step = parse(saved(report["catalog"][name])).steps[0]
        defaults = {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in catalog.CANDIDATES[name].params.items()
        }
        expected = as_jitter.get(name, (name, defaults))
        assert (step.name, step.params, step.unmapped) == (*expected, ""), name
        assert step.options == ({"antialias": False} if name == "RandomResizedCrop" else {})


@needs_env
@pytest.mark.envs
def test_native_steps_name_the_step_the_library_refuses(tmp_path: Path) -> None:
    foo = {"__class_fullname__": "Foo", "p": 1.0}
    bad_scale = with_changes(RRC, scale="abc")
    unknown_arg = with_changes(HFLIP, foo=1)
    cases = [saved(HFLIP, foo, NORMALIZE), saved(HFLIP, bad_scale), saved(unknown_arg),
             saved(RRC, HFLIP, DROPOUT, NORMALIZE, TO_TENSOR)]  # fmt: skip
    pipes = [parse(case) for case in cases]
    report = probe(tmp_path, {"steps": [p.to_dict() for p in pipes]})
    version = report["version"]
    unknown, scale, arg, fine = report["steps"]
    assert unknown["error"] == f"step 2 Foo: AlbumentationsX {version} has no transform named 'Foo'"
    assert scale["error"].startswith(f"step 2 RandomResizedCrop: AlbumentationsX {version} ")
    assert "scale" in scale["error"] and "\n" not in scale["error"]
    assert arg["error"].startswith("step 1 HorizontalFlip: ") and "'foo'" in arg["error"]
    assert fine["labels"] == ["RandomResizedCrop", "HorizontalFlip", "CoarseDropout", "Normalize",
                              "ToTensor"]  # fmt: skip
    assert fine["classes"][-1] == "ToTensorV2"


@needs_env
@pytest.mark.envs
def test_native_compose_is_the_saved_compose(
    real_file: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _ = real_file
    pipeline = load(path)
    report = probe(tmp_path, {"compose": [{"pipeline": pipeline.to_dict(), "file": str(path),
                                           "seed": 7}]})  # fmt: skip
    (result,) = report["compose"]
    assert result["type"] == "Compose"
    assert result["shape"] == [3, 224, 224]
    assert result["equal"]
