# cpu_dataloader regime: recipes through real torch DataLoader workers (docs/cpu_dataloader.md).
# cpu_dataloader.job_per picks the jobs: one per library x scope x worker count x shard of recipes
# ("setting": cloud sweeps; its rule is timed.smk's, as every timed kind's), or one per library x
# shard measuring every setting in turn in one process ("library": local runs; the library is
# imported once), this rule. Same result files either way. Jobs, flags and placement:
# augbench/planning/regimes/ (kind "cpu_dataloader").

# As every timed rule, defined only where its regime is configured (TIMED_KINDS, common.smk).
if (
    SWEEP.dataloader_job_per_library
    and REGIME_OF_RULE["cpu_dataloader"] in REGIMES
    and not PLOTS_ONLY
):

    rule cpu_dataloader:
        input:
            unpack(benchmark_env_inputs("cpu_dataloader")),
            manifest=DATASET_MANIFEST,
        output:
            [
                timed_result("cpu_dataloader", **setting)
                for setting in SWEEP.dataloader_settings
            ],
        log:
            timed_log("cpu_dataloader", matrix.dataloader_library_job("{shard}")),
        benchmark:
            timed_benchmark("cpu_dataloader", matrix.dataloader_library_job("{shard}"))
        wildcard_constraints:
            shard=r"s\d+",
        priority: timed_priority("cpu_dataloader")
        conda:
            library_conda_env
        threads: timed_threads("cpu_dataloader")
        resources:
            **timed_resources("cpu_dataloader"),
        params:
            **timed_params("cpu_dataloader", output_flag="--outputs"),
        shell:
            TIMED_SHELL
