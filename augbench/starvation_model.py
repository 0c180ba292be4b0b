"""The starvation model: how fast a training loop runs, and how long its model waits for data,
from a loader's rate and the model's rate. Used by the starvation tables
(augbench.analysis.starvation) and checked against a measured loop by the training regime
(augbench.engines.training), which imports it in the library envs (no pandas here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prediction:
    """What the starvation model says a training loop will do, and by which rule."""

    images_per_second: float
    data_wait_fraction: float
    rule: str


def predict(data_rate: float, model_rate: float, workers: int) -> Prediction:
    """Training throughput and data-wait fraction from a loader's rate and the model's rate
    (images/s). With workers, batches are prepared while the model steps: a step takes
    max(model time, data time) per batch. Without workers the main process loads, then steps:
    the two times add up. (The training regime checks this against a measured loop.)"""
    if workers == 0:
        per_image = 1.0 / data_rate + 1.0 / model_rate
        return Prediction(
            1.0 / per_image,
            (1.0 / data_rate) / per_image,
            "no workers: load then step, 1 / (1/data + 1/model)",
        )
    return Prediction(
        min(data_rate, model_rate),
        max(0.0, 1.0 - data_rate / model_rate),
        "workers prefetch while the model steps: min(data, model)",
    )
