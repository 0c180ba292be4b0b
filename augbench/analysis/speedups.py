"""Speedup of each library against the fastest other library, within one comparable group."""

from __future__ import annotations

import math

import pandas as pd

from augbench.analysis.tidy import GROUP_COLUMNS

SPEEDUP_COLUMNS: tuple[str, ...] = (
    *GROUP_COLUMNS,
    "transform",
    "library",
    "status",
    "reason",
    "median_throughput",
    "std_throughput",
    "fastest_other_library",
    "fastest_other_throughput",
    "speedup",
    "speedup_low",
    "speedup_high",
    "is_fastest",
)


def speedup_interval(m: float, s: float, m_other: float, s_other: float) -> tuple[float, float]:
    """±1 sd interval of m / m_other.

    From (m - s) / (m_other + s_other) to (m + s) / (m_other - s_other).

    The upper bound is infinite when the other library's interval reaches zero.
    """
    low = max(m - s, 0.0) / (m_other + s_other)
    high = (m + s) / (m_other - s_other) if m_other - s_other > 0 else math.inf
    return low, high


def _with_dataset(tidy: pd.DataFrame) -> pd.DataFrame:
    """Rows grouped by dataset; a table without the column (older tables) is one dataset."""
    dataset = tidy["dataset"] if "dataset" in tidy.columns else pd.Series(None, index=tidy.index)
    return tidy.assign(dataset=dataset.astype(object).where(dataset.notna(), "unknown").astype(str))


def compute(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, transform, library): every status kept; only ``ok`` rows compete.

    speedup = median(L) / max median of the other libraries with ``ok`` rows; N/A (NaN) when L is
    not ok or has no ok competitor.
    """
    records = []
    tidy = _with_dataset(tidy)
    keys = [*GROUP_COLUMNS, "transform"]
    for key, group in tidy.groupby(keys, dropna=False, sort=True):
        ok = group[group["status"] == "ok"]
        for _, row in group.iterrows():
            record = dict(zip(keys, key, strict=True))
            record.update(
                library=row["library"],
                status=row["status"],
                reason=row["reason"] if row["status"] != "ok" else "",
                median_throughput=row["median_throughput"] if row["status"] == "ok" else math.nan,
                std_throughput=row["std_throughput"] if row["status"] == "ok" else math.nan,
                fastest_other_library="",
                fastest_other_throughput=math.nan,
                speedup=math.nan,
                speedup_low=math.nan,
                speedup_high=math.nan,
                is_fastest=False,
            )
            others = ok[ok["library"] != row["library"]]
            if row["status"] == "ok" and len(others):
                best = others.loc[others["median_throughput"].idxmax()]
                m, s = float(row["median_throughput"]), float(row["std_throughput"] or 0.0)
                mo, so = float(best["median_throughput"]), float(best["std_throughput"] or 0.0)
                low, high = speedup_interval(m, s, mo, so)
                record.update(
                    fastest_other_library=best["library"],
                    fastest_other_throughput=mo,
                    speedup=m / mo,
                    speedup_low=low,
                    speedup_high=high,
                    is_fastest=m > mo,
                )
            elif row["status"] == "ok":
                record["is_fastest"] = True
            records.append(record)
    return pd.DataFrame.from_records(records, columns=list(SPEEDUP_COLUMNS))


def throughput_table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Wide table: median img/s per library (ok rows only; other statuses are blank)."""
    tidy = _with_dataset(tidy)
    ok = tidy[tidy["status"] == "ok"]
    index = [*GROUP_COLUMNS, "transform"]
    all_keys = tidy[index].drop_duplicates()
    wide = ok.pivot_table(
        index=index, columns="library", values="median_throughput", aggfunc="first", dropna=False
    ).reset_index()
    wide.columns.name = None
    wide = all_keys.merge(wide, on=index, how="left")
    for lib in sorted(tidy["library"].unique()):
        if lib not in wide.columns:
            wide[lib] = math.nan
    return wide.sort_values(index).reset_index(drop=True)


def coverage(tidy: pd.DataFrame) -> pd.DataFrame:
    """Counts of each status per comparable group (machine, dataset, regime, scope, workers,
    batch size, variant) and library, with the denominator."""
    data = _with_dataset(tidy)
    data = data.assign(variant=data["variant"].fillna("")) if "variant" in data else data
    keys = [c for c in GROUP_COLUMNS if c in data.columns]
    counts = (
        data.groupby([*keys, "library", "status"], dropna=False)
        .size()
        .unstack("status", fill_value=0)
        .reset_index()
    )
    counts.columns.name = None
    for status in ("ok", "early_stopped", "unsupported", "skipped", "error"):
        if status not in counts.columns:
            counts[status] = 0
    counts["total"] = counts[["ok", "early_stopped", "unsupported", "skipped", "error"]].sum(axis=1)
    counts["coverage"] = counts["ok"].astype(str) + "/" + counts["total"].astype(str)
    return counts
