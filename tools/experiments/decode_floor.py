"""Decode-scope DataLoader throughput against the pure-decode floor, side by side in one run.

The cpu_dataloader ``decode`` scope cannot be faster than decoding the same files with the same
decoder in the same number of processes, with nothing else: no recipe, no collation, no worker
IPC. This script measures both on this machine, one worker count after the other, and prints
``ratio = DataLoader img/s / floor img/s`` per library and worker count.

- floor, W <= 1: one process decodes the epoch's files in a loop (``adapter.decode``).
- floor, W >= 2: W already-started processes (fork) each decode 1/W of the epoch's files; the
  clock spans the submission to the last process finishing.
- DataLoader: the regime's own engine code (``augbench.measuring.engines.cpu_dataloader``) with the
  cheapest recipe (``RandomCrop224 + Normalize + ToTensor`` by default), scope ``decode``, W
  workers, persistent workers started by an untimed warm-up epoch.

Both sides decode the same files in the same order with one thread per process. Not part of the
workflow DAG; run it from the repository root once the envs and the dataset exist:

    uv run python tools/experiments/decode_floor.py \
        --manifest results/data/default-300/manifest.json --workers 0 1 2

It re-runs itself in each library's venv (``.venvs/<library>``) and writes a CSV (``--output``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.measuring.library_runs import add_arguments, drive


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(p, output="results/tables/decode_floor.csv", batches_per_run=10)
    p.add_argument("--workers", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--transform", default="RandomCrop224", help="recipe key (catalog name)")
    p.add_argument("--num-runs", type=int, default=3)
    return p.parse_args(argv)


# -- inside one library's venv -------------------------------------------------------------------
def inner(args: argparse.Namespace) -> int:
    from augbench.policy import DATALOADER_THREADS

    DATALOADER_THREADS.apply_environment()
    import tempfile

    from tqdm import tqdm

    from augbench.measuring import media
    from augbench.measuring.engines import cpu_dataloader as engine
    from augbench.workload import adapters, recipes

    adapter = adapters.get(args.inner)
    adapter.import_library()
    import torch  # noqa: F401

    DATALOADER_THREADS.apply_runtime()
    files = [str(f) for f in media.select_files(args.manifest, args.num_images)]
    images_per_run = args.batch_size * args.batches_per_run
    epoch = [files[i % len(files)] for i in range(images_per_run)]  # the DataLoader's order
    recipe = engine.build_recipe(adapter, args.transform)
    dataset = engine.RecipeDataset(files, adapter.decode, recipe, label=args.transform)
    rows = []
    bar = tqdm(args.workers, desc=f"decode_floor | {args.inner} | {args.transform}", unit="w")
    for workers in bar:
        floor = engine.decode_floor(adapter.decode, epoch, max(1, workers), args.num_runs)
        epochs = engine.EpochSettings(
            workers=workers,
            batch_size=args.batch_size,
            batches_per_run=args.batches_per_run,
            num_runs=args.num_runs,
            min_runs=args.num_runs,  # a fixed number of epochs, as the floor's
            prefetch_factor=args.prefetch_factor,
            persistent_workers=True,
            batch_timeout=300.0,
        )
        with tempfile.TemporaryDirectory() as tmp:
            measured = engine.measure_loader(epochs, dataset, Path(tmp), bar)
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
def show(table: Any) -> None:
    shown = table[["library", "workers", "floor_img_s", "dataloader_img_s", "ratio"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    forwarded = ["--transform", args.transform, "--num-runs", str(args.num_runs)]
    forwarded += ["--workers", *map(str, args.workers)]
    return drive(Path(__file__), args, inner, forwarded, show)


if __name__ == "__main__":
    sys.exit(main())
