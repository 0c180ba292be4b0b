# cpu_dataloader regime: recipes through real torch DataLoader workers (docs/cpu_dataloader.md).
# cpu_dataloader.job_per picks the jobs: one per library x scope x worker count x shard of recipes
# ("setting": cloud sweeps), or one per library x shard measuring every setting in turn in one
# process ("library": local runs; the library is imported once). Same result files either way.

if DATALOADER["job_per"] == "setting":

    rule cpu_dataloader:
        input:
            unpack(benchmark_env_inputs),
            manifest=DATASET_MANIFEST,
        output:
            result=raw_result("cpu_dataloader", "{scope}-w{workers}-{shard}"),
        log:
            job_log("cpu_dataloader", "{scope}-w{workers}-{shard}"),
        benchmark:
            job_benchmark("cpu_dataloader", "{scope}-w{workers}-{shard}")
        wildcard_constraints:
            scope="memory|decode",
            workers=r"\d+",
        conda:
            "../../envs/{library}.yaml"
        # The main process plus its workers; Snakemake lowers this to --cores where it is larger.
        threads: lambda wildcards: int(wildcards.workers) + 1
        resources:
            **cloud_resources("cpu_dataloader"),
            bench_slot=1,
        params:
            **cpu_dataloader_params(),
        shell:
            CPU_DATALOADER_PREFIX
            + " --scope {wildcards.scope} --workers {wildcards.workers}"
            + CPU_DATALOADER_ARGS
            + " --output {output.result:q} 2>&1 | tee {log:q}"

else:

    rule cpu_dataloader:
        input:
            unpack(benchmark_env_inputs),
            manifest=DATASET_MANIFEST,
        output:
            cpu_dataloader_library_outputs(),
        log:
            job_log("cpu_dataloader", matrix.dataloader_library_job("{shard}")),
        benchmark:
            job_benchmark("cpu_dataloader", matrix.dataloader_library_job("{shard}"))
        wildcard_constraints:
            shard=r"s\d+",
        conda:
            "../../envs/{library}.yaml"
        # The main process plus the most workers a setting starts (lowered to --cores).
        threads: cpu_dataloader_library_threads()
        resources:
            **cloud_resources("cpu_dataloader"),
            bench_slot=1,
        params:
            **cpu_dataloader_params(),
            settings=",".join(DATALOADER_SETTINGS),
        shell:
            CPU_DATALOADER_PREFIX
            + " --settings {params.settings}"
            + CPU_DATALOADER_ARGS
            + " --outputs {output:q} 2>&1 | tee {log:q}"
