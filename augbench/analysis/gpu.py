"""Tables fed by the GPU regimes (gpu_dataloader, dali).

* ``gpu_vs_cpu_ratio``: each GPU-regime row's median throughput over AlbumentationsX's on the CPU
  for the same transform on the same machine. The CPU reference is AlbumentationsX's fastest ok
  ``cpu_dataloader`` row (same scope preferred), else its ``micro`` row; the reference used is named
  in every row. Every GPU-regime row is kept: where it or the reference is not ok the ratio is
  empty and ``ratio_status`` says why.
* ``throughput_vs_memory``: throughput next to peak GPU memory, one row per GPU-regime
  measurement, for the cost view (throughput versus memory).
"""

from __future__ import annotations

import math

import pandas as pd

from augbench.analysis.speedups import speedup_interval

GPU_REGIMES: tuple[str, ...] = ("gpu_dataloader", "dali")
CPU_REFERENCE_LIBRARY = "albumentationsx"

RATIO_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "library",
    "variant",
    "scope",
    "workers",
    "batch_size",
    "transform",
    "device",
    "status",
    "reason",
    "median_throughput",
    "std_throughput",
    "cpu_reference",
    "cpu_reference_throughput",
    "cpu_reference_std",
    "ratio",
    "ratio_low",
    "ratio_high",
    "ratio_status",
)

MEMORY_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "library",
    "variant",
    "scope",
    "workers",
    "batch_size",
    "transform",
    "device",
    "status",
    "reason",
    "median_throughput",
    "std_throughput",
    "gpu_peak_allocated_mb",
    "gpu_peak_reserved_mb",
    "gpu_memory_method",
)


def _cpu_reference(
    tidy: pd.DataFrame, machine: str, transform: str, scope: str
) -> pd.Series | None:
    ok = tidy[
        (tidy["machine"] == machine)
        & (tidy["transform"] == transform)
        & (tidy["library"] == CPU_REFERENCE_LIBRARY)
        & (tidy["status"] == "ok")
    ]
    loader = ok[ok["regime"] == "cpu_dataloader"]
    same_scope = loader[loader["scope"] == scope]
    for candidates in (same_scope, loader, ok[ok["regime"] == "micro"]):
        if len(candidates):
            return candidates.loc[candidates["median_throughput"].idxmax()]
    return None


def _describe(ref: pd.Series) -> str:
    text = f"{CPU_REFERENCE_LIBRARY} {ref['regime']}/{ref['scope']}"
    if int(ref.get("workers", -1)) >= 0:
        text += f" workers={int(ref['workers'])}"
    return text


def gpu_vs_cpu_ratio(tidy: pd.DataFrame) -> pd.DataFrame:
    records = []
    gpu_rows = tidy[tidy["regime"].isin(GPU_REGIMES)]
    for _, row in gpu_rows.iterrows():
        record = {col: row.get(col) for col in RATIO_COLUMNS if col in row.index}
        ok = row["status"] == "ok"
        record.update(
            reason=row["reason"] if not ok else "",
            median_throughput=row["median_throughput"] if ok else math.nan,
            std_throughput=row["std_throughput"] if ok else math.nan,
            cpu_reference="",
            cpu_reference_throughput=math.nan,
            cpu_reference_std=math.nan,
            ratio=math.nan,
            ratio_low=math.nan,
            ratio_high=math.nan,
        )
        ref = _cpu_reference(tidy, row["machine"], row["transform"], row["scope"])
        if ref is not None:
            record.update(
                cpu_reference=_describe(ref),
                cpu_reference_throughput=float(ref["median_throughput"]),
                cpu_reference_std=float(ref["std_throughput"] or 0.0),
            )
        if not ok:
            record["ratio_status"] = f"N/A: {row['status']}"
        elif ref is None:
            record["ratio_status"] = (
                f"N/A: no ok {CPU_REFERENCE_LIBRARY} cpu_dataloader or micro row on this machine"
            )
        else:
            m, s = float(row["median_throughput"]), float(row["std_throughput"] or 0.0)
            mo, so = record["cpu_reference_throughput"], record["cpu_reference_std"]
            low, high = speedup_interval(m, s, mo, so)
            record.update(ratio=m / mo, ratio_low=low, ratio_high=high, ratio_status="ok")
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=list(RATIO_COLUMNS))
    return frame.sort_values(["machine", "transform", "regime", "library", "variant"]).reset_index(
        drop=True
    )


def throughput_vs_memory(tidy: pd.DataFrame) -> pd.DataFrame:
    gpu_rows = tidy[tidy["regime"].isin(GPU_REGIMES)].copy()
    for col in MEMORY_COLUMNS:
        if col not in gpu_rows.columns:
            gpu_rows[col] = None
    gpu_rows.loc[gpu_rows["status"] != "ok", ["median_throughput", "std_throughput"]] = math.nan
    frame = gpu_rows[list(MEMORY_COLUMNS)]
    return frame.sort_values(["machine", "regime", "library", "variant", "transform"]).reset_index(
        drop=True
    )
