"""DataLoader-regime views: worker scaling and data starvation.

Both read the tidy table (``augbench.analysis.tidy``) and keep every row whatever its status, with
the numbers blank (NaN) where a row is not ``ok``, so a missing measurement is visible as such.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis.cells import is_true
from augbench.paired import composition_expectation
from augbench.policy import (
    BARE_LOOP_MIN_RATIO,
    DECODE_COMPOSITION_GOAL,
    TRANSPORT_BOUND_FRACTION,
)
from augbench.result_format import MEDIAN_THROUGHPUT

# One recipe of one library in one comparable setting; ``workers`` varies inside it.
SERIES_COLUMNS: tuple[str, ...] = (
    "machine",
    "dataset",
    "regime",
    "scope",
    "batch_size",
    "variant",
    # What made the samples in parallel and what decoded them (augbench.workload.loaders and
    # .decoders): a series is one loader's and one decoder's.
    "loader",
    "decoder",
    "library",
    "transform",
)

SCALING_COLUMNS: tuple[str, ...] = (
    *SERIES_COLUMNS,
    "recipe",
    "workers",
    "status",
    "reason",
    MEDIAN_THROUGHPUT,
    "throughput_w0",
    "throughput_w1",
    "speedup_vs_w0",
    "speedup_vs_w1",
    "parallel_efficiency",
    "transport_throughput",
    "transport_throughput_w1",
    "fraction_of_transport",
    "transport_bound",
    "transport_parallel_efficiency",
    "regime_vs_bare",
    "below_bare_loop",
)

# Baseline columns of every cpu_dataloader row in the tidy table (docs/cpu_dataloader.md). The
# engine measures the first group per job; ``add_baselines`` derives the rest.
MEASURED_BASELINE_COLUMNS: tuple[str, ...] = (
    "bare_loop_throughput",
    "bare_loop_throughputs",
    "regime_vs_bare",
    "transport_throughput",
    "transport_throughputs",
    "decode_floor_throughput",
    "decode_floor_throughputs",
    "decode_floor_processes",
    "regime_vs_bare_pairs",
    "regime_vs_bare_min",
    "regime_vs_bare_max",
    "decode_composition_pairs",
    "decode_composition_min",
    "decode_composition_max",
)
DERIVED_BASELINE_COLUMNS: tuple[str, ...] = (
    "below_bare_loop",
    "fraction_of_transport",
    "transport_bound",
    "memory_row_throughput",
    "memory_row_source_file",
    "decode_expected_throughput",
    "decode_composition_ratio",
    "decode_composition_source",
)
# Where a decode row's composition terms came from (``decode_composition_source``).
SAME_JOB = "same_job"  # measured by the decode job itself, interleaved with its epochs
JOINED = "memory_row_of_another_job"  # fallback for files without them: joined across jobs
BASELINE_COLUMNS = (*MEASURED_BASELINE_COLUMNS, *DERIVED_BASELINE_COLUMNS)

# A decode-scope row and the memory-scope row it composes with: same everything but the scope.
_PAIR_KEYS: tuple[str, ...] = (
    "machine",
    "dataset",
    "num_images",
    "batch_size",
    "variant",
    "library",
    "transform",
    "workers",
)


def _num(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(math.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce")


def decode_expectation(decode_floor: float, memory_row: float) -> float:
    """Decode-scope throughput expected when decode and the memory-scope recipe simply add up
    (``augbench.paired.composition_expectation``: 1 / (1/floor + 1/memory))."""
    return composition_expectation(decode_floor, memory_row)


def add_baselines(tidy: pd.DataFrame, regime: str = "cpu_dataloader") -> pd.DataFrame:
    """The tidy table with every baseline column; derived ones filled for ``regime`` rows.

    - ``below_bare_loop``: ok row with regime_vs_bare < policy.BARE_LOOP_MIN_RATIO;
    - ``fraction_of_transport`` = median / transport_throughput; ``transport_bound`` when it is at
      least policy.TRANSPORT_BOUND_FRACTION;
    - decode-scope rows: the composition terms. A decode job of this version measures them
      itself (the same recipe on pre-decoded images and the decode floor, interleaved with its
      epochs; ``decode_composition_source`` = ``same_job``): kept as measured, and
      ``memory_row_source_file`` is the row's own file. For other files (older or foreign), the
      fallback joins the memory-scope row of the same machine, dataset, library, recipe, workers
      and batch size (source ``memory_row_of_another_job``, file in ``memory_row_source_file``):
      ``decode_expected_throughput`` (``decode_expectation``) and ``decode_composition_ratio`` =
      median / expected.
    """
    frame = tidy.copy()
    for column in BASELINE_COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    if frame.empty:
        return frame
    mine = (frame["regime"] == regime).to_numpy()
    ok = mine & (frame["status"] == "ok").to_numpy()
    median = _num(frame, MEDIAN_THROUGHPUT)
    ratio = _num(frame, "regime_vs_bare")
    transport = _num(frame, "transport_throughput")
    fraction = (median / transport).where(ok & (transport > 0))
    frame["fraction_of_transport"] = fraction
    frame["transport_bound"] = [
        bool(f >= TRANSPORT_BOUND_FRACTION) if not math.isnan(f) else None for f in fraction
    ]
    frame["below_bare_loop"] = [
        bool(r < BARE_LOOP_MIN_RATIO) if is_ok and not math.isnan(r) else None
        for is_ok, r in zip(ok, ratio, strict=True)
    ]
    keys = [k for k in _PAIR_KEYS if k in frame.columns]
    memory = frame[ok & (frame["scope"] == "memory").to_numpy()]
    lookup = {
        tuple(row[k] for k in keys): (float(row[MEDIAN_THROUGHPUT]), row.get("source_file"))
        for _, row in memory.iterrows()
    }
    floor = _num(frame, "decode_floor_throughput")
    in_job = (
        frame["decode_composition_source"].eq(SAME_JOB)
        & _num(frame, "decode_composition_ratio").notna()
    )
    expected_col, memory_col, source_col, ratio_col, origin_col = [], [], [], [], []
    for index, row in frame.iterrows():
        found = lookup.get(tuple(row[k] for k in keys)) if row["scope"] == "decode" else None
        is_decode_ok = bool(ok[frame.index.get_loc(index)]) and row["scope"] == "decode"
        if is_decode_ok and in_job.loc[index]:
            memory_col.append(float(row["memory_row_throughput"]))
            source_col.append(row.get("source_file"))
            expected_col.append(float(row["decode_expected_throughput"]))
            ratio_col.append(float(row["decode_composition_ratio"]))
            origin_col.append(SAME_JOB)
            continue
        origin_col.append(JOINED if found is not None and is_decode_ok else None)
        if found is None or not is_decode_ok:
            memory_col.append(math.nan if found is None else found[0])
            source_col.append(None if found is None else found[1])
            expected_col.append(math.nan)
            ratio_col.append(math.nan)
            continue
        expected = decode_expectation(float(floor.loc[index]), found[0])
        memory_col.append(found[0])
        source_col.append(found[1])
        expected_col.append(expected)
        ratio_col.append(float(median.loc[index]) / expected if expected > 0 else math.nan)
    frame["memory_row_throughput"] = memory_col
    frame["memory_row_source_file"] = source_col
    frame["decode_expected_throughput"] = expected_col
    frame["decode_composition_ratio"] = ratio_col
    frame["decode_composition_source"] = origin_col
    return frame


def baseline_exceptions(tidy: pd.DataFrame) -> pd.DataFrame:
    """Rows the summary flags: regime_vs_bare below policy, or (the cheapest recipe of a library
    in a decode setting) a decode composition ratio below policy."""
    frame = add_baselines(tidy)
    part = frame[(frame["regime"] == "cpu_dataloader") & (frame["status"] == "ok")]
    records = []
    for _, row in part.iterrows():
        if is_true(row["below_bare_loop"]):
            records.append(
                {
                    **{k: row[k] for k in ("machine", "scope", "workers", "library", "transform")},
                    "check": "regime_vs_bare",
                    "value": float(row["regime_vs_bare"]),
                    "goal": f">= {BARE_LOOP_MIN_RATIO}",
                }
            )
    for _, cheapest in cheapest_decode_rows(part).iterrows():
        if cheapest["_ratio"] < DECODE_COMPOSITION_GOAL:
            records.append(
                {
                    **{
                        k: cheapest[k]
                        for k in ("machine", "scope", "workers", "library", "transform")
                    },
                    "check": "decode_composition_ratio (cheapest recipe)",
                    "value": float(cheapest["_ratio"]),
                    "goal": f">= {DECODE_COMPOSITION_GOAL}",
                }
            )
    columns = ["machine", "scope", "workers", "library", "transform", "check", "value", "goal"]
    return pd.DataFrame.from_records(records, columns=columns)


# The recipe the composition goal is stated for: the catalog's plain crop, RandomCrop224 +
# Normalize + ToTensor, the least work any recipe does after decoding.
CHEAPEST_TRANSFORM = "RandomCrop224"


def cheapest_decode_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Each library's cheapest ok decode row per setting (machine, dataset, workers, batch size,
    variant) with a composition ratio, in ``_ratio``: the ``CHEAPEST_TRANSFORM`` row where the
    setting measured it, else the row with the highest memory-scope throughput (a noisy proxy:
    on a loaded machine a heavier recipe's companion epoch can come out faster)."""
    decode = rows[(rows["scope"] == "decode") & (rows["status"] == "ok")].copy()
    decode["_memory"] = _num(decode, "memory_row_throughput")
    decode["_ratio"] = _num(decode, "decode_composition_ratio")
    decode = decode[decode["_memory"].notna() & decode["_ratio"].notna()]
    group_keys = ["machine", "dataset", "library", "workers", "batch_size", "variant"]
    picked = []
    for _, group in decode.groupby(group_keys, dropna=False, sort=True):
        named = group[group["transform"] == CHEAPEST_TRANSFORM]
        picked.append(named.index[0] if len(named) else group["_memory"].idxmax())
    return decode.loc[picked]


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
    "transport_throughput",
    "transport_fed_ratio",
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
    return float(match[MEDIAN_THROUGHPUT].iloc[0]) if len(match) else math.nan


def _recipe(row: pd.Series) -> str:
    value = row.get("recipe")
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def with_loader(part: pd.DataFrame) -> pd.DataFrame:
    """``part`` with its ``loader`` and ``decoder`` columns filled ("" where a table has none)."""
    filled = {}
    for col in ("loader", "decoder"):
        found = part[col] if col in part.columns else pd.Series(None, index=part.index)
        filled[col] = found.astype(object).where(found.notna(), "").astype(str)
    return part.assign(**filled)


def worker_scaling(tidy: pd.DataFrame, regime: str = "cpu_dataloader") -> pd.DataFrame:
    """Throughput versus workers per library, recipe and scope, with parallel efficiency."""
    part = with_loader(add_baselines(tidy[tidy["regime"] == regime]))
    records: list[dict[str, Any]] = []
    for key, group in part.groupby(list(SERIES_COLUMNS), dropna=False, sort=True):
        thr0 = _ok_throughput(group, 0)
        thr1 = _ok_throughput(group, 1)
        transport_w1 = _transport(group, 1)
        for _, row in group.sort_values("workers").iterrows():
            workers = int(row["workers"])
            ok = row["status"] == "ok"
            thr = float(row[MEDIAN_THROUGHPUT]) if ok else math.nan
            record = dict(zip(SERIES_COLUMNS, key, strict=True))
            record.update(
                recipe=_recipe(row),
                workers=workers,
                status=row["status"],
                reason="" if ok else row["reason"],
                throughput_w0=thr0,
                throughput_w1=thr1,
                speedup_vs_w0=thr / thr0 if thr0 > 0 else math.nan,
                speedup_vs_w1=thr / thr1 if thr1 > 0 else math.nan,
                parallel_efficiency=parallel_efficiency(thr, workers, thr1),
                transport_throughput=_float(row["transport_throughput"]),
                transport_throughput_w1=transport_w1,
                fraction_of_transport=_float(row["fraction_of_transport"]),
                transport_bound=row["transport_bound"],
                transport_parallel_efficiency=parallel_efficiency(
                    _float(row["transport_throughput"]), workers, transport_w1
                ),
                regime_vs_bare=_float(row["regime_vs_bare"]) if ok else math.nan,
                below_bare_loop=row["below_bare_loop"],
            )
            record[MEDIAN_THROUGHPUT] = thr
            records.append(record)
    return pd.DataFrame.from_records(records, columns=list(SCALING_COLUMNS))


def _float(value: Any) -> float:
    number = pd.to_numeric(value, errors="coerce")
    return math.nan if number is None or pd.isna(number) else float(number)


def _transport(group: pd.DataFrame, workers: int) -> float:
    match = _num(group[group["workers"] == workers], "transport_throughput").dropna()
    return float(match.iloc[0]) if len(match) else math.nan


def starvation(
    tidy: pd.DataFrame, targets: list[dict[str, Any]], regime: str = "cpu_dataloader"
) -> pd.DataFrame:
    """Does each library/recipe/worker count keep an accelerator fed?

    ``fed_ratio`` = input throughput / the target's required images/s; ``keeps_up`` when >= 1.
    ``transport_fed_ratio`` is the same for the job's transport baseline: below 1, the loader
    itself (the recipe's tail alone) starves the target, whatever the library.
    ``min_workers_keeping_up`` is the smallest measured worker count of the same series that
    keeps up (blank when none does).
    """
    part = with_loader(add_baselines(tidy[tidy["regime"] == regime]))
    records: list[dict[str, Any]] = []
    for target in targets:
        required = float(target["images_per_second"])
        if not required > 0:
            raise ValueError(f"required throughput of {target.get('name')!r} must be > 0")
        for key, group in part.groupby(list(SERIES_COLUMNS), dropna=False, sort=True):
            ok = group[group["status"] == "ok"]
            fed = ok[ok[MEDIAN_THROUGHPUT] >= required]
            min_workers = int(fed["workers"].min()) if len(fed) else None
            for _, row in group.sort_values("workers").iterrows():
                is_ok = row["status"] == "ok"
                thr = float(row[MEDIAN_THROUGHPUT]) if is_ok else math.nan
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
                    # Below 1: the loader alone (no augmentation) cannot feed the target here.
                    transport_throughput=_float(row["transport_throughput"]),
                    transport_fed_ratio=_float(row["transport_throughput"]) / required,
                    target_source=target.get("source", ""),
                )
                records.append(record)
    return pd.DataFrame.from_records(records, columns=list(STARVATION_COLUMNS))
