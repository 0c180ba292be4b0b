# Before the first job: the plan (jobs per phase and regime) and an ETA from the per-job time model
# the cloud cost estimate uses (augbench.planning.plan, augbench.planning.cost). Snakemake then prints one progress
# line per finished job ("N of M steps done").


def rule_path(file):
    """A job's file as its rule names it (what augbench.planning.sweep plans). Under a default storage
    provider Snakemake names it by its local copy (.snakemake/storage/...); the rule's path is
    the storage query less the prefix."""
    from augbench.planning import plan

    if not file.is_storage:
        return str(file)
    return plan.unprefixed(
        file.storage_object.query, workflow.storage_settings.default_storage_prefix
    )


def print_plan(planned_only=False):
    """Advisory only: a plan that cannot be made never stops the run. ``planned_only``: after a
    dry run, whose jobs count as finished once planned."""
    from augbench.planning import plan

    try:
        jobs = list(workflow.dag.needrun_jobs(exclude_finished=not planned_only))
        planned = [
            plan.Planned(
                job.rule.name,
                dict(job.wildcards.items()),
                rule_path(job.output[0]) if job.output else "",
                tuple(rule_path(out) for out in job.output),
            )
            for job in jobs
        ]
        models, source = plan.load_models(
            Path(workflow.basedir) / "workflow" / "resources" / "time_model.json",
            Path("."),
        )
        cores = workflow.resource_settings.cores or 1
        by_output = {job.output: job for job in SWEEP.cost_jobs() if job.output}
        found = plan.phases(planned, by_output, models, config, cores)
        lines = plan.plan_lines(found, source)
        if _EXECUTOR != "local":  # each job on a machine of its own: machine_plan_lines
            lines = machine_plan_lines(planned, jobs, found, source, by_output, models)
        lines = [*lines, *SWEEP.training_supply_gaps()]
    except Exception as exc:  # noqa: BLE001
        lines = [f"augbench plan: not available ({type(exc).__name__}: {exc})"]
    print("\n".join(lines), file=sys.stderr, flush=True)


def machine_plan_lines(planned, jobs, found, source, by_output, models):
    """The plan where the executor sends jobs to machines of their own (a cloud or cluster
    executor): one submission per group job of the run's groups (its members one after another
    on one machine) and per other job that does not run here (localrules)."""
    from augbench.planning import plan

    seconds = plan.job_seconds(planned, by_output, models, config)
    submissions = {}
    for job, value in zip(jobs, seconds):
        group = workflow.dag.get_job_group(job)
        if group is None and job.is_local:
            continue
        key = group if group is not None else job
        submissions[key] = submissions.get(key, 0.0) + (value or 0.0)
    concurrent = workflow.resource_settings.nodes or 1
    # A VM's start (config cloud.vm_start_s), or Snakemake's inside a SLURM job.
    start = (config.get("slurm") or {}).get("job_start_s") if ON_SLURM else None
    start = CLOUD["vm_start_s"] if start is None else start
    return plan.machine_lines(
        found, source, _EXECUTOR, list(submissions.values()), concurrent, start
    )


onstart:
    print_plan()


# A dry run starts no job, so onstart never runs: the same plan is printed when Snakemake is done
# planning (the workflow's job graph is complete by then).
def print_plan_after_dry_run():
    if getattr(workflow, "_dag", None) is not None:
        print_plan(planned_only=True)


if command_line.dry_run(sys.argv):
    import atexit

    atexit.register(print_plan_after_dry_run)
