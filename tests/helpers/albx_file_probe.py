"""AlbumentationsX side of tests/test_pipeline_albumentations_file.py.

Run with the AlbumentationsX env's interpreter (``.venvs/albumentationsx/bin/python``): reads a
JSON request, writes a JSON report. Request keys (each optional):

- ``save``: a path; :func:`realistic_compose` is written there with ``A.save(..., "yaml")``;
- ``catalog``: catalog step names; the report holds ``A.to_dict`` of the transform the catalog's
  own AlbumentationsX mapping builds for each (catalog parameters);
- ``steps``: pipelines (``Pipeline.to_dict``); the report holds, per pipeline, the labels and
  classes of ``native_steps`` or the error it raised;
- ``compose``: ``{"pipeline", "file", "seed"}``; the report says whether ``native_compose`` and
  ``A.load(file)``, seeded alike, give the same output on one random uint8 image.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.workload import adapters, catalog, pipelines
from augbench.workload.pipeline_sources import albumentations_file


def realistic_compose() -> Any:
    import albumentations as A
    from albumentations.pytorch import ToTensorV2

    return A.Compose(
        [
            A.RandomResizedCrop(size=(224, 224), scale=(0.2, 1.0), area_for_downscale="image"),
            A.HorizontalFlip(p=0.5),
            A.ColorJitter(
                brightness_range=(0.8, 1.2),
                contrast_range=(0.8, 1.2),
                saturation_range=(0.8, 1.2),
                hue_range=(-0.05, 0.05),
                p=0.8,
            ),
            A.CoarseDropout(p=0.3),
            A.Normalize(),
            ToTensorV2(),
        ]
    )


def _as_array(output: Any) -> np.ndarray:
    return output.numpy() if hasattr(output, "numpy") else np.asarray(output)


def main(request_path: str, report_path: str) -> None:
    import albumentations as A

    request = json.loads(Path(request_path).read_text())
    report: dict[str, Any] = {"version": A.__version__}
    if request.get("save"):
        A.save(realistic_compose(), request["save"], data_format="yaml")
    adapter = adapters.get("albumentationsx")
    report["catalog"] = {
        name: A.to_dict(
            adapter.build(name, dict(catalog.CANDIDATES[name].params)).albumentations_transform
        )["transform"]
        for name in request.get("catalog", [])
    }
    report["steps"] = []
    for data in request.get("steps", []):
        pipeline = pipelines.Pipeline.from_dict(data)
        try:
            built = albumentations_file.native_steps(pipeline)
        except pipelines.PipelineError as exc:
            report["steps"].append({"error": str(exc)})
            continue
        report["steps"].append({"labels": [label for label, _ in built],
                                "classes": [type(t).__name__ for _, t in built]})  # fmt: skip
    report["compose"] = []
    for case in request.get("compose", []):
        image = np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)
        ours = albumentations_file.native_compose(pipelines.Pipeline.from_dict(case["pipeline"]))
        loaded = A.load(case["file"], data_format="yaml")
        ours.set_random_seed(case["seed"])
        loaded.set_random_seed(case["seed"])
        a, b = _as_array(ours(image=image)["image"]), _as_array(loaded(image=image)["image"])
        report["compose"].append(
            {
                "type": type(ours).__name__,
                "shape": list(a.shape),
                "equal": bool(np.array_equal(a, b)),
            }
        )
    Path(report_path).write_text(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:3])
