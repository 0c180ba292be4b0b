"""Resolution sweep: how each library's cost per image grows with the pixels per image.

Rows of one (machine, regime, scope, workers, batch size, variant, library, transform) measured at
several resolutions (the ``resolution`` column, docs/resolution.md) form one series. Cost
proportional to pixels means seconds per image grow like pixels per image: a slope of 1 of
log(s/img) over log(megapixels/img), a flat line of megapixels per second. Each interval between
two measured resolutions gets its local slope; an interval where the slope exceeds 1 by more than
``policy.RESOLUTION_SLOPE_TOLERANCE`` and by more than the two rows' own 95 % confidence intervals
allow is where the cost "grows faster than pixels".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from augbench.analysis.groups import normalized
from augbench.policy import RESOLUTION_SLOPE_TOLERANCE
from augbench.result_format import MEDIAN_THROUGHPUT

SERIES_COLUMNS: tuple[str, ...] = (
    "machine",
    "base_dataset",
    "regime",
    "scope",
    "workers",
    "batch_size",
    "variant",
    "library",
    "transform",
)

SCALING_COLUMNS: tuple[str, ...] = (
    *SERIES_COLUMNS,
    "resolutions_ok",
    "not_ok",
    "img_per_s",
    "megapixels_per_s",
    "slope",
    "interval_slopes",
    "faster_than_pixels_between",
    "grows_faster_than_pixels",
    "slope_tolerance",
)


def _base_dataset(row: pd.Series) -> str:
    """The dataset a derived one was resized from: its key without ``-r<R>-<hash>``."""
    name = str(row.get("dataset_name") or row["dataset"])
    suffix = f"-r{int(row['resolution'])}"
    return name[: -len(suffix)] if name.endswith(suffix) else name


def swept_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the resolution sweep (a resolution recorded), with numeric helper columns."""
    if "resolution" not in frame.columns or frame.empty:
        return frame.iloc[0:0].assign(base_dataset=[], _res=[], _mp=[], _rci=[])
    data = normalized(frame)
    data["_res"] = pd.to_numeric(data["resolution"], errors="coerce")
    data = data[data["_res"].notna()].copy()
    data["_mp"] = pd.to_numeric(data.get("megapixels"), errors="coerce")
    rci = data["relative_ci"] if "relative_ci" in data.columns else pd.Series(np.nan, data.index)
    data["_rci"] = pd.to_numeric(rci, errors="coerce").fillna(0.0)
    data["base_dataset"] = data.apply(_base_dataset, axis=1) if len(data) else pd.Series(dtype=str)
    return data


def interval_slope(mp_a: float, thr_a: float, mp_b: float, thr_b: float) -> float:
    """d log(seconds per image) / d log(pixels per image) between two points."""
    return math.log(thr_a / thr_b) / math.log(mp_b / mp_a)


def slope_uncertainty(rci_a: float, rci_b: float, mp_a: float, mp_b: float) -> float:
    """How far an interval's slope can move within the two rows' relative 95 % CIs (a relative
    CI r moves log(throughput) by about r)."""
    return (rci_a + rci_b) / abs(math.log(mp_b / mp_a))


def fit_slope(mp: list[float], thr: list[float]) -> float:
    """Least-squares slope of log(s/img) over log(MP/img) across every ok resolution."""
    x = np.log(np.asarray(mp, dtype=float))
    y = -np.log(np.asarray(thr, dtype=float))
    return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 and np.ptp(x) > 0 else math.nan


def _text(row: pd.Series) -> bool:
    reason = row.get("reason")
    return isinstance(reason, str) and bool(reason)


def _num(value: Any, fmt: str) -> str:
    return format(float(value), fmt)


def scaling_table(
    frame: pd.DataFrame, tolerance: float = RESOLUTION_SLOPE_TOLERANCE
) -> pd.DataFrame:
    """One row per series: its ok resolutions, the not-ok ones with their status and reason,
    img/s and MP/s per resolution, the fitted and per-interval slopes, and the flag."""
    data = swept_rows(frame)
    records: list[dict[str, Any]] = []
    for key, rows in data.groupby(list(SERIES_COLUMNS), sort=True, dropna=False):
        rows = rows.sort_values("_res")
        ok = rows[(rows["status"] == "ok") & (rows[MEDIAN_THROUGHPUT] > 0) & (rows["_mp"] > 0)]
        not_ok = rows[~rows.index.isin(ok.index)]
        res = [int(r) for r in ok["_res"]]
        mp = [float(v) for v in ok["_mp"]]
        thr = [float(v) for v in ok[MEDIAN_THROUGHPUT]]
        rci = [float(v) for v in ok["_rci"]]
        intervals, faster = [], []
        for i in range(len(res) - 1):
            slope = interval_slope(mp[i], thr[i], mp[i + 1], thr[i + 1])
            margin = max(tolerance, slope_uncertainty(rci[i], rci[i + 1], mp[i], mp[i + 1]))
            intervals.append(f"{res[i]}-{res[i + 1]}: {slope:.2f}")
            if slope > 1 + margin:
                faster.append(f"{res[i]}-{res[i + 1]}")
        record = dict(zip(SERIES_COLUMNS, key, strict=True))
        record.update(
            resolutions_ok=";".join(str(r) for r in res),
            not_ok="; ".join(
                f"{int(r['_res'])}: {r['status']}" + (f" ({r['reason']})" if _text(r) else "")
                for _, r in not_ok.iterrows()
            ),
            img_per_s=";".join(f"{r}: {_num(t, '.1f')}" for r, t in zip(res, thr, strict=True)),
            megapixels_per_s=";".join(
                f"{r}: {_num(t * m, '.2f')}" for r, t, m in zip(res, thr, mp, strict=True)
            ),
            slope=fit_slope(mp, thr),
            interval_slopes="; ".join(intervals),
            faster_than_pixels_between=";".join(faster),
            # Unknown (blank) with fewer than two ok resolutions: nothing to compare.
            grows_faster_than_pixels=bool(faster) if len(res) >= 2 else None,
            slope_tolerance=tolerance,
        )
        records.append(record)
    return pd.DataFrame.from_records(records, columns=list(SCALING_COLUMNS))
