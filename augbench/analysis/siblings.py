"""Each fork or drop-in build beside the library it derives from (its declaration's ``sibling``):
Albumentations 2.0.8 (MIT) beside AlbumentationsX, Pillow-SIMD beside Pillow. Same machine, same
regime and setting, same transforms and pipelines (their whole-pipeline rows); the ratio of the
two medians with its interval, and whether that interval lies above, below or across 1."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pandas as pd

from augbench.analysis.cells import decoded
from augbench.analysis.groups import iter_groups
from augbench.analysis.speedups import row_interval, versus
from augbench.intervals import Interval, median_interval, ratio_interval
from augbench.policy import ANSWER_MIN_INTERVAL_LEVEL
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters

COLUMNS = (
    "group", "library", "sibling", "transform", "library_throughput", "sibling_throughput",
    "ratio", "ratio_low", "ratio_high", "ratio_level", "verdict",
)  # fmt: skip


def pairs(libraries: list[str]) -> list[tuple[str, str]]:
    """(library, sibling) for every library present whose sibling is present too."""
    present = set(libraries)
    out = []
    for name in sorted(present):
        try:
            sibling = adapters.declared(name).sibling
        except KeyError:
            continue
        if sibling and sibling in present:
            out.append((name, sibling))
    return out


def compare(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, library with its sibling, transform both measured ok): the ratio
    library / sibling of their medians, its interval and verdict (faster, slower, tie)."""
    records = []
    if "step" in frame.columns:  # a pipeline's step rows: its whole-pipeline row is compared
        frame = frame[frame["step"].isna() | (frame["step"].astype(str) == "")]
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    for library, sibling in pairs(list(frame["library"].astype(str).unique())):
        for group in iter_groups(frame):
            ok = group.rows[group.rows["status"] == "ok"]
            mine = ok[ok["library"] == library].set_index("transform")
            theirs = ok[ok["library"] == sibling].set_index("transform")
            for transform in [t for t in mine.index.unique() if t in theirs.index]:
                row, other = mine.loc[transform], theirs.loc[transform]
                if isinstance(row, pd.DataFrame) or isinstance(other, pd.DataFrame):
                    continue  # two rows of one library in a group: not a single comparison
                interval = ratio_interval(side_interval(row), side_interval(other))
                records.append(
                    {
                        "group": group.label,
                        "library": library,
                        "sibling": sibling,
                        "transform": transform,
                        "library_throughput": float(row[MEDIAN_THROUGHPUT]),
                        "sibling_throughput": float(other[MEDIAN_THROUGHPUT]),
                        "ratio": interval.estimate,
                        "ratio_low": math.nan if interval.low is None else interval.low,
                        "ratio_high": math.nan if interval.high is None else interval.high,
                        "ratio_level": math.nan if interval.level is None else interval.level,
                        "verdict": verdict(interval),
                    }
                )
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def side_interval(row: pd.Series) -> Interval:
    """A row's median with an interval of at least policy.ANSWER_MIN_INTERVAL_LEVEL where its
    values allow one: the row's own interval where it is that wide, else the order-statistic
    interval of its recorded values at that level (the smallest that reaches it); a row of too
    few values keeps its own, narrower one (its comparisons are then not decided)."""
    own = row_interval(row)
    if own.level is not None and own.level >= ANSWER_MIN_INTERVAL_LEVEL:
        return own
    values = decoded(row.get("throughputs"))
    if isinstance(values, list) and len(values) > 1:
        wider = median_interval([float(v) for v in values], ANSWER_MIN_INTERVAL_LEVEL)
        if wider.level is not None and (own.level is None or wider.level > own.level):
            return Interval(own.estimate, wider.low, wider.high, wider.level, wider.method, wider.n)
    return own


def verdict(interval: Any) -> str:
    """faster, slower or tie: where the ratio's interval lies against 1. Below the answer page's
    level (policy.ANSWER_MIN_INTERVAL_LEVEL, where it calls a margin) the level is said with it:
    four values of a row cannot give more than 88 %."""
    found = versus(interval)
    if interval.level is not None and interval.level < ANSWER_MIN_INTERVAL_LEVEL:
        return f"{found} at {interval.level:.0%} only"
    return found


def _title(name: str) -> str:
    try:
        return adapters.declared(name).title or name
    except KeyError:
        return name


def summary_lines(frame: pd.DataFrame) -> list[str]:
    """The summary's section: per pair and group, the verdict counts, the median ratio, and each
    transform's ratio with its interval. Nothing where no fork is measured beside its sibling."""
    if frame.empty or not pairs(list(frame["library"].astype(str).unique())):
        return []
    table = compare(frame)
    lines = [
        "## Forks and drop-in builds beside their originals",
        "",
        "Each ratio is the fork's median img/s over its original's, on the same machine, "
        "setting and transforms, with the interval of that ratio; faster or slower only where "
        "the interval excludes 1, a tie where it holds 1; where the rows' values cannot give "
        f"an interval of {ANSWER_MIN_INTERVAL_LEVEL:.0%} (the level the answer page decides "
        "at), the verdict says its level.",
        "",
    ]
    if table.empty:
        lines += ["Not measured: no transform has ok rows of both libraries of a pair.", ""]
        return lines
    for (library, sibling, group), rows in table.groupby(
        ["library", "sibling", "group"], sort=False
    ):
        counts = rows["verdict"].str.split(" ").str[0].value_counts()
        ratios = rows["ratio"].astype(float)
        lines += [
            f"### {_title(library)} / {_title(sibling)}: {group}",
            "",
            f"{len(rows)} {'pipelines' if 'pipeline' in group else 'transforms'}; faster on "
            f"{counts.get('faster', 0)}, slower on "
            f"{counts.get('slower', 0)}, a tie on {counts.get('tie', 0)}"
            + (f", no interval on {counts.get('unknown', 0)}" if counts.get("unknown") else "")
            + f". Median ratio {statistics.median(ratios):.2f}x ({_title(sibling)} over "
            f"{_title(library)}: {1 / statistics.median(ratios):.2f}x).",
            "",
            f"| transform | {_title(library)} img/s | {_title(sibling)} img/s | ratio | interval "
            "| verdict |",
            "|---|---:|---:|---:|---|---|",
        ]
        for _, r in rows.sort_values("ratio", ascending=False).iterrows():
            interval = (
                "—"
                if math.isnan(r["ratio_low"])
                else f"[{r['ratio_low']:.2f}, {r['ratio_high']:.2f}]"
                + (f" ({r['ratio_level']:.0%})" if not math.isnan(r["ratio_level"]) else "")
            )
            lines.append(
                f"| {r['transform']} | {r['library_throughput']:.0f} | "
                f"{r['sibling_throughput']:.0f} | {r['ratio']:.2f}x | {interval} | {r['verdict']} |"
            )
        lines.append("")
    return lines
