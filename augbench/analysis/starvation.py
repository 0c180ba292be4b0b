"""Will my GPU starve? The data side of a training step, from measured end-to-end loader rows.

The starvation model (augbench.planning.starvation_model) predicts a training loop from a loader row
and a model's rate: without workers the main process loads, then steps; with workers, a step takes
max(step + hand-over, loader period) per batch, where the hand-over is the main process's time to
receive a batch, measured by the row's job (its hand-over probe; checked against real training
loops by augbench.analysis.training). For every library, recipe (or pipeline: the row's
``transform``) and measured worker count of an end-to-end row (cpu_dataloader, gpu_dataloader
and dali in their ``decode`` scope: read + decode + transforms), the table gives the predicted
data wait with its interval (from the row's interval), the verdict (fed, borderline, starved:
one threshold, ``policy.FED_WAIT``), the data-loading time of an epoch (``dataset_images /
data_rate``) and the epoch time with the model; per series, the fewest measured workers that keep
the model fed (monotone in workers, or flagged). Worker counts that were not measured ok (skipped
because the machine has fewer cores, errors, early stops) are listed with their status and
reason, never as zeros.

Per series, too, the loader's share of the model's need at its largest measured count and
``workers_to_feed``: the fewest measured workers that keep the model fed, or, where no measured
count does, the count the declared scaling model (``scaling_model``: linear past the largest
measured count, one core per worker) extrapolates to, with ``workers_to_feed_basis`` saying
which. docs/starvation.md has the details.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from augbench.analysis.cells import decoded, number
from augbench.planning.starvation_model import (
    FED_DEFINITION,
    Model,
    Prediction,
    Supply,
    fewest_fed,
    predict,
    verdict,
)
from augbench.policy import FED_WAIT
from augbench.result_format import MEDIAN_THROUGHPUT

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
    "loader",
    "decoder",
    "library",
    "transform",
)

# Per series (the same on each of its rows): the loader's share of the model's need and the
# workers it takes to feed it (measured, or extrapolated by the declared scaling model).
FEED_COLUMNS: tuple[str, ...] = (
    "share_of_need",
    "share_of_need_workers",
    "workers_to_feed",
    "workers_to_feed_basis",
    "wait_at_workers_to_feed",
    "fed_at_workers_to_feed",
    "scaling",
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
    *FEED_COLUMNS,
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
    for col in ("variant", "randomness", "loader", "decoder", "dataset", "machine"):
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


@dataclass(frozen=True)
class Scaling:
    """The declared scaling model of a series' supply past its largest measured worker count
    ``anchor_workers``: each added worker adds ``per_added_worker`` img/s to ``anchor_rate``
    (linear), on a core of its own; ``text`` says what it assumes."""

    anchor_workers: int
    anchor_rate: float
    per_added_worker: float
    text: str

    def rate(self, workers: int) -> float:
        """The supply at ``workers`` (measured at the anchor, extrapolated past it)."""
        return self.anchor_rate + max(0, workers - self.anchor_workers) * self.per_added_worker


def scaling_model(rates: dict[int, float], cores: float = math.nan) -> Scaling | None:
    """The scaling model from a series' measured supply by worker count (ok rows only):

    - anchored at the largest measured count of worker processes (1 or more), whose per-worker
      rate is ``rate / workers``;
    - each added worker adds that per-worker rate (linear), or, where a second count of 1 or more
      is measured, the gain per worker measured between the two largest counts (at most the
      per-worker rate; a gain that is not positive is not extrapolated from: the per-worker rate
      is assumed and the text says so);
    - one core per added worker: the machine the count is for has a core for each worker
      (``cores``: the measuring machine's, named in the text);
    - with only a main-process row (0 workers), that row's rate is one worker's.

    None where no count has a positive rate."""
    counted = {int(w): float(r) for w, r in rates.items() if w >= 0 and r > 0}
    if not counted:
        return None
    cores_text = f"past this machine's {cores:g} cores" if cores > 0 else "past this machine"
    tail = f", one core per worker {cores_text}"
    workers = sorted(w for w in counted if w >= 1)
    if not workers:
        rate = counted[0]
        text = f"linear at the main process's rate ({rate:.0f} img/s) per worker"
        return Scaling(0, 0.0, rate, text + tail)
    top = workers[-1]
    per_worker = counted[top] / top
    text = f"linear past {top}: +{per_worker:.0f} img/s per worker ({top} workers' per-worker rate)"
    gain = per_worker
    if len(workers) >= 2:
        below = workers[-2]
        measured = (counted[top] - counted[below]) / (top - below)
        if measured <= 0:
            text += f"; the measured gain {below}->{top} was not positive"
        elif measured < per_worker:
            gain = measured
            text = (
                f"linear past {top}: +{gain:.0f} img/s per worker (measured {below}->{top}: "
                f"{gain / per_worker:.2f} of {top} workers' per-worker rate)"
            )
        else:
            text += f" (the measured gain {below}->{top} was higher)"
    return Scaling(top, counted[top], gain, text + tail)


def _supply_at(row: pd.Series, rate: float, workers: int) -> Supply:
    """The loader of ``row``'s job at ``rate`` with ``workers``: its hand-over as measured."""
    return supply_of({**row.to_dict(), "workers": workers}, rate)


def _waits(row: pd.Series, rates: tuple[float, ...], workers: int, need: float) -> list[float]:
    return [predict(_supply_at(row, r, workers), need).data_wait_fraction for r in rates if r > 0]


def _pace_rate(row: pd.Series, workers: int, need: float) -> float:
    """The supply past which the loader no longer sets the loop's pace: a batch per step plus
    its first read and the hand-over at the workers' busy cost."""
    supply = _supply_at(row, 1.0, workers)
    step = supply.batch_size / need + supply.first_read_s
    return supply.batch_size / (step + supply.handover_busy_s)


# Past this many workers an extrapolation says nothing: the search stops (a wait that cannot be
# computed, such as a NaN from a broken row, would otherwise never be fed).
MAX_WORKERS = 1 << 20


def _search(feeds: Any, start: int) -> int | None:
    """The fewest workers from ``start`` up for which ``feeds(workers)`` holds (monotone); None
    where none up to MAX_WORKERS does."""
    high = start
    while not feeds(high):
        if high > MAX_WORKERS:
            return None
        high *= 2
    low = start
    while low < high:
        middle = (low + high) // 2
        if feeds(middle):
            high = middle
        else:
            low = middle + 1
    return low


def workers_to_feed(
    ok: pd.DataFrame, model: Model, fewest: int | None, cores: float = math.nan
) -> dict[str, Any]:
    """The series' feed columns (FEED_COLUMNS) for ``model`` from its ``ok`` rows (workers >= 0)
    and the fewest measured count fed (``fewest``, by fewest_fed). Where no measured count
    feeds the model, the count is extrapolated by ``scaling_model``: the fewest workers whose
    extrapolated supply is fed over the whole interval (the anchor row's interval, scaled).
    Where the hand-over alone keeps the wait at FED_WAIT or above at any supply, no count feeds
    the model: the count is then the fewest at which the loader no longer sets the pace
    (``fed_at_workers_to_feed`` False, the wait that is left in ``wait_at_workers_to_feed``)."""
    out: dict[str, Any] = dict.fromkeys(FEED_COLUMNS)
    swept = ok[ok["workers"] >= 0].sort_values("workers")
    if swept.empty:
        return out
    rates = {int(r["workers"]): float(r[MEDIAN_THROUGHPUT]) for _, r in swept.iterrows()}
    top = swept.iloc[-1]
    out["share_of_need"] = float(top[MEDIAN_THROUGHPUT]) / model.img_per_s
    out["share_of_need_workers"] = int(top["workers"])
    by_workers = {int(r["workers"]): r for _, r in swept.iterrows()}
    if fewest is not None:
        row = by_workers[fewest]
        out.update(
            workers_to_feed=fewest,
            workers_to_feed_basis="measured",
            wait_at_workers_to_feed=_waits(row, (rates[fewest],), fewest, model.img_per_s)[0],
            fed_at_workers_to_feed=True,
            scaling="as measured",
        )
        return out
    scaling = scaling_model(rates, cores)
    anchor = by_workers[scaling.anchor_workers] if scaling.anchor_workers else swept.iloc[0]
    need = model.img_per_s
    floor = _waits(anchor, (1e12,), max(1, scaling.anchor_workers), need)[0]
    if floor >= FED_WAIT:
        measured = [w for w in rates if w >= 1 and rates[w] >= _pace_rate(by_workers[w], w, need)]
        if measured:
            count, basis, rate = min(measured), "measured", rates[min(measured)]
            row = by_workers[count]
        else:
            start = scaling.anchor_workers + 1
            count = _search(lambda w: scaling.rate(w) >= _pace_rate(anchor, w, need), max(1, start))
            basis, rate, row = "extrapolated", scaling.rate(count), anchor
        out.update(
            workers_to_feed=count,
            workers_to_feed_basis=basis,
            wait_at_workers_to_feed=_waits(row, (rate,), count, need)[0],
            fed_at_workers_to_feed=False,
            scaling=("as measured" if basis == "measured" else scaling.text)
            + f"; the hand-over alone leaves at least a {floor:.0%} wait at any supply",
        )
        return out
    # The anchor row's interval, scaled with its rate.
    base = float(anchor[MEDIAN_THROUGHPUT])
    low, high = number(anchor.get("ci_low")), number(anchor.get("ci_high"))

    def feeds(w: int) -> bool:
        rate = scaling.rate(w)
        ends = [rate * e / base for e in (low, high) if e > 0]
        waits = _waits(anchor, (rate, *ends), w, need)
        return verdict(min(waits), max(waits)) == "fed"

    count = _search(feeds, scaling.anchor_workers + 1)
    if count is None:
        out["scaling"] = f"{scaling.text}; no count up to {MAX_WORKERS:,} workers feeds it"
        return out
    out.update(
        workers_to_feed=count,
        workers_to_feed_basis="extrapolated",
        wait_at_workers_to_feed=_waits(anchor, (scaling.rate(count),), count, need)[0],
        fed_at_workers_to_feed=True,
        scaling=scaling.text,
    )
    return out


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
            ok = group[(group["status"] == "ok") & (group[MEDIAN_THROUGHPUT] > 0)]
            verdicts: dict[int, str] = {}
            predicted: dict[Any, tuple[Prediction, float, float]] = {}
            for index, row in ok.iterrows():
                predicted[index] = _predictions(row, float(row[MEDIAN_THROUGHPUT]), model.img_per_s)
                _, wait_low, wait_high = predicted[index]
                verdicts[int(row["workers"])] = verdict(wait_low, wait_high)
            swept = bool((group["workers"] >= 0).any())
            fewest, monotone = fewest_fed(verdicts)
            series = dict(zip(keys, key, strict=True))
            feed = workers_to_feed(ok, model, fewest, number(series.get("usable_cores")))
            if not swept:
                said = "n/a (no worker sweep in this regime)"
            elif fewest is not None:
                said = str(fewest)
            else:
                said = "none of the measured counts"
            not_ok = group[~group.index.isin(ok.index)]
            for index, row in group.iterrows():
                is_ok = index in predicted
                rate = float(row[MEDIAN_THROUGHPUT]) if is_ok else math.nan
                middle, wait_low, wait_high = (
                    predicted[index] if is_ok else (None, math.nan, math.nan)
                )
                record = dict(series)
                record.update(feed)
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


def _to_feed(series: pd.Series) -> str:
    """``workers_to_feed`` with its basis, and the wait it leaves where it does not feed."""
    count = number(series.get("workers_to_feed"))
    if math.isnan(count):
        return "n/a"
    said = f"{int(count)} ({series['workers_to_feed_basis']})"
    if _is_false(series.get("fed_at_workers_to_feed")):
        wait = number(series.get("wait_at_workers_to_feed"))
        said += f", still {_pct(wait)} wait (hand-over)"
    return said


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
        "with their reason. Workers to feed: the fewest measured workers fed, or where none is, "
        "extrapolated by the scaling model in results/tables/starvation.csv's `scaling` column. "
        "Details: docs/starvation.md; every number: results/tables/starvation.csv.",
        "",
        *([FED_DEFINITION, ""] if define else []),
    ]
    head = ["machine (cores)", "regime", "dataset", "library", "recipe", "fewest workers"]
    head += ["share of need", "workers to feed"]
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
                _pct(number(s.get("share_of_need"))),
                _to_feed(s),
                waits or "none ok",
                _duration(best),
                "" if pd.isna(s["not_measured_workers"]) else s["not_measured_workers"],
            ]
            lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
        lines.append("")
    return lines
