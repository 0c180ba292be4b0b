"""Write the reference time model the plan's ETA starts from (workflow/resources/time_model.json).

    uv run python tools/maintenance/time_model.py RUN_DIR [RUN ...] --machine "2-core VM" [--update]
        [--kinds pipeline_dataloader ...]

Learns per-job models from finished runs (each a working directory with results/raw and
benchmarks/, as `snakemake --cores 8` leaves it) with augbench.planning.cost.learn, the model of the
cloud cost estimate; a later directory's models replace an earlier one's. A run in the user's own
working directory always replaces these reference models (augbench.planning.plan.load_models).
``--kinds`` takes only those job kinds from the runs: a run whose other jobs have another shape than
the reference run's (the default preset's one-process micro rows) then refreshes only what it
measured as the reference does not.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.planning import cost, plan  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--machine", required=True, help="what the runs ran on, e.g. '2-core VM'")
    p.add_argument("--output", type=Path, default=ROOT / "workflow/resources/time_model.json")
    p.add_argument(
        "--update",
        action="store_true",
        help="keep the output file's models of job kinds the runs do not have (e.g. the smoke "
        "and paper presets' lazy-output diagnostic, off in the default run)",
    )
    p.add_argument(
        "--kinds",
        nargs="+",
        default=None,
        help="take only these job kinds (rules) from the runs, e.g. pipeline_dataloader",
    )
    args = p.parse_args()
    models = {}
    if args.update and args.output.exists():
        models, _ = plan.load_models(args.output, Path("/nonexistent"))
    for run in args.runs:
        learned = cost.learn(run)
        if not learned:
            raise SystemExit(f"{run}: no results/raw or benchmarks/ timings found")
        models.update(
            {key: m for key, m in learned.items() if args.kinds is None or key[0] in args.kinds}
        )
    measured = datetime.date.today().isoformat()
    images = [n for n in (cost.run_dataset_images(run) for run in args.runs) if n]
    plan.dump_models(models, args.output, args.machine, measured, images[-1] if images else None)
    print(f"{len(models)} job models -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
