"""Comparable groups of a tidy table, and the per-group math shared by figures and summaries.

A claim is only ever made inside one group: one machine, one regime and one setting of the
regime's parameters (scope, workers, batch size, variant). Rows from different groups are never
ranked against each other unless a caller asks for it explicitly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from augbench.analysis.tidy import GROUP_COLUMNS, group_decoder
from augbench.planning.regimes import NAMES as REGIME_NAMES
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters
from augbench.workload.matrix import STATUSES


def library_order(libraries: list[str] | set[str] | pd.Series) -> list[str]:
    """Libraries in their declarations' order (stable across figures), unknown ones after,
    sorted."""
    present = {str(lib) for lib in libraries}
    known = [lib for lib in adapters.names() if lib in present]
    return known + sorted(present - set(known))


def regime_order(regimes: list[str] | set[str] | pd.Series) -> list[str]:
    present = {str(r) for r in regimes}
    known = [r for r in REGIME_NAMES if r in present]
    return known + sorted(present - set(known))


def status_order(statuses: list[str] | set[str] | pd.Series) -> list[str]:
    present = {str(s) for s in statuses}
    return [s for s in STATUSES if s in present] + sorted(present - set(STATUSES))


def group_label(
    key: dict[str, object], *, with_machine: bool = True, with_dataset: bool = True
) -> str:
    """Human label of a comparable group: 'micro', 'cpu_dataloader · decode · 4 workers' ..."""
    parts = [str(key["regime"])]
    scope = key.get("scope")
    if scope and not (key["regime"] == "micro" and scope == "memory"):
        parts.append(str(scope))
    workers = _int_or_none(key.get("workers"))
    if workers is not None and workers >= 0:
        parts.append(f"{workers} worker" + ("" if workers == 1 else "s"))
    batch = _int_or_none(key.get("batch_size"))
    if batch is not None and batch >= 0:
        parts.append(f"batch {batch}")
    if key.get("variant"):
        parts.append(str(key["variant"]))
    # augbench.workload.decoders and .loaders; native and process unnamed.
    if key.get("decoder") and key["decoder"] != "native":
        parts.append(f"{key['decoder']} decoder")
    if key.get("loader") and key["loader"] != "process":
        parts.append(f"{key['loader']} loader")
    if with_dataset and key.get("dataset") and key["dataset"] != "unknown":
        parts.append(f"dataset {key['dataset']}")
    label = " · ".join(parts)
    return f"{key['machine']}: {label}" if with_machine else label


def _int_or_none(value: object) -> int | None:
    try:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Group:
    key: dict[str, object]
    rows: pd.DataFrame
    # Labels name the dataset when the table holds more than one (each then gets its own
    # sections and panels); with one dataset the header says which.
    show_dataset: bool = True

    @property
    def label(self) -> str:
        return group_label(self.key, with_dataset=self.show_dataset)

    @property
    def short_label(self) -> str:
        return group_label(self.key, with_machine=False, with_dataset=self.show_dataset)


def several_datasets(frame: pd.DataFrame) -> bool:
    return "dataset" in frame.columns and frame["dataset"].nunique(dropna=False) > 1


def normalized(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill the group columns so that groupby never drops rows with missing values."""
    out = frame.copy()
    for col in GROUP_COLUMNS:
        if col not in out.columns:
            out[col] = None
    out["scope"] = out["scope"].fillna("memory").astype(str)
    out["loader"] = out["loader"].astype(object).where(out["loader"].notna(), "").astype(str)
    out["decoder"] = group_decoder(out)
    out["variant"] = out["variant"].fillna("").astype(str)
    out["dataset"] = out["dataset"].astype(object).where(out["dataset"].notna(), "unknown")
    out["dataset"] = out["dataset"].astype(str)
    for col in ("workers", "batch_size"):
        out[col] = pd.to_numeric(out[col], errors="coerce").fillna(-1).astype(int)
    out["machine"] = out["machine"].fillna("unknown").astype(str)
    out["regime"] = out["regime"].fillna("unknown").astype(str)
    return out


def iter_groups(frame: pd.DataFrame, regime: str | None = None) -> Iterator[Group]:
    """Comparable groups in a stable order (machine, regime order, then parameters)."""
    if frame.empty:
        return
    data = normalized(frame)
    if regime is not None:
        data = data[data["regime"] == regime]
    if data.empty:
        return
    show_dataset = several_datasets(data)
    rank = {r: i for i, r in enumerate(regime_order(data["regime"]))}
    keys = data[list(GROUP_COLUMNS)].drop_duplicates()
    keys = keys.assign(_rank=keys["regime"].map(rank)).sort_values(
        [
            "machine",
            "dataset",
            "_rank",
            "scope",
            "workers",
            "batch_size",
            "variant",
            "decoder",
            "loader",
        ]
    )
    for _, key_row in keys.iterrows():
        key = {col: key_row[col] for col in GROUP_COLUMNS}
        mask = pd.Series(True, index=data.index)
        for col in GROUP_COLUMNS:
            mask &= data[col] == key[col]
        yield Group(key, data[mask], show_dataset)


def winners(group_rows: pd.DataFrame) -> pd.DataFrame:
    """Per transform of one group: the fastest ``ok`` library, its margin over the runner-up.

    Columns: transform, contenders (ok libraries), winner ('' when fewer than two libraries are
    ok: an uncontested row wins nothing), winner_throughput, runner_up, runner_up_throughput,
    gap (winner / runner-up). Ties on the median give no winner.
    """
    records = []
    for transform, rows in group_rows.groupby("transform", sort=True):
        ok = rows[(rows["status"] == "ok") & rows[MEDIAN_THROUGHPUT].notna()]
        ok = ok.sort_values(MEDIAN_THROUGHPUT, ascending=False)
        record: dict[str, object] = {
            "transform": transform,
            "contenders": len(ok),
            "winner": "",
            "winner_throughput": math.nan,
            "runner_up": "",
            "runner_up_throughput": math.nan,
            "gap": math.nan,
        }
        if len(ok) >= 2:
            first, second = ok.iloc[0], ok.iloc[1]
            record.update(
                runner_up=second["library"],
                runner_up_throughput=float(second[MEDIAN_THROUGHPUT]),
                gap=float(first[MEDIAN_THROUGHPUT]) / float(second[MEDIAN_THROUGHPUT]),
            )
            if first[MEDIAN_THROUGHPUT] > second[MEDIAN_THROUGHPUT]:
                record.update(
                    winner=first["library"], winner_throughput=float(first[MEDIAN_THROUGHPUT])
                )
        records.append(record)
    return pd.DataFrame.from_records(
        records,
        columns=[
            "transform",
            "contenders",
            "winner",
            "winner_throughput",
            "runner_up",
            "runner_up_throughput",
            "gap",
        ],
    )


def library_medians(group_rows: pd.DataFrame) -> pd.DataFrame:
    """Per library: median over transforms of the per-row median throughput (ok rows only),
    with the denominator (ok rows / all rows of that library in the group)."""
    records = []
    for lib in library_order(group_rows["library"]):
        rows = group_rows[group_rows["library"] == lib]
        ok = rows[rows["status"] == "ok"][MEDIAN_THROUGHPUT].dropna()
        records.append(
            {
                "library": lib,
                "median_of_medians": float(ok.median()) if len(ok) else math.nan,
                "ok_rows": len(ok),
                "rows": len(rows),
            }
        )
    return pd.DataFrame.from_records(
        records, columns=["library", "median_of_medians", "ok_rows", "rows"]
    )


def runs(row: pd.Series) -> list[float]:
    """Every repeated throughput of a tidy row (the ``throughputs`` JSON list), [] when none."""
    value = row.get("throughputs")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, list):
        return [float(v) for v in value]
    try:
        parsed = json.loads(str(value))
    except json.JSONDecodeError:
        return []
    return [float(v) for v in parsed] if isinstance(parsed, list) else []


def read_table(path: str | Path) -> pd.DataFrame:
    """A tidy table written by ``aggregate`` (all_results.csv), with group columns normalized."""
    frame = pd.read_csv(
        path,
        dtype={
            "variant": str,
            "scope": str,
            "reason": str,
            "dataset": str,
            "scenario": str,
            "loader": str,
        },
        keep_default_na=True,
    )
    for col in (
        MEDIAN_THROUGHPUT,
        "mean_throughput",
        "std_throughput",
        "cv_throughput",
        "preflight_throughput",
        "peak_rss_mb",
        "gpu_peak_allocated_mb",
    ):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return normalized(frame) if len(frame) else frame
