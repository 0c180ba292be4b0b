# Micro regime: pyperf, one transform at a time, one thread, one job per library x shard.


rule micro:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=raw_result("micro", "{shard}"),
    log:
        job_log("micro", "{shard}"),
    benchmark:
        job_benchmark("micro", "{shard}")
    conda:
        "../../envs/{library}.yaml"
    threads: 1
    resources:
        **cloud_resources("micro"),
        bench_slot=1,
    params:
        provision=provision_command,
        root=workflow.basedir,
        thread_env=MICRO_THREADS.shell_prefix(),
        transforms=micro_transforms,
        num_images=MICRO_NUM_IMAGES,
        channels=CHANNELS,
        layout=micro_layout,
        processes=config["micro"]["processes"],
        min_processes=config["micro"]["min_processes"],
        values=config["micro"]["values"],
        warmups=config["micro"]["warmups"],
        timeout=config["micro"]["transform_timeout_s"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
    shell:
        "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.micro --library {wildcards.library} --shard {wildcards.shard}"
        " --transforms {params.transforms:q} --channels {params.channels}"
        " --layout {params.layout}"
        " --num-images {params.num_images} --machine {wildcards.machine}"
        " --processes {params.processes} --min-processes {params.min_processes}"
        " --values {params.values} --warmups {params.warmups}"
        " --transform-timeout {params.timeout} --policy {params.policy:q}"
        " --output {output.result:q} 2>&1 | tee {log:q}"
