"""What the node's interpreter has: the GPU regimes' packages (versions, where each imports
from: the node's own site-packages or the bundle's target), the CUDA verdict of
augbench.cuda_env, the CPU and the workflow's machine label. Written as JSON to ``--output``.

Which packages it reports and which modules must import come from the plan (``--plan``: the
bundle's plan.json, whose ``node`` was read from the library declarations where the bundle was
built, augbench.gpu_node.libraries.facts), so that the probe itself needs the standard library
only and can name a missing numpy; without ``--plan``, from this checkout's declarations."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any


def probe(distributions: list[str], modules: list[str]) -> dict[str, Any]:
    """Reports every one of ``distributions`` (None where not installed: the node's, the
    bundle's, and those the node is known to lack, so the summary can say so) and tries every
    one of ``modules`` (what the GPU regimes import: each must import here)."""
    from augbench import cuda_env
    from augbench.results import cpu_model

    out: dict[str, Any] = {
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "packages": {},
        "imports": {},
    }
    for dist in distributions:
        try:
            out["packages"][dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out["packages"][dist] = None
    for module in modules:
        try:
            found = importlib.import_module(module)
            out["imports"][module] = {"ok": True, "from": str(Path(found.__file__).parent)}
        except Exception as exc:  # every missing piece is named, not just the first
            out["imports"][module] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    out["cuda_env"] = cuda_env.detect_torch().to_dict()
    out["cpu_model"] = cpu_model()
    out["usable_cores"] = len(os.sched_getaffinity(0))
    try:
        from augbench.planning.config import auto_machine_label

        out["machine_label"] = auto_machine_label()
    except ImportError as exc:  # pyyaml missing: the prover falls back to a plain label
        out["machine_label"] = None
        out["machine_label_error"] = str(exc)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", type=Path, required=True)
    p.add_argument("--plan", type=Path, default=None, help="the bundle's plan.json")
    args = p.parse_args(argv)
    if args.plan is not None:
        node = json.loads(args.plan.read_text())["node"]
    else:
        from augbench.gpu_node.libraries import facts

        node = facts()
    found = probe(node["distributions"], node["modules"])
    args.output.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
