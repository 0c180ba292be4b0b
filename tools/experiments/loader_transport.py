"""Why one DataLoader worker can be slower than none: the loader's own costs, side by side.

For each library (memory scope: images decoded once, before any clock), in one process and in
interleaved rounds, this measures stock DataLoaders (``augbench.measuring.engines.bare_loop``) at
``workers`` 0 and 1 over:

- ``recipe``: the cheap recipe (``RandomCrop224 + HorizontalFlip + Normalize + ToTensor``);
- ``tail``: the transport baseline of the cpu_dataloader regime (the recipe's tail alone on a
  fixed 224 crop);
- ``ready_float32`` / ``ready_uint8``: a precomputed 3x224x224 tensor returned as is: no
  per-sample work at all, so the loader's collate and (with workers) its inter-process transfer
  are all that is timed, for float32 batches and for the 4x smaller uint8 batches;

and, in the main process, what one batch's collate costs per image:

- ``stack_private``: ``torch.stack`` of 32 float32 samples into ordinary memory (what the
  default collate does with ``workers=0``);
- ``stack_shared``: the same into a fresh shared-memory block (what the default collate does
  inside a worker, so the batch can be passed to the main process) and ``stack_shared_uint8``.

Not part of the workflow DAG; run it from the repository root once the envs and the dataset
exist (docs/cpu_dataloader.md shows a run):

    uv run python tools/experiments/loader_transport.py \\
        --manifest results/data/default-300/manifest.json

It re-runs itself in each library's venv (``.venvs/<library>``) and writes a CSV (``--output``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.measuring.library_runs import add_arguments, drive


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(p, output="results/tables/loader_transport.csv", batches_per_run=6)
    p.add_argument("--transform", default="HorizontalFlip", help="recipe key (catalog name)")
    p.add_argument("--rounds", type=int, default=5)
    return p.parse_args(argv)


# -- inside one library's venv -------------------------------------------------------------------
def _collate_costs(batch_size: int, repeats: int = 15) -> dict[str, float]:
    """Microseconds per image to stack one batch into private or fresh shared memory."""
    import torch

    def shared_out(sample: Any) -> Any:
        # What torch.utils.data's default collate does inside a worker process.
        storage = sample._typed_storage()._new_shared(batch_size * sample.numel(), device="cpu")
        return sample.new(storage).resize_(batch_size, *sample.shape)

    costs = {}
    for name, dtype, shared in (
        ("stack_private", torch.float32, False),
        ("stack_shared", torch.float32, True),
        ("stack_shared_uint8", torch.uint8, True),
    ):
        samples = [torch.ones(3, 224, 224, dtype=dtype) for _ in range(batch_size)]
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            out = shared_out(samples[0]) if shared else None
            torch.stack(samples, 0, out=out)
            seconds.append(time.perf_counter() - start)
            del out
        costs[name] = statistics.median(seconds) / batch_size * 1e6
    return costs


def inner(args: argparse.Namespace) -> int:
    from augbench.policy import DATALOADER_THREADS

    DATALOADER_THREADS.apply_environment()
    from tqdm import tqdm

    from augbench.measuring import media
    from augbench.measuring.engines import cpu_dataloader as engine
    from augbench.workload import adapters, recipes

    adapter = adapters.get(args.inner)
    adapter.import_library()
    import torch

    from augbench.measuring.engines.bare_loop import UserDataset, user_loader

    DATALOADER_THREADS.apply_runtime()
    images = [adapter.decode(f) for f in media.select_files(args.manifest, args.num_images)]
    recipe = engine.build_recipe(adapter, args.transform)
    cropped = [engine.fixed_crop(image) for image in images]
    variants: dict[str, tuple[list[Any], list[Any]]] = {
        "recipe": (images, [*recipe.steps, recipe.tail]),
        "tail": (cropped, [recipe.tail]),
        "ready_float32": ([torch.ones(3, 224, 224)], []),
        "ready_uint8": ([torch.ones(3, 224, 224, dtype=torch.uint8)], []),
    }
    n = args.batch_size * args.batches_per_run
    loaders = {}
    for workers in (0, 1):
        for name, (items, transforms) in variants.items():
            dataset = UserDataset(items, transforms, length=max(1, workers) * args.batch_size)
            loader = user_loader(
                dataset,
                batch_size=args.batch_size,
                workers=workers,
                prefetch_factor=args.prefetch_factor,
                persistent=True,
            )
            for _ in loader:  # warm-up: workers start here
                pass
            dataset.length = n
            loaders[(name, workers)] = loader
    runs: dict[tuple[str, int], list[float]] = {key: [] for key in loaders}
    bar = tqdm(range(args.rounds), desc=f"loader_transport | {args.inner}", unit="round")
    for _ in bar:
        for key, loader in loaders.items():  # one epoch of each, round after round
            start = time.perf_counter()
            for _ in loader:
                pass
            runs[key].append(n / (time.perf_counter() - start))
    rows = [
        {
            "library": args.inner,
            "measurement": name,
            "workers": workers,
            "img_s": statistics.median(values),
            "us_per_image": 1e6 / statistics.median(values),
            "runs": [round(v, 1) for v in values],
        }
        for (name, workers), values in runs.items()
    ]
    for name, us in _collate_costs(args.batch_size).items():
        rows.append(
            {
                "library": args.inner,
                "measurement": name,
                "workers": None,
                "img_s": 1e6 / us,
                "us_per_image": us,
                "runs": [],
            }
        )
    for row in rows:
        row["recipe"] = recipes.recipe_name(args.transform)
    print(json.dumps(rows))
    return 0


# -- driver ------------------------------------------------------------------------------------
def show(table: Any) -> None:
    table["setting"] = [
        m if w is None or math.isnan(w) else f"{m} w{int(w)}"
        for m, w in zip(table["measurement"], table["workers"], strict=True)
    ]
    order = list(dict.fromkeys(table["setting"]))
    shown = table.pivot(index="setting", columns="library", values="us_per_image").loc[order]
    print("microseconds per image (1e6 / median img/s); lower is faster")
    print(shown.to_string(float_format=lambda v: f"{v:.0f}"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    forwarded = ["--transform", args.transform, "--rounds", str(args.rounds)]
    return drive(Path(__file__), args, inner, forwarded, show)


if __name__ == "__main__":
    sys.exit(main())
