# Micro regime: pyperf, one transform at a time, one thread, one job per library x shard.
# Jobs, flags and placement: augbench/regimes.py (kind "micro"); the shell: TIMED_SHELL.


rule micro:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("micro"),
    log:
        timed_log("micro"),
    benchmark:
        timed_benchmark("micro")
    priority: timed_priority("micro")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("micro")
    resources:
        **timed_resources("micro"),
    params:
        **timed_params("micro"),
    shell:
        TIMED_SHELL
