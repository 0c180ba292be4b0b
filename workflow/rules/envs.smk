# One environment per library, built from its lock and reused while the lock is unchanged. An env
# that cannot be built writes a marker saying so (only its library's rows are lost) and is tried
# again on the next run (param `retry`). The lock is read from the workflow's sources by the
# script; its sha256 is the param that rebuilds the env when the lock changes (no path of this
# checkout is recorded: a run moved to another folder rebuilds nothing).


rule build_env:
    output:
        marker=paths.ENV_RECORD,
    log:
        paths.ENV_LOG,
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
