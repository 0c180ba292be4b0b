"""Will my GPU starve? The data side of a training step, from measured end-to-end loader rows.

The starvation model (augbench.starvation_model) predicts a training loop from a loader row and
a model's rate: without workers the main process loads, then steps; with workers, a step takes
max(step + hand-over, loader period) per batch, where the hand-over is the main process's time to
receive a batch, measured by the row's job (its hand-over probe; checked against real training
loops by augbench.analysis.training). For every library, recipe (or pipeline: the row's
``transform``) and measured worker count of an end-to-end row (cpu_dataloader, gpu_dataloader
and dali in their ``decode`` scope: read + decode + transforms), the table gives the predicted
data wait with its interval (from the row's interval), the verdict (fed, borderline, starved:
one threshold, ``policy.FED_WAIT``), the data-loading time of an epoch (``dataset_images /
data_rate``) and the epoch time with the model; per series, the fewest measured workers that keep
the model fed (monotone in workers, or flagged). Nothing is extrapolated: worker counts that were
not measured ok (skipped because the machine has fewer cores, errors, early stops) are listed
with their status and reason, never as zeros. docs/starvation.md has the details.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis.cells import decoded, number
from augbench.starvation_model import (
    FED_DEFINITION,
    Model,
    Prediction,
    Supply,
    fewest_fed,
    predict,
    verdict,
)

# Regimes whose rows are end to end (file read + decode inside the timed loop) in this scope.
END_TO_END_SCOPE: dict[str, str] = {
    "cpu_dataloader": "decode",
    "gpu_dataloader": "decode",
    "dali": "decode",
}

IMAGENET_1K_TRAIN_IMAGES = 1_281_167  # the default epoch (config starvation.dataset_images)

SERIES_COLUMNS: tuple[str, ...] = (
    "machine",
    "usable_cores",
    "dataset",
    "resolution",
    "regime",
    "scope",
    "batch_size",
    "variant",
    "randomness",
    "library",
    "transform",
)

COLUMNS: tuple[str, ...] = (
    "model",
    "model_img_per_s",
    *SERIES_COLUMNS,
    "workers",
    "status",
    "reason",
    "data_img_per_s",
    "data_ci_low",
    "data_ci_high",
    "handover_ms",
    "training_img_per_s",
    "data_wait_fraction",
    "data_wait_low",
    "data_wait_high",
    "verdict",
    "keeps_model_fed",
    "data_time_per_epoch_s",
    "epoch_time_s",
    "fewest_workers_keeping_fed",
    "fed_monotone",
    "measured_workers",
    "not_measured_workers",
    "dataset_images",
    "model_description",
    "model_source",
)


def batch_mb(row: pd.Series | dict[str, Any]) -> float:
    """MiB of the row's collated float32 batch (its recorded ``batch_shape``); NaN without one."""
    shape = decoded(row.get("batch_shape"))
    if isinstance(shape, list) and shape:
        return math.prod(int(x) for x in shape) * 4 / 2**20
    return math.nan


def _probe_scale(row: pd.Series | dict[str, Any], to_batch_mb: float) -> float:
    """From the hand-over probe's batch to ``to_batch_mb``: the probe's costs grow with the bytes
    a batch maps (1 where either size is unknown)."""
    probe_mb = number(row.get("handover_batch_mb"))
    return to_batch_mb / probe_mb if probe_mb > 0 and to_batch_mb > 0 else 1.0


def handover_s(
    row: pd.Series | dict[str, Any], to_batch_mb: float, reads: bool = False
) -> tuple[float, float]:
    """The row's job's hand-over per batch in seconds (idle, busy), scaled from the probe's batch
    to ``to_batch_mb`` (the hand-over grows with the bytes a batch maps; unscaled where either
    size is unknown); NaN, NaN where the job has no hand-over probe. Where the model ``reads``
    its batches, next() also unmaps the read batch before: both costs grow by what the probe
    measured for that at the busy pace (``handover_read_ms`` over ``handover_busy_ms``; a job
    without the read probe counts none)."""
    idle = number(row.get("handover_idle_ms"))
    busy = number(row.get("handover_busy_ms"))
    if math.isnan(idle) or math.isnan(busy):
        return math.nan, math.nan
    read = number(row.get("handover_read_ms"))
    if reads and math.isfinite(read):
        idle, busy = idle + max(0.0, read - busy), max(busy, read)
    scale = _probe_scale(row, to_batch_mb)
    return idle * scale / 1000.0, busy * scale / 1000.0


def first_read_s(row: pd.Series | dict[str, Any], to_batch_mb: float) -> float:
    """The row's job's first read of a handed-over batch in seconds (what a model that reads
    its batch adds to its step), scaled from the probe's batch to ``to_batch_mb`` as the
    hand-over is; 0 where the job has no such probe."""
    read = number(row.get("handover_first_read_ms"))
    if not read >= 0:
        return 0.0
    return read * _probe_scale(row, to_batch_mb) / 1000.0


def supply_of(row: pd.Series | dict[str, Any], rate: float, reads: bool = True) -> Supply:
    """The loader of an end-to-end row at ``rate`` img/s: its workers, batch and its job's
    hand-over per batch (scaled from the probe's batch to the row's; none recorded, as in the
    GPU regimes, counts as none), and the batch's first read where the model ``reads`` it (a
    real model; a stand-in that only sleeps does not)."""
    counted = number(row.get("workers"))
    # No worker sweep (-1, none: DALI's own threads) is a loader that prefetches.
    workers = int(counted) if counted >= 0 else 1
    batch = int(number(row.get("batch_size"))) if number(row.get("batch_size")) > 0 else 1
    idle, busy = handover_s(row, batch_mb(row), reads) if workers > 0 else (math.nan, math.nan)
    if math.isnan(idle):
        return Supply(rate, workers, batch)
    read = first_read_s(row, batch_mb(row)) if reads else 0.0
    return Supply(rate, workers, batch, idle, busy, read)


def data_wait_fraction(data_img_per_s: float, model_img_per_s: float, workers: int = 1) -> float:
    """Share of each step the model waits for a loader of ``data_img_per_s`` with ``workers``
    (no hand-over known: the bare arithmetic)."""
    if not data_img_per_s > 0:
        return math.nan
    return predict(Supply(data_img_per_s, workers, 1), model_img_per_s).data_wait_fraction


def end_to_end_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows that say how fast data reaches the model, with the series columns filled."""
    if frame.empty:
        return frame.assign(**{c: [] for c in SERIES_COLUMNS if c not in frame.columns})
    mask = pd.Series(False, index=frame.index)
    for regime, scope in END_TO_END_SCOPE.items():
        mask |= (frame["regime"] == regime) & (frame["scope"].fillna("memory") == scope)
    part = frame[mask].copy()
    for col in SERIES_COLUMNS:
        if col not in part.columns:
            part[col] = None
    for col in ("workers", "batch_size"):
        part[col] = pd.to_numeric(part[col], errors="coerce").fillna(-1).astype(int)
    for col in ("variant", "randomness", "dataset", "machine"):
        part[col] = part[col].fillna("").astype(str)
    part["resolution"] = pd.to_numeric(part["resolution"], errors="coerce")
    part["usable_cores"] = pd.to_numeric(part["usable_cores"], errors="coerce")
    return part


def _series_keys(part: pd.DataFrame) -> list[str]:
    # Pipeline rows (a user pipeline run as a recipe) keep their pipeline apart from a recipe
    # of the same name.
    return [*SERIES_COLUMNS, *(["pipeline"] if "pipeline" in part.columns else [])]


def _reason(row: pd.Series) -> str:
    reason = row.get("reason")
    return reason if isinstance(reason, str) else ""


def _predictions(
    row: pd.Series, rate: float, model_img_per_s: float
) -> tuple[Prediction, float, float]:
    """The prediction at the row's median, and the lowest and highest data wait over the row's
    interval (its ends and median: the hand-over's share makes it not always monotone)."""
    low, high = number(row.get("ci_low")), number(row.get("ci_high"))
    middle = predict(supply_of(row, rate), model_img_per_s)
    ends = [middle, *(predict(supply_of(row, r), model_img_per_s) for r in (low, high) if r > 0)]
    waits = [p.data_wait_fraction for p in ends]
    return middle, min(waits), max(waits)


def table(
    frame: pd.DataFrame,
    models: list[Model],
    dataset_images: int = IMAGENET_1K_TRAIN_IMAGES,
) -> pd.DataFrame:
    """One row per model x series x measured worker count (ok or not), see the module doc."""
    part = end_to_end_rows(frame)
    keys = _series_keys(part)
    columns = [*COLUMNS, *(["pipeline"] if "pipeline" in keys else [])]
    records: list[dict[str, Any]] = []
    for model in models:
        for key, group in part.groupby(keys, sort=True, dropna=False):
            group = group.sort_values("workers")
            ok = group[(group["status"] == "ok") & (group["median_throughput"] > 0)]
            verdicts: dict[int, str] = {}
            predicted: dict[Any, tuple[Prediction, float, float]] = {}
            for index, row in ok.iterrows():
                predicted[index] = _predictions(
                    row, float(row["median_throughput"]), model.img_per_s
                )
                _, wait_low, wait_high = predicted[index]
                verdicts[int(row["workers"])] = verdict(wait_low, wait_high)
            swept = bool((group["workers"] >= 0).any())
            fewest, monotone = fewest_fed(verdicts)
            if not swept:
                said = "n/a (no worker sweep in this regime)"
            elif fewest is not None:
                said = str(fewest)
            else:
                said = "none of the measured counts"
            not_ok = group[~group.index.isin(ok.index)]
            for index, row in group.iterrows():
                is_ok = index in predicted
                rate = float(row["median_throughput"]) if is_ok else math.nan
                middle, wait_low, wait_high = (
                    predicted[index] if is_ok else (None, math.nan, math.nan)
                )
                record = dict(zip(keys, key, strict=True))
                record.update(
                    model=model.name,
                    model_img_per_s=model.img_per_s,
                    workers=int(row["workers"]) if row["workers"] >= 0 else None,
                    status=row["status"],
                    reason="" if is_ok else _reason(row),
                    data_img_per_s=rate,
                    data_ci_low=number(row.get("ci_low")) if is_ok else math.nan,
                    data_ci_high=number(row.get("ci_high")) if is_ok else math.nan,
                    handover_ms=1000.0 * middle.handover_s if middle else math.nan,
                    training_img_per_s=middle.images_per_second if middle else math.nan,
                    data_wait_fraction=middle.data_wait_fraction if middle else math.nan,
                    data_wait_low=wait_low,
                    data_wait_high=wait_high,
                    verdict=verdicts.get(int(row["workers"]), "") if is_ok else "",
                    keeps_model_fed=(verdicts.get(int(row["workers"])) == "fed") if is_ok else None,
                    data_time_per_epoch_s=dataset_images / rate if is_ok else math.nan,
                    epoch_time_s=(
                        dataset_images / middle.images_per_second if middle else math.nan
                    ),
                    fewest_workers_keeping_fed=said,
                    fed_monotone=monotone,
                    measured_workers=",".join(str(int(w)) for w in ok["workers"] if w >= 0),
                    not_measured_workers="; ".join(
                        f"{int(r['workers'])}: {r['status']}"
                        + (f" ({_reason(r)})" if _reason(r) else "")
                        for _, r in not_ok.iterrows()
                        if r["workers"] >= 0
                    ),
                    dataset_images=dataset_images,
                    model_description=model.description,
                    model_source=model.source,
                )
                records.append(record)
    return pd.DataFrame.from_records(records, columns=columns)


def _is_false(value: Any) -> bool:
    """A boolean cell that is False (not missing: a series without a verdict)."""
    return value is not None and not pd.isna(value) and not bool(value)


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.0%}"


def _duration(seconds: float) -> str:
    if seconds is None or math.isnan(seconds):
        return "n/a"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def markdown(starved: pd.DataFrame, define: bool = True) -> list[str]:
    """The summary's section: per model, one line per library and recipe; ``define``: state
    what "fed" means (False where the summary has stated it already)."""
    lines = ["## Will my GPU starve?", ""]
    if starved.empty:
        return [
            *lines,
            "No end-to-end loader rows (cpu_dataloader, gpu_dataloader or dali in the decode "
            "scope) in these results: nothing to estimate from.",
            "",
        ]
    lines += [
        "From measured end-to-end rows only (read + decode + recipe; decode scope), by the "
        "starvation model (without workers: load then step; with workers: max(step + "
        "hand-over, loader period) per batch, the hand-over measured by the row's job). Each "
        "wait is the prediction at the row's median with, in brackets, its range over the "
        "row's interval, then its verdict. Worker counts that were not measured ok are listed "
        "with their reason and never extrapolated. Details: docs/starvation.md; every number: "
        "results/tables/starvation.csv.",
        "",
        *([FED_DEFINITION, ""] if define else []),
    ]
    head = ["machine (cores)", "regime", "dataset", "library", "recipe", "fewest workers"]
    head += ["data wait by workers", "data time / epoch (best)", "not measured"]
    for (model, rate), rows in starved.groupby(["model", "model_img_per_s"], sort=False):
        first = rows.iloc[0]
        lines += [
            f"### {model}: {rate:,.0f} img/s ({first['model_description']}); epoch of "
            f"{int(first['dataset_images']):,} images",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "|".join("---" for _ in head) + "|",
        ]
        keys = [c for c in _series_keys(rows) if c in rows.columns]
        for _, series in rows.groupby(keys, sort=True, dropna=False):
            s = series.iloc[0]
            ok = series[series["data_img_per_s"].notna()]
            waits = ", ".join(
                f"{'-' if pd.isna(r['workers']) else int(r['workers'])}: "
                f"{_pct(r['data_wait_fraction'])} [{_pct(r['data_wait_low'])}, "
                f"{_pct(r['data_wait_high'])}] {r['verdict']}"
                for _, r in ok.iterrows()
            )
            best = ok["data_time_per_epoch_s"].min() if len(ok) else math.nan
            cores = "" if pd.isna(s["usable_cores"]) else f" ({int(s['usable_cores'])} cores)"
            dataset = s["dataset"] + (
                "" if pd.isna(s["resolution"]) else f" (r{int(s['resolution'])})"
            )
            cells = [
                f"{s['machine']}{cores}",
                s["regime"],
                dataset,
                s["library"],
                str(s["transform"]),
                s["fewest_workers_keeping_fed"]
                + (" (not monotone in workers)" if _is_false(s["fed_monotone"]) else ""),
                waits or "none ok",
                _duration(best),
                "" if pd.isna(s["not_measured_workers"]) else s["not_measured_workers"],
            ]
            lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
        lines.append("")
    return lines
