# Lazy-output diagnostic (docs/methodology.md): what each call returns and what materializing it
# costs. Not a benchmark: its rows never enter the result tables. It times calls, so it takes the
# bench slot and never overlaps a timed job.


rule lazy_outputs:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("lazy_outputs"),
    log:
        timed_log("lazy_outputs"),
    benchmark:
        timed_benchmark("lazy_outputs")
    priority: timed_priority("lazy_outputs")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("lazy_outputs")
    resources:
        **timed_resources("lazy_outputs"),
    params:
        **timed_params("lazy_outputs"),
    shell:
        TIMED_SHELL


rule lazy_outputs_table:
    input:
        results=lazy_outputs_inputs(),
        after_timed=after_timed_jobs,
    output:
        **LAZY_TABLES,
    log:
        "logs/lazy_outputs_table.log",
    benchmark:
        "benchmarks/analysis/lazy_outputs_table.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    script:
        "../scripts/lazy_outputs_table.py"
