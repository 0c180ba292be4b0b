"""Write the transform-cost prior (workflow/resources/transform_costs.json) from a finished run.

    uv run snakemake --cores 2 --configfile tools/maintenance/transform_costs.yaml -d RUN
    uv run python tools/maintenance/transform_costs.py RUN --machine "2-core VM" [--commit REV]

Reads the run's micro result files (every catalog transform, one thread, per CPU library) and
writes each (library, transform)'s seconds per image with the megapixels they were measured at
(augbench.planning.transform_prior): what the cost model prices a transform from where its own
local run did not measure it.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.planning import cost, transform_prior  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", type=Path)
    p.add_argument("--machine", required=True, help="what the run ran on, e.g. '2-core VM'")
    p.add_argument("--output", type=Path, default=transform_prior.PRIOR_FILE)
    p.add_argument("--commit", help="the commit the run measured with (default: this checkout's)")
    args = p.parse_args()
    files = [p for p, _, rule in cost.result_files(args.run) if rule == transform_prior.PRIOR_KIND]
    if not files:
        raise SystemExit(f"{args.run}: no {transform_prior.PRIOR_KIND} result files found")
    seconds, megapixels = transform_prior.measure(files)
    commit = (
        args.commit
        or subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    )
    measured = (
        f"{args.machine}, {datetime.date.today().isoformat()}: "
        f"tools/maintenance/transform_costs.yaml as of {commit or 'an unknown commit'}"
    )
    transform_prior.dump(args.output, seconds, megapixels, measured)
    count = sum(len(found) for found in seconds.values())
    print(f"{count} transform costs of {len(seconds)} libraries -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
