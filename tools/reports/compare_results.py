"""Regression comparison of two result sets, row by row.

    python tools/reports/compare_results.py BASE NEW [--threshold 0.10]
        [--fail-on-regression] [--cross-machine] [--output rows.csv] [--markdown rows.md]

BASE and NEW are each a tidy table (all_results.csv), a result JSON file or a folder of them
(results/raw, a folder pulled from a bucket, files written by another tool). Rows are matched on
machine, regime, setting, library and transform; two sets from different machines are refused
unless --cross-machine is given. Prints the rows beyond the threshold, whose status changed, or
that exist on one side only. Exit status: 0; 1 with --fail-on-regression when a row regressed
(slower by more than the threshold, or ok before and not ok now); 2 on bad input.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.analysis import collect, compare
from augbench.analysis.groups import read_table


def load(path: str):
    if path.endswith(".csv"):
        if not Path(path).is_file():
            raise FileNotFoundError(f"result source {path!r} does not exist")
        return read_table(path)
    return collect.collect([path], warn=sys.stderr).frame


def markdown(rows) -> str:
    header = [
        "machine",
        "regime",
        "scope",
        "workers",
        "library",
        "transform",
        "base",
        "new",
        "change",
        "flag",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for _, r in rows.iterrows():
        base = f"{r['base_median']:,.1f}" if r["base_status"] == "ok" else str(r["base_status"])
        new = f"{r['new_median']:,.1f}" if r["new_status"] == "ok" else str(r["new_status"])
        change = "" if r["change"] != r["change"] else f"{r['change']:+.1%}"
        workers = "" if r["workers"] < 0 else str(r["workers"])
        flag = r["flag"] + (" (REGRESSION)" if r["is_regression"] else "")
        lines.append(
            "| "
            + " | ".join(
                str(v)
                for v in [
                    r["machine"],
                    r["regime"],
                    r["scope"],
                    workers,
                    r["library"],
                    r["transform"],
                    base,
                    new,
                    change,
                    flag,
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument(
        "--threshold",
        type=float,
        default=compare.DEFAULT_THRESHOLD,
        help="relative change that flags a row (default 0.10 = 10%%)",
    )
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when any row regressed"
    )
    parser.add_argument(
        "--cross-machine",
        action="store_true",
        help="match rows across machines (one machine per side)",
    )
    parser.add_argument("--output", help="CSV with every compared row")
    parser.add_argument("--markdown", help="markdown table of the changed rows")
    args = parser.parse_args(argv)
    try:
        table = compare.compare(
            load(args.base), load(args.new), args.threshold, cross_machine=args.cross_machine
        )
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    changed = compare.changed(table)
    if args.output:
        table.to_csv(args.output, index=False)
    text = markdown(changed)
    if args.markdown:
        Path(args.markdown).write_text(text)
    regressions = int(table["is_regression"].sum())
    print(text if len(changed) else "no row changed beyond the threshold")
    print(
        f"{len(table)} rows compared, {len(changed)} changed beyond {args.threshold:.0%} or in "
        f"status, {regressions} regression(s)"
    )
    return 1 if args.fail_on_regression and regressions else 0


if __name__ == "__main__":
    sys.exit(main())
