"""Rule cost: the sweep's jobs, VM hours and USD per kind and machine type, before launching it.

    uv run snakemake cost --workflow-profile profiles/googlebatch --config preset=paper

Learns per-job times from the finished local run in config `cloud.estimate_from` (augbench.cost),
writes results/cost/estimate.tsv and prints the table (docs/cloud.md).
"""

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench import cost
from augbench.logs import redirect_to_log
from augbench.plan import load_models


def local_images(run_dir: Path) -> int | None:
    counts = []
    for manifest in run_dir.glob("results/data/*/manifest.json"):
        try:
            counts.append(json.loads(manifest.read_text())["file_count"])
        except (OSError, ValueError, KeyError):
            continue
    return int(statistics.median(counts)) if counts else None


def main() -> str:
    sm = snakemake  # noqa: F821
    plan, config = sm.params.plan, sm.params.config
    run_dir = Path(sm.params.run_dir)
    models = cost.learn(run_dir)
    # Early stopping the local run could not show: the shares of the shipped reference timings.
    reference = Path(sm.scriptdir).parent / "resources" / "time_model.json"
    borrowed = cost.borrow_shares(models, load_models(reference, Path("/nonexistent"))[0])
    # Every job of the sweep (augbench.sweep.Sweep.cost_jobs: the same job list the rules run).
    jobs = plan["jobs"]
    local = local_images(run_dir)
    target = config["dataset"].get("default_images") or config["num_images"]
    scale = target / local if local else 1.0
    cloud = config["cloud"]
    grouping = cost.Grouping(plan["groups"], plan["group_components"])
    rows = cost.estimate(
        jobs, models, config, plan["default_machine"], set(plan["preemptible"]),
        cloud["vm_start_s"], scale, grouping,
    )  # fmt: skip
    cost.write_jobs_tsv(jobs, models, config, Path(sm.output.jobs))
    cost.write_tsv(rows, Path(sm.output.estimate))
    planned = plan["planned"]
    sources = {
        "measured in": f"{run_dir.resolve()} ({len(models)} job models)",
        "on-demand prices": cloud.get("price_source", "unspecified"),
        "Spot prices": cloud.get("spot_price_source", "unspecified"),
        "speed factors": cloud.get("speed_factor_source", "unspecified"),
        "assumed GPU throughput": cloud.get("assumed_img_per_s_source", "unspecified"),
        "early stopping": (
            f"shares of the maximum from {reference.name} for {', '.join(borrowed)} (the local "
            "rows could not stop early)"
            if borrowed
            else "as the local rows stopped"
        ),
        "per VM job also": f"{cloud['vm_start_s']:.0f} s of VM start (cloud.vm_start_s, "
        f"assumed); groups {dict(grouping.components) or 'none'} (jobs per VM job)",
    }
    return cost.report(rows, planned, plan["jobs_at_once"], sources)


with redirect_to_log(snakemake.log[0]):  # noqa: F821
    table = main()
    print(table)
# Printed again outside the log: the table is what the user asked for.
print(table, flush=True)
