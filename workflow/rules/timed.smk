# Every timed rule: one per job kind of augbench/planning/regimes/, which declares what the kind's jobs
# run, on which libraries, where, with which flags, memory and threads; the shell is TIMED_SHELL
# (common.smk). A kind of role "pipelines" also waits for the module pipelines it resolves. The
# cpu_dataloader rule of `cpu_dataloader.job_per: library` (one job measuring every setting in one
# process, several result files) is cpu_dataloader.smk's.


for kind in TIMED_KINDS:

    rule:
        name:
            kind.rule
        input:
            unpack(benchmark_env_inputs(kind.rule)),
            unpack(timed_extra_inputs(kind.rule)),
            manifest=DATASET_MANIFEST,
        output:
            result=timed_result(kind.rule),
        log:
            timed_log(kind.rule),
        benchmark:
            timed_benchmark(kind.rule)
        wildcard_constraints:
            **timed_constraints(kind.rule),
        priority: timed_priority(kind.rule)
        conda:
            library_conda_env
        threads: timed_threads(kind.rule)
        resources:
            **timed_resources(kind.rule),
        params:
            **timed_params(kind.rule),
        shell:
            TIMED_SHELL
