"""Rule resize_dataset: one derived dataset of the resolution sweep
(augbench/planning/resize.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.logs import redirect_to_log
from augbench.planning.dataset import DatasetIdentity
from augbench.planning.resize import ResizeSpec, build_derived

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    spec = ResizeSpec(**sm.params.spec)
    found = DatasetIdentity(sm.params.name, sm.params.digest, "derived-resize")
    manifest = build_derived(
        Path(sm.input.manifest),
        spec,
        Path(sm.output.archive),
        Path(sm.output.manifest).parent,
        found,
        base_key=sm.params.base_key,
    )
    counts = manifest["resize"]
    print(
        f"{found.key}: {counts['images']} images, shorter side {spec.resolution} px "
        f"({counts['downscaled']} downscaled, {counts['upscaled']} upscaled, "
        f"{counts['unchanged']} unchanged), {manifest['total_bytes']} bytes"
    )
