"""Decode-scope DataLoader throughput against the pure-decode floor, side by side in one run.

The cpu_dataloader ``decode`` scope cannot be faster than decoding the same files with the same
decoder in the same number of processes, with nothing else: no recipe, no collation, no worker
IPC. This script measures both on this machine, one worker count after the other, and prints
``ratio = DataLoader img/s / floor img/s`` per library and worker count.

- floor, W <= 1: one process decodes the epoch's files in a loop (``adapter.decode``).
- floor, W >= 2: W already-started processes (fork) each decode 1/W of the epoch's files; the
  clock spans the submission to the last process finishing.
- DataLoader: the regime's own engine code (``augbench.engines.cpu_dataloader``) with the
  cheapest recipe (``RandomCrop224 + Normalize + ToTensor`` by default), scope ``decode``, W
  workers, persistent workers started by an untimed warm-up epoch.

Both sides decode the same files in the same order with one thread per process. Not part of the
workflow DAG; run it from the repository root once the envs and the dataset exist:

    uv run python workflow/scripts/decode_floor.py \
        --manifest results/data/default-300/manifest.json --workers 0 1 2

It re-runs itself in each library's venv (``.venvs/<library>``) and writes a CSV (``--output``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=LIBRARIES)
    p.add_argument("--workers", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--transform", default="RandomCrop224", help="recipe key (catalog name)")
    p.add_argument("--num-images", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--batches-per-run", type=int, default=10)
    p.add_argument("--num-runs", type=int, default=3)
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--venvs", type=Path, default=REPO / ".venvs")
    p.add_argument("--output", type=Path, default=Path("results/tables/decode_floor.csv"))
    p.add_argument("--inner", default=None, help=argparse.SUPPRESS)  # library, in its venv
    return p.parse_args(argv)


# -- inside one library's venv -------------------------------------------------------------------
_DECODE: Any = None  # the adapter's decode, inherited by forked floor processes


def _decode_chunk(paths: list[str]) -> int:
    for path in paths:
        _DECODE(path)
    return len(paths)


def _floor(paths: list[str], workers: int, num_runs: int) -> list[float]:
    """Pure-decode throughputs (img/s) of ``paths`` in max(1, workers) processes."""
    if workers <= 1:
        out = []
        for _ in range(num_runs):
            start = time.perf_counter()
            _decode_chunk(paths)
            out.append(len(paths) / (time.perf_counter() - start))
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunks = [paths[i::workers] for i in range(workers)]
    out = []
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(_decode_chunk, [c[:1] for c in chunks]))  # start every process, untimed
        for _ in range(num_runs):
            start = time.perf_counter()
            done = sum(pool.map(_decode_chunk, chunks))
            out.append(done / (time.perf_counter() - start))
    return out


def inner(args: argparse.Namespace) -> int:
    from augbench.policy import DATALOADER_THREADS

    DATALOADER_THREADS.apply_environment()
    import tempfile

    from tqdm import tqdm

    from augbench import adapters, media, recipes
    from augbench.engines import cpu_dataloader as engine

    global _DECODE
    adapter = adapters.get(args.inner)
    adapter.import_library()
    import torch  # noqa: F401

    DATALOADER_THREADS.apply_runtime()
    _DECODE = adapter.decode
    files = [str(f) for f in media.select_files(args.manifest, args.num_images)]
    images_per_run = args.batch_size * args.batches_per_run
    epoch = [files[i % len(files)] for i in range(images_per_run)]  # the DataLoader's order
    recipe = engine.build_recipe(adapter, args.transform)
    dataset = engine.RecipeDataset(files, adapter.decode, recipe, label=args.transform)
    rows = []
    bar = tqdm(args.workers, desc=f"decode_floor | {args.inner} | {args.transform}", unit="w")
    for workers in bar:
        floor = _floor(epoch, workers, args.num_runs)
        loader_args = argparse.Namespace(
            workers=workers,
            batch_size=args.batch_size,
            batches_per_run=args.batches_per_run,
            num_runs=args.num_runs,
            prefetch_factor=args.prefetch_factor,
            persistent_workers=True,
            batch_timeout=300.0,
        )
        with tempfile.TemporaryDirectory() as tmp:
            measured = engine.measure_loader(loader_args, dataset, Path(tmp), bar)
        loader = statistics.median(measured["throughputs"])
        rows.append(
            {
                "library": args.inner,
                "decoder": adapter.decoder,
                "recipe": recipes.recipe_name(args.transform),
                "workers": workers,
                "floor_processes": max(1, workers),
                "images_per_run": images_per_run,
                "floor_img_s": statistics.median(floor),
                "dataloader_img_s": loader,
                "ratio": loader / statistics.median(floor),
                "floor_runs": floor,
                "dataloader_runs": measured["throughputs"],
            }
        )
    print(json.dumps(rows))
    return 0


# -- driver ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.inner:
        return inner(args)
    sys.path.insert(0, str(REPO))
    from augbench.policy import DATALOADER_THREADS

    if not args.manifest.exists():
        raise SystemExit(f"manifest not found: {args.manifest} (stage the dataset first)")
    rows: list[dict[str, Any]] = []
    for lib in args.libraries:
        python = args.venvs / lib / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"no venv for {lib} at {python} (build it: snakemake results/envs)")
        cmd = [
            str(python), str(Path(__file__).resolve()), "--inner", lib,
            "--manifest", str(args.manifest.resolve()), "--transform", args.transform,
            "--workers", *map(str, args.workers), "--num-images", str(args.num_images),
            "--batch-size", str(args.batch_size), "--batches-per-run", str(args.batches_per_run),
            "--num-runs", str(args.num_runs), "--prefetch-factor", str(args.prefetch_factor),
        ]  # fmt: skip
        env = {**os.environ, **DATALOADER_THREADS.environment(), "PYTHONPATH": str(REPO)}
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
        rows.extend(json.loads(proc.stdout.strip().splitlines()[-1]))

    import pandas as pd

    table = pd.DataFrame(rows)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output, index=False)
    shown = table[["library", "workers", "floor_img_s", "dataloader_img_s", "ratio"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"recipe: {rows[0]['recipe']}; written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
