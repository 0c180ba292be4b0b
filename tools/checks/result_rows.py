"""Do two runs hold the same result rows? Compares the tidy tables (results/tables/all_results.csv)
of two runs on what a row *is*, not what it measured: regime, library, transform, scope, layout,
workers, variant and status (timings always differ between runs).

    uv run python tools/checks/result_rows.py BEFORE/results/tables/all_results.csv \
        AFTER/results/tables/all_results.csv

Prints the row count of each, every row found in only one of them, and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

IDENTITY = ("regime", "library", "transform", "scope", "layout", "workers", "variant", "status")


def rows(table: Path) -> set[tuple[str, ...]]:
    with table.open(newline="") as fh:
        return {tuple(r.get(c, "") for c in IDENTITY) for r in csv.DictReader(fh)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    args = p.parse_args()
    old, new = rows(args.before), rows(args.after)
    print(f"before: {len(old)} rows; after: {len(new)} rows; columns compared: {IDENTITY}")
    for label, only in (("only before", old - new), ("only after", new - old)):
        for row in sorted(only):
            print(f"{label}: {dict(zip(IDENTITY, row, strict=True))}")
    print("identical" if old == new else f"{len(old ^ new)} rows differ")
    return 0 if old == new else 1


if __name__ == "__main__":
    sys.exit(main())
