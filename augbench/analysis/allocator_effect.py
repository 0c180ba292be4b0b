"""The allocator effect: each row's time under an allocator setting, against glibc's.

With more than one setting in config ``allocators`` (docs/allocator.md), every timed job runs
once per setting: ``glibc`` (the default, as shipped), ``glibc-steady`` (glibc with its mmap and
trim thresholds raised), ``mimalloc`` and ``jemalloc`` (preloaded). A setting other than glibc
joins its rows' ``variant`` (``allocator <setting>``), so they are never ranked against glibc's;
this table puts them side by side instead.

:func:`table` pairs every row of a setting other than glibc with the glibc row of the same work:
same machine, regime, scope, library, transform, step (a pipeline's per-step rows), workers,
batch size, variant without the allocator tag and dataset. Its ratio is

    time_vs_glibc = glibc median throughput / setting median throughput
                  = setting time per image / glibc time per image

so **below 1 the setting is faster** (0.71: the same work takes 29 % less time per image under
the setting), above 1 it is slower, 1 is no effect. It is a ratio of two medians measured in
separate jobs: its interval (``ratio_low``, ``ratio_high``) combines the two rows' intervals of
the median (augbench.intervals.ratio_interval).

An effect is called real (``effect``: faster or slower) only where the whole interval of the
ratio lies beyond the **null spread**: the spread of the ratio over the pairs whose glibc row
does not fault (``null_rows``; no effect is expected there, so their spread is what noise and
drift between the jobs give), per setting: the 95th percentile of |log ratio| over those pairs
(at least ``MIN_NULL_PAIRS`` of them; with fewer, the spread is unknown and no effect is called).
Everything else is ``none`` (within noise) or ``unknown``.

Where glibc faulted more pages per image in the timed window than one output image holds
(``glibc_allocator_bound``, augbench.analysis.faults), glibc gave the buffers back to the kernel
and faulted them in again: those are the rows a setting that keeps them is expected to speed up.

A setting row that measured nothing (skipped: e.g. jemalloc not installed here; error: the
preload did not load; unsupported; early_stopped) stays in the table with its status and reason
and no ratio; so does an ok row without an ok glibc row of the same work, its reason saying so.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis.cells import is_true, number
from augbench.analysis.faults import is_bound, row_faults
from augbench.analysis.groups import library_order, regime_order
from augbench.analysis.tidy import DEFAULT_ALLOCATOR, variant_without_allocator
from augbench.intervals import Interval, ratio_interval
from augbench.policy import ALLOCATOR_EFFECT_MAX_CI, ALLOCATOR_NULL_QUANTILE, MIN_NULL_PAIRS
from augbench.result_format import MEDIAN_THROUGHPUT

# What makes two rows the same work (besides the allocator setting).
KEY_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "scope",
    "library",
    "transform",
    "step",
    "step_index",
    "workers",
    "batch_size",
    "variant",
    "dataset",
)

COLUMNS: tuple[str, ...] = (
    *KEY_COLUMNS,
    "resolution",
    "megapixels",
    "setting",
    "allocator",
    "status",
    "reason",
    "glibc_status",
    "glibc_ms_per_image",
    "setting_ms_per_image",
    "time_vs_glibc",
    "ratio_low",
    "ratio_high",
    "ratio_level",
    "null_spread",
    "effect",
    "glibc_relative_ci",
    "setting_relative_ci",
    "precise",
    "glibc_minor_faults_per_image",
    "setting_minor_faults_per_image",
    "output_pages",
    "glibc_allocator_bound",
)

NO_COUNTERPART = (
    "no glibc row of the same work (machine, regime, scope, library, transform, step, workers, "
    "batch size, variant and dataset) to compare with"
)


def setting_column(frame: pd.DataFrame) -> pd.Series:
    """Each row's allocator setting; glibc where the row does not say (older result files and
    other tools' files ran under the default allocator as far as they record)."""
    if "allocator_setting" not in frame.columns:
        return pd.Series(DEFAULT_ALLOCATOR, index=frame.index, dtype=object)
    values = frame["allocator_setting"].astype(object).where(frame["allocator_setting"].notna(), "")
    values = values.astype(str).str.strip()
    return values.where(values != "", DEFAULT_ALLOCATOR)


def base_variant(frame: pd.DataFrame) -> pd.Series:
    """Each row's variant without its allocator tag (tidy.variant_without_allocator)."""
    if "variant" not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    variants = frame["variant"].astype(object).where(frame["variant"].notna(), "").astype(str)
    return pd.Series(
        [
            variant_without_allocator(v, s)
            for v, s in zip(variants, setting_column(frame), strict=True)
        ],
        index=frame.index,
        dtype=object,
    )


def settings(frame: pd.DataFrame) -> list[str]:
    """The allocator settings of a tidy frame: glibc first (where present), then the others."""
    if frame.empty:
        return []
    present = set(setting_column(frame))
    return [DEFAULT_ALLOCATOR] * (DEFAULT_ALLOCATOR in present) + sorted(
        present - {DEFAULT_ALLOCATOR}
    )


def _key_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer():
            return str(int(value))
    return str(value)


def _cell(row: pd.Series, col: str) -> Any:
    value = row.get(col)
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _ms(row: pd.Series | None) -> float:
    if row is None or row.get("status") != "ok":
        return math.nan
    throughput = number(row.get(MEDIAN_THROUGHPUT))
    return 1000.0 / throughput if throughput > 0 else math.nan


def _time_interval(row: pd.Series | None) -> Interval:
    """A row's median time per image (ms) with its interval, from its throughput's."""
    ms = _ms(row)
    if row is None or math.isnan(ms):
        return Interval(math.nan, None, None, None, "", 0)
    low, high = number(row.get("ci_low")), number(row.get("ci_high"))
    level = number(row.get("ci_level"))
    return Interval(
        ms,
        1000.0 / high if high > 0 else None,
        1000.0 / low if low > 0 else None,
        None if math.isnan(level) else level,
        str(row.get("ci_method") or ""),
        int(number(row.get("num_successful_runs")) or 0)
        if not math.isnan(number(row.get("num_successful_runs")))
        else 0,
    )


def null_spreads(effect: pd.DataFrame) -> dict[str, float]:
    """Per setting: the spread of the ratio where no effect is expected (pairs whose glibc row
    does not fault), the ALLOCATOR_NULL_QUANTILE of |log time_vs_glibc|; NaN with fewer than
    MIN_NULL_PAIRS such pairs."""
    out: dict[str, float] = {}
    ratio = pd.to_numeric(effect["time_vs_glibc"], errors="coerce")
    quiet = effect["glibc_allocator_bound"].map(lambda v: v is False or str(v) == "False")
    for setting, rows in effect[ratio.notna() & (ratio > 0) & quiet].groupby("setting"):
        sizes = pd.to_numeric(rows["time_vs_glibc"]).map(lambda r: abs(math.log(r)))
        out[str(setting)] = (
            float(sizes.quantile(ALLOCATOR_NULL_QUANTILE))
            if len(sizes) >= MIN_NULL_PAIRS
            else math.nan
        )
    return out


def _effect(low: float, high: float, spread: float) -> str:
    """faster / slower where the ratio's whole interval lies beyond the null spread, none where
    it does not, unknown where the spread or the interval is not known."""
    if any(math.isnan(v) for v in (low, high, spread)):
        return "unknown"
    if high < math.exp(-spread):
        return "faster"
    if low > math.exp(spread):
        return "slower"
    return "none"


def _bound(row: pd.Series | None) -> bool | None:
    """glibc faulted more pages per image than its allowance (augbench.analysis.faults: one
    output's pages, two with DataLoader workers); None: not known."""
    if row is None or row.get("status") != "ok":
        return None
    return is_bound(row_faults(row), row.get("output_pages"), row.get("workers"))


def _precise(glibc_ci: Any, row: pd.Series) -> bool:
    """Both rows' relative 95 % CIs at most policy.ALLOCATOR_EFFECT_MAX_CI (a ratio of two
    imprecise medians can move 2x with nothing but noise)."""
    cis = (number(glibc_ci), number(row.get("relative_ci")))
    return all(not math.isnan(ci) and ci <= ALLOCATOR_EFFECT_MAX_CI for ci in cis)


def _reason(row: pd.Series, glibc: pd.Series | None, setting: str) -> str:
    """Why a pair has no ratio ("" where it has one)."""
    status = str(row.get("status"))
    if status != "ok":
        given = _cell(row, "reason")
        return str(given) if given else f"the {setting} row is {status} (no reason recorded)"
    if glibc is None:
        return NO_COUNTERPART
    if glibc.get("status") != "ok":
        given = _cell(glibc, "reason")
        return f"the glibc row is {glibc.get('status')}" + (f": {given}" if given else "")
    if math.isnan(_ms(row)) or math.isnan(_ms(glibc)):
        return "no median throughput to compare"
    return ""


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (work, setting other than glibc): both times per image, the ratio
    ``time_vs_glibc`` (< 1: faster with the setting), both rows' precision and page faults, the
    allocator in force under the setting (the proof it was applied), and where there is no ratio
    the reason. Empty (with the columns) where the frame has no setting other than glibc."""
    empty = pd.DataFrame(columns=list(COLUMNS))
    if frame.empty:
        return empty
    data = frame.copy()
    for col in KEY_COLUMNS:
        if col not in data.columns:
            data[col] = None
    data["_setting"] = setting_column(frame)
    data["variant"] = base_variant(frame)
    others = data[data["_setting"] != DEFAULT_ALLOCATOR]
    if others.empty:
        return empty
    keys = [tuple(_key_value(row[c]) for c in KEY_COLUMNS) for _, row in data.iterrows()]
    data["_key"] = keys
    baseline: dict[tuple[str, ...], pd.Series] = {}
    for _, row in data[data["_setting"] == DEFAULT_ALLOCATOR].iterrows():
        held = baseline.get(row["_key"])
        if held is None or (held.get("status") != "ok" and row.get("status") == "ok"):
            baseline[row["_key"]] = row  # an ok glibc row wins over a failed duplicate
    records = []
    for _, row in data.loc[others.index].iterrows():
        setting = str(row["_setting"])
        glibc = baseline.get(row["_key"])
        reason = _reason(row, glibc, setting)
        glibc_ms, setting_ms = _ms(glibc), _ms(row)
        ratio = (
            ratio_interval(_time_interval(row), _time_interval(glibc))
            if not reason
            else Interval(math.nan, None, None, None, "", 0)
        )
        pages = number(glibc.get("output_pages")) if glibc is not None else math.nan
        if math.isnan(pages):
            pages = number(row.get("output_pages"))
        records.append(
            {
                **{col: _cell(row, col) for col in KEY_COLUMNS},
                "resolution": _cell(row, "resolution")
                or (_cell(glibc, "resolution") if glibc is not None else None),
                "megapixels": _cell(row, "megapixels")
                or (_cell(glibc, "megapixels") if glibc is not None else None),
                "setting": setting,
                "allocator": _cell(row, "allocator") or "",
                "status": row.get("status"),
                "reason": reason,
                "glibc_status": glibc.get("status") if glibc is not None else "",
                "glibc_ms_per_image": glibc_ms,
                "setting_ms_per_image": setting_ms,
                "time_vs_glibc": setting_ms / glibc_ms if not reason else math.nan,
                "ratio_low": ratio.low if ratio.low is not None else math.nan,
                "ratio_high": ratio.high if ratio.high is not None else math.nan,
                "ratio_level": ratio.level if ratio.level is not None else math.nan,
                "glibc_relative_ci": number(glibc.get("relative_ci"))
                if glibc is not None
                else math.nan,
                "setting_relative_ci": number(row.get("relative_ci")),
                "precise": not reason
                and _precise(glibc.get("relative_ci") if glibc is not None else None, row),
                "glibc_minor_faults_per_image": number(glibc.get("minor_faults_per_image"))
                if glibc is not None
                else math.nan,
                "setting_minor_faults_per_image": number(row.get("minor_faults_per_image")),
                "output_pages": pages,
                "glibc_allocator_bound": _bound(glibc),
            }
        )
    out = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    # True, False or None (not known): Python values, whatever the mix.
    bound = [r["glibc_allocator_bound"] for r in records]
    out["glibc_allocator_bound"] = pd.Series(bound, index=out.index, dtype=object)
    spreads = null_spreads(whole_rows(out))
    out["null_spread"] = out["setting"].map(lambda s: spreads.get(str(s), math.nan))
    out["effect"] = [
        _effect(number(r["ratio_low"]), number(r["ratio_high"]), number(r["null_spread"]))
        if not r["reason"]
        else ""
        for _, r in out.iterrows()
    ]
    return _sorted(out)


def _sorted(out: pd.DataFrame) -> pd.DataFrame:
    """Stable order: regime (the matrix order), library (the figures' order), transform,
    setting; within those the order of the frame's rows (steps by their index)."""
    regimes = {r: i for i, r in enumerate(regime_order(out["regime"].dropna()))}
    libraries = {lib: i for i, lib in enumerate(library_order(out["library"].dropna()))}
    order = out.assign(
        _r=out["regime"].map(lambda r: regimes.get(str(r), len(regimes))),
        _l=out["library"].map(lambda lib: libraries.get(str(lib), len(libraries))),
        _t=out["transform"].astype(str),
        _s=out["setting"].astype(str),
        _i=pd.to_numeric(out["step_index"], errors="coerce").fillna(-1),
    ).sort_values(["_r", "_l", "_t", "_s", "_i"], kind="stable")
    return out.loc[order.index].reset_index(drop=True)


def compared(effect: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``table`` with a ratio (an ok row under the setting and under glibc)."""
    ratio = pd.to_numeric(effect["time_vs_glibc"], errors="coerce")
    return effect[ratio.notna() & (ratio > 0)]


def precise(effect: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``table`` with a ratio whose two rows are both precise (``precise`` column)."""
    pairs = compared(effect)
    return pairs[pairs["precise"].map(is_true)]


def whole_rows(effect: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``table`` that are not a pipeline's per-step rows."""
    step = effect["step"]
    return effect[step.isna() | (step.astype(str) == "")]


def figure_absent(frame: pd.DataFrame) -> str | None:
    """Why the ``allocator_effect`` figure has nothing to draw from a tidy frame; None when it
    has (augbench.analysis.figures.plan and the figure itself use this one test)."""
    if frame.empty:
        return "no result rows"
    present = settings(frame)
    if len(present) < 2:
        return (
            f"one allocator setting ({present[0]}) in these results; config allocators lists "
            "the settings to compare (docs/allocator.md)"
        )
    if DEFAULT_ALLOCATOR not in present:
        return f"no glibc rows to compare the allocator settings ({', '.join(present)}) with"
    effect = whole_rows(table(frame))
    if compared(effect).empty:
        counts = effect["status"].astype(str).value_counts()
        said = ", ".join(f"{n} {status}" for status, n in counts.items())
        return (
            f"no ok row under {', '.join(present[1:])} has an ok glibc row of the same work "
            f"(rows under those settings: {said})"
        )
    return None


def _fmt_ratio(value: float) -> str:
    return f"{value:.2f}"


def summary_lines(frame: pd.DataFrame, pipeline_rows: pd.DataFrame | None = None, most: int = 12):
    """Summary section where the results hold more than one allocator setting: per setting the
    null spread (where no effect is expected), how many pairs show a real effect, the median
    ratio; every effect called real with its interval (the first ``most``, the rest in the
    tables); every setting row without a ratio grouped by its reason."""
    frames = [f for f in (frame, pipeline_rows) if f is not None and not f.empty]
    if not frames or max(len(settings(f)) for f in frames) < 2:
        return []
    parts = [table(f) for f in frames]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return []
    effect = whole_rows(pd.concat(parts, ignore_index=True))
    every_pair = compared(effect)
    lines = [
        "## Allocator effect",
        "",
        "Every timed job ran under each allocator setting (config `allocators`, "
        "docs/allocator.md). `time vs glibc` is a row's time per image under the setting over "
        "the same work's under glibc: **below 1 the setting is faster**, with the interval of "
        "the ratio in brackets. An effect is called real only where that whole interval lies "
        "beyond the **null spread**: how far the ratio strays on the rows whose glibc row does "
        "not fault (no effect expected there; the "
        f"{ALLOCATOR_NULL_QUANTILE:.0%} quantile of |log ratio|, from at least "
        f"{MIN_NULL_PAIRS} such pairs). Every pair: results/tables/allocator_effect.csv "
        "(figure `allocator_effect`) and, for the pipelines with their steps, "
        "results/tables/allocator_effect_pipelines.csv.",
        "",
    ]
    per_setting = []
    for setting, rows in effect.groupby("setting", sort=True):
        measured = every_pair[every_pair["setting"] == setting]
        ratio = pd.to_numeric(measured["time_vs_glibc"])
        spread = number(measured["null_spread"].iloc[0]) if len(measured) else math.nan
        quiet = int(measured["glibc_allocator_bound"].map(lambda v: v is False).sum())
        calls = measured["effect"].astype(str)
        in_force = ", ".join(sorted({str(a) for a in measured["allocator"] if str(a)})) or "n/a"
        per_setting.append(
            [
                str(setting),
                f"{len(measured)}/{len(rows)}",
                (
                    f"x{math.exp(-spread):.2f}-{math.exp(spread):.2f} ({quiet} pairs)"
                    if not math.isnan(spread)
                    else f"unknown ({quiet} pairs without faults; {MIN_NULL_PAIRS} needed)"
                ),
                _fmt_ratio(ratio.median()) if len(measured) else "n/a",
                str(int((calls == "faster").sum())),
                str(int((calls == "slower").sum())),
                str(int((calls == "none").sum())),
                in_force,
            ]
        )
    lines += _table(
        [
            "setting",
            "pairs with a ratio/rows",
            "null spread",
            "median time vs glibc",
            "real: faster",
            "real: slower",
            "within noise",
            "allocator in force",
        ],
        per_setting,
    )
    lines.append("")
    real = every_pair[every_pair["effect"].astype(str).isin(["faster", "slower"])]
    if len(real):
        size = pd.to_numeric(real["time_vs_glibc"]).map(lambda r: abs(math.log(r)))
        shown = real.loc[size.sort_values(ascending=False, kind="stable").index[:most]]
        lines += [
            f"Effects beyond the null spread ({len(real)}"
            + (f"; the {most} largest here, every one in the tables" if len(real) > most else "")
            + "):",
            "",
        ]
        lines += _table(
            [
                "setting",
                "machine",
                "regime",
                "library",
                "transform",
                "time vs glibc [interval]",
                "glibc ms/img",
                "glibc faults/img",
                "output pages",
            ],
            [
                [
                    str(r["setting"]),
                    str(r["machine"]),
                    _regime_text(r),
                    str(r["library"]),
                    str(r["transform"]),
                    f"{_fmt_ratio(float(r['time_vs_glibc']))} "
                    f"[{_fmt_ratio(float(r['ratio_low']))}, {_fmt_ratio(float(r['ratio_high']))}]"
                    + (" (glibc allocator-bound)" if is_true(r["glibc_allocator_bound"]) else ""),
                    f"{r['glibc_ms_per_image']:.3f}",
                    _count(r["glibc_minor_faults_per_image"]),
                    _count(r["output_pages"]),
                ]
                for _, r in shown.iterrows()
            ],
        )
        lines.append("")
    else:
        lines += ["No effect beyond the null spread.", ""]
    # Rows without a ratio because of the setting (a work the library does not support, under
    # glibc too, is not the allocator's doing: left to the regime's own tables).
    same = (effect["status"].astype(str) == effect["glibc_status"].astype(str)) & (
        effect["status"] == "unsupported"
    )
    missing = effect[~effect.index.isin(every_pair.index) & ~same]
    if len(missing):
        lines += ["Setting rows without a ratio:", ""]
        groups = list(missing.groupby(["setting", "status", "reason"], sort=True, dropna=False))
        for (setting, status, reason), rows in groups[:12]:
            regimes = ", ".join(regime_order(rows["regime"].dropna()))
            what = f"{status} on {len(rows)} rows" if status != "ok" else f"{len(rows)} ok rows"
            lines.append(f"- {setting}: {what} ({regimes}): {reason}")
        if len(groups) > 12:
            more = len(groups) - 12
            lines.append(f"- and {more} more groups (results/tables/allocator_effect*.csv)")
        lines.append("")
    return lines


def _regime_text(row: pd.Series) -> str:
    parts = [str(row["regime"])]
    scope = row.get("scope")
    if scope and not (row["regime"] == "micro" and scope == "memory"):
        parts.append(str(scope))
    workers = number(row.get("workers"))
    if not math.isnan(workers) and workers >= 0:
        parts.append(f"{int(workers)} workers")
    return " · ".join(parts)


def _count(value: Any) -> str:
    value = number(value)
    return "n/a" if math.isnan(value) else f"{value:,.0f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]
