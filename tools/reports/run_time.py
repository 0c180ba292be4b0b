"""Wall time of a finished run by phase, from its Snakemake benchmark files (docs/run_time.md).

    uv run python tools/reports/run_time.py RUN_DIR

Phases: setup (env builds, default archive, staging: they run in parallel, so the longest job and
the sum are both printed), each timed regime and the lazy-output diagnostic (one job at a time:
the sum is the phase's wall time), analysis (tables, figures, summary). Only jobs that ran in the
last run have fresh files; pass --since to ignore older ones.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path


def phase(tsv: Path, root: Path) -> str:
    parts = tsv.relative_to(root / "benchmarks").parts
    if parts[0] in ("setup", "analysis"):
        return parts[0]
    return parts[2]  # benchmarks/<machine>/<dataset>/<regime or lazy_outputs>/...


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", type=Path)
    p.add_argument("--since", type=float, default=0.0, help="only files modified after (epoch s)")
    args = p.parse_args()
    seconds: dict[str, list[float]] = defaultdict(list)
    for tsv in sorted((args.run / "benchmarks").glob("**/*.tsv")):
        if tsv.stat().st_mtime < args.since:
            continue
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if rows:
            seconds[phase(tsv, args.run)].append(float(rows[0]["s"]))
    print(f"{'phase':<18}{'jobs':>6}{'sum s':>10}{'longest s':>11}")
    for name, values in sorted(seconds.items(), key=lambda kv: -sum(kv[1])):
        print(f"{name:<18}{len(values):>6}{sum(values):>10.1f}{max(values):>11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
