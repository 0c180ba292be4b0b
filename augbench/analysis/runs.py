"""Several runs of one setting as one row.

A DataLoader's or a training loop's rate differs more between processes than between the epochs
of one process (docs/training.md), so one job's epochs do not hold the spread of its setting.
Runs of a setting are result files of the same job from several processes: the workflow's own
runs (a kind's ``runs_key``: paths that differ only by ``-run<k>``,
augbench.planning.regimes.run_suffix), pooled by :func:`pool_job_runs` when the tables are read; or
runs in other folders given together to ``plot_from``, which the training table pools
(augbench.analysis.training).

A pooled row is the latest run's row with, for each pool present (:data:`POOLS`: epochs, steady
rates, data wait), the median of the runs' own medians (one value per process: the unit whose
spread moves a setting from one run to the next) and its distribution-free interval at the level
it achieves (augbench.decision.median_interval: three runs give [min, max] at 75 %, five at
93.75 %), every value in ``<values>`` and each run's in ``<values>_by_run`` (so that pooling
pooled rows again keeps each run a process of its own); the
mean, spread and precision of the throughputs recomputed from all values; the median of the
runs' per-job probes (page faults, hand-over, the model and the loader alone) and the faults of
the most-faulting run
(``faults.MOST_FAULTS``); the quietness of the loudest run (``under_load`` if any run was);
``runs``, how many runs it pools, and the runs that were not ok, with their reasons, in
``runs_not_ok``. Other columns are the latest run's.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import pandas as pd

from augbench import decision
from augbench.analysis.cells import decoded, is_true, number
from augbench.analysis.faults import MOST_FAULTS, row_faults
from augbench.planning import regimes
from augbench.result_format import MEDIAN_THROUGHPUT

# (values, estimate, prefix of its interval) of what pools across runs.
THROUGHPUT_POOL = ("throughputs", MEDIAN_THROUGHPUT, "")
STEADY_POOL = ("steady_throughputs", "steady_throughput", "steady_")
WAIT_POOL = ("data_wait_fractions", "data_wait_median", "data_wait_")
POOLS: tuple[tuple[str, str, str], ...] = (THROUGHPUT_POOL, STEADY_POOL, WAIT_POOL)
BY_RUN = "_by_run"
# A job that measured its rows in several fresh processes
# (augbench.measuring.engines.dataloader.processes): each process's values, and each process's
# median.
BY_PROCESS = "_by_process"
PER_PROCESS = "process_"
# Per-job probes whose runs' median stands for the setting.
MEDIAN_OF_RUNS: tuple[str, ...] = (
    "minor_faults_per_image",
    "handover_idle_ms",
    "handover_busy_ms",
    "handover_read_ms",
    "handover_first_read_ms",
    "model_img_per_s",
    "loader_img_per_s",
)
NOT_OK = "runs_not_ok"
# Columns that count the processes a row's values came from, in the order the values are listed
# (each process's values contiguous): the pipeline breakdown's fresh processes, micro's pyperf
# processes.
PROCESS_COUNTS: tuple[str, ...] = ("processes", "pyperf_processes")
# Every tidy row's median over its processes and that median's interval (augbench.decision), the
# columns the answer ranks by: ``throughput_median``, ``_low``, ``_high``, ``_level`` (achieved)
# and ``processes``.
PROCESS_PREFIX = "throughput"
PROCESS_COLUMNS: tuple[str, ...] = (
    f"{PROCESS_PREFIX}_median",
    f"{PROCESS_PREFIX}_low",
    f"{PROCESS_PREFIX}_high",
    f"{PROCESS_PREFIX}_level",
    "processes",
)


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def values(row: pd.Series | dict[str, Any], column: str) -> list[float]:
    """The finite numbers of a list cell (empty where the row has none)."""
    cell = decoded(row.get(column))
    if not isinstance(cell, list):
        return []
    return [float(v) for v in cell if isinstance(v, int | float) and math.isfinite(float(v))]


def value_groups(row: pd.Series | dict[str, Any], column: str) -> list[list[float]]:
    """A row's values of ``column`` as one list per process, from the first the row records:
    each run's where it pools several (``<column>_by_run``); each fresh process's of a job that
    ran several (``<column>_by_process``, or one value each in ``process_<column>``); the row's
    own, split into the processes that :data:`PROCESS_COUNTS` counts where its values divide
    evenly among them; else the row's own as one process."""
    for grouped in (f"{column}{BY_RUN}", f"{column}{BY_PROCESS}"):
        cell = decoded(row.get(grouped))
        if isinstance(cell, list) and cell and all(isinstance(g, list) for g in cell):
            groups = [[float(v) for v in g if isinstance(v, int | float)] for g in cell]
            return [[v for v in g if math.isfinite(v)] for g in groups]
    one_each = values(row, f"{PER_PROCESS}{column}")
    if one_each:
        return [[v] for v in one_each]
    own = values(row, column)
    for counter in PROCESS_COUNTS:
        count = number(row.get(counter))
        if count >= 2 and count == int(count) and own and len(own) % int(count) == 0:
            size = len(own) // int(count)
            return [own[i : i + size] for i in range(0, len(own), size)]
    return [own]


def process_values(
    row: pd.Series | dict[str, Any],
    column: str = THROUGHPUT_POOL[0],
    estimate: str = THROUGHPUT_POOL[1],
) -> list[float]:
    """One value per process that measured the row (the unit of every decided call,
    augbench.decision): the median of each process's values of ``column``
    (:func:`value_groups`); a row without values is one process of its ``estimate``."""
    medians = [statistics.median(g) for g in value_groups(row, column) if g]
    if medians:
        return medians
    own = number(row.get(estimate))
    return [own] if math.isfinite(own) else []


def process_interval(
    row: pd.Series | dict[str, Any],
    column: str = THROUGHPUT_POOL[0],
    estimate: str = THROUGHPUT_POOL[1],
) -> decision.MedianInterval:
    """The median over the row's processes and its interval at the level it achieves."""
    return decision.median_interval(process_values(row, column, estimate))


def with_process_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """Every ok row with :data:`PROCESS_COLUMNS` (blank for rows that measured nothing)."""
    if frame.empty:
        return frame
    found = [
        process_interval(row).fields(PROCESS_PREFIX) if row.get("status", "ok") == "ok" else {}
        for row in frame.to_dict("records")
    ]
    out = frame.copy()
    for column in PROCESS_COLUMNS:
        out[column] = [fields.get(column, math.nan) for fields in found]
    return out


def run_values(row: pd.Series | dict[str, Any], column: str) -> list[float]:
    """A per-job probe's value of each run a row stands for (:data:`MEDIAN_OF_RUNS`): the
    runs' values where the row pools several (``<column>_by_run``), else the row's own."""
    by_run = decoded(row.get(f"{column}{BY_RUN}"))
    if isinstance(by_run, list):
        return [float(v) for v in by_run if isinstance(v, int | float) and math.isfinite(v)]
    own = number(row.get(column))
    return [own] if math.isfinite(own) else []


def run_count(row: pd.Series | dict[str, Any]) -> int:
    runs = number(row.get("runs"))
    return int(runs) if runs >= 1 else 1


def pooled_runs(runs: pd.DataFrame, *pools: tuple[str, str, str]) -> pd.Series:
    """Several runs of one setting as one row (module docstring); ``pools`` the values that
    pool, each ``(values, estimate, prefix)``. A pool that a run has no values of keeps the
    latest run's; one run is returned as it is (``runs``: its own count, 1 if it has none)."""
    stamps = [_text(t) for t in runs["timestamp"]] if "timestamp" in runs else [""] * len(runs)
    row = runs.iloc[max(range(len(runs)), key=stamps.__getitem__)].copy()
    row["runs"] = sum(run_count(r) for _, r in runs.iterrows())
    if len(runs) == 1:
        return row
    for column, estimate, prefix in pools:
        groups = [g for _, run in runs.iterrows() for g in value_groups(run, column)]
        if not groups or not all(groups):
            continue
        pooled = decision.median_interval(statistics.median(g) for g in groups)
        row[estimate] = pooled.median
        row[f"{prefix}ci_low"] = pooled.low
        row[f"{prefix}ci_high"] = pooled.high
        row[f"{prefix}ci_level"] = pooled.level
        row[f"{prefix}ci_method"] = (
            f"order statistics of {pooled.n} processes' medians, achieved level"
        )
        row[column] = json.dumps([v for g in groups for v in g])
        row[f"{column}{BY_RUN}"] = json.dumps(groups)
        # A run's own per-process columns would otherwise speak for the latest run alone.
        if f"{column}{BY_PROCESS}" in row.index:
            row[f"{column}{BY_PROCESS}"] = json.dumps(groups)
        if f"{PER_PROCESS}{column}" in row.index:
            row[f"{PER_PROCESS}{column}"] = json.dumps([statistics.median(g) for g in groups])
        if column == THROUGHPUT_POOL[0]:
            _spread(row, [v for g in groups for v in g], pooled)
    for column in MEDIAN_OF_RUNS:
        if column in runs:
            each = [v for _, run in runs.iterrows() for v in run_values(run, column)]
            row[column] = statistics.median(each) if each else math.nan
            row[f"{column}{BY_RUN}"] = json.dumps(each)
    if "minor_faults_per_image" in runs:
        # Whether a setting is allocator-bound is asked of its most-faulting run: processes of
        # one setting fault differently under glibc as shipped (their allocator histories
        # differ), and one run beyond the allowance says the rate depends on the process.
        most = [row_faults(r) for _, r in runs.iterrows()]
        row[MOST_FAULTS] = max((f for f in most if not math.isnan(f)), default=math.nan)
    if "under_load" in runs:  # measured under load if any run was (augbench.measuring.quietness)
        recorded = [v for v in runs["under_load"] if v is not None and _text(v) != ""]
        loud = runs[[is_true(v) for v in runs["under_load"]]]
        row["under_load"] = not loud.empty if recorded else None
        reasons = map(_text, loud["load_reason"]) if "load_reason" in loud else []
        row["load_reason"] = "; ".join(dict.fromkeys(r for r in reasons if r))
        for column in ("other_load_cores", "steal_fraction"):
            if column in runs:
                row[column] = pd.to_numeric(runs[column], errors="coerce").max()
    if "source_file" in runs:
        row["source_file"] = "; ".join(sorted(map(_text, runs["source_file"])))
    return row


def _spread(row: pd.Series, pooled: list[float], interval: decision.MedianInterval) -> None:
    """The throughputs' mean, spread and precision over every run's values."""
    mean = statistics.fmean(pooled)
    std = statistics.stdev(pooled) if len(pooled) > 1 else 0.0
    row["mean_throughput"] = mean
    row["std_throughput"] = std
    row["cv_throughput"] = std / mean if mean > 0 else math.nan
    wider = max(interval.high - interval.median, interval.median - interval.low)
    row["relative_ci"] = wider / interval.median if interval.median > 0 else math.inf
    row["num_successful_runs"] = len(pooled)


def pool_job_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of one job's runs (result files whose paths differ only by the run) as one row per
    recipe: the ok runs pooled (:func:`pooled_runs` over :data:`POOLS`), the others named with
    their reasons in ``runs_not_ok``; where no run is ok, the latest run's row. Every row says
    how many runs it pools (``runs``) and carries :data:`PROCESS_COLUMNS`. Rows whose files have
    no runs are otherwise returned as they are."""
    if frame.empty or "source_file" not in frame.columns:
        return with_process_intervals(frame)
    split = [regimes.without_run(_text(p)) for p in frame["source_file"]]
    job = pd.Series([path for path, _ in split], index=frame.index)
    run = pd.Series([number for _, number in split], index=frame.index)
    if (run == 1).all():
        return with_process_intervals(frame.assign(runs=1))
    out: list[pd.Series] = []
    for _, group in frame.groupby([job, frame["transform"].astype(str)], sort=False):
        if len(group) == 1 or group["source_file"].duplicated().any():
            for _, row in group.iterrows():  # one run, or not one row per file: as they are
                out.append(pd.concat([row, pd.Series({"runs": 1})]))
            continue
        in_order = run[group.index].sort_values(kind="stable")
        out.append(_pooled_job(group.loc[in_order.index], in_order))
    pooled = pd.DataFrame(out)
    pooled["runs"] = pooled["runs"].fillna(1).astype(int)
    pooled = pooled[[*frame.columns, *(c for c in pooled.columns if c not in frame.columns)]]
    return with_process_intervals(pooled)


def _pooled_job(group: pd.DataFrame, run: pd.Series) -> pd.Series:
    ok = group[group["status"] == "ok"]
    if ok.empty:
        row = pooled_runs(group)
    else:
        row = pooled_runs(ok, *(p for p in POOLS if p[0] in ok.columns))
    failed = group[group["status"] != "ok"]
    if not ok.empty and not failed.empty:
        row[NOT_OK] = "; ".join(
            f"run {run[i]}: {r['status']} ({_text(r.get('reason')) or 'no reason recorded'})"
            for i, r in failed.iterrows()
        )
    return row
