"""What a transform costs where the local run did not measure it: the shipped transform-cost prior.

The cost model learns seconds per image for the transforms a local run measured
(augbench.planning.cost.learn). The paper preset runs every catalog transform, and a user's run
may name any of them, so most are priced without a local row of their own. Their library's median
would price a median filter like a flip; instead, each is priced from
``workflow/resources/transform_costs.json``: one thread's seconds per image of every catalog
transform in each CPU library, measured in one short run
(``tools/maintenance/transform_costs.yaml``; written by ``tools/maintenance/transform_costs.py``).

The prior is moved to the local model by the transforms both measured: the median, over those
transforms, of local seconds over prior seconds at the same pixels (the local machine's speed
against the prior's, per library). A transform the prior run stopped at its preflight (slower than
the slow-transform threshold) carries its preflight's rate, so a plan expects it to stop there too.
A library or transform outside the prior keeps the library's median.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from augbench import result_format
from augbench.planning.regimes.pricing import KindModel, median_of
from augbench.result_format import MEDIAN_THROUGHPUT

PRIOR_FILE = Path(__file__).resolve().parents[2] / "workflow" / "resources" / "transform_costs.json"
# The job kind whose rows the prior holds (one thread, single transforms): the DataLoader kinds
# price an unmeasured recipe from this kind's model (augbench.planning.regimes.cpu_dataloader).
PRIOR_KIND = "micro"


@dataclass(frozen=True)
class Prior:
    """Seconds per image of each (library, transform), measured at ``megapixels``."""

    seconds: dict[str, dict[str, float]] = field(default_factory=dict)
    megapixels: float = 0.0
    measured: str = ""


def measure(result_files: list[Path]) -> tuple[dict[str, dict[str, float]], float]:
    """Seconds per image per library and transform in a run's micro result files (an ok row: its
    median; a row stopped at its preflight: the preflight's rate), and the megapixels they were
    measured at (the median over the files)."""
    seconds: dict[str, dict[str, float]] = {}
    pixels = []
    for path in result_files:
        payload = result_format.read(path)
        metadata = payload["metadata"]
        pixels.append(float((metadata.get("dataset") or {}).get("mean_megapixels") or 0))
        found = seconds.setdefault(path.parts[-2], {})  # .../<kind>/<library>/<job>.json
        for name, row in payload["results"].items():
            if row.get("status") == "ok" and row.get(MEDIAN_THROUGHPUT):
                found[name] = 1.0 / row[MEDIAN_THROUGHPUT]
            elif row.get("status") == "early_stopped" and row.get("preflight_throughput"):
                found[name] = 1.0 / row["preflight_throughput"]
    return seconds, median_of(pixels)


def dump(path: Path, seconds: Mapping[str, Mapping[str, float]], megapixels: float,
         measured: str) -> None:  # fmt: skip
    payload = {
        "measured": measured,
        "megapixels": round(megapixels, 4),
        "seconds_per_image": {
            library: {name: float(f"{s:.4g}") for name, s in sorted(found.items())}
            for library, found in sorted(seconds.items())
        },
    }
    path.write_text(json.dumps(payload, indent=1) + "\n")


def load(path: Path = PRIOR_FILE) -> Prior:
    """The prior in ``path`` (an empty one where there is no file)."""
    if not path.exists():
        return Prior()
    payload = json.loads(path.read_text())
    return Prior(payload["seconds_per_image"], float(payload["megapixels"]), payload["measured"])


def apply(models: Mapping[Any, KindModel], prior: Prior) -> list[str]:
    """Fills ``prior_s`` of each library's micro model with the prior's transforms it did not
    measure, moved to the model's machine and pixels; returns the libraries it did so for."""
    filled = []
    for (kind, library), model in models.items():
        found = prior.seconds.get(library)
        if kind != PRIOR_KIND or not found or not prior.megapixels:
            continue
        shared = [t for t in model.per_image_s if t in found and model.megapixels.get(t)]
        if not shared:
            continue
        # Local over prior seconds, both at the local pixels (seconds per image grow with pixels
        # by the transform's fitted exponent, linearly where it has none).
        speed = statistics.median(
            model.per_image_s[t]
            / (found[t] * (model.megapixels[t] / prior.megapixels) ** model.slope.get(t, 1.0))
            for t in shared
        )
        typical = median_of(model.megapixels.values())  # what an unmeasured transform is read at
        model.prior_s = {
            t: s * speed * typical / prior.megapixels
            for t, s in found.items()
            if t not in model.per_image_s
        }
        filled.append(library)
    return filled
