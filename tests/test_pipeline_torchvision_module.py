"""torchvision pipelines written as a v2 Compose in the user's module
(``augbench.workload.pipeline_sources.torchvision_module``): references and placeholders on the
driver, then, in the torchvision env, the mapping of each transform to catalog steps, the CLI's
pipeline or one-line error, and the user's own objects for the torchvision runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import env_python, library_env

from augbench.workload import pipelines
from augbench.workload.pipeline_sources import torchvision_module as tvm

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "user_pipelines"
TV_PYTHON = env_python("torchvision")
needs_env = pytest.mark.usefixtures("torchvision_env")  # built here when absent
IMAGENET = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


# -- driver side ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my_transforms:train_tf", True),
        ("pkg.sub.module:train_tf", True),
        ("_private.mod:Tf2", True),
        ("config/pipelines/imagenet_train.yaml", False),
        ("my_transforms.py", False),
        ("my_transforms:", False),
        (":train_tf", False),
        ("my_transforms:train.tf", False),
        ("my-transforms:train_tf", False),
        ("my_transforms:train_tf:x", False),
        ("1mod:train_tf", False),
    ],
)
def test_is_module_ref(text: str, expected: bool) -> None:
    assert tvm.is_module_ref(text) is expected


def test_placeholder_is_named_after_the_attribute_with_no_steps() -> None:
    pipeline = tvm.placeholder("my_transforms:train_tf", source="cli")
    assert pipeline.name == "train_tf"
    assert pipeline.steps == ()
    assert pipeline.source == "cli"
    assert pipeline.native == {
        "library": "torchvision",
        "format": "module",
        "ref": "my_transforms:train_tf",
    }
    assert "torchvision v2 Compose my_transforms:train_tf" in pipeline.description
    assert pipelines.Pipeline.from_dict(pipeline.to_dict()) == pipeline


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("my_transforms:ColorJitter", "'ColorJitter' of 'my_transforms:ColorJitter' is a catalog"),
        ("my_transforms:_train", "'_train' of 'my_transforms:_train' names the pipeline and must"),
        ("transforms.yaml", "not a module reference; expected package.module:attribute"),
    ],
)
def test_placeholder_refuses_names_rows_cannot_carry(ref: str, message: str) -> None:
    with pytest.raises(pipelines.PipelineError, match="pipeline ") as info:
        tvm.placeholder(ref, source="cli")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_driver_side_imports_no_torch() -> None:
    code = (
        "import sys; import augbench.workload.pipeline_sources.torchvision_module as m; "
        "m.placeholder('a.b:c', source='s'); "
        "assert not {'torch', 'torchvision'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# -- torchvision env ----------------------------------------------------------------------------
def _env(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([str(TV_PYTHON), *args], capture_output=True, text=True, env=env, cwd=cwd)


def _cli(ref: str, out: Path, *extra: str) -> dict[str, Any]:
    proc = _env(
        "-m", "augbench.workload.pipeline_sources.torchvision_module", ref, "--source", "cli",
        "--out", str(out), "--search-path", str(FIXTURES), *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


def _catalog_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The mapped steps as the YAML form ``pipelines.parse`` reads: it accepts each one."""
    entries = [{s["name"]: {**s["params"], **s.get("options", {})}} for s in steps]
    for entry in entries:
        pipelines.parse({"name": "check", "steps": [entry]})
    return entries


@pytest.mark.envs
@needs_env
@pytest.mark.parametrize("attribute", ["train_preset", "train_preset_pil"])
def test_reference_training_preset_resolves_to_catalog_steps(
    attribute: str, tmp_path: Path
) -> None:
    doc = _cli(f"tv_reference:{attribute}", tmp_path / "out.json")
    pipeline = pipelines.Pipeline.from_dict(doc["pipeline"])
    assert pipeline.name == attribute
    assert pipeline.source == "cli"
    assert [s.to_dict() for s in pipeline.steps] == [
        {
            "name": "RandomResizedCrop",
            "params": {"size": [224, 224], "scale": [0.08, 1.0], "ratio": [0.75, 4 / 3]},
            "options": {"antialias": True},
        },
        {"name": "HorizontalFlip", "params": {}, "options": {"p": 0.5}},
        {"name": "Normalize", "params": IMAGENET},
    ]
    assert pipeline.recipe == "RandomResizedCrop + HorizontalFlip + Normalize"
    _catalog_steps(doc["pipeline"]["steps"])
    native = pipeline.native
    assert native["ref"] == f"tv_reference:{attribute}"
    assert (native["library"], native["format"]) == ("torchvision", "module")
    assert native["search_path"] == [str(FIXTURES)]
    assert "RandomResizedCrop(size=(224, 224)" in native["repr"]
    dropped = ["ToPureTensor"] if attribute == "train_preset" else ["PILToTensor", "ToPureTensor"]
    assert [note.split()[0] for note in native["dropped"]] == [f"v2.{d}" for d in dropped]
    # Each of the user's transforms -> its step (ToDtype and Normalize: the Normalize step).
    mapped = [0, 1, 2, 2, None]
    assert native["step_index"] == (mapped if attribute == "train_preset" else [None, *mapped])


@pytest.mark.envs
@needs_env
def test_unmappable_transforms_are_kept_with_their_reason(tmp_path: Path) -> None:
    doc = _cli("tv_reference:with_unmapped", tmp_path / "out.json")
    steps = doc["pipeline"]["steps"]
    assert [(s["name"], bool(s.get("unmapped"))) for s in steps] == [
        ("RandomResizedCrop", False),
        ("TrivialAugmentWide", True),
        ("ColorJitter", False),
        ("Normalize", False),
        ("RandomErasing", True),
    ]
    trivial, jitter, erasing = steps[1], steps[2], steps[4]
    assert trivial["unmapped"] == "no catalog step expresses v2.TrivialAugmentWide"
    assert trivial["params"] == {
        "interpolation": "bilinear",
        "fill": None,
        "num_magnitude_bins": 31,
    }
    # RandomApply([ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8): the jitter with p 0.8.
    assert jitter["params"] == {"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.1}
    assert jitter["options"] == {"p": 0.8}
    assert "after Normalize" in erasing["unmapped"]
    assert doc["pipeline"]["native"]["step_index"] == [0, 1, 2, 3, 3, 4]
    assert erasing["params"]["p"] == 0.25


# A reference the CLI cannot resolve, and what its one-line error says.
ERRORS: list[tuple[str, str]] = [
    ("tv_broken:train", "module 'tv_broken' does not import: RuntimeError: the user's module is"),
    ("tv_missing_module:train", "module 'tv_missing_module' does not import: ModuleNotFound"),
    ("tv_reference:no_such_thing", "module 'tv_reference' has no attribute 'no_such_thing'"),
    ("tv_reference:not_a_compose", "'not_a_compose' is a list, not a torchvision.transforms.v2"),
    ("tv_v1:train_v1", "is a torchvision.transforms.transforms.Compose (torchvision.transforms v1"),
    ("tv_reference:only_conversions", "holds only conversions"),
    ("tv_reference:ColorJitter", "is a catalog transform's name"),
]


@pytest.fixture(scope="module")
def cli_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, dict[str, Any]]]:
    """(exit status, document written) of the CLI's ``main`` on each ERRORS reference, in one
    env run (``python -m`` itself is run by the other tests)."""
    library_env("torchvision")
    folder = tmp_path_factory.mktemp("cli-errors")
    code = """
import json, sys
from augbench.workload.pipeline_sources.torchvision_module import main
refs, folder, fixtures = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
out = {}
for i, ref in enumerate(refs):
    path = f"{folder}/{i}/out.json"
    rc = main([ref, "--source", "cli", "--out", path, "--search-path", fixtures])
    out[ref] = [rc, json.load(open(path))]
print(json.dumps(out))
"""
    refs = json.dumps([ref for ref, _ in ERRORS])
    proc = _env("-c", code, refs, str(folder), str(FIXTURES), cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return {ref: (rc, doc) for ref, (rc, doc) in json.loads(proc.stdout).items()}


@pytest.mark.envs
@needs_env
@pytest.mark.parametrize(("ref", "message"), ERRORS, ids=[ref for ref, _ in ERRORS])
def test_cli_writes_one_line_errors(
    cli_errors: dict[str, tuple[int, dict[str, Any]]], ref: str, message: str
) -> None:
    rc, doc = cli_errors[ref]
    assert rc == 0
    assert set(doc) == {"error"}
    assert message in doc["error"]
    assert "\n" not in doc["error"]


@pytest.mark.envs
@needs_env
def test_cli_fails_on_unexpected_errors(tmp_path: Path) -> None:
    proc = _env(
        "-m", "augbench.workload.pipeline_sources.torchvision_module", "tv_reference:train_preset",
        "--out", str(tmp_path), "--search-path", str(FIXTURES),
    )  # fmt: skip
    assert proc.returncode == 1
    assert "IsADirectoryError" in proc.stderr


@pytest.mark.envs
@needs_env
def test_the_current_directory_is_searched(tmp_path: Path) -> None:
    (tmp_path / "local_tf.py").write_text(
        "from torchvision.transforms import v2\nmine = v2.Compose([v2.RandomInvert(1.0)])\n"
    )
    proc = _env(
        "-m", "augbench.workload.pipeline_sources.torchvision_module", "local_tf:mine",
        "--out", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["pipeline"]["steps"] == [{"name": "Invert", "params": {}}]
    assert doc["pipeline"]["source"] == "local_tf:mine"


@pytest.mark.envs
@needs_env
def test_native_steps_are_the_users_own_objects(tmp_path: Path) -> None:
    code = f"""
import importlib, json
from augbench.workload import pipelines
from augbench.workload.pipeline_sources import torchvision_module as tvm
resolved = tvm.resolve("tv_reference:train_preset_pil", source="s", search_path=[{str(FIXTURES)!r}])
pipeline = pipelines.Pipeline.from_dict(json.loads(json.dumps(resolved.to_dict())))
user = importlib.import_module("tv_reference").train_preset_pil
steps = tvm.native_steps(pipeline)
print(json.dumps({{
    "labels": [label for label, _ in steps],
    "same": all(a is b for (_, a), b in zip(steps, user.transforms, strict=True)),
    "compose": tvm.native_compose(pipeline) is user,
}}))
"""
    proc = _env("-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["labels"] == [
        "PILToTensor",
        "RandomResizedCrop",
        "RandomHorizontalFlip",
        "ToDtype",
        "Normalize",
        "ToPureTensor",
    ]
    assert out["same"] is True
    assert out["compose"] is True


# One transform each (in a v2.Compose): its catalog step, or ("unmapped", part of the reason).
BL = "interpolation=InterpolationMode.BILINEAR"
MAPPINGS: list[tuple[str, Any]] = [
    (
        "v2.RandomResizedCrop((256, 192), scale=(0.25, 1.0), antialias=False)",
        {
            "name": "RandomResizedCrop",
            "params": {"size": [256, 192], "scale": [0.25, 1.0], "ratio": [0.75, 4 / 3]},
            "options": {"antialias": False},
        },
    ),
    (
        "v2.RandomResizedCrop(224, interpolation=InterpolationMode.BICUBIC)",
        ("unmapped", "'bicubic'"),
    ),
    ("v2.RandomHorizontalFlip(1.0)", {"name": "HorizontalFlip", "params": {}}),
    ("v2.RandomVerticalFlip(0.3)", {"name": "VerticalFlip", "params": {}, "options": {"p": 0.3}}),
    ("v2.Resize((512, 512))", {"name": "Resize", "params": {"size": [512, 512]}}),
    ("v2.Resize(256)", {"name": "SmallestMaxSize", "params": {"max_size": 256}}),
    ("v2.Resize(None, max_size=512)", {"name": "LongestMaxSize", "params": {"max_size": 512}}),
    ("v2.Resize(256, antialias=False)", ("unmapped", "antialias=False")),
    ("v2.Resize(256, max_size=300)", ("unmapped", "max_size=300")),
    ("v2.RandomCrop(224)", {"name": "RandomCrop224", "params": {"size": [224, 224]}}),
    ("v2.RandomCrop(224, padding=4)", ("unmapped", "pads before cropping")),
    ("v2.CenterCrop(224)", {"name": "CenterCrop224", "params": {"size": [224, 224]}}),
    (
        "v2.ColorJitter(0.4, 0.4, 0.4, 0.1)",
        {
            "name": "ColorJitter",
            "params": {"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.1},
        },
    ),
    (
        "v2.ColorJitter(brightness=0.2, hue=0.05)",
        {
            "name": "ColorJitter",
            "params": {"brightness": 0.2, "contrast": 0.0, "saturation": 0.0, "hue": 0.05},
        },
    ),
    ("v2.ColorJitter(brightness=0.2)", {"name": "Brightness", "params": {"factor": [0.8, 1.2]}}),
    ("v2.ColorJitter(contrast=(0.5, 1.0))", {"name": "Contrast", "params": {"factor": [0.5, 1.0]}}),
    ("v2.ColorJitter(saturation=0.5)", {"name": "Saturation", "params": {"factor": [0.5, 1.5]}}),
    ("v2.ColorJitter(hue=0.1)", {"name": "Hue", "params": {"hue": 0.1}}),
    ("v2.ColorJitter(hue=(0.0, 0.2))", ("unmapped", "symmetric")),
    ("v2.ColorJitter(brightness=(0.5, 1.0), contrast=0.2)", ("unmapped", "brightness=(0.5, 1.0)")),
    (
        "v2.GaussianBlur(9, sigma=2.0)",
        {"name": "GaussianBlur", "params": {"kernel_size": 9, "sigma": 2.0}},
    ),
    ("v2.GaussianBlur(9, sigma=(0.1, 2.0))", ("unmapped", "sigma fixed")),
    ("v2.RandomRotation(45)", ("unmapped", "interpolation 'nearest'")),
    (f"v2.RandomRotation(45, {BL})", {"name": "Rotate", "params": {"degrees": 45.0}}),
    (f"v2.RandomRotation(45, {BL}, fill=127)", ("unmapped", "fill 127")),
    (f"v2.RandomRotation(45, {BL}, expand=True)", ("unmapped", "expand=True")),
    (
        f"v2.RandomAffine(25, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=(-10, 10), {BL})",
        {
            "name": "Affine",
            "params": {"degrees": 25.0, "translate": 0.1, "scale": [0.8, 1.2], "shear": 10.0},
        },
    ),
    (f"v2.RandomAffine(0, shear=20, {BL})", {"name": "Shear", "params": {"shear": 20.0}}),
    (f"v2.RandomAffine(10, translate=(0.1, 0.2), {BL})", ("unmapped", "one translate")),
    (f"v2.RandomAffine(10, shear=(-5, 5, -5, 5), {BL})", ("unmapped", "symmetric x-shear")),
    (
        "v2.RandomErasing()",
        {
            "name": "Erasing",
            "params": {"scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": 0},
            "options": {"p": 0.5},
        },
    ),
    ("v2.RandomErasing(value='random')", ("unmapped", "fills with 0")),
    (
        "v2.GaussianNoise(sigma=0.05)",
        {"name": "GaussianNoise", "params": {"mean": 0.0, "std": 0.05}},
    ),
    ("v2.GaussianNoise(clip=False)", ("unmapped", "clip=False")),
    ("v2.Grayscale(3)", {"name": "Grayscale", "params": {"num_output_channels": 3}}),
    ("v2.Grayscale()", ("unmapped", "num_output_channels=1")),
    (
        "v2.RandomGrayscale(0.2)",
        {"name": "Grayscale", "params": {"num_output_channels": 3}, "options": {"p": 0.2}},
    ),
    (
        "v2.RandomApply([v2.RandomHorizontalFlip(0.5)], p=0.5)",
        {"name": "HorizontalFlip", "params": {}, "options": {"p": 0.25}},
    ),
    (
        "v2.RandomApply([v2.GaussianBlur(9, sigma=2.0), v2.RandomInvert()], p=0.5)",
        ("unmapped", "applies 2 transforms"),
    ),
    ("v2.RandomApply([v2.AugMix()], p=0.5)", ("unmapped", "wraps AugMix")),
    ("v2.Pad(10)", {"name": "Pad", "params": {"padding": 10}}),
    ("v2.Pad([1, 2])", ("unmapped", "same width")),
    ("v2.RandomEqualize(1.0)", {"name": "Equalize", "params": {}}),
    ("v2.RandomPosterize(4, p=1.0)", {"name": "Posterize", "params": {"bits": 4}}),
    ("v2.RandomChannelPermutation()", {"name": "ChannelShuffle", "params": {}}),
    ("v2.JPEG((50, 95))", {"name": "JpegCompression", "params": {"quality": [50, 95]}}),
    (
        "v2.RandomPhotometricDistort()",
        {
            "name": "PhotoMetricDistort",
            "params": {
                "brightness": [0.875, 1.125],
                "contrast": [0.5, 1.5],
                "saturation": [0.5, 1.5],
                "hue": [-0.05, 0.05],
                "step_p": 0.5,
            },
        },
    ),
    ("v2.Normalize([0.5] * 3, [0.5] * 3)", ("unmapped", "no catalog step expresses v2.Normalize")),
    ("v2.Lambda(lambda x: x)", ("unmapped", "no catalog step expresses v2.Lambda")),
]


@pytest.fixture(scope="module")
def mapped() -> dict[str, list[dict[str, Any]]]:
    """``to_steps(v2.Compose([expression]))`` of every MAPPINGS expression, in one env run."""
    library_env("torchvision")
    code = """
import json, sys, torch
from torchvision.transforms import InterpolationMode, v2
from augbench.workload.pipeline_sources import torchvision_module as tvm
steps = {e: tvm.to_steps(v2.Compose([eval(e)])) for e in json.loads(sys.argv[1])}
print(json.dumps({e: [s.to_dict() for s in found] for e, found in steps.items()}))
"""
    proc = _env("-c", code, json.dumps([expression for expression, _ in MAPPINGS]))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.envs
@needs_env
@pytest.mark.parametrize(("expression", "expected"), MAPPINGS, ids=[e for e, _ in MAPPINGS])
def test_transform_maps_exactly_or_says_why_not(
    mapped: dict[str, list[dict[str, Any]]], expression: str, expected: Any
) -> None:
    (step,) = mapped[expression]
    if isinstance(expected, tuple):
        assert step["name"] == expression.split("(")[0].removeprefix("v2.")
        assert expected[1] in step.get("unmapped", ""), step
        json.dumps(step["params"])
    else:
        assert step == expected
        _catalog_steps([step])
