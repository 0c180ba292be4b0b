"""Warm-up and variance diagnostics, and the slow-row / early-stop listing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from augbench.analysis.groups import group_label, normalized, runs, several_datasets
from augbench.analysis.tidy import GROUP_COLUMNS
from augbench.policy import CV_UNSTABLE_THRESHOLD
from augbench.result_format import MEDIAN_THROUGHPUT

DIAGNOSTIC_COLUMNS = (
    "machine",
    "regime",
    "group",
    "library",
    "transform",
    MEDIAN_THROUGHPUT,
    "cv_throughput",
    "runs",
    "cv_high",
    "variance_unstable",
    "warmup_unstable",
    "flagged",
    "detail",
)

SLOW_COLUMNS = (
    "kind",
    "machine",
    "regime",
    "group",
    "library",
    "transform",
    "throughput",
    "reason",
)


def _label(row: pd.Series, with_dataset: bool = True) -> str:
    return group_label(
        {c: row[c] for c in GROUP_COLUMNS}, with_machine=False, with_dataset=with_dataset
    )


def _truthy(value: object) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if isinstance(value, str):
        return value.strip().lower() in {"true", "1", "yes"}
    return bool(value)


def warmup_drift(values: list[float], threshold: float = CV_UNSTABLE_THRESHOLD) -> float | None:
    """Relative distance of the first repeated run from the median of the others, when it is
    beyond ``threshold`` (the first run was still warming up or a cache was cold), else None.
    Needs three runs: with two, the first run is half of the median."""
    if len(values) < 3:
        return None
    rest = float(np.median(values[1:]))
    if rest <= 0:
        return None
    drift = values[0] / rest - 1.0
    return drift if abs(drift) > threshold else None


def diagnose(frame: pd.DataFrame, threshold: float = CV_UNSTABLE_THRESHOLD) -> pd.DataFrame:
    """One row per ok tidy row, with its variance and warm-up flags and a readable detail."""
    records = []
    data = normalized(frame) if len(frame) else frame
    show_dataset = several_datasets(data)
    for _, row in data[data["status"] == "ok"].iterrows() if len(data) else []:
        values = runs(row)
        cv = row.get("cv_throughput")
        if pd.isna(cv) and len(values) > 1:
            cv = float(np.std(values, ddof=1) / np.mean(values))
        cv_high = bool(not pd.isna(cv) and cv > threshold)
        stable_field = row.get("variance_stable")
        variance_unstable = (
            stable_field is not None and not pd.isna(stable_field) and not _truthy(stable_field)
        )
        drift = warmup_drift(values, threshold)
        warmup_unstable = _truthy(row.get("unstable")) or drift is not None
        details = []
        if cv_high:
            details.append(f"CV {cv:.1%} > {threshold:.0%}")
        if variance_unstable and not cv_high:
            details.append("recorded variance_stable=false")
        if drift is not None:
            details.append(f"first run {drift:+.0%} from the median of the others")
        elif _truthy(row.get("unstable")):
            details.append("recorded unstable warm-up")
        records.append(
            {
                "machine": row["machine"],
                "regime": row["regime"],
                "group": _label(row, show_dataset),
                "library": row["library"],
                "transform": row["transform"],
                MEDIAN_THROUGHPUT: row[MEDIAN_THROUGHPUT],
                "cv_throughput": cv,
                "runs": len(values),
                "cv_high": cv_high,
                "variance_unstable": bool(variance_unstable),
                "warmup_unstable": bool(warmup_unstable),
                "flagged": bool(cv_high or variance_unstable or warmup_unstable),
                "detail": "; ".join(details),
            }
        )
    return pd.DataFrame.from_records(records, columns=list(DIAGNOSTIC_COLUMNS))


def slow_rows(frame: pd.DataFrame, slowest: int = 5) -> pd.DataFrame:
    """Every early-stopped row (preflight throughput and reason), then the ``slowest`` ok rows
    of each machine and regime."""
    if frame.empty:
        return pd.DataFrame(columns=list(SLOW_COLUMNS))
    data = normalized(frame)
    show_dataset = several_datasets(data)
    records = []
    early = data[data["status"] == "early_stopped"]
    for _, row in early.iterrows():
        records.append(
            {
                "kind": "early_stopped",
                "machine": row["machine"],
                "regime": row["regime"],
                "group": _label(row, show_dataset),
                "library": row["library"],
                "transform": row["transform"],
                "throughput": pd.to_numeric(row.get("preflight_throughput"), errors="coerce"),
                "reason": row.get("reason") or "",
            }
        )
    ok = data[(data["status"] == "ok") & data[MEDIAN_THROUGHPUT].notna()]
    for _, part in ok.groupby(["machine", "regime"], sort=True):
        for _, row in part.nsmallest(slowest, MEDIAN_THROUGHPUT).iterrows():
            records.append(
                {
                    "kind": "slowest_ok",
                    "machine": row["machine"],
                    "regime": row["regime"],
                    "group": _label(row, show_dataset),
                    "library": row["library"],
                    "transform": row["transform"],
                    "throughput": row[MEDIAN_THROUGHPUT],
                    "reason": "",
                }
            )
    return pd.DataFrame.from_records(records, columns=list(SLOW_COLUMNS))
