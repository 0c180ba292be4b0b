# User pipelines (augbench/workload/pipelines.py, docs/pipelines.md): the per-step breakdown (micro
# regime, one thread), each pipeline as the recipe of the DataLoader, GPU DataLoader and DALI
# regimes, and their tables and figure. Jobs, flags and placement: augbench/planning/regimes/ (the
# kinds of role "pipelines").


# A pipeline given as package.module:attribute: the user's torchvision v2 Compose, imported in
# the torchvision env (on the machine running Snakemake, where the module is) and mapped to
# catalog steps for the other libraries. A module that does not import, or an object that is
# not a Compose, is written as an error: every library's rows then say so, nothing else stops.
rule resolve_pipeline:
    input:
        env=resolve_pipeline_env,
    output:
        resolved=paths.RESOLVED_PIPELINE,
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
    shell:
        'PYTHONPATH="$AUGBENCH_ROOT" {params.python:q} -m '
        "augbench.workload.pipeline_sources.torchvision_module {params.ref:q} --source {params.ref:q} "
        "--out {output.resolved:q} > {log:q} 2>&1"


# The timed rules (pipeline_breakdown, pipeline_dataloader, pipeline_gpu_dataloader,
# pipeline_dali, pipeline_dali_cpu) are timed.smk's.


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
        analysis_code=ANALYSIS_CODE,
        present=present_files("pipelines"),
        present_state=on_disk.state(present_files("pipelines")),
        pipelines=PIPELINE_NAMES,
        throughput_targets=config["cpu_dataloader"]["required_throughput"],
        starvation=config["starvation"],
    script:
        "../scripts/pipeline_tables.py"


rule pipeline_figure:
    input:
        table=paths.table("pipeline_breakdown"),
    output:
        png=report(
            paths.PIPELINE_FIGURE,
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
    params:
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/pipeline_figure.py"


# With more than one allocator setting: each pipeline's time under a setting / glibc's.
rule pipeline_allocator_figure:
    input:
        results=paths.table("pipeline_results"),
    output:
        png=report(
            paths.PIPELINE_ALLOCATOR_FIGURE,
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
    params:
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/pipeline_allocator_figure.py"
