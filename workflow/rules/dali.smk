# DALI regime: reader, decoder, the transform and crop_mirror_normalize in one DALI pipeline.
# Two rules so that only the GPU variant declares a GPU: `dali` (decoder "mixed", GPU operators;
# `skipped` rows without a CUDA device) and `dali_cpu` (DALI's CPU backend, device_id=None), a
# separately labelled variant that runs on any machine.


rule dali:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=raw_result("dali", "dali-gpu_{shard}"),
    log:
        job_log("dali", "dali-gpu_{shard}"),
    benchmark:
        job_benchmark("dali", "dali-gpu_{shard}")
    wildcard_constraints:
        library="dali",
    conda:
        "../../envs/dali.yaml"
    threads: DALI["num_threads"] + 1
    resources:
        **cloud_resources("dali"),
        bench_slot=1,
        gpu=1,
    params:
        provision=provision_command,
        root=workflow.basedir,
        transforms=dali_transforms,
        num_images=config["num_images"],
        batch_size=DALI["batch_size"],
        num_threads=DALI["num_threads"],
        prefetch=DALI["prefetch_queue_depth"],
        device_id=DALI["device_id"],
        values=DALI["values"],
        warmups=DALI["warmups"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
        gpu=GPU_MODE,
    shell:
        "PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.dali --variant dali-gpu"
        " --shard {wildcards.shard} --transforms {params.transforms:q}"
        " --num-images {params.num_images}"
        " --machine {wildcards.machine} --batch-size {params.batch_size}"
        " --num-threads {params.num_threads} --prefetch-queue-depth {params.prefetch}"
        " --device-id {params.device_id} --values {params.values} --warmups {params.warmups}"
        " --policy {params.policy:q} --gpu {params.gpu} --output {output.result:q}"
        " 2>&1 | tee {log:q}"


rule dali_cpu:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=raw_result("dali", "dali-cpu_{shard}"),
    log:
        job_log("dali", "dali-cpu_{shard}"),
    benchmark:
        job_benchmark("dali", "dali-cpu_{shard}")
    wildcard_constraints:
        library="dali",
    conda:
        "../../envs/dali.yaml"
    threads: DALI["num_threads"] + 1
    resources:
        **cloud_resources("dali_cpu"),
        bench_slot=1,
    params:
        provision=provision_command,
        root=workflow.basedir,
        transforms=dali_transforms,
        num_images=config["num_images"],
        batch_size=DALI["batch_size"],
        num_threads=DALI["num_threads"],
        prefetch=DALI["prefetch_queue_depth"],
        values=DALI["values"],
        warmups=DALI["warmups"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
    shell:
        "PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.dali --variant dali-cpu"
        " --shard {wildcards.shard} --transforms {params.transforms:q}"
        " --num-images {params.num_images}"
        " --machine {wildcards.machine} --batch-size {params.batch_size}"
        " --num-threads {params.num_threads} --prefetch-queue-depth {params.prefetch}"
        " --values {params.values} --warmups {params.warmups}"
        " --policy {params.policy:q} --output {output.result:q}"
        " 2>&1 | tee {log:q}"
