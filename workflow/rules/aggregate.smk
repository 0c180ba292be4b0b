# Result files -> tidy table, speedups, throughputs and coverage: every result of this machine on
# disk (augbench.analysis.on_disk), so a run of one regime rewrites every table with the others'
# rows kept. The files this run measures are inputs; the others are read through `present` (their
# fingerprint `present_state` reruns the tables when one changes), so no rule re-creates them.


# Cloud sweeps: tables are made on the driver from the results in the bucket.
localrules:
    aggregate,


rule aggregate:
    input:
        results=aggregate_inputs,
        after_timed=after_timed_jobs,
    output:
        **TABLES,
    log:
        "logs/aggregate.log",
    benchmark:
        "benchmarks/analysis/aggregate.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
        regimes=TABLE_REGIMES,
        table_arguments=INPUTS.table_arguments(),
        present=present_files("results"),
        present_state=on_disk.state(present_files("results")),
        throughput_targets=config["cpu_dataloader"]["required_throughput"],
        starvation=config["starvation"],
    script:
        "../scripts/aggregate.py"
