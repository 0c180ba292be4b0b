# Time and cost of the configured sweep, before launching it: `snakemake cost` (docs/cloud.md).
# Runs locally and prices the profile named by `cloud.profile` (read as a file, so no cloud account
# is needed), from the finished local run in `cloud.estimate_from` (its result files and benchmark
# timings) filled in from the shipped reference timings; no benchmark job runs for it.


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
        plan=lambda wildcards: SWEEP.cost_plan(cost_profile()),
        config=config,
        run_dir=CLOUD["estimate_from"],
        measured=measured_run_fingerprint(),
        # The cost model is the package's code (augbench.planning.cost counts with the engines' own
        # functions): a new version of it prices the sweep again.
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/estimate_cost.py"
