# Result files -> tidy table, speedups, throughputs and coverage.


# Cloud sweeps: tables are made on the driver from the results in the bucket.
localrules:
    aggregate,


rule aggregate:
    input:
        results=aggregate_inputs,
        after_timed=after_timed_jobs,
    output:
        **SWEEP.table_outputs(),
    log:
        "logs/aggregate.log",
    benchmark:
        "benchmarks/analysis/aggregate.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
        regimes=REGIMES,
        throughput_targets=config["cpu_dataloader"]["required_throughput"],
        starvation=config["starvation"],
    script:
        "../scripts/aggregate.py"
