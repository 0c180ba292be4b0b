# Lazy-output diagnostic (docs/methodology.md): what each call returns and what materializing it
# costs. Not a benchmark: its rows never enter the result tables. It times calls, so it takes the
# bench slot and never overlaps a timed job.


rule lazy_outputs:
    input:
        unpack(benchmark_env_inputs),
        manifest=MANIFEST,
    output:
        result=f"results/analysis/lazy_outputs/{{machine}}/{DATASET}/{{library}}.json",
    log:
        f"logs/{{machine}}/{DATASET}/lazy_outputs/{{library}}.log",
    benchmark:
        f"benchmarks/{{machine}}/{DATASET}/lazy_outputs/{{library}}.tsv"
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
        transforms=",".join(TRANSFORMS),
        num_images=lazy_outputs_num_images(),
        repeats=LAZY["repeats"],
    shell:
        "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
        " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
        " -- -m augbench.engines.lazy_outputs --library {wildcards.library}"
        " --transforms {params.transforms:q} --num-images {params.num_images}"
        " --repeats {params.repeats} --machine {wildcards.machine}"
        " --output {output.result:q} 2>&1 | tee {log:q}"


rule lazy_outputs_table:
    input:
        results=lazy_outputs_inputs(),
        after_timed=after_timed_jobs,
    output:
        **LAZY_TABLES,
    log:
        "logs/lazy_outputs_table.log",
    benchmark:
        "benchmarks/analysis/lazy_outputs_table.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    script:
        "../scripts/lazy_outputs_table.py"
