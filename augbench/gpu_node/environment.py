"""What the node's interpreter has: the GPU regimes' packages (versions, where each imports
from: the node's own site-packages or the bundle's target), the CUDA verdict of
augbench.cuda_env, the CPU and the workflow's machine label. Written as JSON to ``--output``."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any

# Distributions reported (None where not installed): the node's, the bundle's, and those the
# node is known to lack (so the summary can say so).
DISTRIBUTIONS = (
    "torch", "torchvision", "kornia", "kornia_rs", "tqdm", "numpy", "pillow",
    "opencv-python-headless", "pyyaml", "psutil", "pyperf", "albumentationsx",
    "nvidia-dali-cuda120",
)  # fmt: skip
# Modules the GPU regimes import: each must import here.
MODULES = ("torch", "torchvision", "kornia", "kornia_rs", "tqdm", "numpy", "PIL")


def probe() -> dict[str, Any]:
    from augbench import cuda_env
    from augbench.results import cpu_model

    out: dict[str, Any] = {
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "packages": {},
        "imports": {},
    }
    for dist in DISTRIBUTIONS:
        try:
            out["packages"][dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out["packages"][dist] = None
    for module in MODULES:
        try:
            found = importlib.import_module(module)
            out["imports"][module] = {"ok": True, "from": str(Path(found.__file__).parent)}
        except Exception as exc:  # every missing piece is named, not just the first
            out["imports"][module] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    out["cuda_env"] = cuda_env.detect_torch().to_dict()
    out["cpu_model"] = cpu_model()
    out["usable_cores"] = len(os.sched_getaffinity(0))
    try:
        from augbench.config import auto_machine_label

        out["machine_label"] = auto_machine_label()
    except ImportError as exc:  # pyyaml missing: the prover falls back to a plain label
        out["machine_label"] = None
        out["machine_label_error"] = str(exc)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", type=Path, required=True)
    args = p.parse_args(argv)
    args.output.write_text(json.dumps(probe(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
