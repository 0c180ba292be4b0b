"""The starvation model: how fast a training loop runs, and how long its model waits for data,
from what a loader delivers and how fast the model steps. Used by the starvation tables
(augbench.analysis.starvation) and checked out of sample against measured training loops
(augbench.analysis.training: the supply from the cpu_dataloader regime's rows, the loop from the
training regime's). Pure Python: no pandas here.

A loop step is ``batch = next(loader)`` then the model's step (``step_s`` seconds per batch).

- **Without workers** the main process loads the batch, then steps: per batch, the loader's
  batch period plus the step.
- **With workers** batches are made while the model steps, but the main process still receives
  each batch (``Supply.handover_*``: unpickling its shared-memory handles, mapping it, freeing
  the previous one), which no prefetching hides. That costs ``handover_idle_s`` when the workers
  are idle and ``handover_busy_s`` when they are working (on a machine whose cores the workers
  fill, the main process waits for a core); the model takes the share of time the workers are
  busy, u = min(1, loader period / loop period), between the two. The loop's period is
  max(step + hand-over, loader period); the model waits for the hand-over, and for the loader
  where it is slower than the step.
- A model that **reads its batch** (a real model; not a stand-in that only sleeps) also pays
  the batch's first read (``Supply.first_read_s``: mapping the worker's shared-memory pages into
  the training process), which a step timed on a resident batch does not: it lengthens the
  step, not the wait.
- A model that **steps on the CPU the workers use** (a model trained on this machine's CPU;
  ``model_cpu_share``: the cores its step keeps busy, measured with the step alone) takes those
  cores from the workers while it steps. The supply row's workers kept ``min(workers, cores)``
  cores busy for a batch period, i.e. ``min(workers, cores) x period`` core-seconds per batch
  (``Supply.cores``: the machine's usable cores; 0 where unknown, which models no sharing).
  While the model steps they have ``min(workers, cores - model_cpu_share)`` cores, the rest of
  the loop ``min(workers, cores)``: where the step leaves them too few to finish a batch in
  time, the loader's period becomes step + the work left / ``min(workers, cores)``. On 2 cores
  with 2 workers a model that takes one core and steps as fast as the loader alone delivers
  runs the loop at about 2/3 of the loader's rate. A stand-in that sleeps, or a GPU step, keeps
  no core busy and leaves the period as it was. The wait is predicted with the step at its
  alone speed (the model keeps its core); ``Prediction.data_wait_shared`` is the wait if the
  step shared its core evenly with the workers instead (its wall time stretched by
  ``(workers + model_cpu_share) / cores``), the low end the training table's interval spans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from augbench.policy import FED_WAIT


@dataclass(frozen=True)
class Supply:
    """What a loader delivers to a consumer that reads as fast as it can: ``images_per_second``
    in steady state, with ``workers`` worker processes (0: the main process loads) and batches of
    ``batch_size``; with workers, the main process's seconds per batch hand-over."""

    images_per_second: float
    workers: int
    batch_size: int
    handover_idle_s: float = 0.0
    handover_busy_s: float = 0.0
    first_read_s: float = 0.0
    cores: int = 0  # usable cores of the machine the loop runs on; 0: unknown (no sharing)

    @property
    def period_s(self) -> float:
        return self.batch_size / self.images_per_second


@dataclass(frozen=True)
class Prediction:
    """What the starvation model says a training loop will do, and by which rule."""

    images_per_second: float
    data_wait_fraction: float
    handover_s: float
    rule: str
    # The wait if the step shared its core evenly with the busy workers (module doc); equal to
    # data_wait_fraction where the model keeps no core from them.
    data_wait_shared: float = math.nan
    loader_period_s: float = math.nan  # the loader's period beside this model (module doc)

    def __post_init__(self) -> None:
        if math.isnan(self.data_wait_shared):
            object.__setattr__(self, "data_wait_shared", self.data_wait_fraction)


def shared_period(supply: Supply, step: float, model_cpu_share: float) -> float:
    """The loader's batch period while a model whose step takes ``step`` seconds and keeps
    ``model_cpu_share`` cores busy shares the machine's cores with the workers (module doc):
    the supply's period where the workers keep up, else step + the work left over."""
    period = supply.period_s
    if supply.workers == 0 or supply.cores <= 0 or model_cpu_share <= 0:
        return period
    cores = float(supply.cores)
    alone = min(float(supply.workers), cores)  # the cores the supply's workers kept busy
    during = max(0.0, min(float(supply.workers), cores - model_cpu_share))
    work = alone * period  # core-seconds of the workers per batch
    if work <= during * step:
        return period
    return max(period, step + (work - during * step) / alone)


def predict(supply: Supply, model_img_per_s: float, model_cpu_share: float = 0.0) -> Prediction:
    """Training throughput and data-wait fraction of ``supply`` feeding a model of
    ``model_img_per_s`` whose step keeps ``model_cpu_share`` of the machine's cores busy (see
    the module doc)."""
    batch = supply.batch_size
    step = batch / model_img_per_s
    if supply.workers == 0:
        period = supply.period_s
        loop = period + step
        return Prediction(
            batch / loop,
            period / loop,
            0.0,
            "no workers: load then step, batch / (loader period + step)",
            loader_period_s=period,
        )
    step += supply.first_read_s  # the step as the loop times it: its first read included
    period = shared_period(supply, step, model_cpu_share)
    handover = supply.handover_idle_s
    for _ in range(20):  # the busy share and the hand-over depend on each other: iterate
        busy = min(1.0, period / (step + handover))
        updated = supply.handover_idle_s + busy * (supply.handover_busy_s - supply.handover_idle_s)
        if math.isclose(updated, handover, rel_tol=1e-9, abs_tol=1e-12):
            break
        handover = updated
    loop = max(step + handover, period)
    shared = period != supply.period_s
    stretched = (
        step * max(1.0, (min(supply.workers, supply.cores) + model_cpu_share) / supply.cores)
        if shared
        else step
    )
    return Prediction(
        batch / loop,
        (loop - step) / loop,
        handover,
        "workers: batch / max(step + first read + hand-over, loader period), the hand-over "
        "between its idle and busy cost by the workers' busy share"
        + (
            f"; the loader's period with the model's step keeping {model_cpu_share:.2f} of "
            f"the {supply.cores} cores from the workers"
            if shared
            else ""
        ),
        data_wait_shared=max(handover / loop, (loop - min(stretched, loop - handover)) / loop)
        if shared
        else math.nan,
        loader_period_s=period,
    )


# The one statement of "fed" a summary makes (augbench.analysis.training, .starvation: the first
# section that uses it says it).
FED_DEFINITION = (
    f"**Fed** means the model waits for data less than {FED_WAIT:.0%} of the loop's time "
    "(policy.FED_WAIT), on the whole interval of that wait: **fed** when all of it is under the "
    "line, **starved** when all of it is at or above, **borderline** when it straddles the line "
    "(a more precise row or another setting decides); the fewest workers fed is the fewest fed "
    "count with no larger count starved, flagged where more workers did worse. The training "
    "table and the starvation tables use this one definition."
)


def verdict(wait_low: float, wait_high: float) -> str:
    """``fed`` when the whole interval of the data wait is below FED_WAIT, ``starved`` when it
    is all at or above it, ``borderline`` when it straddles it (more measurement, or a
    different setting, decides)."""
    if not (math.isfinite(wait_low) and math.isfinite(wait_high)):
        return "unknown"
    if wait_high < FED_WAIT:
        return "fed"
    if wait_low >= FED_WAIT:
        return "starved"
    return "borderline"


def fewest_fed(verdicts: dict[int, str]) -> tuple[int | None, bool]:
    """The fewest worker count that is ``fed`` with no larger measured count ``starved``, and
    whether the verdicts are monotone in workers (False where a count is fed and a larger one
    starved: more workers made it worse, which the answer then flags)."""
    counts = sorted(verdicts)
    starved = [w for w in counts if verdicts[w] == "starved"]
    fed = [w for w in counts if verdicts[w] == "fed"]
    monotone = not any(s > f for f in fed for s in starved)
    above = [w for w in fed if not any(s > w for s in starved)]
    return (min(above) if above else None), monotone


@dataclass(frozen=True)
class Model:
    """What the accelerator consumes: images per second, with where the number comes from."""

    name: str
    img_per_s: float
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not self.img_per_s > 0:
            raise ValueError(f"model {self.name!r}: images per second must be > 0")


def _target_rate(target: Any) -> float | None:
    """``starvation.target`` as images per second where it is a number (a number given as text
    on the command line too); None where it names a model."""
    if isinstance(target, bool) or target is None:
        return None
    if isinstance(target, int | float):
        return float(target)
    try:
        return float(str(target))
    except ValueError:
        return None


def _rate_model(rate: float) -> Model:
    return Model(f"{rate:g}-img-per-s", rate, f"{rate:g} img/s", "config starvation.target")


def models_from_config(
    starvation: dict[str, Any], required_throughput: list[dict[str, Any]] | None = None
) -> list[Model]:
    """The config's model (``model_step_ms`` + ``batch_size``, or ``model_img_per_s``); with
    neither, the ``cpu_dataloader.required_throughput`` targets. A ``target`` given as images
    per second is one more model, so the tables have its rows."""
    name = starvation.get("name") or "my-model"
    if starvation.get("model_step_ms") is not None:
        step_ms = float(starvation["model_step_ms"])
        batch = int(starvation["batch_size"])
        models = [
            Model(
                name,
                batch * 1000.0 / step_ms,
                f"{step_ms:g} ms per training step of {batch} images",
                "config starvation.model_step_ms",
            )
        ]
    elif starvation.get("model_img_per_s") is not None:
        rate = float(starvation["model_img_per_s"])
        models = [Model(name, rate, f"{rate:g} img/s", "config starvation.model_img_per_s")]
    else:
        models = [
            Model(
                str(t["name"]),
                float(t["images_per_second"]),
                str(t.get("description", "")),
                str(t.get("source", "")),
            )
            for t in required_throughput or []
        ]
    rate = _target_rate(starvation.get("target"))
    if rate is not None and rate > 0 and _rate_model(rate).name not in {m.name for m in models}:
        models.append(_rate_model(rate))
    return models


def target_problem(
    starvation: dict[str, Any], required_throughput: list[dict[str, Any]] | None = None
) -> str | None:
    """One line where ``starvation.target`` is neither a known model nor a positive number of
    images per second, naming the valid models; None where it is fine (or unset)."""
    target = starvation.get("target")
    if target is None:
        return None
    rate = _target_rate(target)
    if rate is not None and rate > 0:
        return None
    names = [m.name for m in models_from_config(starvation, required_throughput)]
    if rate is None and str(target) in names:
        return None
    return (
        f"config error at starvation.target: {target!r} is neither a known model nor a "
        f"positive number of images per second; models: {names} (cpu_dataloader."
        "required_throughput, or starvation.name with model_step_ms / model_img_per_s)"
    )


def target_model(
    starvation: dict[str, Any], required_throughput: list[dict[str, Any]] | None = None
) -> Model | None:
    """The model the recommendation answers for: ``starvation.target`` (a model's name, or
    images per second); unset, the first model (the config's own, else the first
    ``cpu_dataloader.required_throughput`` target). None where no model is configured."""
    problem = target_problem(starvation, required_throughput)
    if problem:
        raise ValueError(problem)
    models = models_from_config(starvation, required_throughput)
    target = starvation.get("target")
    if target is None:
        return models[0] if models else None
    rate = _target_rate(target)
    name = _rate_model(rate).name if rate is not None else str(target)
    return next(m for m in models if m.name == name)
