# User pipelines (augbench/pipelines.py, docs/pipelines.md): the per-step breakdown (micro
# regime, one thread), each pipeline as the recipe of the cpu_dataloader regime, and their tables
# and figure. Input functions are in common.smk (PIPELINES, pipeline_*_results).


rule pipeline_breakdown:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=pipeline_result("micro", "breakdown"),
    log:
        job_log("pipelines/micro", "breakdown"),
    benchmark:
        job_benchmark("pipelines/micro", "breakdown")
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
        pipelines=pipelines_json(),
        num_images=min(PIPELINE_RUNS["breakdown_images"], config["num_images"]),
        min_values=PIPELINE_RUNS["breakdown_min_values"],
        max_values=max(
            PIPELINE_RUNS["breakdown_min_values"],
            PIPELINE_RUNS["breakdown_max_values"],
        ),
        warmups=PIPELINE_RUNS["breakdown_warmups"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
    shell:
        "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.pipeline_breakdown --library {wildcards.library}"
        " --pipelines {params.pipelines:q} --num-images {params.num_images}"
        " --machine {wildcards.machine} --min-values {params.min_values}"
        " --max-values {params.max_values} --warmups {params.warmups}"
        " --policy {params.policy:q} --output {output.result:q} 2>&1 | tee {log:q}"


rule pipeline_dataloader:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=pipeline_result("cpu_dataloader", "{scope}-w{workers}"),
    log:
        job_log("pipelines/cpu_dataloader", "{scope}-w{workers}"),
    benchmark:
        job_benchmark("pipelines/cpu_dataloader", "{scope}-w{workers}")
    wildcard_constraints:
        scope="memory|decode",
        workers=r"\d+",
    conda:
        "../../envs/{library}.yaml"
    threads: lambda wildcards: int(wildcards.workers) + 1
    resources:
        **cloud_resources("cpu_dataloader"),
        bench_slot=1,
    params:
        provision=provision_command,
        root=workflow.basedir,
        thread_env=DATALOADER_THREADS.shell_prefix(),
        transforms=",".join(PIPELINE_NAMES),
        pipelines=pipelines_json(),
        num_images=cpu_dataloader_num_images(),
        batch_size=DATALOADER["batch_size"],
        batches_per_run=PIPELINE_RUNS["dataloader_batches_per_run"],
        num_runs=PIPELINE_RUNS["dataloader_num_runs"],
        prefetch_factor=DATALOADER["prefetch_factor"],
        persistent_workers=DATALOADER["persistent_workers"],
        cap_workers=DATALOADER["cap_workers_at_cores"],
        batch_timeout=DATALOADER["batch_timeout_s"],
        baseline_runs=PIPELINE_RUNS["dataloader_baseline_runs"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
    shell:
        "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.cpu_dataloader"
        " --library {wildcards.library} --scope {wildcards.scope} --workers {wildcards.workers}"
        " --shard pipelines --transforms {params.transforms:q}"
        " --pipelines {params.pipelines:q} --num-images {params.num_images}"
        " --machine {wildcards.machine} --batch-size {params.batch_size}"
        " --batches-per-run {params.batches_per_run} --num-runs {params.num_runs}"
        " --prefetch-factor {params.prefetch_factor}"
        " --persistent-workers {params.persistent_workers}"
        " --cap-workers-at-cores {params.cap_workers} --batch-timeout {params.batch_timeout}"
        " --baseline-runs {params.baseline_runs}"
        " --policy {params.policy:q} --output {output.result:q}"
        " 2>&1 | tee {log:q}"


# Each pipeline through the GPU DataLoader engine: workers cut a fixed-size uint8 crop (sized
# for a first crop step, else the base crop), the pipeline's steps and Normalize run on CUDA.
# Without a CUDA device the rows are `skipped` (config gpu=optional) or the job fails (required).
# `_` before the randomness mode: its values contain `-` (as in gpu_dataloader.smk).
rule pipeline_gpu_dataloader:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=pipeline_result("gpu_dataloader", "{scope}-w{workers}_{randomness}"),
    log:
        job_log("pipelines/gpu_dataloader", "{scope}-w{workers}_{randomness}"),
    benchmark:
        job_benchmark("pipelines/gpu_dataloader", "{scope}-w{workers}_{randomness}")
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
        transforms=",".join(PIPELINE_NAMES),
        pipelines=pipelines_json(),
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
        " --library {wildcards.library} --shard pipelines"
        " --transforms {params.transforms:q} --pipelines {params.pipelines:q}"
        " --manifest {input.manifest:q}"
        " --num-images {params.num_images} --machine {wildcards.machine}"
        " --scope {wildcards.scope} --workers {wildcards.workers}"
        " --randomness {wildcards.randomness} --batch-size {params.batch_size}"
        " --worker-crop {params.worker_crop} --values {params.values} --warmups {params.warmups}"
        " --policy {params.policy:q} --gpu {params.gpu} --output {output.result:q}"
        " 2>&1 | tee {log:q}"


# Each pipeline as one DALI pipeline (reader, decoder, its steps, crop_mirror_normalize). Two
# rules, as for single transforms, so only the GPU variant declares a GPU: pipeline_dali
# (dali-gpu; `skipped` rows without a CUDA device) and pipeline_dali_cpu (DALI's CPU backend).
rule pipeline_dali:
    input:
        unpack(benchmark_env_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=pipeline_result("dali", "dali-gpu"),
    log:
        job_log("pipelines/dali", "dali-gpu"),
    benchmark:
        job_benchmark("pipelines/dali", "dali-gpu")
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
        # From the output, so pipeline_dali_cpu (below) changes only output and placement.
        variant=lambda wildcards, output: Path(output.result).stem,
        provision=provision_command,
        root=workflow.basedir,
        transforms=",".join(PIPELINE_NAMES),
        pipelines=pipelines_json(),
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
        " -- -m augbench.engines.dali --variant {params.variant}"
        " --shard pipelines --transforms {params.transforms:q}"
        " --pipelines {params.pipelines:q} --num-images {params.num_images}"
        " --machine {wildcards.machine} --batch-size {params.batch_size}"
        " --num-threads {params.num_threads} --prefetch-queue-depth {params.prefetch}"
        " --device-id {params.device_id} --values {params.values} --warmups {params.warmups}"
        " --policy {params.policy:q} --gpu {params.gpu} --output {output.result:q}"
        " 2>&1 | tee {log:q}"


use rule pipeline_dali as pipeline_dali_cpu with:
    output:
        result=pipeline_result("dali", "dali-cpu"),
    log:
        job_log("pipelines/dali", "dali-cpu"),
    benchmark:
        job_benchmark("pipelines/dali", "dali-cpu")
    resources:
        **cloud_resources("dali_cpu"),
        bench_slot=1,


# Tables from the pipelines' raw results: the per-step rows never enter all_results.csv.
rule pipeline_tables:
    input:
        results=pipeline_table_inputs,
        after_timed=after_timed_jobs,
    output:
        **pipeline_tables(),
    log:
        "logs/pipeline_tables.log",
    benchmark:
        "benchmarks/analysis/pipeline_tables.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    params:
        pipelines=PIPELINE_NAMES,
        throughput_targets=DATALOADER["required_throughput"],
        starvation=config["starvation"],
    script:
        "../scripts/pipeline_tables.py"


rule pipeline_figure:
    input:
        table="results/tables/pipeline_breakdown.csv",
    output:
        png=report(
            "results/analysis/pipeline_breakdown.png",
            caption="../report/pipeline_breakdown.rst",
            category="Figures",
            labels={"figure": "pipeline_breakdown", "results": "results"},
        ),
        pdf="results/analysis/pipeline_breakdown.pdf",
        caption="results/analysis/pipeline_breakdown.caption.txt",
    log:
        "logs/pipeline_figure.log",
    benchmark:
        "benchmarks/analysis/pipeline_figure.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    script:
        "../scripts/pipeline_figure.py"
