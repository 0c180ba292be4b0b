# cpu_dataloader regime: recipes through real torch DataLoader workers; one job per
# library x scope x worker count x shard of recipes (docs/cpu_dataloader.md).


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
        provision=provision_command,
        root=workflow.basedir,
        thread_env=DATALOADER_THREADS.shell_prefix(),
        transforms=cpu_dataloader_transforms,
        num_images=cpu_dataloader_num_images(),
        batch_size=DATALOADER["batch_size"],
        batches_per_run=DATALOADER["batches_per_run"],
        num_runs=DATALOADER["num_runs"],
        prefetch_factor=DATALOADER["prefetch_factor"],
        persistent_workers=DATALOADER["persistent_workers"],
        cap_workers=DATALOADER["cap_workers_at_cores"],
        batch_timeout=DATALOADER["batch_timeout_s"],
        baseline_runs=DATALOADER["baseline_runs"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
    shell:
        "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.cpu_dataloader"
        " --library {wildcards.library} --scope {wildcards.scope} --workers {wildcards.workers}"
        " --shard {wildcards.shard} --transforms {params.transforms:q}"
        " --num-images {params.num_images}"
        " --machine {wildcards.machine} --batch-size {params.batch_size}"
        " --batches-per-run {params.batches_per_run} --num-runs {params.num_runs}"
        " --prefetch-factor {params.prefetch_factor}"
        " --persistent-workers {params.persistent_workers}"
        " --cap-workers-at-cores {params.cap_workers} --batch-timeout {params.batch_timeout}"
        " --baseline-runs {params.baseline_runs}"
        " --policy {params.policy:q} --output {output.result:q}"
        " 2>&1 | tee {log:q}"
