"""Figure families. Each module draws one family from a tidy table; ``NAMES`` lists every figure
file the workflow writes, so the set of outputs is fixed whatever the results hold (a figure whose
rows are absent says so). Importing this package does not import matplotlib: the workflow reads
``NAMES`` while it builds its job graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

from augbench import regimes

if TYPE_CHECKING:
    import pandas as pd

    from augbench.analysis.figures.style import Drawn

# Per-regime families come from the regime declarations (augbench/regimes.py).
NAMES: tuple[str, ...] = (
    "winners_by_regime",
    *(f"throughput_{r.name}" for r in regimes.ALL if "throughput" in r.figures),
    "coverage",
    *(f"stability_{r.name}" for r in regimes.ALL if "stability" in r.figures),
    "cpu_vs_gpu",
    "throughput_vs_memory",
    "worker_scaling",
    "throughput_vs_resolution",
)


def draw(name: str, frame: pd.DataFrame) -> Drawn:
    """Draw figure ``name`` (one of ``NAMES``) from a tidy table."""
    from augbench.analysis.figures import (
        coverage,
        cpu_gpu,
        memory,
        resolution,
        scaling,
        stability,
        throughput,
        winners,
    )

    fixed = {
        "winners_by_regime": winners.draw,
        "coverage": coverage.draw,
        "cpu_vs_gpu": cpu_gpu.draw,
        "throughput_vs_memory": memory.draw,
        "worker_scaling": scaling.draw,
        "throughput_vs_resolution": resolution.draw,
    }
    if name in fixed:
        return fixed[name](frame)
    for prefix, module in (("throughput_", throughput), ("stability_", stability)):
        if name.startswith(prefix) and name[len(prefix) :] in regimes.NAMES:
            return module.draw(frame, regime=name[len(prefix) :])
    raise KeyError(f"unknown figure {name!r}; known: {list(NAMES)}")
