"""Tables fed by the GPU regimes (gpu_dataloader, dali).

* ``gpu_vs_cpu_ratio``: each GPU-regime row's median throughput over AlbumentationsX's on the CPU
  for the same recipe and the same scope under the same machine label and dataset: the reference
  is AlbumentationsX's fastest ok ``cpu_dataloader`` row of that transform and scope (any worker
  count), named in every row with the scope pair it compares (``comparison``). Nothing else is a
  reference: a ratio between scopes (a GPU decode row over a CPU memory row) or against ``micro``
  (a single transform, no recipe) would compare different work. Every GPU-regime row is kept:
  where it or the reference is not ok the ratio is empty and ``ratio_status`` says why. The
  Identity baseline rows have no CPU counterpart.

  The label is what a sweep calls its machine; the VM a row actually ran on is ``machine_actual``
  (a cloud sweep runs CPU jobs on a CPU VM and GPU jobs on a GPU VM under one label). Each ratio
  row names both (``gpu_machine_actual``, ``cpu_machine_actual``) and ``comparison`` says "CPU
  rows from <x>, GPU rows from <y>" where they differ. Where the label's reference rows of a
  transform and scope come from two or more actual CPU machines, they are never mixed (the
  fastest of them would pick a machine, not a worker count): the GPU row gets one ratio row per
  actual CPU machine, each against that machine's fastest row (docs/gpu_regimes.md).
* ``throughput_vs_memory``: throughput next to GPU memory, one row per GPU-regime measurement.
  torch rows record the caching allocator's peaks (``gpu_peak_allocated_mb``,
  ``gpu_peak_reserved_mb``), DALI rows NVML's process figure (``gpu_nvml_used_mb``, CUDA context
  included): different quantities, kept in different columns.
"""

from __future__ import annotations

import math

import pandas as pd

from augbench.analysis.speedups import speedup_interval
from augbench.planning import regimes
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters
from augbench.workload.gpu_recipes import IDENTITY

# The regimes declared as GPU regimes (augbench/planning/regimes/).
GPU_REGIMES: tuple[str, ...] = regimes.gpu_regimes()
# The CPU library every GPU row is divided by (the tables' and the cpu_vs_gpu figure's baseline):
# the one whose declaration says so.
CPU_REFERENCE_LIBRARY = next(n for n in adapters.names() if adapters.declared(n).cpu_reference)

# Which measurement a row is: the first columns of both tables.
MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "library",
    "variant",
    "scope",
    # What decoded the decode scope's images: the workers' (native) or the device's (nvjpeg).
    "decoder",
    "workers",
    "batch_size",
    "transform",
)

RATIO_COLUMNS: tuple[str, ...] = (
    *MEASUREMENT_COLUMNS,
    # The VMs the two sides ran on (the label where a row does not record one), and the dataset
    # both come from: a ratio never crosses datasets (nor the resolutions of a sweep).
    "gpu_machine_actual",
    "cpu_machine_actual",
    "dataset",
    "recipe",
    "timed",
    "device",
    "status",
    "reason",
    MEDIAN_THROUGHPUT,
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
    MEDIAN_THROUGHPUT,
    "std_throughput",
    "gpu_peak_allocated_mb",
    "gpu_peak_reserved_mb",
    "gpu_nvml_used_mb",
    "gpu_memory_method",
    "cuda_driver_version",
    "cuda_runtime_version",
)


def _actual(rows: pd.DataFrame) -> pd.Series:
    """The machine each row ran on: ``machine_actual``, the label where that is blank."""
    label = rows["machine"].astype(str)
    if "machine_actual" not in rows.columns:
        return label
    actual = rows["machine_actual"]
    blank = actual.isna() | (actual.astype(str).str.strip().isin(["", "nan", "None"]))
    return actual.astype(str).where(~blank, label)


def _dataset(rows: pd.DataFrame) -> pd.Series:
    if "dataset" not in rows.columns:
        return pd.Series("unknown", index=rows.index)
    return rows["dataset"].astype(object).where(rows["dataset"].notna(), "unknown").astype(str)


def _references(tidy: pd.DataFrame) -> dict[tuple, dict[str, pd.Series]]:
    """(label, dataset, transform, scope) -> {actual CPU machine: AlbumentationsX's fastest ok
    cpu_dataloader row of that transform and scope on it}."""
    cpu = tidy[
        (tidy["library"] == CPU_REFERENCE_LIBRARY)
        & (tidy["status"] == "ok")
        & (tidy["regime"] == "cpu_dataloader")
        & pd.to_numeric(tidy[MEDIAN_THROUGHPUT], errors="coerce").notna()
    ]
    refs: dict[tuple, dict[str, pd.Series]] = {}
    if cpu.empty:
        return refs
    cpu = cpu.assign(_actual=_actual(cpu), _dataset=_dataset(cpu))
    keys = ["machine", "_dataset", "transform", "scope", "_actual"]
    best = pd.to_numeric(cpu[MEDIAN_THROUGHPUT]).groupby([cpu[k] for k in keys]).idxmax()
    for (machine, dataset, transform, scope, actual), index in sorted(best.items()):
        refs.setdefault((machine, dataset, transform, scope), {})[actual] = cpu.loc[index]
    return refs


def _describe(ref: pd.Series) -> str:
    text = f"{CPU_REFERENCE_LIBRARY} {ref['regime']}/{ref['scope']}"
    if int(ref.get("workers", -1)) >= 0:
        text += f" workers={int(ref['workers'])}"
    return text


def machines_text(cpu_actual: str, gpu_actual: str) -> str:
    """Where the two sides of a ratio ran, in words ('' where both ran on one machine)."""
    if not cpu_actual or cpu_actual == gpu_actual:
        return ""
    return f"CPU rows from {cpu_actual}, GPU rows from {gpu_actual}"


def gpu_vs_cpu_ratio(tidy: pd.DataFrame, keep: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per GPU-regime row and actual CPU machine with a reference (one row where there
    is none); ``keep``: further tidy columns to carry along (the figure's series labels)."""
    records = []
    gpu_rows = tidy[tidy["regime"].isin(GPU_REGIMES)]
    refs = _references(tidy)
    if len(gpu_rows):
        gpu_rows = gpu_rows.assign(_actual=_actual(gpu_rows), _dataset=_dataset(gpu_rows))
    for _, row in gpu_rows.iterrows():
        ok = row["status"] == "ok"
        scope = row["scope"]
        comparison = (
            f"{row['regime']} {scope} / {CPU_REFERENCE_LIBRARY} cpu_dataloader {scope}, same recipe"
        )
        base = {col: row.get(col) for col in (*RATIO_COLUMNS, *keep) if col in row.index}
        base.update(
            gpu_machine_actual=row["_actual"],
            cpu_machine_actual="",
            dataset=row["_dataset"],
            comparison=comparison,
            reason=row["reason"] if not ok else "",
            median_throughput=row[MEDIAN_THROUGHPUT] if ok else math.nan,
            std_throughput=row["std_throughput"] if ok else math.nan,
            cpu_reference="",
            cpu_reference_throughput=math.nan,
            cpu_reference_std=math.nan,
            ratio=math.nan,
            ratio_low=math.nan,
            ratio_high=math.nan,
        )
        found = refs.get((row["machine"], row["_dataset"], row["transform"], scope), {})
        for cpu_actual, ref in found.items() or [("", None)]:
            record = dict(base)
            notes = [machines_text(cpu_actual, row["_actual"])]
            if len(found) > 1:
                notes.append(
                    f"this label's CPU reference rows come from {len(found)} machines "
                    f"({', '.join(found)}): one ratio per CPU machine, never mixed"
                )
            record["comparison"] = "; ".join([comparison, *(n for n in notes if n)])
            if ref is not None:
                record.update(
                    cpu_machine_actual=cpu_actual,
                    cpu_reference=_describe(ref),
                    cpu_reference_throughput=float(ref[MEDIAN_THROUGHPUT]),
                    cpu_reference_std=_std(ref["std_throughput"]),
                )
            if row["transform"] == IDENTITY:
                record["ratio_status"] = "N/A: Identity baseline (no CPU counterpart)"
            elif not ok:
                record["ratio_status"] = f"N/A: {row['status']}"
            elif ref is None:
                record["ratio_status"] = (
                    f"N/A: no ok {CPU_REFERENCE_LIBRARY} cpu_dataloader row of this transform "
                    f"with scope {scope} under this machine label and dataset"
                )
            else:
                m, mo = float(row[MEDIAN_THROUGHPUT]), record["cpu_reference_throughput"]
                interval = speedup_interval(row, ref)
                record.update(
                    ratio=m / mo,
                    ratio_low=math.nan if interval.low is None else interval.low,
                    ratio_high=math.nan if interval.high is None else interval.high,
                    ratio_status="ok",
                )
            records.append(record)
    columns = [*RATIO_COLUMNS, *(k for k in keep if k not in RATIO_COLUMNS)]
    frame = pd.DataFrame.from_records(records, columns=columns)
    order = ["machine", "dataset", "transform", "regime", "library", "variant"]
    return frame.sort_values([*order, "cpu_machine_actual"]).reset_index(drop=True)


def _std(value: object) -> float:
    number = pd.to_numeric(value, errors="coerce")
    return 0.0 if pd.isna(number) else float(number)


def throughput_vs_memory(tidy: pd.DataFrame) -> pd.DataFrame:
    gpu_rows = tidy[tidy["regime"].isin(GPU_REGIMES)].copy()
    for col in MEMORY_COLUMNS:
        if col not in gpu_rows.columns:
            gpu_rows[col] = None
    gpu_rows.loc[gpu_rows["status"] != "ok", [MEDIAN_THROUGHPUT, "std_throughput"]] = math.nan
    frame = gpu_rows[list(MEMORY_COLUMNS)]
    return frame.sort_values(["machine", "regime", "library", "variant", "transform"]).reset_index(
        drop=True
    )
