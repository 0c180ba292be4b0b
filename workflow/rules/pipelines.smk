# User pipelines (augbench/pipelines.py, docs/pipelines.md): the per-step breakdown (micro
# regime, one thread), each pipeline as the recipe of the DataLoader, GPU DataLoader and DALI
# regimes, and their tables and figure. Jobs, flags and placement: augbench/regimes.py (the
# kinds of role "pipelines").


# A pipeline given as package.module:attribute: the user's torchvision v2 Compose, imported in
# the torchvision env (on the machine running Snakemake, where the module is) and mapped to
# catalog steps for the other libraries. A module that does not import, or an object that is
# not a Compose, is written as an error: every library's rows then say so, nothing else stops.
rule resolve_pipeline:
    input:
        env=ancient(env_marker(MODULE_PIPELINE_LIBRARY)),
    output:
        resolved="results/pipelines/resolved/{pipeline}.json",
    log:
        "logs/pipelines/resolve/{pipeline}.log",
    benchmark:
        "benchmarks/setup/resolve_pipeline/{pipeline}.tsv"
    localrule: True
    conda:
        f"../../envs/{MODULE_PIPELINE_LIBRARY}.yaml"
    params:
        ref=lambda wildcards: MODULE_PIPELINES[wildcards.pipeline],
        python=str(Path(venv_dir(MODULE_PIPELINE_LIBRARY)) / "bin" / "python"),
        root=workflow.basedir,
    shell:
        "PYTHONPATH={params.root:q} {params.python:q} -m "
        "augbench.pipeline_sources.torchvision_module {params.ref:q} --source {params.ref:q} "
        "--out {output.resolved:q} > {log:q} 2>&1"


rule pipeline_breakdown:
    input:
        unpack(benchmark_env_inputs),
        unpack(resolved_pipeline_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("pipeline_breakdown"),
    log:
        timed_log("pipeline_breakdown"),
    benchmark:
        timed_benchmark("pipeline_breakdown")
    priority: timed_priority("pipeline_breakdown")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("pipeline_breakdown")
    resources:
        **timed_resources("pipeline_breakdown"),
    params:
        **timed_params("pipeline_breakdown"),
    shell:
        TIMED_SHELL


rule pipeline_dataloader:
    input:
        unpack(benchmark_env_inputs),
        unpack(resolved_pipeline_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("pipeline_dataloader"),
    log:
        timed_log("pipeline_dataloader"),
    benchmark:
        timed_benchmark("pipeline_dataloader")
    wildcard_constraints:
        **timed_constraints("pipeline_dataloader"),
    priority: timed_priority("pipeline_dataloader")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("pipeline_dataloader")
    resources:
        **timed_resources("pipeline_dataloader"),
    params:
        **timed_params("pipeline_dataloader"),
    shell:
        TIMED_SHELL


# Each pipeline through the GPU DataLoader engine: workers cut a fixed-size uint8 crop (sized
# for a first crop step, else the base crop), the pipeline's steps and Normalize run on CUDA.
# Without a CUDA device the rows are `skipped` (config gpu=optional) or the job fails (required).
rule pipeline_gpu_dataloader:
    input:
        unpack(benchmark_env_inputs),
        unpack(resolved_pipeline_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("pipeline_gpu_dataloader"),
    log:
        timed_log("pipeline_gpu_dataloader"),
    benchmark:
        timed_benchmark("pipeline_gpu_dataloader")
    wildcard_constraints:
        **timed_constraints("pipeline_gpu_dataloader"),
    priority: timed_priority("pipeline_gpu_dataloader")
    conda:
        "../../envs/{library}.yaml"
    threads: timed_threads("pipeline_gpu_dataloader")
    resources:
        **timed_resources("pipeline_gpu_dataloader"),
    params:
        **timed_params("pipeline_gpu_dataloader"),
    shell:
        TIMED_SHELL


# Each pipeline as one DALI pipeline (reader, decoder, its steps, crop_mirror_normalize). Two
# rules, as for single transforms, so only the GPU variant declares a GPU: pipeline_dali
# (dali-gpu; `skipped` rows without a CUDA device) and pipeline_dali_cpu (DALI's CPU backend).
rule pipeline_dali:
    input:
        unpack(benchmark_env_inputs),
        unpack(resolved_pipeline_inputs),
        manifest=DATASET_MANIFEST,
    output:
        result=timed_result("pipeline_dali"),
    log:
        timed_log("pipeline_dali"),
    benchmark:
        timed_benchmark("pipeline_dali")
    wildcard_constraints:
        **timed_constraints("pipeline_dali"),
    priority: timed_priority("pipeline_dali")
    conda:
        "../../envs/dali.yaml"
    threads: timed_threads("pipeline_dali")
    resources:
        **timed_resources("pipeline_dali"),
    params:
        **timed_params("pipeline_dali"),
    shell:
        TIMED_SHELL


use rule pipeline_dali as pipeline_dali_cpu with:
    output:
        result=timed_result("pipeline_dali_cpu"),
    log:
        timed_log("pipeline_dali_cpu"),
    benchmark:
        timed_benchmark("pipeline_dali_cpu")
    resources:
        **timed_resources("pipeline_dali_cpu"),
    params:
        **timed_params("pipeline_dali_cpu"),


# Tables from the pipelines' raw results: the per-step rows never enter all_results.csv.
rule pipeline_tables:
    input:
        results=pipeline_table_inputs,
        after_timed=after_timed_jobs,
    output:
        **SWEEP.pipeline_tables(),
    log:
        "logs/pipeline_tables.log",
    benchmark:
        "benchmarks/analysis/pipeline_tables.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    params:
        pipelines=PIPELINE_NAMES,
        throughput_targets=config["cpu_dataloader"]["required_throughput"],
        starvation=config["starvation"],
    script:
        "../scripts/pipeline_tables.py"


rule pipeline_figure:
    input:
        table="results/tables/pipeline_breakdown.csv",
    output:
        png=report(
            sweep.PIPELINE_FIGURE,
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


# With more than one allocator setting: each pipeline's time under a setting / glibc's.
rule pipeline_allocator_figure:
    input:
        results="results/tables/pipeline_results.csv",
    output:
        png=report(
            sweep.PIPELINE_ALLOCATOR_FIGURE,
            caption="../report/allocator_effect_pipelines.rst",
            category="Figures",
            labels={"figure": "allocator_effect_pipelines", "results": "results"},
        ),
        pdf="results/analysis/allocator_effect_pipelines.pdf",
        caption="results/analysis/allocator_effect_pipelines.caption.txt",
    log:
        "logs/pipeline_allocator_figure.log",
    benchmark:
        "benchmarks/analysis/pipeline_allocator_figure.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    script:
        "../scripts/pipeline_allocator_figure.py"
