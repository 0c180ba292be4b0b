# GPU DataLoader regime: workers decode + crop on the CPU, the transform and Normalize on CUDA.
# One job per library x scope x workers x randomness x shard (scope memory: workers 0 only).
# Without a CUDA device the job writes `skipped` rows at once (config gpu=optional) or fails
# (gpu=required); the GPU is declared as a resource so a scheduler can place the job.


rule gpu_dataloader:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=raw_result("gpu_dataloader", "{scope}_w{workers}_{randomness}_{shard}"),
    log:
        job_log("gpu_dataloader", "{scope}_w{workers}_{randomness}_{shard}"),
    benchmark:
        job_benchmark("gpu_dataloader", "{scope}_w{workers}_{randomness}_{shard}")
    wildcard_constraints:
        library="|".join(matrix.REGIME_LIBRARIES["gpu_dataloader"]),
        scope="decode|memory",
        workers=r"\d+",
        randomness="|".join(gpu_recipes.RANDOMNESS),
    conda:
        "../../envs/{library}.yaml"
    threads: lambda wildcards: int(wildcards.workers) + 1
    resources:
        **cloud_resources("gpu_dataloader"),
        bench_slot=1,
        gpu=1,
    params:
        provision=provision_command,
        root=workflow.basedir,
        transforms=gpu_dataloader_transforms,
        num_images=config["num_images"],
        batch_size=GPU_DL["batch_size"],
        worker_crop=GPU_DL["worker_crop"],
        values=GPU_DL["values"],
        warmups=GPU_DL["warmups"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
        gpu=GPU_MODE,
    shell:
        "PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.gpu_dataloader"
        " --library {wildcards.library} --shard {wildcards.shard}"
        " --transforms {params.transforms:q} --manifest {input.manifest:q}"
        " --num-images {params.num_images} --machine {wildcards.machine}"
        " --scope {wildcards.scope} --workers {wildcards.workers}"
        " --randomness {wildcards.randomness} --batch-size {params.batch_size}"
        " --worker-crop {params.worker_crop} --values {params.values} --warmups {params.warmups}"
        " --policy {params.policy:q} --gpu {params.gpu} --output {output.result:q}"
        " 2>&1 | tee {log:q}"
