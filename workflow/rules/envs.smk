# One environment per library, built from its lock and reused while the lock is unchanged. An env
# that cannot be built writes a marker saying so (only its library's rows are lost) and is tried
# again on the next run (param `retry`). The lock is read from the workflow's sources by the
# script; its sha256 is the param that rebuilds the env when the lock changes (no path of this
# checkout is recorded: a run moved to another folder rebuilds nothing).


rule build_env:
    output:
        marker="results/envs/{library}.json",
    log:
        "logs/envs/{library}.log",
    benchmark:
        "benchmarks/setup/build_env/{library}.tsv"
    conda:
        "../../envs/{library}.yaml"
    params:
        manager=config["envs"]["manager"],
        venv=lambda wildcards: venv_dir(wildcards.library),
        # Empty: the interpreter that runs the script (the driver's).
        python=config["envs"].get("python") or "",
        lock_sha256=lambda wildcards: lock_digest(wildcards.library),
        retry=env_build_retry,
    script:
        "../scripts/build_env.py"


def measurements_left_behind():
    """Timed jobs of this run's job graph that did not run though they are out of date (their
    result is missing, or their params, inputs or command changed). Snakemake does not look at
    a job behind an ancient() input that a job of the same run rewrites (an env being rebuilt):
    benchmark_env_inputs makes those inputs plain where a job runs anyway for a reason known
    before the run (a missing result, a new lock); this finds the rest."""
    dag = workflow.dag
    if not any(j.rule.name == "build_env" for j in dag.finished_jobs):
        return []
    from snakemake.settings.enums import RerunTrigger

    triggers = workflow.rerun_triggers
    store = workflow.persistence
    timed = {kind.rule for kind in regimes.KINDS.values()}
    left = []
    for job in dag.jobs:
        if job.rule.name not in timed or dag.finished(job):
            continue
        outputs = [str(f) for f in job.output]
        stale = (
            not all(Path(f).exists() for f in outputs)
            or (RerunTrigger.PARAMS in triggers and bool(store.params_changed(job)))
            or (RerunTrigger.INPUT in triggers and any(store.input_changed(job)))
            or (RerunTrigger.CODE in triggers and any(store.code_changed(job)))
        )
        if stale:
            left.extend(outputs)
    return left


def report_left_behind():
    """At the end of a run: one line naming the measurements it left out of date, and why."""
    try:
        left = measurements_left_behind()
    except Exception as exc:  # noqa: BLE001 - advisory: never fails a finished run
        print(
            f"augbench: could not check for measurements left out of date ({exc})",
            file=sys.stderr,
        )
        return
    if left:
        print(
            f"augbench: {len(left)} result file(s) were not measured again in this run "
            f"({on_disk.missing_summary(left)}): their settings changed while the env builds "
            "they wait on ran; run the same command again to measure them",
            file=sys.stderr,
        )
