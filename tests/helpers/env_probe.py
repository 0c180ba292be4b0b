"""Apply catalog mappings inside one library environment and save what comes out.

Run with a library env's interpreter (``<repo>/.venvs/<library>/bin/python``) by
tests/test_equivalence.py: the driver env has none of the benchmarked libraries. Reads a JSON
request file, writes one ``<id>_<call>.npy`` per output (HWC, the native dtype and value scale) and
``report.json`` with shapes, dtypes, ranges and errors.

Request: {"library": str, "images": {key: path to an HWC uint8 .npy}, "cases": [{"id",
"transform", "image" (a key), "params" (overrides of the canonical ones), "channels" (3 or 9),
"calls", "seed"}], "mask_cases": [{"id", "steps" (a pipeline's steps), "image" (a key),
"seed"}]}. A mask case runs the steps as a pipeline with a mask target (augbench.workload.pipelines,
the library's own joint API) and saves, per step, ``<id>_<step>_image.npy`` and
``<id>_<step>_mask.npy`` (HWC; step -1 is the input).
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.measuring import pipeline_builders
from augbench.workload import adapters, catalog, pipelines


def native_to_hwc(output: Any) -> tuple[np.ndarray, str, list[int]]:
    """Output in its native dtype and scale as an HWC numpy array, plus dtype and native shape."""
    if isinstance(output, np.ndarray):
        return output, str(output.dtype), list(output.shape)
    if hasattr(output, "detach"):  # torch tensor: CHW or 1xCxHxW
        shape = list(output.shape)
        array = output.detach().cpu()
        if array.ndim == 4:
            array = array[0]
        return array.permute(1, 2, 0).contiguous().numpy(), str(output.dtype), shape
    array = np.asarray(output)  # PIL image
    return array, f"PIL:{output.mode}", list(array.shape)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:
        pass


def run_case(
    adapter: adapters.Adapter, base: np.ndarray, case: dict[str, Any], out: Path
) -> dict[str, Any]:
    name = case["transform"]
    spec = catalog.CANDIDATES[name]
    params = {**spec.params, **case.get("params", {})}
    channels = case.get("channels", 3)
    array = np.concatenate([base] * (channels // 3), axis=2) if channels != 3 else base
    record: dict[str, Any] = {"id": case["id"], "transform": name, "channels": channels}
    start = time.perf_counter()
    try:
        seed_everything(case.get("seed", 0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            transform = adapter.build(name, params)
        # A library that ignores an argument it does not know warns (albumentations 2.0.8): the
        # mapping would then measure another transform than the call it records.
        record["build_warnings"] = sorted({str(w.message)[:300] for w in caught})
        # AlbumentationsX transforms draw from their own generators, seeded from the OS unless
        # told otherwise; seed them too so a near-identity draw (Brightness factor ~1.0) cannot
        # make a "fresh parameters, always applied" check flaky.
        own = getattr(transform, "albumentations_transform", None)
        if own is not None:
            own.set_random_seed(case.get("seed", 0))
        image = adapter.from_array(array)
        outputs = []
        for call in range(case.get("calls", 1)):
            raw = transform(image)
            hwc, dtype, shape = native_to_hwc(adapter.materialize(raw, image))
            if hasattr(raw, "mode") and hasattr(raw, "getbands"):  # PIL image before materializing
                dtype = f"PIL:{raw.mode}"
            np.save(out / f"{case['id']}_{call}.npy", hwc)
            outputs.append(
                {
                    "dtype": dtype,
                    "shape": shape,
                    "hwc_shape": list(hwc.shape),
                    "min": float(np.min(hwc)),
                    "max": float(np.max(hwc)),
                }
            )
        record["outputs"] = outputs
    except Exception as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()[-2000:]
    record["seconds"] = time.perf_counter() - start
    return record


def run_mask_case(
    adapter: adapters.Adapter, base: np.ndarray, case: dict[str, Any], out: Path
) -> dict[str, Any]:
    record: dict[str, Any] = {"id": case["id"], "steps": []}
    try:
        pipeline = pipelines.parse(
            {"name": f"mask_{case['id']}", "targets": ["mask"], "steps": case["steps"]}
        )
        seed_everything(case.get("seed", 0))
        units = pipeline_builders.build_units(adapter, pipeline)
        for _, unit in units:
            own = getattr(unit.fn, "albumentations_transform", None)
            if own is not None:
                own.set_random_seed(case.get("seed", 0))
        image = adapter.from_array(base)
        sample = pipelines.prepare(adapter, pipeline, image)
        for index, (label, unit) in enumerate([("input", None), *units]):
            if unit is not None:
                sample = pipelines.materialize(adapter, unit(sample), sample)
            stem = f"{case['id']}_{index - 1}"
            np.save(out / f"{stem}_image.npy", native_to_hwc(sample["image"])[0])
            mask, dtype, shape = native_to_hwc(sample["mask"])
            np.save(out / f"{stem}_mask.npy", mask)
            record["steps"].append(
                {"label": label, "stem": stem, "mask_dtype": dtype, "mask_shape": shape,
                 "joint_call": unit is not None and unit.joint is not None}
            )  # fmt: skip
    except Exception as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()[-2000:]
    return record


def main() -> int:
    request = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    adapter = adapters.get(request["library"])
    adapter.import_library()
    images = {key: np.load(path) for key, path in request["images"].items()}
    report = [
        run_case(adapter, images[case.get("image", "rect")], case, out) for case in request["cases"]
    ]
    report += [
        run_mask_case(adapter, images[case.get("image", "rect")], case, out)
        for case in request.get("mask_cases", [])
    ]
    (out / "report.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
