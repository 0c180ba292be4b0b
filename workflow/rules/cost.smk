# Time and cost of the configured sweep, before launching it: `snakemake cost` (docs/cloud.md).
# Runs on the driver, reads only the finished local run in `cloud.estimate_from` (its result files
# and benchmark timings), and plans nothing else: no benchmark job runs for it.


localrules:
    cost,


rule cost:
    output:
        estimate=local("results/cost/estimate.tsv"),
        jobs=local("results/cost/jobs.tsv"),
    log:
        local("logs/cost.log"),
    conda:
        "../../envs/driver.yaml"
    params:
        # A function: evaluated when the job is planned, after the invocation settings are known.
        plan=lambda wildcards: SWEEP.cost_plan(workflow),
        config=config,
        run_dir=CLOUD["estimate_from"],
        measured=measured_run_fingerprint(),
    script:
        "../scripts/estimate_cost.py"
