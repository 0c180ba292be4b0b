"""Render the cpu_dataloader baseline checks of one run as markdown (docs/cpu_dataloader.md).

    uv run python tools/reports/dataloader_checks.py results/tables/all_results.csv \\
        --note "quiet machine" > checks.md

Reads a run's tidy table and prints, for every cpu_dataloader row (library x scope x workers x
recipe): its median img/s with the relative 95 % CI, the bare loop's img/s, regime / bare (median
of paired epoch ratios, their range and count), the job's transport baseline and whether the row
is transport-bound, and for decode rows the composition terms (decode floor, memory-scope
companion, expectation, ratio with range and count, and where the terms came from). Then two
summaries: the median regime / bare per scope and worker count, and the composition ratio of each
library's cheapest recipe (RandomCrop224 + Normalize + ToTensor) per worker count. Rows that are
not ``ok`` are listed with their reason. The header names the machine(s), the dataset and the
time span of the rows, so the table says where it was measured.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.analysis.dataloader import (
    CHEAPEST_TRANSFORM,
    add_baselines,
    cheapest_decode_rows,
)
from augbench.result_format import MEDIAN_THROUGHPUT

REGIME = "cpu_dataloader"


def _num(value: Any) -> float:
    number = pd.to_numeric(value, errors="coerce")
    return math.nan if number is None or pd.isna(number) else float(number)


def _rate(value: Any) -> str:
    number = _num(value)
    return "" if math.isnan(number) else f"{number:,.0f}"


def _ratio(value: Any, low: Any = None, high: Any = None, pairs: Any = None) -> str:
    number = _num(value)
    if math.isnan(number):
        return ""
    text = f"{number:.2f}"
    lo, hi = _num(low), _num(high)
    if not (math.isnan(lo) or math.isnan(hi)):
        text += f" ({lo:.2f}–{hi:.2f}"
        n = _num(pairs)
        text += f", n={n:.0f})" if not math.isnan(n) else ")"
    return text


def _ci(value: Any) -> str:
    number = _num(value)
    return "" if math.isnan(number) else f"±{100 * number:.0f} %"


def _flag(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return "yes" if value.strip().lower() == "true" else ""
    return "yes" if bool(value) else ""


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


ROW_HEADER = [
    "library",
    "scope",
    "workers",
    "recipe",
    "img/s",
    "rel. 95 % CI",
    "bare loop img/s",
    "regime / bare (min–max, pairs)",
    "transport img/s",
    "transport-bound",
    "decode floor img/s",
    "memory companion img/s",
    "expected img/s",
    "decode composition (min–max, pairs)",
    "terms from",
]


def row_table(ok: pd.DataFrame) -> str:
    rows = []
    for _, row in ok.iterrows():
        decode = row["scope"] == "decode"
        rows.append(
            [
                str(row["library"]),
                str(row["scope"]),
                str(int(row["workers"])),
                str(row.get("recipe") or row["transform"]),
                _rate(row[MEDIAN_THROUGHPUT]),
                _ci(row.get("relative_ci")),
                _rate(row.get("bare_loop_throughput")),
                _ratio(
                    row.get("regime_vs_bare"),
                    row.get("regime_vs_bare_min"),
                    row.get("regime_vs_bare_max"),
                    row.get("regime_vs_bare_pairs"),
                ),
                _rate(row.get("transport_throughput")),
                _flag(row.get("transport_bound")),
                _rate(row.get("decode_floor_throughput")) if decode else "n/a",
                _rate(row.get("memory_row_throughput")) if decode else "n/a",
                _rate(row.get("decode_expected_throughput")) if decode else "n/a",
                _ratio(
                    row.get("decode_composition_ratio"),
                    row.get("decode_composition_min"),
                    row.get("decode_composition_max"),
                    row.get("decode_composition_pairs"),
                )
                if decode
                else "n/a",
                str(row.get("decode_composition_source") or "") if decode else "",
            ]
        )
    return markdown_table(ROW_HEADER, rows)


def bare_summary(ok: pd.DataFrame) -> str:
    """Median regime / bare over libraries and recipes, per scope and worker count."""
    frame = ok.assign(_r=pd.to_numeric(ok["regime_vs_bare"], errors="coerce"))
    workers = sorted(int(w) for w in frame["workers"].unique())
    rows = []
    for scope, group in frame.groupby("scope", sort=True):
        cells = [str(scope)]
        for w in workers:
            part = group[group["workers"] == w]["_r"].dropna()
            cells.append(
                f"{part.median():.2f} ({part.min():.2f}–{part.max():.2f})" if len(part) else ""
            )
        rows.append(cells)
    return markdown_table(["scope", *[f"w{w}" for w in workers]], rows)


def composition_summary(ok: pd.DataFrame) -> str:
    """The composition ratio of each library's cheapest recipe per worker count
    (``augbench.analysis.dataloader.cheapest_decode_rows``)."""
    cheapest = cheapest_decode_rows(ok)
    workers = sorted(int(w) for w in cheapest["workers"].unique())
    rows = []
    for library, group in cheapest.groupby("library", sort=True):
        cells = [str(library)]
        for w in workers:
            part = group[group["workers"] == w]
            if not len(part):
                cells.append("")
                continue
            row = part.iloc[0]
            ratio = _ratio(
                row["_ratio"], row.get("decode_composition_min"), row.get("decode_composition_max")
            )
            cells.append(
                ratio if row["transform"] == CHEAPEST_TRANSFORM else f"{ratio} ({row['transform']})"
            )
        rows.append(cells)
    return markdown_table(["library", *[f"w{w}" for w in workers]], rows)


def header(rows: pd.DataFrame, note: str) -> str:
    machines = ", ".join(sorted(map(str, rows["machine"].dropna().unique())))
    datasets = ", ".join(sorted(map(str, rows["dataset"].dropna().unique())))
    stamps = pd.to_datetime(rows["timestamp"], errors="coerce", utc=True).dropna()
    span = f"{stamps.min():%Y-%m-%d %H:%M}–{stamps.max():%H:%M} UTC" if len(stamps) else "unknown"
    cores = sorted({str(v) for v in rows.get("processor", pd.Series(dtype=str)).dropna()})
    text = f"Machine {machines} ({'; '.join(cores) or 'processor not recorded'}), dataset "
    text += f"{datasets}, rows timed {span}."
    return text + (f" {note}" if note else "")


def render(table: pd.DataFrame, note: str = "") -> str:
    # Derived columns again (a no-op on a table aggregate wrote; fills them for older tables).
    rows = add_baselines(table[table["regime"] == REGIME])
    if rows.empty:
        return "No cpu_dataloader rows in this table.\n"
    rows = rows.sort_values(["library", "scope", "workers", "transform"])
    ok = rows[rows["status"] == "ok"]
    parts = [header(rows, note), "", row_table(ok), ""]
    parts += ["Median regime / bare over libraries and recipes (min–max):", "", bare_summary(ok)]
    parts += [
        "",
        f"Decode composition ratio of each library's cheapest recipe ({CHEAPEST_TRANSFORM} ",
    ]
    parts[-1] += "+ Normalize + ToTensor; min–max over rounds):"
    parts += ["", composition_summary(ok), ""]
    other = rows[rows["status"] != "ok"]
    if len(other):
        parts.append("Rows not measured:")
        parts.append("")
        for _, row in other.iterrows():
            parts.append(
                f"- {row['library']} {row['scope']} w{int(row['workers'])} {row['transform']}: "
                f"{row['status']} ({row['reason']})"
            )
        parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("table", type=Path, help="a run's results/tables/all_results.csv")
    p.add_argument("--note", default="", help="appended to the header (e.g. machine load)")
    p.add_argument("--output", type=Path, default=None, help="write here instead of stdout")
    args = p.parse_args(argv)
    table = pd.read_csv(args.table)
    text = render(table, args.note)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
