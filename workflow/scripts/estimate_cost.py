"""Rule cost: the sweep's jobs, VM hours and USD per kind and machine type, before launching it.

    uv run snakemake cost --config preset=paper

Prices the profile named by config `cloud.profile` (read as a file). Learns per-job times from the
finished local run in config `cloud.estimate_from` (augbench.planning.cost) where there is one and
takes every job kind it lacks from the shipped reference timings
(workflow/resources/time_model.json), saying which; writes results/cost/estimate.tsv and prints the
table (docs/cloud.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.logs import redirect_to_log
from augbench.planning import cost, slurm, transform_prior
from augbench.planning.plan import load_reference


def main() -> str:
    sm = snakemake  # noqa: F821
    plan, config = sm.params.plan, sm.params.config
    run_dir = Path(sm.params.run_dir)
    local = cost.learn(run_dir)
    # The shipped reference: early stopping the local run could not show, and every job kind it
    # did not run (all of them without a local run).
    reference_file = Path(sm.scriptdir).parent / "resources" / "time_model.json"
    reference = load_reference(reference_file)
    borrowed = cost.borrow_shares(local, reference.models)
    models = {**reference.models, **local}
    # Catalog transforms no run measured: the shipped transform-cost prior, moved to these models.
    prior = transform_prior.load()
    prior_libraries = transform_prior.apply(models, prior)
    # Every job of the sweep (augbench.planning.sweep.Sweep.cost_jobs: the same job list the rules
    # run).
    jobs, planned = plan["jobs"], plan["planned"]
    # A SLURM cluster: node-hours of its partitions; setup and analysis jobs run on the login
    # node (augbench/planning/slurm.py) and cost no node-hours.
    nodes = plan["executor"] == slurm.EXECUTOR
    if nodes:
        config = slurm.cost_config(config)
        jobs = [j for j in jobs if slurm.is_submitted(j.rule)]
        planned = [k for k in planned if slurm.is_submitted(k)]
    images = cost.run_dataset_images(run_dir) if local else reference.dataset_images
    target = config["dataset"].get("default_images") or config["num_images"]
    scale = target / images if images else 1.0
    cloud = config["cloud"]
    grouping = cost.Grouping(plan["groups"], plan["group_components"])
    rows = cost.estimate(
        jobs, models, config, plan["default_machine"], set(plan["preemptible"]),
        cloud["vm_start_s"], scale, grouping,
    )  # fmt: skip
    # Per job, seconds on the machine the timings were measured on (what a local run checks).
    cost.write_jobs_tsv(jobs, models, config, Path(sm.output.jobs), cloud=False)
    cost.write_tsv(rows, Path(sm.output.estimate))
    needed = {(j.rule, j.library if j.rule not in cost.SETUP_KINDS else "") for j in jobs}
    borrowed_kinds = (needed & reference.models.keys()) - local.keys()
    from_reference = sorted(f"{k}/{lib}" if lib else k for k, lib in borrowed_kinds)
    sources = {
        "profile priced": f"{plan['profile']} ({plan['jobs_at_once']} jobs at once)",
        "measured in": (
            f"{run_dir.resolve()} ({len(local)} job models)"
            if local
            else f"nothing: no finished local run in {run_dir.resolve()} (cloud.estimate_from)"
        ),
        "reference timings": (f"{reference.label} for " + (", ".join(from_reference) or "nothing")),
        "transform costs": (
            f"{prior.measured} for " + (", ".join(prior_libraries) or "no library")
            if prior.measured
            else "none: every unmeasured transform at its library's median"
        ),
        **(
            {
                "node-hour prices": (
                    str(config["slurm"].get("prices_usd_per_node_hour") or "none configured")
                    + " (slurm.prices_usd_per_node_hour)"
                ),
                "speed": "each partition's cores as fast as the measuring machine's",
            }
            if nodes
            else {
                "on-demand prices": cloud.get("price_source", "unspecified"),
                "Spot prices": cloud.get("spot_price_source", "unspecified"),
                "speed factors": cloud.get("speed_factor_source", "unspecified"),
            }
        ),
        "assumed GPU throughput": cloud.get("assumed_img_per_s_source", "unspecified"),
        "early stopping": (
            f"shares of the maximum from the reference timings for {', '.join(borrowed)} (the "
            "local rows could not stop early)"
            if borrowed
            else "as the rows of the timings stopped"
        ),
        **(
            {
                "per SLURM job also": f"{cloud['vm_start_s']:.0f} s of Snakemake starting in the "
                f"job (slurm.job_start_s); groups {dict(grouping.components) or 'none'} (jobs per "
                "SLURM job); setup and analysis jobs run on the login node, not counted",
            }
            if nodes
            else {
                "per VM job also": f"{cloud['vm_start_s']:.0f} s of VM start (cloud.vm_start_s, "
                f"assumed); groups {dict(grouping.components) or 'none'} (jobs per VM job)",
            }
        ),
    }
    return cost.report(rows, planned, plan["jobs_at_once"], sources, unit="node" if nodes else "VM")


with redirect_to_log(snakemake.log[0]):  # noqa: F821
    table = main()
    print(table)
# Printed again outside the log: the table is what the user asked for.
print(table, flush=True)
