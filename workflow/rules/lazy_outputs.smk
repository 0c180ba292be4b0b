# Lazy-output diagnostic (docs/methodology.md): what each call returns and what materializing it
# costs. Not a benchmark: its rows never enter the result tables. It times calls, so it takes the
# bench slot and never overlaps a timed job.


# The timed rule `lazy_outputs` is timed.smk's; its table:


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
    params:
        analysis_code=ANALYSIS_CODE,
        present=present_files("diagnostic"),
        present_state=on_disk.state(present_files("diagnostic")),
    script:
        "../scripts/lazy_outputs_table.py"
