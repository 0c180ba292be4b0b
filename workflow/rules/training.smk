# training regime: a real training step (or the sleep stand-in) fed by each library's DataLoader,
# built as in cpu_dataloader's decode scope; measured throughput, data-wait fraction and step-time
# percentiles beside the starvation model's prediction (docs/training.md). One job per library x
# worker count. Jobs, flags and placement: augbench/regimes.py (kind "training").


rule training:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("training"),
    log:
        timed_log("training"),
    benchmark:
        timed_benchmark("training")
    wildcard_constraints:
        **timed_constraints("training"),
    priority: timed_priority("training")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("training")
    resources:
        **timed_resources("training"),
    params:
        **timed_params("training"),
    shell:
        TIMED_SHELL
