"""Regression comparison of two result sets, row by row, within one machine unless asked.

Besides the flag (the change of the medians against a threshold), each row pair carries the
change's interval over both rows' process values and its verdict (augbench.decision): whether the
new row is decidedly faster or slower than the base, at the level the processes achieve.
"""

from __future__ import annotations

import math

import pandas as pd

from augbench import decision
from augbench.analysis.groups import normalized
from augbench.analysis.runs import process_values
from augbench.analysis.tidy import GROUP_COLUMNS
from augbench.result_format import MEDIAN_THROUGHPUT

DEFAULT_THRESHOLD = 0.10

COMPARE_COLUMNS = (
    *GROUP_COLUMNS,
    "base_machine",
    "new_machine",
    "library",
    "transform",
    "base_status",
    "new_status",
    "base_median",
    "new_median",
    "change",
    "intervals_overlap",
    "flag",
    "is_regression",
    # new / base over both rows' process values (augbench.decision.ratio_interval) and its
    # verdict: faster, slower, no clear winner, not decided (too few processes for the level).
    "change_low",
    "change_high",
    "change_level",
    "change_verdict",
)


class MachineMismatch(ValueError):
    """The two result sets share no machine and a cross-machine comparison was not asked for."""


def _keys(cross_machine: bool) -> list[str]:
    group = [c for c in GROUP_COLUMNS if not (cross_machine and c == "machine")]
    return [*group, "library", "transform"]


def _prepare(frame: pd.DataFrame, side: str, keys: list[str]) -> pd.DataFrame:
    data = normalized(frame)
    dup = data.duplicated(keys, keep=False)
    if dup.any():
        example = data[dup].iloc[0]
        where = ", ".join(f"{k}={example[k]}" for k in keys)
        hint = " (several machines: compare one machine at a time)" if "machine" not in keys else ""
        raise ValueError(f"{side} results have more than one row for {where}{hint}")
    out = data[keys].copy()
    out[f"{side}_machine"] = data["machine"]
    out[f"{side}_status"] = data["status"]
    out[f"{side}_median"] = data[MEDIAN_THROUGHPUT]
    out[f"{side}_std"] = data["std_throughput"]
    out[f"{side}_processes"] = [
        process_values(row) if row["status"] == "ok" else [] for _, row in data.iterrows()
    ]
    return out


def compare(
    base: pd.DataFrame,
    new: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    cross_machine: bool = False,
) -> pd.DataFrame:
    """Per row: statuses, medians, relative change new/base - 1, and a flag.

    Flags: regression / improvement (|change| beyond ``threshold``), within_threshold,
    status_changed, only_in_base, only_in_new. ``is_regression`` is true for a regression and for
    a row that was ok in base and is not ok in new.
    """
    if threshold <= 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    base_machines = set(normalized(base)["machine"]) if len(base) else set()
    new_machines = set(normalized(new)["machine"]) if len(new) else set()
    if not cross_machine and base_machines and new_machines and not base_machines & new_machines:
        raise MachineMismatch(
            f"base results are from machine(s) {sorted(base_machines)}, new results from "
            f"{sorted(new_machines)}: rows are only compared within one machine; pass "
            "--cross-machine to compare across machines explicitly"
        )
    keys = _keys(cross_machine)
    left = _prepare(base, "base", keys)
    right = _prepare(new, "new", keys)
    merged = left.merge(right, on=keys, how="outer", indicator=True)
    records = []
    for _, row in merged.iterrows():
        rec = {c: row.get(c) for c in COMPARE_COLUMNS if c in row.index}
        if cross_machine:
            rec["machine"] = f"{row.get('base_machine')} -> {row.get('new_machine')}"
        change = math.nan
        overlap = math.nan
        decided = _decided_change(row)
        if row["_merge"] == "left_only":
            flag = "only_in_base"
        elif row["_merge"] == "right_only":
            flag = "only_in_new"
        elif row["base_status"] != row["new_status"]:
            flag = "status_changed"
        elif row["base_status"] != "ok":
            flag = "within_threshold"  # both not ok with the same status: nothing measured
        else:
            change = float(row["new_median"]) / float(row["base_median"]) - 1.0
            sb = 0.0 if pd.isna(row["base_std"]) else float(row["base_std"])
            sn = 0.0 if pd.isna(row["new_std"]) else float(row["new_std"])
            overlap = bool(
                row["new_median"] - sn <= row["base_median"] + sb
                and row["base_median"] - sb <= row["new_median"] + sn
            )
            if change < -threshold:
                flag = "regression"
            elif change > threshold:
                flag = "improvement"
            else:
                flag = "within_threshold"
        lost = (
            row.get("base_status") == "ok" and row["_merge"] == "both" and row["new_status"] != "ok"
        )
        rec.update(
            change=change,
            intervals_overlap=overlap,
            flag=flag,
            is_regression=bool(flag == "regression" or lost),
            **decided,
        )
        records.append(rec)
    out = pd.DataFrame.from_records(records, columns=list(COMPARE_COLUMNS))
    return out.sort_values([*keys]).reset_index(drop=True)


def _decided_change(row: pd.Series) -> dict[str, object]:
    """new / base with its interval and verdict where both rows measured positive rates."""
    empty = {"change_low": math.nan, "change_high": math.nan, "change_level": math.nan}
    if row["_merge"] != "both":
        return {**empty, "change_verdict": ""}
    new, base = row.get("new_processes"), row.get("base_processes")
    values = [*(new or []), *(base or [])]
    if not new or not base or any(v <= 0 for v in values):
        return {**empty, "change_verdict": decision.NOT_DECIDED}
    r = decision.ratio_interval(new, base)
    return {
        "change_low": r.low,
        "change_high": r.high,
        "change_level": r.level,
        "change_verdict": decision.verdict(r),
    }


def changed(table: pd.DataFrame) -> pd.DataFrame:
    """Rows worth a reader's attention: everything not within the threshold."""
    return table[table["flag"] != "within_threshold"]
