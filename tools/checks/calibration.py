"""Publish an A/A calibration run: copy its table to docs/results/<machine>/calibration.csv.

The calibration run (docs/calibration.md) writes results/tables/calibration.csv, one line per kind
of row, and results/tables/calibration_pairs.csv, every pair behind it. This copies both into
docs/results/<machine>/ (the machine named in the table) beside calibration.md, their README:
when the run wrote them, at which commit, with which command, how loaded the machine was while
the pairs were measured, and whether each kind of row passes. Every run is published as it came
out: a kind of row with fewer than the pairs it needs says how many it has and does not pass.

    uv run python tools/checks/calibration.py
    uv run python tools/checks/calibration.py --results /path/to/run/results --docs docs/results
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from augbench.analysis import calibration  # noqa: E402
from augbench.analysis.cells import is_true  # noqa: E402

COMMAND = "snakemake --cores 8 calibration --configfile config/calibration.yaml"


def commit(where: Path) -> str:
    """The commit checked out at ``where``, and whether files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head}{' with uncommitted changes' if dirty else ''}"


def _number(value: object, digits: int = 2) -> str:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(number) else f"{number:.{digits}f}"


def readme(table: pd.DataFrame, written: datetime, source: str, command: str) -> str:
    """The README of the copied tables: date, commit, command, load, each kind of row's result."""
    machine = str(table["machine"].iloc[0])
    level = _number(table["level"].iloc[0])
    lines = [
        f"# A/A calibration on {machine}",
        "",
        f"- Written: {written:%Y-%m-%d %H:%M} UTC (the run's calibration.csv)",
        f"- Commit: {source}",
        f"- Command: `{command}`",
        f"- Decision level: {level}; a kind of row passes with at least {calibration.MIN_PAIRS} "
        f"pairs at that level and at most {calibration.MAX_FALSE_CALL_RATE:.0%} false calls "
        "([calibration.md](../../calibration.md))",
        "- Load: pairs with a row measured under load (another process's work beside the job, "
        "augbench/measuring/quietness.py) and the most cores other processes used during a row, "
        "per kind of row below",
        "",
        "| kind of row | pairs | false calls | rate | passes | job pairs | under load | "
        "most other cores | note |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for _, row in table.iterrows():
        lines.append(
            f"| {row['regime']} | {int(row['pairs'])} | {int(row['false_calls'])} | "
            f"{_number(row['false_call_rate'])} | {'yes' if is_true(row['passes']) else 'no'} | "
            f"{int(row['job_pairs'])} | {int(row['under_load_pairs'])} | "
            f"{_number(row['most_other_load_cores'])} | {row['note']} |"
        )
    lines += [
        "",
        "Files: `calibration.csv` (the table above), `calibration_pairs.csv` (every pair: the two "
        "names, the row, the ratio with its interval and achieved level, the verdict).",
    ]
    return "\n".join(lines) + "\n"


def publish(results: Path, docs: Path, command: str, source: str) -> Path:
    """Copy the run's calibration tables under ``docs``/<machine>/ with a README; the folder."""
    table_path = results / "tables" / "calibration.csv"
    pairs_path = results / "tables" / "calibration_pairs.csv"
    if not table_path.is_file():
        raise SystemExit(
            f"calibration: no {table_path}: run `{COMMAND}` first (docs/calibration.md)"
        )
    table = pd.read_csv(table_path)
    if table.empty:
        raise SystemExit(f"calibration: {table_path} has no lines; nothing is copied")
    folder = docs / str(table["machine"].iloc[0])
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(table_path, folder / "calibration.csv")
    if pairs_path.is_file():
        shutil.copyfile(pairs_path, folder / "calibration_pairs.csv")
    written = datetime.fromtimestamp(table_path.stat().st_mtime, UTC)
    (folder / "calibration.md").write_text(readme(table, written, source, command))
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=ROOT / "results", help="the run's results/")
    p.add_argument("--docs", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--command", default=COMMAND, help="the command that made the run")
    args = p.parse_args(argv)
    # The code that measured is this checkout's (the run may have had its own --directory).
    folder = publish(args.results, args.docs, args.command, commit(ROOT))
    table = pd.read_csv(folder / "calibration.csv")
    print(calibration.printed(table))
    print(f"calibration: copied to {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
