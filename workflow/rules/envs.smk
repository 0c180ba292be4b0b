# One environment per library, built from its lock and reused while the lock is unchanged. An env
# that cannot be built writes a marker saying so (only its library's rows are lost) and is tried
# again on the next run (param `retry`).


rule build_env:
    input:
        lock=repo_path("envs/{library}.txt"),
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
        python=config["envs"].get("python") or sys.executable,
        retry=env_build_retry,
    script:
        "../scripts/build_env.py"
