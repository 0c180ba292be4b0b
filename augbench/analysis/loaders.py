"""The loaders table (results/tables/loaders.csv): each cpu_dataloader decode row of a loader
besides process (augbench.workload.loaders) beside the process row of the same machine, dataset,
setting (workers, batch size, variant), decoder (augbench.workload.decoders), library and
recipe: the ratio of their medians with the interval of a ratio of independent medians
(augbench.intervals.ratio_interval), and what each kept busy (cores of the process tree over the
timed epochs) and held (PSS of the tree). The only table
where rows of two loaders are divided by each other; the speedups tables compare libraries of
one loader. A row whose loader or process side is not ``ok`` is kept, its ratio blank."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench import intervals
from augbench.analysis.cells import number, text
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import decoders, loaders

KEYS: tuple[str, ...] = (
    "machine",
    "dataset",
    "scope",
    "workers",
    "batch_size",
    "variant",
    "decoder",
    "library",
    "transform",
)
COLUMNS: tuple[str, ...] = (
    *KEYS,
    "loader",
    "loader_impl",
    "img_s",
    "process_img_s",
    "ratio_vs_process",
    "ratio_low",
    "ratio_high",
    "ratio_level",
    "ratio_method",
    "cpu_utilisation",
    "process_cpu_utilisation",
    "total_pss_mb",
    "process_total_pss_mb",
    "first_batch_s",
    "process_first_batch_s",
    "status",
    "reason",
)


def _fields(row: pd.Series | None, prefix: str = "") -> dict[str, float]:
    ok = row is not None and row["status"] == "ok"
    return {
        f"{prefix}img_s": number(row[MEDIAN_THROUGHPUT]) if ok else math.nan,
        f"{prefix}cpu_utilisation": number(row.get("cpu_utilisation")) if ok else math.nan,
        f"{prefix}total_pss_mb": number(row.get("total_pss_mb")) if ok else math.nan,
        f"{prefix}first_batch_s": number(row.get("first_batch_s")) if ok else math.nan,
    }


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per cpu_dataloader row of a loader besides process (module docstring), in the
    declared loaders' order; empty (with its columns) where none was measured."""
    if "loader" not in tidy.columns or "regime" not in tidy.columns:
        return pd.DataFrame(columns=list(COLUMNS))
    part = tidy[(tidy["regime"] == "cpu_dataloader") & tidy["loader"].notna()].copy()
    part["variant"] = part["variant"].fillna("") if "variant" in part else ""
    # Tables written before decoders were a factor: every row's decoder was the library's own.
    native = decoders.NATIVE
    part["decoder"] = part["decoder"].fillna(native) if "decoder" in part else native
    process = {
        tuple(row[k] for k in KEYS): row
        for _, row in part[part["loader"] == loaders.DEFAULT].iterrows()
    }
    records = []
    for _, row in part[part["loader"] != loaders.DEFAULT].iterrows():
        base = process.get(tuple(row[k] for k in KEYS))
        record: dict[str, Any] = {k: row[k] for k in KEYS}
        record.update(
            loader=row["loader"],
            loader_impl=text(row.get("loader_impl")),
            **_fields(row),
            **_fields(base, "process_"),
            status=row["status"],
            reason=text(row.get("reason")) if row["status"] != "ok" else "",
        )
        ratio = intervals.Interval(math.nan, None, None, None, "no ok process row", 0)
        if base is None:
            record["reason"] = record["reason"] or "no process row of this setting"
        elif row["status"] == "ok" and base["status"] == "ok":
            ratio = intervals.ratio_interval(
                intervals.from_fields(row), intervals.from_fields(base)
            )
        record.update(
            ratio_vs_process=ratio.estimate,
            ratio_low=math.nan if ratio.low is None else ratio.low,
            ratio_high=math.nan if ratio.high is None else ratio.high,
            ratio_level=math.nan if ratio.level is None else ratio.level,
            ratio_method=ratio.method,
        )
        records.append(record)
    out = pd.DataFrame(records, columns=list(COLUMNS))
    if out.empty:
        return out
    rank = {name: i for i, name in enumerate(loaders.NAMES)}
    out["_rank"] = out["loader"].map(lambda name: rank.get(name, len(rank)))
    keys = [*KEYS, "_rank"]
    return out.sort_values(keys, kind="stable").drop(columns="_rank").reset_index(drop=True)
