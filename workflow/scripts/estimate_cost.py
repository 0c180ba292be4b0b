"""Estimate a cloud sweep's jobs, VM hours, cost and wall time before launching it.

    uv run python workflow/scripts/estimate_cost.py --preset paper --from .

`--from` is the working directory of a finished local run (any preset; its result files and
benchmarks/ timings are the measurements); the target is config/config.yaml with `--preset` and
any `--configfile` merged in, as the sweep itself will see it. See docs/cloud.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from augbench import cost  # noqa: E402
from augbench.config import ConfigError, deep_merge, resolve  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="paper", help="preset of the sweep to estimate")
    p.add_argument("--configfile", type=Path, action="append", default=[])
    p.add_argument("--from", dest="run_dir", type=Path, default=Path("."),
                   help="working directory of a finished local run")  # fmt: skip
    p.add_argument("--vm-start-s", type=float, default=180.0,
                   help="seconds each job's VM spends before the job starts: boot, image pull, "
                        "env provisioning (assumption; see docs/cloud.md)")  # fmt: skip
    p.add_argument("--jobs", type=int, default=64, help="jobs running at once (profile `jobs`)")
    args = p.parse_args(argv)

    user = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for extra in args.configfile:
        user = deep_merge(user, yaml.safe_load(extra.read_text()) or {})
    user["preset"] = args.preset
    user["machine"] = "estimate"  # the label does not change the estimate; skip CPU detection
    try:
        target = resolve(user, REPO)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    models = cost.learn(args.run_dir)
    if not models:
        print(
            f"no measured result files under {args.run_dir / 'results' / 'raw'}: run the "
            "workflow locally first (e.g. `uv run snakemake --cores 2`)",
            file=sys.stderr,
        )
        return 2
    estimates, missing = cost.estimate(target, models, args.vm_start_s)
    print(f"sweep: preset {args.preset}, {len(target['transforms'])} transforms, "
          f"{target['num_images']} images; measured in {args.run_dir.resolve()}")  # fmt: skip
    print(cost.report(estimates, missing, args.jobs, target["cloud"].get("price_source", "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
