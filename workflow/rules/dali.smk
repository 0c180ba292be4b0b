# DALI regime: reader, decoder, the transform and crop_mirror_normalize in one DALI pipeline.
# Two rules so that only the GPU variant declares a GPU: `dali` (decoder "mixed", GPU operators;
# `skipped` rows without a CUDA device) and `dali_cpu` (DALI's CPU backend, device_id=None), a
# separately labelled variant that runs on any machine. Jobs, flags and placement:
# augbench/regimes.py (kinds "dali", "dali_cpu").


rule dali:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("dali"),
    log:
        timed_log("dali"),
    benchmark:
        timed_benchmark("dali")
    wildcard_constraints:
        **timed_constraints("dali"),
    priority: timed_priority("dali")
    conda:
        "../../envs/dali.yaml"
    threads: timed_threads("dali")
    resources:
        **timed_resources("dali"),
    params:
        **timed_params("dali"),
    shell:
        TIMED_SHELL


use rule dali as dali_cpu with:
    output:
        result=timed_result("dali_cpu"),
    log:
        timed_log("dali_cpu"),
    benchmark:
        timed_benchmark("dali_cpu")
    resources:
        **timed_resources("dali_cpu"),
    params:
        **timed_params("dali_cpu"),
