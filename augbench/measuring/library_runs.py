"""Side-by-side measuring scripts that re-run themselves inside each library's venv.

``tools/experiments/decode_floor.py`` and ``tools/experiments/loader_transport.py`` are started with
the driver env's Python; for every library they run again as ``<venvs>/<library>/bin/python
<script> --inner <library> ...`` under the DataLoader thread policy, and the inner run prints its
rows as one JSON line last. ``drive`` is such a script's ``main`` once its arguments are parsed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from augbench.policy import DATALOADER_THREADS
from augbench.workload import adapters
from augbench.workload.adapters.base import CPU_TRANSFORMS

REPO = Path(__file__).resolve().parents[2]


def add_arguments(parser: argparse.ArgumentParser, *, output: str, batches_per_run: int) -> None:
    """Arguments every such script takes (the inner run gets them forwarded)."""
    parser.add_argument("--manifest", required=True, type=Path)
    libraries = adapters.with_capability(CPU_TRANSFORMS)
    parser.add_argument("--libraries", nargs="+", default=list(libraries), choices=libraries)
    parser.add_argument("--num-images", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches-per-run", type=int, default=batches_per_run)
    parser.add_argument("--prefetch-factor", type=int, default=2)
    parser.add_argument("--venvs", type=Path, default=REPO / ".venvs")
    parser.add_argument("--output", type=Path, default=Path(output))
    parser.add_argument("--inner", default=None, help=argparse.SUPPRESS)  # library, in its venv


def run_per_library(
    script: Path, args: argparse.Namespace, forwarded: list[str]
) -> list[dict[str, Any]]:
    """Run ``script --inner <library>`` in each library's venv; the rows of all of them."""
    if not args.manifest.exists():
        raise SystemExit(f"manifest not found: {args.manifest} (stage the dataset first)")
    rows: list[dict[str, Any]] = []
    for lib in args.libraries:
        python = args.venvs / lib / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"no venv for {lib} at {python} (build it: snakemake results/envs)")
        cmd = [
            str(python), str(Path(script).resolve()), "--inner", lib,
            "--manifest", str(args.manifest.resolve()), "--num-images", str(args.num_images),
            "--batch-size", str(args.batch_size), "--batches-per-run", str(args.batches_per_run),
            "--prefetch-factor", str(args.prefetch_factor), *forwarded,
        ]  # fmt: skip
        env = {**os.environ, **DATALOADER_THREADS.environment(), "PYTHONPATH": str(REPO)}
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
        rows.extend(json.loads(proc.stdout.strip().splitlines()[-1]))
    return rows


def write_rows(rows: list[dict[str, Any]], output: Path) -> Any:
    """The rows as a CSV at ``output``; returns the pandas table (the driver env has pandas)."""
    import pandas as pd

    table = pd.DataFrame(rows)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False)
    return table


def drive(
    script: Path,
    args: argparse.Namespace,
    inner: Callable[[argparse.Namespace], int],
    forwarded: list[str],
    show: Callable[[Any], None],
) -> int:
    """The inner run when ``--inner`` names a library; else the driver: ``script`` in every
    library's venv, the rows written to ``--output``, ``show`` printing the table, and a last line
    naming the recipe and the file."""
    if args.inner:
        return inner(args)
    rows = run_per_library(script, args, forwarded)
    table = write_rows(rows, args.output)
    show(table)
    print(f"recipe: {rows[0]['recipe']}; written to {args.output}")
    return 0
