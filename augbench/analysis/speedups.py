"""Speedup of each library against the fastest other library, within one comparable group.

Every speedup is decided by augbench.decision over PROCESS values (one per fresh process that
measured the row, augbench.analysis.runs.process_values): the exact Mann-Whitney interval of the
ratio at the level it achieves, and its verdict ("faster", "slower", "no clear winner", or "not
decided" below policy.DECISION_LEVEL or where either row was measured under load).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from augbench import decision
from augbench.analysis.cells import decoded, number
from augbench.analysis.runs import process_values
from augbench.analysis.tidy import GROUP_COLUMNS, group_decoder
from augbench.intervals import Interval, median_interval
from augbench.result_format import MEDIAN_THROUGHPUT

SPEEDUP_COLUMNS: tuple[str, ...] = (
    *GROUP_COLUMNS,
    "transform",
    "library",
    "status",
    "reason",
    MEDIAN_THROUGHPUT,
    "std_throughput",
    "fastest_other_library",
    "fastest_other_throughput",
    "speedup",
    "speedup_low",
    "speedup_high",
    "speedup_level",
    # augbench.decision.verdict of the speedup: faster / slower where its whole interval lies
    # above / below 1, "no clear winner" where it holds 1, "not decided" where its achieved level
    # is below policy.DECISION_LEVEL (too few processes) or a row was under load; "" without a
    # competitor.
    "versus_fastest_other",
    # The row's median over its processes, that median's interval and its achieved level.
    "throughput_median",
    "throughput_low",
    "throughput_high",
    "throughput_level",
    "processes",
    "is_fastest",
    # The row, or the row its speedup is computed against, was measured while other processes
    # loaded the machine (augbench.measuring.quietness; tidy's under_load); None where neither
    # records it.
    "under_load",
)


def _under_load(row: pd.Series | dict[str, Any]) -> bool | None:
    """A row's ``under_load`` as True / False / None, from a frame or from its CSV."""
    value = row.get("under_load")
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower())
    return None if value is None or pd.isna(value) else bool(value)


def row_interval(row: pd.Series) -> Interval:
    """A row's median with the interval of the median: its own (``ci_low``, ``ci_high``), else
    the order-statistic interval of its recorded throughputs (files from other tools)."""
    low, high = number(row.get("ci_low")), number(row.get("ci_high"))
    median = number(row.get(MEDIAN_THROUGHPUT))
    if not (math.isnan(low) or math.isnan(high)):
        level = number(row.get("ci_level"))
        return Interval(median, low, high, None if math.isnan(level) else level, "", 0)
    values = decoded(row.get("throughputs"))
    if isinstance(values, list) and len(values) > 1:
        found = median_interval([float(v) for v in values])
        return Interval(median, found.low, found.high, found.level, found.method, found.n)
    return Interval(median, None, None, None, "no interval", 0)


def margin(
    row: pd.Series | dict[str, Any], other: pd.Series | dict[str, Any]
) -> decision.RatioInterval:
    """row / other over both rows' process values (augbench.decision.ratio_interval); no
    interval (level 0, never decided) where a side has a process that measured nothing."""
    a, b = process_values(row), process_values(other)
    if any(v <= 0 for v in (*a, *b)):
        return decision.RatioInterval(math.nan, math.nan, math.nan, 0.0, len(a), len(b))
    return decision.ratio_interval(a, b)


def margin_fields(
    row: pd.Series | dict[str, Any], other: pd.Series | dict[str, Any], prefix: str = "margin"
) -> dict[str, Any]:
    """``margin``, ``margin_low``, ``margin_high``, ``margin_level`` and ``verdict`` of row /
    other, and ``<prefix>_note``: why a margin whose interval would decide is "not decided" (a
    row measured under load, a process without a positive rate), "" otherwise."""
    r = margin(row, other)
    found = r.fields(prefix)
    notes = []
    loud = [str(x.get("library") or "a row") for x in (row, other) if _under_load(x)]
    if loud:
        found["verdict"] = decision.NOT_DECIDED
        notes.append(f"measured under load: {', '.join(loud)}")
    if r.n_a and r.n_b and math.isnan(r.ratio):
        notes.append("a process measured no positive rate")
    found[f"{prefix}_note"] = "; ".join(notes)
    return found


def speedup_interval(row: pd.Series, other: pd.Series) -> Interval:
    """The interval of row / other over both rows' process values (:func:`margin`) as an
    augbench.intervals.Interval: the ratio of the process medians, its achieved level."""
    r = margin(row, other)
    if not (math.isfinite(r.low) and math.isfinite(r.high)):
        return Interval(r.ratio, None, None, None, "a side without a positive process value", 0)
    if not r.level > 0:
        return Interval(r.ratio, None, None, 0.0, "one process a side: no interval", 1)
    return Interval(
        r.ratio,
        r.low,
        r.high,
        r.level,
        f"exact Mann-Whitney over {r.n_a} x {r.n_b} processes (achieved level)",
        min(r.n_a, r.n_b),
    )


def versus(interval: Interval) -> str:
    """faster, slower or tie: where the speedup's interval lies against 1."""
    if interval.low is None or interval.high is None:
        return "unknown"
    if interval.low > 1.0:
        return "faster"
    if interval.high < 1.0:
        return "slower"
    return "tie"


def _with_dataset(tidy: pd.DataFrame) -> pd.DataFrame:
    """Rows grouped by dataset; a table without the column (older tables) is one dataset."""
    dataset = tidy["dataset"] if "dataset" in tidy.columns else pd.Series(None, index=tidy.index)
    # Rows of one loader and one decoder only are compared (augbench.workload.loaders and
    # .decoders; augbench.analysis.tidy.group_decoder).
    loader = tidy["loader"] if "loader" in tidy.columns else pd.Series(None, index=tidy.index)
    return tidy.assign(
        dataset=dataset.astype(object).where(dataset.notna(), "unknown").astype(str),
        loader=loader.astype(object).where(loader.notna(), "").astype(str),
        decoder=group_decoder(tidy),
    )


def compute(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, transform, library): every status kept; only ``ok`` rows compete.

    speedup = median(L) / max median of the other libraries with ``ok`` rows; N/A (NaN) when L is
    not ok or has no ok competitor.
    """
    records = []
    keys = [*GROUP_COLUMNS, "transform"]
    for key, group in _groups(_with_dataset(tidy), keys):
        ok = [row for row in group if row["status"] == "ok"]
        for row in group:
            record = dict(zip(keys, key, strict=True))
            record.update(
                library=row["library"],
                status=row["status"],
                reason=row["reason"] if row["status"] != "ok" else "",
                median_throughput=row[MEDIAN_THROUGHPUT] if row["status"] == "ok" else math.nan,
                std_throughput=row["std_throughput"] if row["status"] == "ok" else math.nan,
                fastest_other_library="",
                fastest_other_throughput=math.nan,
                speedup=math.nan,
                speedup_low=math.nan,
                speedup_high=math.nan,
                speedup_level=math.nan,
                versus_fastest_other="",
                is_fastest=False,
                under_load=_under_load(row),
            )
            if row["status"] == "ok":
                own = decision.median_interval(process_values(row))
                record.update(own.fields("throughput"))
            best = (
                _fastest(o for o in ok if o["library"] != row["library"])
                if row["status"] == "ok"
                else None
            )
            if best is not None:
                m, mo = float(row[MEDIAN_THROUGHPUT]), float(best[MEDIAN_THROUGHPUT])
                found = margin_fields(row, best, "speedup")
                record.update(
                    fastest_other_library=best["library"],
                    fastest_other_throughput=mo,
                    speedup=m / mo,
                    # one process a side: the ratio has no interval (not a zero-width one)
                    speedup_low=found["speedup_low"] if found["speedup_level"] > 0 else math.nan,
                    speedup_high=found["speedup_high"] if found["speedup_level"] > 0 else math.nan,
                    speedup_level=found["speedup_level"],
                    versus_fastest_other=found["verdict"],
                    is_fastest=m > mo,
                )
                if _under_load(best):
                    record["under_load"] = True
            elif row["status"] == "ok":
                record["is_fastest"] = True
            records.append(record)
    return pd.DataFrame.from_records(records, columns=list(SPEEDUP_COLUMNS))


def _groups(
    frame: pd.DataFrame, keys: list[str]
) -> list[tuple[tuple[Any, ...], list[dict[str, Any]]]]:
    """(key, rows as dicts in the frame's order) of each group of ``keys``, in groupby's sorted
    order, missing keys a group of their own: the frame read once, not filtered per group (a
    sweep of thousands of recipes has thousands of groups)."""
    grouped = frame.groupby(keys, dropna=False, sort=True)
    members: list[list[dict[str, Any]]] = [[] for _ in range(grouped.ngroups)]
    for group, row in zip(grouped.ngroup(), frame.to_dict("records"), strict=True):
        members[group].append(row)
    return [(tuple(rows[0][k] for k in keys), rows) for rows in members]


def _fastest(rows: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The row of the highest median throughput (the first of equals); None without one."""
    best = None
    for row in rows:
        value = row[MEDIAN_THROUGHPUT]
        if not pd.isna(value) and (best is None or value > best[MEDIAN_THROUGHPUT]):
            best = row
    return best


def throughput_table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Wide table: median img/s per library (ok rows only; other statuses are blank)."""
    tidy = _with_dataset(tidy)
    ok = tidy[tidy["status"] == "ok"]
    index = [*GROUP_COLUMNS, "transform"]
    all_keys = tidy[index].drop_duplicates()
    wide = ok.pivot_table(
        index=index, columns="library", values=MEDIAN_THROUGHPUT, aggfunc="first", dropna=False
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
