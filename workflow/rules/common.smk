# Configuration and input functions shared by every rule file. What the sweep plans (which jobs,
# their wildcards, result files and engine flags) comes from augbench.sweep, which reads the
# regime declarations in augbench/regimes.py; this file only connects them to Snakemake.
import functools
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)
# Every job's Python (the scripts of rules, the engines and their launcher, augbench.provision)
# may cache the bytecode of what it imports. Where the machine sets PYTHONDONTWRITEBYTECODE, each
# process would compile its imports again, 2-3 s apiece
# (docs/results/amd-epyc-2c/2026-11-26-bytecode/).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from augbench import adapters, cuda_env, matrix, regimes, slurm, sweep  # noqa: E402
from augbench import pipelines as user_pipelines  # noqa: E402
from augbench.pipeline_sources import torchvision_module  # noqa: E402
from augbench.config import resolve  # noqa: E402
from augbench.logs import exit_on_user_error, exit_with  # noqa: E402
from augbench.resize import configured_datasets  # noqa: E402

# Errors a user can fix (config, dataset, plan) end the run here, before any job, as one line
# each ("augbench: config error at <key>: ..."), never as a traceback: exit_with and
# exit_on_user_error (augbench/logs.py), also inside input and params functions.
# Under a default storage provider the jobs run on machines the sweep provisions (a cloud
# sweep): config gpu: auto is then required there (augbench.config.gpu_mode).
PROVISIONED_MACHINES = bool(workflow.storage_settings.default_storage_provider)
with exit_on_user_error():
    config.update(
        resolve(
            config, Path(workflow.basedir), provisioned_machines=PROVISIONED_MACHINES
        )
    )
if _problems := sweep.check_regimes(config):
    exit_with(*_problems)

MACHINE = config["machine"]
LIBRARIES = config["libraries"]
REGIMES = config["regimes"]
CLOUD = config["cloud"]


def package_fingerprint():
    """A hash of the augbench package's source. Snakemake reruns a rule when its script file
    changes, not when the modules the script imports do: the rules that turn results into
    tables, figures and summaries take this as a parameter, so new analysis code redraws them
    (timed rules do not take it: new code never re-measures)."""
    import hashlib

    digest = hashlib.sha256()
    package = Path(workflow.basedir) / "augbench"
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


ANALYSIS_CODE = package_fingerprint()


wildcard_constraints:
    machine=MACHINE.replace(".", r"\."),
    library="|".join(adapters.names()),
    shard=r"(contiguous-)?(c9)?s\d{3}",
    allocator=regimes.ALLOCATOR_PATTERN,
    n=r"\d+",


def repo_path(relative):
    """A file shipped with the workflow (not produced by it), independent of --directory.
    local(): with a default storage provider (cloud sweeps) it is read from the deployed
    workflow sources on each node, never looked up in the bucket."""
    return local(str(Path(workflow.basedir) / relative))


# -- dataset ----------------------------------------------------------------------------------
# The dataset key (<name>-<12 hex digits>) names the staged folder and every raw result folder:
# results of two datasets sit side by side, and switching back schedules nothing already measured.
# DERIVED: the resolution sweep's datasets (docs/resolution.md). A missing archive stops here.
with exit_on_user_error():
    DATASET_ID, DERIVED = configured_datasets(
        config, Path(".augbench/dataset-ids.json")
    )
if DATASET_ID.note:
    print(f"augbench: {DATASET_ID.note}", file=sys.stderr)
DATASET = DATASET_ID.key
MANIFEST = f"results/data/{DATASET}/manifest.json"
with exit_on_user_error():
    SWEEP = sweep.Sweep(
        config, DATASET, tuple(DERIVED), *sweep.dataset_facts(config, DATASET, DERIVED)
    )
# Every job's memory (augbench.memory) against its machine: the cloud placement under a default
# storage provider (a cloud sweep, dry runs included) or when only the cost of the cloud sweep is
# asked for (`snakemake cost`), else --resources mem_mb or this machine.
COSTING_ONLY = sweep.command_line_targets(sys.argv) == {"cost"}
# `snakemake answer`: only the configured pipelines' jobs and their answer page (no micro or
# transform DataLoader job waits to be measured first).
ANSWER_ONLY = sweep.command_line_targets(sys.argv) == {"answer"}
_cloud = PROVISIONED_MACHINES or COSTING_ONLY
_limit = getattr(workflow.global_resources.get("mem_mb"), "value", None)


def cost_profile():
    """The profile `cost` prices (config cloud.profile), read as a file: no plugin starts."""
    from augbench import profile

    folder = Path(CLOUD["profile"])
    if not folder.is_absolute():
        folder = Path(workflow.basedir) / folder
    try:
        return profile.read(folder)
    except profile.ProfileError as exc:
        exit_with(f"config error at cloud.profile: {exc}")


# A SLURM cluster (`--executor slurm`, profiles/slurm; augbench/slurm.py): every job against its
# partition (slurm.regimes), and, before anything is submitted, the partitions against the
# cluster itself (a dry run asks the config only). Inside a submitted job (the executor's
# job step) the rules keep the resources they were submitted with, and nothing is checked again.
_EXECUTOR = sweep.command_line_executor(
    sys.argv, Path(workflow.basedir), Path(workflow.workdir_init)
)
SUBMITTING_TO_SLURM = _EXECUTOR == slurm.EXECUTOR and not COSTING_ONLY
ON_SLURM = SUBMITTING_TO_SLURM or _EXECUTOR == slurm.JOB_STEP_EXECUTOR
# `snakemake cost` of a SLURM profile (cloud.profile: profiles/slurm) checks the same plan.
_COSTING_SLURM = COSTING_ONLY and cost_profile().executor == slurm.EXECUTOR
# A job that runs here counts a CUDA context in its memory only where this machine has an NVIDIA
# driver (a training job picks its device when it runs); placed jobs (a cloud sweep, SLURM,
# `snakemake cost`) count their placement's GPU.
if not (_cloud or ON_SLURM or _COSTING_SLURM):
    SWEEP.host_gpu = cuda_env.has_driver()
_problems = []
if SUBMITTING_TO_SLURM or _COSTING_SLURM:
    _problems = SWEEP.placement_problems() or slurm.plan_problems(
        config, (job.kind for job in SWEEP.jobs())
    )
    _problems = _problems or SWEEP.memory_refusals(
        "cluster", config_key="slurm.regimes"
    )
    if (
        not _problems
        and SUBMITTING_TO_SLURM
        and not sweep.command_line_dry_run(sys.argv)
    ):
        with exit_on_user_error():
            _problems = slurm.cluster_problems(config, slurm.query_nodes())
elif not ON_SLURM:
    _problems = SWEEP.placement_problems() or SWEEP.memory_refusals(
        "cloud" if _cloud else "local", _limit
    )
if _problems:
    exit_with(*_problems)


@functools.cache
def slurm_time_limits():
    """Each timed rule's SLURM time limit (augbench.slurm.time_limits), computed once: when
    a job's runtime is first asked for."""
    from augbench import plan

    reference = Path(workflow.basedir) / "workflow" / "resources" / "time_model.json"
    models, _ = plan.load_models(reference, Path("."))
    return slurm.time_limits(config, SWEEP.cost_jobs(), models)


def key_pattern(keys):
    """A wildcard constraint matching exactly these dataset keys (keys are [A-Za-z0-9_.-]; no
    URL syntax: with a default storage provider, output patterns are parsed as URLs)."""
    return "|".join(key.replace(".", r"\.") for key in keys)


# Only the datasets this config measures: a benchmark rule never re-creates other datasets' results.
wildcard_constraints:
    dataset=key_pattern([DATASET, *DERIVED]),


# The manifest a benchmark job reads: the staged dataset's or a derived one's (wildcard dataset).
DATASET_MANIFEST = "results/data/{dataset}/manifest.json"


def dataset_archive(wildcards):
    derived = getattr(wildcards, "dataset", DATASET)
    if derived in DERIVED:
        return f"results/data/archives/{derived}.tar"
    archive = config["dataset"].get("archive")
    if not archive:
        return (
            f"results/data/archives/default-{config['dataset']['default_images']}.tar"
        )
    if archive.startswith("gs://"):
        return storage(archive)
    return archive


def other_datasets(root, pattern):
    """Files this machine measured on other datasets (other keys under <root>/<machine>/): the
    tables keep them, each row labelled with its dataset, and no rule re-creates them. None under
    a default storage provider (a cloud sweep): local files are not in the bucket, so they would
    be missing inputs, and a sweep's tables hold that sweep."""
    if workflow.storage_settings.default_storage_provider:
        return []
    return sweep.other_dataset_files(Path(root), MACHINE, {DATASET, *DERIVED}, pattern)


# -- environments ------------------------------------------------------------------------------
def venv_dir(library):
    return str(Path(config["envs"]["dir"]) / library)


def env_marker(library):
    return f"results/envs/{library}.json"


def env_build_failure(library):
    """The marker of ``library``'s env build where the last run could not build it, else None."""
    try:
        marker = json.loads(Path(env_marker(library)).read_text())
    except (OSError, ValueError):
        return None
    return marker if marker.get("status") == "failed" else None


def env_build_retry(wildcards):
    """build_env's param: when the env failed to build last time, when that was; so a new run
    tries the build again (a changed param reruns the job), and a built env is left as it is.
    """
    failure = env_build_failure(wildcards.library)
    return failure["failed_at"] if failure else ""


def benchmark_env_inputs(wildcards):
    """Every configured env marker as ancient(): timed jobs wait for all env builds (no build
    competes with a measurement), but a rewritten marker never forces re-measurement; the job's
    `lock` does (different library versions). Where the library's own env failed to build last
    time, its marker is a plain input: the retried build reruns its jobs. `lock` and `archive`
    also let the launcher rebuild the env and restage the dataset on a node that lacks them (a
    cloud VM)."""
    own = env_marker(wildcards.library)
    inputs = {
        "env": own if env_build_failure(wildcards.library) else ancient(own),
        "lock": repo_path(f"envs/{wildcards.library}.txt"),
        "archive": dataset_archive(wildcards),
    }
    for lib in LIBRARIES:
        if lib != wildcards.library:
            inputs[f"env_{lib}"] = ancient(env_marker(lib))
    return inputs


# Pipelines given as package.module:attribute (a torchvision v2 Compose): resolved into steps in
# the torchvision env before any pipeline job (augbench/pipeline_sources/torchvision_module.py).
# The library whose env imports them (the format's own: its pipeline source's LIBRARY).
MODULE_PIPELINE_LIBRARY = torchvision_module.LIBRARY
MODULE_PIPELINES = user_pipelines.module_refs(
    [user_pipelines.Pipeline.from_dict(p) for p in SWEEP.pipelines]
)


def resolved_pipeline_inputs(wildcards):
    return {
        f"resolved_{name}": f"results/pipelines/resolved/{name}.json"
        for name in MODULE_PIPELINES
    }


# -- timed rules: one pattern for every job kind of augbench/regimes.py -------------------------
# The shell of every timed rule: thread policy, the launcher (augbench.provision: the node's venv
# and staged dataset; it appends --manifest and --env-marker), the engine and its flags
# (augbench.sweep), then --output, or --outputs for a job writing several files.
TIMED_SHELL = (
    "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
    " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
    " -- {params.engine} {params.output_flag} {output:q} 2>&1 | tee {log:q}"
)


def timed_result(rule, **fixed):
    """A kind's result pattern (``fixed`` fills some wildcards): JobKind.output_pattern."""
    return regimes.KINDS[rule].output_pattern(**fixed)


def timed_log(rule, name=None):
    return regimes.KINDS[rule].log_file("logs", "log", name)


def timed_benchmark(rule, name=None):
    return regimes.KINDS[rule].log_file("benchmarks", "tsv", name)


def timed_threads(rule):
    kind = regimes.KINDS[rule]
    own = lambda wildcards: SWEEP.timed_threads(kind, dict(wildcards.items()), _cloud)
    if ON_SLURM:
        return lambda wildcards: slurm.threads(config, kind, own(wildcards))
    return own


def timed_priority(rule):
    """Adjacent priorities for a work unit's allocator settings (Sweep.timed_priority)."""
    kind = regimes.KINDS[rule]
    return lambda wildcards: SWEEP.timed_priority(kind, dict(wildcards.items()))


def timed_resources(rule):
    kind = regimes.KINDS[rule]
    with exit_on_user_error():
        placement = SWEEP.placement(kind)
    mem_mb = lambda wildcards: SWEEP.resources(kind, dict(wildcards.items()))["mem_mb"]
    if ON_SLURM:  # partition, GPUs, time limit, the node to itself (augbench/slurm.py)
        limit = lambda wildcards: slurm_time_limits().get(
            kind.rule, config["slurm"]["max_time_minutes"]
        )
        return {**placement, "mem_mb": mem_mb, **slurm.resources(config, kind, limit)}
    return {**placement, "mem_mb": mem_mb}


def timed_params(rule, output_flag="--output"):
    kind = regimes.KINDS[rule]
    return dict(
        provision=lambda w: SWEEP.launcher(w.library, sys.executable, w.allocator),
        root=workflow.basedir,
        thread_env=sweep.thread_env(kind),
        engine=lambda wildcards: sweep.engine_command(
            SWEEP, kind, dict(wildcards.items())
        ),
        output_flag=output_flag,
    )


def timed_constraints(rule):
    return regimes.KINDS[rule].wildcard_constraints()


def timed_extra_inputs(rule):
    """A pipelines kind's jobs also wait for the module pipelines resolved before them."""
    if regimes.KINDS[rule].role == "pipelines":
        return resolved_pipeline_inputs
    return lambda wildcards: {}


# The kinds timed.smk covers: every kind, but not cpu_dataloader where one job per library
# measures every setting (cpu_dataloader.smk: several result files).
TIMED_KINDS = [
    kind
    for kind in regimes.KINDS.values()
    if not (kind.rule == "cpu_dataloader" and SWEEP.dataloader_job_per_library)
]


# -- what the sweep produces --------------------------------------------------------------------
LAZY_TABLES = sweep.LAZY_TABLES
PIPELINE_NAMES = SWEEP.pipeline_names


def result_files(wildcards=None):
    return SWEEP.outputs("results")


def aggregate_inputs(wildcards=None):
    """The sweep's results plus the configured regimes' results on other datasets."""
    others = [
        f for r in REGIMES for f in other_datasets("results/raw", f"{r}/*/*.json")
    ]
    return [*result_files(), *sorted(others)]


def lazy_outputs_inputs(wildcards=None):
    others = other_datasets("results/analysis/lazy_outputs", "*.json")
    return [*SWEEP.outputs("diagnostic"), *others]


def pipeline_table_inputs(wildcards=None):
    others = other_datasets("results/pipelines/raw", "*/*/*.json")
    return [*SWEEP.outputs("pipelines"), *others]


def summary_extra_inputs(wildcards):
    """The lazy-output table (its flags), the starvation table, the recommendation and the user
    pipelines' rows, for this workflow's own sweep."""
    if wildcards.root != "results":
        return {}
    extra = {"lazy": LAZY_TABLES["csv"]} if SWEEP.lazy_enabled else {}
    extra["starvation"] = "results/tables/starvation.csv"
    extra["recommendation"] = RECOMMENDATION["table"]
    if PIPELINE_NAMES:
        extra["pipelines"] = "results/tables/pipeline_results.csv"
    return extra


def after_timed_jobs(wildcards=None):
    """Every timed job's output as ancient() inputs of the untimed jobs that could otherwise start
    while a measurement still runs: they wait for the last timed job instead of sharing its
    cores; a rewritten file never re-runs them by itself, their own inputs do."""
    if ANSWER_ONLY:
        return ancient(pipeline_table_inputs())
    lazy = lazy_outputs_inputs() if SWEEP.lazy_enabled else []
    return ancient([*aggregate_inputs(), *lazy, *pipeline_table_inputs()])


# -- figures, report and analysis (downstream of the tidy table only) ------------------------
PLOT_FROM = config.get("plot_from") or {}


def figure_targets(root="results"):
    """The figures folder, the report tables and the summary of one output root."""
    return [
        f"{root}/figures",
        f"{root}/analysis/speedups.html",
        f"{root}/analysis/summary.md",
    ]


def final_targets():
    return [*SWEEP.targets(), *figure_targets(), *RECOMMENDATION.values()]


# -- the answer page (augbench.analysis.recommendation) -----------------------------------------
RECOMMENDATION = {
    "table": "results/tables/recommendation.csv",
    "page": "results/analysis/recommendation.md",
}


def recommendation_inputs(wildcards=None):
    """The pipelines' tidy rows and starvation table; none where no pipeline is configured (the
    page then says so)."""
    tables = SWEEP.pipeline_tables()
    if not tables:
        return {}
    return {"rows": tables["results"], "starvation": tables["starvation"]}


def recommendation_pipelines():
    """The configured pipelines in config order, each marked as the user's own or shipped."""
    return [
        {
            "name": p["name"],
            "yours": not user_pipelines.shipped(p["source"], Path(workflow.basedir)),
        }
        for p in config["pipeline_definitions"]
    ]


def tidy_table(wildcards):
    return f"{wildcards.root}/tables/all_results.csv"


def plot_from_sources(name):
    if name not in PLOT_FROM:
        exit_with(
            f"config error at plot_from: no entry {name!r} (results/plots/{name} was asked "
            f"for); configured: {sorted(PLOT_FROM)}; add plot_from.{name} or ask for one of them"
        )
    return PLOT_FROM[name]


def plot_from_fingerprint(wildcards):
    from augbench.analysis.collect import fingerprint

    try:
        return fingerprint(plot_from_sources(wildcards.name))
    except OSError as exc:
        exit_with(
            f"config error at plot_from.{wildcards.name}: {exc} (relative paths are read "
            f"from the working directory {Path.cwd()}); fix the path or remove it"
        )


def plot_targets():
    return [f for name in PLOT_FROM for f in figure_targets(f"results/plots/{name}")]


# -- the cost estimate (its job list: augbench.sweep.Sweep.cost_plan) ----------------------------
def measured_run_fingerprint():
    """Changes with the local run's timings, so `cost` reruns (it never plans timed rules)."""
    files = sorted(Path(CLOUD["estimate_from"]).glob("benchmarks/**/*.tsv"))
    return f"{len(files)}:{max((f.stat().st_mtime_ns for f in files), default=0)}"


def print_recommendation():
    """The answer page's short form, where this run (or an earlier one) has made it."""
    table = Path(RECOMMENDATION["table"])
    if not table.exists():
        return
    import pandas as pd

    from augbench.analysis import recommendation

    try:
        rec = pd.read_csv(table)
    except (OSError, ValueError) as exc:
        print(f"augbench: {table} not readable ({exc})", file=sys.stderr)
        return
    print(recommendation.short_text(rec), file=sys.stderr)
