"""Every mapping, applied by the real library in its own environment.

One probe per library (tests/helpers/env_probe.py, run with ``.venvs/<library>/bin/python``, built
from the lock on first use) applies the cases below to one fixed photograph and saves each output.
The tests then check per library: output shape, dtype and value range; cross-library agreement
for deterministic settings within stated tolerances (8-bit units); that random transforms draw
fresh parameters on every call and that every call applies the transform (probability 1); and that
every mapping declared ``multichannel`` runs on the 9-channel image and keeps 9 channels.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import library_env

from augbench.workload import adapters, catalog, pipelines
from augbench.workload.adapters.base import CPU_TRANSFORMS

pytestmark = pytest.mark.envs

REPO = Path(__file__).resolve().parents[1]
LIBRARIES = catalog.eligibility_libraries()
# Every library that transforms images on the CPU is probed: the forks (a declaration's sibling)
# too, which join each cross-library case their original is in.
PROBED = adapters.with_capability(CPU_TRANSFORMS)
FORKS = {lib: adapters.declared(lib).sibling for lib in PROBED if adapters.declared(lib).sibling}
RANDOM_CALLS = 3
# Discrete draws (1 of 3 channels, 1 of 4 rotations) repeat by chance: more calls for those.
DISCRETE_CALLS = {"ChannelDropout": 8, "ChannelShuffle": 8, "RandomRotate90": 8}
H, W = 240, 320  # non-square, multiples of the 4x4 jigsaw grid

# Cross-library checks on deterministic settings: (case id, transform, parameter overrides,
# image, libraries, max |difference| in 8-bit units, compared region).
# "square" is the 240x240 top-left crop (90-degree rotations keep the canvas in Kornia).
EQUIVALENCE: list[tuple[str, str, dict[str, Any], str, tuple[str, ...], float, str]] = [
    ("hflip", "HorizontalFlip", {}, "rect", LIBRARIES, 0, "all"),
    ("vflip", "VerticalFlip", {}, "rect", LIBRARIES, 0, "all"),
    ("transpose", "Transpose", {}, "rect", ("albumentationsx", "pillow"), 0, "all"),
    ("rot90", "RandomRotate90", {"times": (1, 1)}, "square", ("albumentationsx", "kornia", "pillow"), 1, "all"),  # noqa: E501
    ("rot270", "RandomRotate90", {"times": (3, 3)}, "square", ("albumentationsx", "kornia", "pillow"), 1, "all"),  # noqa: E501
    ("center_crop", "CenterCrop224", {}, "rect", LIBRARIES, 0, "all"),
    ("pad", "Pad", {}, "rect", ("albumentationsx", "torchvision", "pillow"), 0, "all"),
    ("invert", "Invert", {}, "rect", LIBRARIES, 1, "all"),
    ("grayscale", "Grayscale", {}, "rect", LIBRARIES, 1, "all"),
    ("posterize", "Posterize", {}, "rect", LIBRARIES, 1, "all"),
    ("solarize", "Solarize", {}, "rect", LIBRARIES, 1, "all"),
    ("brightness", "Brightness", {"factor": (1.2, 1.2)}, "rect", LIBRARIES, 1, "all"),
    ("contrast", "Contrast", {"factor": (1.2, 1.2)}, "rect", LIBRARIES, 2, "all"),
    ("resize_up", "Resize", {}, "rect", LIBRARIES, 2, "all"),
    ("gaussian_blur", "GaussianBlur", {}, "rect", ("albumentationsx", "torchvision", "kornia"), 1, "interior"),  # noqa: E501
    ("box_blur", "Blur", {}, "rect", ("albumentationsx", "kornia", "pillow"), 1, "interior"),
    ("median_blur", "MedianBlur", {}, "rect", ("albumentationsx", "kornia", "pillow"), 1, "interior"),  # noqa: E501
    ("edge_enhance", "EnhanceEdge", {}, "rect", ("albumentationsx", "pillow"), 1, "interior"),
    ("detail", "EnhanceDetail", {}, "rect", ("albumentationsx", "pillow"), 1, "interior"),
]  # fmt: skip
# A fork joins each case its original is in, where it has the transform with those parameters
# (albumentations 2.0.8's RandomRotate90 draws k from {0, 1, 2, 3} only: no fixed rotation).
FORK_CANNOT = {("albumentations_mit", "rot90"), ("albumentations_mit", "rot270")}
EQUIVALENCE = [
    (
        *c[:4],
        tuple(c[4])
        + tuple(
            fork
            for fork, original in FORKS.items()
            if original in c[4]
            and (fork, c[0]) not in FORK_CANNOT
            and adapters.get(fork).supports(c[1])
        ),
        *c[5:],
    )
    for c in EQUIVALENCE
]

# Canonical distributions that include the identity (k = 0, the identity permutation, all steps
# skipped): a single call may return its input unchanged.
IDENTITY_IN_DISTRIBUTION = {"RandomRotate90", "ChannelShuffle", "PhotoMetricDistort"}
# Documented overshoot of Kornia's float outputs (see the mapping notes).
UNCLIPPED = {("kornia", "UnsharpMask")}
NATIVE_DTYPE = {
    "albumentationsx": "uint8",
    "torchvision": "torch.uint8",
    "kornia": "torch.float32",
    "pillow": "PIL:RGB",
}


# Pipelines with a mask target (augbench.workload.pipelines, Adapter.with_mask), run by the
# libraries that drive the mask on a binary image whose mask is the image itself: after a geometric
# step the mask must still cover the same pixels as the image (bilinear image edges vs nearest mask
# edges aside); after any other step it must be unchanged. Intensity steps come after the
# geometric ones (a colour jitter may push white below the threshold the check reads). The
# blobs are left-right asymmetric, so a mask left behind by a flip disagrees with the image.
MASK_CASES: list[tuple[str, list[Any]]] = [
    ("seg", [{"LongestMaxSize": {"max_size": 400}}, {"PadIfNeeded": {"size": [416, 416]}},
             "Affine", "Normalize", "ToTensor"]),
    ("mixed", ["HorizontalFlip", "Rotate", "RandomResizedCrop", "ColorJitter", "GaussianBlur",
               "Normalize"]),
]  # fmt: skip
GEOMETRIC_STEPS = {
    "LongestMaxSize", "PadIfNeeded", "Affine", "HorizontalFlip", "Rotate", "RandomResizedCrop"
}  # fmt: skip
MASK_LIBRARIES = [lib for lib in PROBED if "mask" in adapters.get(lib).driven_targets]


def blobs_image() -> np.ndarray:
    """White shapes on black (uint8 HxWx3): a rectangle at the top-left and a disk right of it."""
    image = np.zeros((H, W, 3), np.uint8)
    image[30:150, 20:140] = 255
    rows, cols = np.ogrid[:H, :W]
    image[(rows - 170) ** 2 + (cols - 250) ** 2 <= 40**2] = 255
    return image


def base_image() -> np.ndarray:
    from skimage import data

    return np.ascontiguousarray(data.astronaut()[:H, :W])


def _cases(library: str) -> list[dict[str, Any]]:
    adapter = adapters.get(library)
    cases = []
    for name in catalog.names():
        mapping = adapter.mappings.get(name)
        if mapping is None:
            continue
        calls = DISCRETE_CALLS.get(name, RANDOM_CALLS) if catalog.CANDIDATES[name].random else 2
        cases.append({"id": f"rgb-{name}", "transform": name, "calls": calls, "seed": 7})
        if mapping.multichannel:
            cases.append({"id": f"c9-{name}", "transform": name, "channels": 9, "seed": 7})
    for case_id, name, params, image, libs, _, _ in EQUIVALENCE:
        if library in libs:
            cases.append(
                {"id": f"eq-{case_id}", "transform": name, "params": params, "image": image}
            )
    return cases


def library_python(library: str) -> Path:
    """The library's env (built by the workflow); built here from its lock when absent."""
    return library_env(library)


@cache
def probe(library: str, workdir: Path) -> tuple[dict[str, dict[str, Any]], Path]:
    out = workdir / library
    images = {"rect": base_image(), "square": base_image()[:, :H], "blobs": blobs_image()}
    paths = {}
    for key, array in images.items():
        paths[key] = workdir / f"{key}.npy"
        np.save(paths[key], array)
    request = workdir / f"{library}.json"
    request.write_text(
        json.dumps(
            {
                "library": library,
                "images": {k: str(p) for k, p in paths.items()},
                "cases": _cases(library),
                "mask_cases": [
                    {"id": f"mask-{case_id}", "steps": steps, "image": "blobs", "seed": 3}
                    for case_id, steps in MASK_CASES
                    if library in MASK_LIBRARIES
                ],
            }
        )
    )
    proc = subprocess.run(
        [str(library_python(library)), str(REPO / "tests" / "helpers" / "env_probe.py"),
         str(request), str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, dict[str, Any]] = {}
    for record in json.loads((out / "report.json").read_text()):
        record["dir"] = str(out)
        report[record["id"]] = record
    return report, out


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    from concurrent.futures import ThreadPoolExecutor

    workdir = tmp_path_factory.mktemp("equivalence")
    for lib in PROBED:
        library_python(lib)  # build missing envs one at a time (uv shares one cache)
    # Two probes at a time: the CI machine has 2 cores.
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = pool.map(lambda lib: probe(lib, workdir)[0], PROBED)
        return dict(zip(PROBED, reports, strict=True))


def load(record: dict[str, Any], call: int = 0) -> np.ndarray:
    return np.load(Path(record["dir"]) / f"{record['id']}_{call}.npy")


def as_uint8_scale(library: str, array: np.ndarray) -> np.ndarray:
    """Outputs on one 0-255 float scale (Kornia works in [0, 1])."""
    array = array.astype(np.float64)
    return array * 255.0 if library == "kornia" else array


def expected_hw(name: str, h: int, w: int) -> set[tuple[int, int]]:
    if name == "Resize":
        return {(512, 512)}
    if catalog.CANDIDATES[name].is_crop:
        return {(224, 224)}
    if name == "Pad":
        return {(h + 20, w + 20)}
    if name == "Transpose":
        return {(w, h)}
    if name == "RandomRotate90":
        return {(h, w), (w, h)}
    if name in {"LongestMaxSize", "SmallestMaxSize"}:
        side = max(h, w) if name == "LongestMaxSize" else min(h, w)
        scale = 512 / side
        return {(round(h * scale) + dh, round(w * scale) + dw) for dh in (-1, 0) for dw in (-1, 0)}
    return {(h, w)}


def _ok(record: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in record, f"{record['id']}: {record['error']}\n{record.get('traceback')}"
    assert not record.get("build_warnings"), (record["id"], record["build_warnings"])
    return record


@pytest.mark.parametrize("library", PROBED)
def test_every_mapping_runs_with_native_shape_dtype_and_range(library: str, probes) -> None:
    adapter = adapters.get(library)
    dtype = NATIVE_DTYPE[FORKS.get(library, library)]
    for name in catalog.names():
        if name not in adapter.mappings:
            continue
        record = _ok(probes[library][f"rgb-{name}"])
        for out in record["outputs"]:
            assert out["dtype"] == dtype, (name, out["dtype"])
            h, w, c = out["hwc_shape"]
            assert c == 3, (name, out)
            assert (h, w) in expected_hw(name, H, W), (name, (h, w))
            top = 1.0 if library == "kornia" else 255.0
            if (library, name) not in UNCLIPPED:
                assert out["min"] >= 0.0 and out["max"] <= top + 1e-6, (name, out)


@pytest.mark.parametrize("library", PROBED)
def test_random_transforms_draw_fresh_parameters_and_always_apply(library: str, probes) -> None:
    image = base_image().astype(np.float64)
    for name in catalog.names():
        spec = catalog.CANDIDATES[name]
        if name not in adapters.get(library).mappings:
            continue
        record = _ok(probes[library][f"rgb-{name}"])
        outputs = [as_uint8_scale(library, load(record, i)) for i in range(len(record["outputs"]))]
        if not spec.random:
            assert all(np.array_equal(outputs[0], o) for o in outputs[1:]), (
                f"{library}:{name} is deterministic in the catalog but two calls differ"
            )
            continue
        distinct = {o.tobytes() + bytes(str(o.shape), "ascii") for o in outputs}
        assert len(distinct) > 1, f"{library}:{name}: {len(outputs)} calls gave one output"
        if name not in IDENTITY_IN_DISTRIBUTION:
            for i, out in enumerate(outputs):
                unchanged = out.shape == image.shape and np.abs(out - image).max() < 0.5
                assert not unchanged, f"{library}:{name} call {i} left the image unchanged (p<1?)"


@pytest.mark.parametrize("library", [lib for lib in PROBED if "pillow" not in lib])
def test_declared_multichannel_mappings_keep_nine_channels(library: str, probes) -> None:
    adapter = adapters.get(library)
    for name, mapping in adapter.mappings.items():
        if not mapping.multichannel or name not in catalog.names():
            continue
        out = _ok(probes[library][f"c9-{name}"])["outputs"][0]
        assert out["hwc_shape"][2] == 9, (name, out)
        assert (out["hwc_shape"][0], out["hwc_shape"][1]) in expected_hw(name, H, W), name


@pytest.mark.parametrize(
    ("case_id", "name", "libraries", "tolerance", "region"),
    [(c[0], c[1], c[4], c[5], c[6]) for c in EQUIVALENCE],
    ids=[c[0] for c in EQUIVALENCE],
)
def test_deterministic_settings_agree_across_libraries(
    case_id: str, name: str, libraries: tuple[str, ...], tolerance: float, region: str, probes
) -> None:
    outputs = {}
    for lib in libraries:
        record = _ok(probes[lib][f"eq-{case_id}"])
        out = as_uint8_scale(lib, load(record))
        if lib == "kornia":
            out = np.clip(out, 0, 255).round()
        outputs[lib] = out[6:-6, 6:-6] if region == "interior" else out
    reference_lib = libraries[0]
    reference = outputs[reference_lib]
    for lib, out in outputs.items():
        assert out.shape == reference.shape, (lib, out.shape, reference.shape)
        diff = np.abs(out - reference)
        assert diff.max() <= tolerance, (
            f"{name}: {lib} vs {reference_lib}: max |diff| {diff.max():.1f} > {tolerance} "
            f"(mean {diff.mean():.3f})"
        )


@pytest.mark.parametrize("library", MASK_LIBRARIES)
@pytest.mark.parametrize("case_id", [c[0] for c in MASK_CASES])
def test_the_mask_moves_with_the_image_through_the_librarys_own_api(
    library: str, case_id: str, probes
) -> None:
    record = _ok(probes[library][f"mask-{case_id}"])
    steps = record["steps"]
    pipe = pipelines.parse({"name": "m", "targets": ["mask"], "steps": dict(MASK_CASES)[case_id]})
    expected = ["input", *(label for label, _ in pipe.units())]
    assert [s["label"] for s in steps] == expected
    half = 0.5 if library == "kornia" else 127.5

    def arrays(step: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        stem = Path(record["dir"]) / step["stem"]
        return np.load(f"{stem}_image.npy"), np.load(f"{stem}_mask.npy")

    image, mask = arrays(steps[0])
    assert np.array_equal(image[..., 0] > half, mask[..., 0] > 0)  # the mask is the image
    for previous, step in itertools.pairwise(steps):
        image, mask = arrays(step)
        _, before = arrays(previous)
        name = step["label"].split("+")[0]
        assert mask.shape[2] == 1 and set(np.unique(mask)) <= {0, 1}, (step, np.unique(mask))
        if name not in GEOMETRIC_STEPS:
            assert np.array_equal(mask, before), f"{library} {name} changed the mask"
            continue
        assert step["joint_call"], step
        assert mask.shape[:2] == image.shape[:2], (name, mask.shape, image.shape)
        agreement = np.mean((image[..., 0] > half) == (mask[..., 0] > 0))
        assert agreement >= 0.97, f"{library} {name}: mask and image agree on {agreement:.3f}"
        if name == "HorizontalFlip":  # exact, and a mask left in place would disagree
            assert agreement == 1.0
            assert np.mean((image[..., 0] > half) == (before[..., 0] > 0)) < 0.9
