# Result files -> tidy table, speedups, throughputs and coverage.


rule aggregate:
    input:
        results=result_files,
    output:
        **table_outputs(),
    log:
        "logs/aggregate.log",
    conda:
        "../../envs/driver.yaml"
    params:
        regimes=REGIMES,
    script:
        "../scripts/aggregate.py"
