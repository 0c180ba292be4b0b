"""DataLoader-regime views: worker scaling and data starvation.

Both read the tidy table (``augbench.analysis.tidy``) and keep every row whatever its status, with
the numbers blank (NaN) where a row is not ``ok``, so a missing measurement is visible as such.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

# One recipe of one library in one comparable setting; ``workers`` varies inside it.
SERIES_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "scope",
    "batch_size",
    "variant",
    "library",
    "transform",
)

SCALING_COLUMNS: tuple[str, ...] = (
    *SERIES_COLUMNS,
    "recipe",
    "workers",
    "status",
    "reason",
    "median_throughput",
    "throughput_w0",
    "throughput_w1",
    "speedup_vs_w0",
    "speedup_vs_w1",
    "parallel_efficiency",
)

STARVATION_COLUMNS: tuple[str, ...] = (
    *SERIES_COLUMNS,
    "recipe",
    "workers",
    "status",
    "reason",
    "target",
    "target_description",
    "required_throughput",
    "input_throughput",
    "fed_ratio",
    "keeps_up",
    "verdict",
    "min_workers_keeping_up",
    "target_source",
)


def parallel_efficiency(throughput: float, workers: int, throughput_w1: float) -> float:
    """throughput(N) / (N x throughput(1)) for N >= 1.

    N = 0 (loading in the main process, no worker process) has no defined efficiency: NaN. Its
    relation to one worker is reported separately as ``speedup_vs_w1``.
    """
    if workers < 1 or not throughput_w1 > 0 or math.isnan(throughput):
        return math.nan
    return throughput / (workers * throughput_w1)


def _ok_throughput(group: pd.DataFrame, workers: int) -> float:
    match = group[(group["workers"] == workers) & (group["status"] == "ok")]
    return float(match["median_throughput"].iloc[0]) if len(match) else math.nan


def _recipe(row: pd.Series) -> str:
    value = row.get("recipe")
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def worker_scaling(tidy: pd.DataFrame, regime: str = "cpu_dataloader") -> pd.DataFrame:
    """Throughput versus workers per library, recipe and scope, with parallel efficiency."""
    part = tidy[tidy["regime"] == regime]
    records: list[dict[str, Any]] = []
    for key, group in part.groupby(list(SERIES_COLUMNS), dropna=False, sort=True):
        thr0 = _ok_throughput(group, 0)
        thr1 = _ok_throughput(group, 1)
        for _, row in group.sort_values("workers").iterrows():
            workers = int(row["workers"])
            ok = row["status"] == "ok"
            thr = float(row["median_throughput"]) if ok else math.nan
            record = dict(zip(SERIES_COLUMNS, key, strict=True))
            record.update(
                recipe=_recipe(row),
                workers=workers,
                status=row["status"],
                reason="" if ok else row["reason"],
                median_throughput=thr,
                throughput_w0=thr0,
                throughput_w1=thr1,
                speedup_vs_w0=thr / thr0 if thr0 > 0 else math.nan,
                speedup_vs_w1=thr / thr1 if thr1 > 0 else math.nan,
                parallel_efficiency=parallel_efficiency(thr, workers, thr1),
            )
            records.append(record)
    return pd.DataFrame.from_records(records, columns=list(SCALING_COLUMNS))


def starvation(
    tidy: pd.DataFrame, targets: list[dict[str, Any]], regime: str = "cpu_dataloader"
) -> pd.DataFrame:
    """Does each library/recipe/worker count keep an accelerator fed?

    ``fed_ratio`` = input throughput / the target's required images/s; ``keeps_up`` when >= 1.
    ``min_workers_keeping_up`` is the smallest measured worker count of the same series that
    keeps up (blank when none does).
    """
    part = tidy[tidy["regime"] == regime]
    records: list[dict[str, Any]] = []
    for target in targets:
        required = float(target["images_per_second"])
        if not required > 0:
            raise ValueError(f"required throughput of {target.get('name')!r} must be > 0")
        for key, group in part.groupby(list(SERIES_COLUMNS), dropna=False, sort=True):
            ok = group[group["status"] == "ok"]
            fed = ok[ok["median_throughput"] >= required]
            min_workers = int(fed["workers"].min()) if len(fed) else None
            for _, row in group.sort_values("workers").iterrows():
                is_ok = row["status"] == "ok"
                thr = float(row["median_throughput"]) if is_ok else math.nan
                ratio = thr / required if is_ok else math.nan
                keeps_up = bool(ratio >= 1.0) if is_ok else None
                if keeps_up is None:
                    verdict = f"not measured ({row['status']})"
                else:
                    verdict = "keeps up" if keeps_up else "starved"
                record = dict(zip(SERIES_COLUMNS, key, strict=True))
                record.update(
                    recipe=_recipe(row),
                    workers=int(row["workers"]),
                    status=row["status"],
                    reason="" if is_ok else row["reason"],
                    target=target["name"],
                    target_description=target.get("description", ""),
                    required_throughput=required,
                    input_throughput=thr,
                    fed_ratio=ratio,
                    keeps_up=keeps_up,
                    verdict=verdict,
                    min_workers_keeping_up=min_workers,
                    target_source=target.get("source", ""),
                )
                records.append(record)
    return pd.DataFrame.from_records(records, columns=list(STARVATION_COLUMNS))
