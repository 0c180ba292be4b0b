"""Measure a known cost with the cpu_dataloader engine's own functions, inside a library env.

Run with ``<repo>/.venvs/torchvision/bin/python tests/helpers/sleep_baselines.py OUT.json W...``
by tests/test_workflow_cpu_dataloader.py. A 5 ms sleep is injected (test-only, never in the
catalog) into: a recipe step (the regime's loader and the bare loop, interleaved as in a job),
the recipe tail (the transport baseline) and the decoder (the decode floor). Images are tiny
(3x32x32) so the real work around the sleep is negligible; each measurement should come out at
about 200 img/s per worker that runs in parallel. A decode-scope recipe (sleeping decoder, then
the sleeping step) is measured with its in-job composition terms interleaved (the memory-scope
companion and the decode floor): about 100 img/s per worker, and a composition ratio of about 1.
Writes {workers: {measurement: [img/s or ratio, ...]}}.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# The engine first: it exports the thread policy before torch is imported.
from augbench.measuring.engines import cpu_dataloader as engine  # noqa: I001
from augbench.workload.adapters.torchvision import TorchvisionAdapter
from augbench.measuring.engines.bare_loop import UserDataset

SLEEP_S = 0.005


class Sleep:
    """A recipe step that costs SLEEP_S and returns its input."""

    def __call__(self, image: Any) -> Any:
        time.sleep(SLEEP_S)
        return image


def cheap_tail(image: Any) -> Any:
    """uint8 CHW -> float32 in [0, 1]: a tail whose cost is negligible next to SLEEP_S (the
    library's own v2 tail costs tenths of a millisecond of Python per sample on a busy core)."""
    return image.float().div_(255.0)


def sleepy_tail(image: Any) -> Any:
    time.sleep(SLEEP_S)
    return cheap_tail(image)


class CheapTailAdapter(TorchvisionAdapter):
    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Any:
        return cheap_tail


class SleepyTailAdapter(TorchvisionAdapter):
    """A test-only adapter (never in the catalog) whose recipe tail sleeps SLEEP_S."""

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Any:
        return sleepy_tail


class SleepyDecode:
    def __init__(self, image: Any) -> None:
        self.image = image

    def __call__(self, path: Any) -> Any:
        time.sleep(SLEEP_S)
        return self.image


class _Bar:
    def set_postfix_str(self, text: str) -> None:
        pass


def main() -> int:
    import torch

    out = Path(sys.argv[1])
    TorchvisionAdapter().import_library()
    images = [torch.full((3, 32, 32), i, dtype=torch.uint8) for i in range(8)]
    results: dict[str, dict[str, list[float]]] = {}
    for workers in map(int, sys.argv[2:]):
        # The engine's own settings record, from its command line (nothing of it is read but
        # the loader's, epochs' and baselines' settings).
        settings = engine.parse_args(
            ["--library", "torchvision", "--transforms", "HorizontalFlip", "--manifest",
             "unused.json", "--num-images", "8", "--machine", "test", "--output", "unused.json",
             "--scope", "memory", "--workers", str(workers), "--batch-size", "16",
             "--batches-per-run", "6", "--num-runs", "4", "--min-runs", "4",
             "--prefetch-factor", "2", "--persistent-workers", "true", "--batch-timeout", "60",
             "--baseline-runs", "4"]
        )  # fmt: skip
        recipe = engine.Recipe([Sleep()], cheap_tail)
        dataset = engine.RecipeDataset(images, engine.identity, recipe, label="sleep")
        bare = UserDataset(images, [*recipe.steps, recipe.tail], length=len(images))
        cores = engine.usable_cores()
        with tempfile.TemporaryDirectory() as tmp:
            measured = engine.measure_loader(settings, dataset, Path(tmp), _Bar(), bare, 4)
            # The engine's per-job baselines: memory scope with a sleeping tail (transport), and
            # decode scope with a sleeping decoder (decode floor; its transport = the decode).
            memory, _ = engine.measure_baselines(
                settings, SleepyTailAdapter(), images, engine.identity, cores, Path(tmp), _Bar()
            )
            decode_settings = dataclasses.replace(settings, scope="decode")
            paths = [f"{i}.jpg" for i in range(8)]
            decode, _ = engine.measure_baselines(
                decode_settings, CheapTailAdapter(), paths, SleepyDecode(images[0]), cores,
                Path(tmp), _Bar(),
            )  # fmt: skip
            # Decode scope, with the composition terms measured in the same rounds.
            companions = engine.DecodeCompanions(
                decode_settings, paths, SleepyDecode(images[0]), cores
            )
            try:
                decoded = engine.RecipeDataset(paths, SleepyDecode(images[0]), recipe, "sleep")
                composed = engine.measure_loader(
                    decode_settings, decoded, Path(tmp), _Bar(), None, 4,
                    memory=engine.RecipeDataset(companions.images, engine.identity, recipe),
                    floor=companions.floor,
                )  # fmt: skip
            finally:
                companions.close()
        fields = engine.composition_fields(
            composed["throughputs"], composed["memory_throughputs"],
            composed["floor_throughputs"], companions,
        )  # fmt: skip
        results[str(workers)] = {
            "regime": measured["throughputs"],
            "bare_loop": measured["bare_throughputs"],
            "transport": memory["transport_throughputs"],
            "decode_transport": decode["transport_throughputs"],
            "decode_floor": composed["floor_throughputs"],
            "decode_memory_companion": composed["memory_throughputs"],
            "decode_recipe": composed["throughputs"],
            "decode_composition_ratio": fields["decode_composition_ratios"],
        }
    out.write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
