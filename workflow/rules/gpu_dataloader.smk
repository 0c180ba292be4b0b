# GPU DataLoader regime: workers decode + crop on the CPU, the transform and Normalize on CUDA.
# One job per library x scope x workers x randomness x shard (scope memory: workers 0 only).
# Without a CUDA device the job writes `skipped` rows at once (config gpu=optional) or fails
# (gpu=required); the GPU is declared as a resource so a scheduler can place the job.
# Jobs, flags and placement: augbench/regimes.py (kind "gpu_dataloader").


rule gpu_dataloader:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("gpu_dataloader"),
    log:
        timed_log("gpu_dataloader"),
    benchmark:
        timed_benchmark("gpu_dataloader")
    wildcard_constraints:
        **timed_constraints("gpu_dataloader"),
    priority: timed_priority("gpu_dataloader")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("gpu_dataloader")
    resources:
        **timed_resources("gpu_dataloader"),
    params:
        **timed_params("gpu_dataloader"),
    shell:
        TIMED_SHELL
