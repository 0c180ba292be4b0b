"""Tables fed by the GPU regimes (gpu_dataloader, dali).

* ``gpu_vs_cpu_ratio``: each GPU-regime row's median throughput over AlbumentationsX's on the CPU
  for the same recipe and the same scope on the same machine: the reference is AlbumentationsX's
  fastest ok ``cpu_dataloader`` row of that transform and scope (any worker count), named in
  every row with the scope pair it compares (``comparison``). Nothing else is a reference: a
  ratio between scopes (a GPU decode row over a CPU memory row) or against ``micro`` (a single
  transform, no recipe) would compare different work. Every GPU-regime row is kept: where it or
  the reference is not ok the ratio is empty and ``ratio_status`` says why. The Identity
  baseline rows have no CPU counterpart.
* ``throughput_vs_memory``: throughput next to GPU memory, one row per GPU-regime measurement.
  torch rows record the caching allocator's peaks (``gpu_peak_allocated_mb``,
  ``gpu_peak_reserved_mb``), DALI rows NVML's process figure (``gpu_nvml_used_mb``, CUDA context
  included): different quantities, kept in different columns.
"""

from __future__ import annotations

import math

import pandas as pd

from augbench import regimes
from augbench.analysis.speedups import speedup_interval
from augbench.gpu_recipes import IDENTITY

# The regimes declared as GPU regimes (augbench/regimes.py).
GPU_REGIMES: tuple[str, ...] = regimes.gpu_regimes()
CPU_REFERENCE_LIBRARY = "albumentationsx"

# Which measurement a row is: the first columns of both tables.
MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "library",
    "variant",
    "scope",
    "workers",
    "batch_size",
    "transform",
)

RATIO_COLUMNS: tuple[str, ...] = (
    *MEASUREMENT_COLUMNS,
    "recipe",
    "timed",
    "device",
    "status",
    "reason",
    "median_throughput",
    "std_throughput",
    "comparison",
    "cpu_reference",
    "cpu_reference_throughput",
    "cpu_reference_std",
    "ratio",
    "ratio_low",
    "ratio_high",
    "ratio_status",
)

MEMORY_COLUMNS: tuple[str, ...] = (
    *MEASUREMENT_COLUMNS,
    "device",
    "status",
    "reason",
    "median_throughput",
    "std_throughput",
    "gpu_peak_allocated_mb",
    "gpu_peak_reserved_mb",
    "gpu_nvml_used_mb",
    "gpu_memory_method",
    "cuda_driver_version",
    "cuda_runtime_version",
)


def _cpu_reference(
    tidy: pd.DataFrame, machine: str, transform: str, scope: str
) -> pd.Series | None:
    """AlbumentationsX's fastest ok cpu_dataloader row of the same transform and scope."""
    ok = tidy[
        (tidy["machine"] == machine)
        & (tidy["transform"] == transform)
        & (tidy["library"] == CPU_REFERENCE_LIBRARY)
        & (tidy["status"] == "ok")
        & (tidy["regime"] == "cpu_dataloader")
        & (tidy["scope"] == scope)
    ]
    if not len(ok):
        return None
    return ok.loc[ok["median_throughput"].idxmax()]


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
        scope = row["scope"]
        record.update(
            comparison=f"{row['regime']} {scope} / {CPU_REFERENCE_LIBRARY} cpu_dataloader "
            f"{scope}, same recipe",
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
        ref = _cpu_reference(tidy, row["machine"], row["transform"], scope)
        if ref is not None:
            record.update(
                cpu_reference=_describe(ref),
                cpu_reference_throughput=float(ref["median_throughput"]),
                cpu_reference_std=float(ref["std_throughput"] or 0.0),
            )
        if row["transform"] == IDENTITY:
            record["ratio_status"] = "N/A: Identity baseline (no CPU counterpart)"
        elif not ok:
            record["ratio_status"] = f"N/A: {row['status']}"
        elif ref is None:
            record["ratio_status"] = (
                f"N/A: no ok {CPU_REFERENCE_LIBRARY} cpu_dataloader row of this transform with "
                f"scope {scope} on this machine"
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
