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
# Paths of this machine (the checkout, the driver's interpreter) reach the timed jobs through the
# environment, never through a rule's params or inputs, which Snakemake records with each result:
# results moved or copied to another folder or machine re-measure nothing. A job step that parses
# the workflow on another node (a cloud VM, a SLURM job) sets its own.
ROOT_VAR, PYTHON_VAR = "AUGBENCH_ROOT", "AUGBENCH_PYTHON"
os.environ[ROOT_VAR] = workflow.basedir
os.environ[PYTHON_VAR] = sys.executable

from augbench import adapters, cuda_env, matrix, regimes, slurm, sweep  # noqa: E402
from augbench import pipelines as user_pipelines  # noqa: E402
from augbench.pipeline_sources import torchvision_module  # noqa: E402
from augbench.config import resolve  # noqa: E402
from augbench.logs import exit_on_user_error, exit_with  # noqa: E402
from augbench.resize import configured_datasets  # noqa: E402
from augbench.analysis import on_disk  # noqa: E402

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
# `snakemake --until figures` or `snakemake figures`: the tables and figures from the results on
# disk (augbench.analysis.on_disk), no measurement in the job graph. A cloud sweep's results are in
# its bucket: there the figures follow its jobs, as any target does.
_command = sweep.command_line(sys.argv)
PLOTS_ONLY = (
    _command is not None
    and not PROVISIONED_MACHINES
    and (
        set(_command.until or ()) == {"figures"}
        or sweep.command_line_targets(sys.argv) == {"figures"}
    )
)
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
elif not (ON_SLURM or PLOTS_ONLY):
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


def lock_file(library):
    return Path(workflow.basedir) / "envs" / f"{library}.txt"


@functools.cache
def lock_digest(library):
    from augbench.provision import sha256_bytes

    try:
        return sha256_bytes(lock_file(library))
    except OSError:
        return ""


def env_lock_changed(library):
    """Whether the library's lock differs from the one its env was built from (its marker's
    lock_sha256): the env is rebuilt with other versions, and its results are measured
    again."""
    try:
        built = json.loads(Path(env_marker(library)).read_text()).get("lock_sha256")
    except (OSError, ValueError, AttributeError):
        return False
    return built != lock_digest(library)


def outputs_missing(name, wildcards):
    """Whether a timed job's result file(s) are not on disk (it runs whatever else holds)."""
    kind = regimes.KINDS[name]
    values = dict(wildcards.items())
    settings = [{}]
    if name == "cpu_dataloader" and SWEEP.dataloader_job_per_library:
        settings = SWEEP.dataloader_settings
    try:
        paths = [kind.result.format(**{**values, **s}) for s in settings]
    except (KeyError, IndexError):
        return True
    return any(not Path(path).exists() for path in paths)


def benchmark_env_inputs(rule):
    """A timed rule's env markers: it waits for every env build (no build competes with a
    measurement). A marker is ancient() where the job's result is there and its env keeps its
    versions: a rebuilt env (a moved venv, a retried build) never re-measures by itself. It is a
    plain input where the job runs anyway (its result is missing), where its own env failed to
    build last time (the retried build reruns it), or where its lock changed (new versions):
    Snakemake then schedules the job in the same run as the env builds it waits on; behind an
    ancient() marker of an env being rebuilt, a job is not looked at in that run at all.
    `archive` lets the launcher restage the dataset on a node that lacks it (a cloud VM); the
    lock is read there from the workflow's sources ($AUGBENCH_ROOT)."""

    def inputs(wildcards):
        own = wildcards.library
        # A cloud sweep's results are in the bucket, not here: its markers stay as they were.
        runs_anyway = not PROVISIONED_MACHINES and outputs_missing(rule, wildcards)
        markers = {}
        for lib in LIBRARIES:
            plain = runs_anyway or (
                lib == own and (env_build_failure(lib) or env_lock_changed(lib))
            )
            marker = env_marker(lib)
            markers["env" if lib == own else f"env_{lib}"] = (
                marker if plain else ancient(marker)
            )
        return {**markers, "archive": dataset_archive(wildcards)}

    return inputs


# Pipelines given as package.module:attribute (a torchvision v2 Compose): resolved into steps in
# the torchvision env before any pipeline job (augbench/pipeline_sources/torchvision_module.py).
# The library whose env imports them (the format's own: its pipeline source's LIBRARY).
MODULE_PIPELINE_LIBRARY = torchvision_module.LIBRARY
MODULE_PIPELINES = user_pipelines.module_refs(
    [user_pipelines.Pipeline.from_dict(p) for p in SWEEP.pipelines]
)


def resolve_pipeline_env(wildcards):
    """resolve_pipeline's env marker: ancient() where the pipeline is resolved already, else plain,
    so that the resolution runs in the same run as the env build it waits on."""
    marker = env_marker(MODULE_PIPELINE_LIBRARY)
    done = Path(f"results/pipelines/resolved/{wildcards.pipeline}.json").exists()
    return ancient(marker) if done else marker


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
    '{params.thread_env} PYTHONPATH="$AUGBENCH_ROOT" {params.provision}'
    ' --lock "$AUGBENCH_ROOT"/envs/{wildcards.library}.txt'
    " --archive {input.archive:q} --manifest {input.manifest:q}"
    " -- {params.engine} {params.output_flag} {output:q} 2>&1 | tee {log:q}"
)


def launcher(wildcards):
    """The job's launcher (Sweep.launcher) with the driver's interpreter as $AUGBENCH_PYTHON,
    left for the shell to expand (the launcher quotes every word it is given)."""
    command = SWEEP.launcher(wildcards.library, f"${PYTHON_VAR}", wildcards.allocator)
    return command.replace(f"'${PYTHON_VAR}'", f'"${PYTHON_VAR}"')


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
        provision=launcher,
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
# measures every setting (cpu_dataloader.smk: several result files); none under --until figures
# (PLOTS_ONLY), and only the configured regimes' kinds otherwise: no rule re-creates the result
# of a regime this run does not measure (the tables read those files as plain inputs).
REGIME_OF_RULE = {kind.rule: r.name for r in regimes.ALL for kind in r.kinds}
TIMED_KINDS = [
    kind
    for kind in regimes.KINDS.values()
    if not (kind.rule == "cpu_dataloader" and SWEEP.dataloader_job_per_library)
    and REGIME_OF_RULE[kind.rule] in REGIMES
    and not PLOTS_ONLY
]


# -- what the sweep produces --------------------------------------------------------------------
LAZY_TABLES = sweep.LAZY_TABLES
PIPELINE_NAMES = SWEEP.pipeline_names


def result_files(wildcards=None):
    return SWEEP.outputs("results")


@functools.cache
def on_disk_files(role):
    """This machine's result files of ``role`` on disk, on every dataset. None under a default
    storage provider (a cloud sweep): local files are not in the bucket, and a sweep's tables
    hold that sweep."""
    return [] if PROVISIONED_MACHINES else on_disk.files(role, MACHINE)


def planned_files(role):
    """The configured sweep's result files: inputs of the tables (under --until figures, those
    on disk: no rule writes one there)."""
    planned = SWEEP.outputs(role)
    if PLOTS_ONLY:
        have = set(on_disk_files(role))
        return [f for f in planned if f in have]
    return planned


def rewritable(role, path):
    """Whether a timed rule of this run matches ``path`` (its dataset and regime are
    configured)."""
    dataset, folder = on_disk.dataset_and_folder(role, path)
    regime = REGIME_OF_RULE["lazy_outputs"] if role == "diagnostic" else folder
    return dataset in {DATASET, *DERIVED} and regime in REGIMES


def unplanned_files(role, rewritable_ones):
    planned = set(SWEEP.outputs(role))
    return [
        f
        for f in on_disk_files(role)
        if f not in planned and rewritable(role, f) == rewritable_ones
    ]


@functools.cache
def present_files(role):
    """The result files on disk that the configured sweep does not plan though a rule of this
    run matches them (a library, setting or shard it no longer measures): the tables read them
    through params, so that rule never re-measures them (augbench.analysis.on_disk)."""
    return unplanned_files(role, True)


def table_inputs(role):
    """The planned result files, and every other one on disk that no rule of this run writes
    (other datasets, other regimes): plain inputs of the tables."""
    return [*planned_files(role), *unplanned_files(role, False)]


def aggregate_inputs(wildcards=None):
    return table_inputs("results")


def lazy_outputs_inputs(wildcards=None):
    return table_inputs("diagnostic")


def pipeline_table_inputs(wildcards=None):
    return table_inputs("pipelines")


def table_regimes():
    """The regimes the tables are written for, in the declared order (the same whichever of
    them a run measures): every regime with results on disk, and the configured ones (but
    under --until figures, which measures none)."""
    present = on_disk.regimes_of(on_disk_files("results"))
    configured = set() if PLOTS_ONLY else set(REGIMES)
    return [r for r in regimes.NAMES if r in present | configured]


def table_outputs():
    """aggregate's tables (Sweep.table_outputs, named the same way) for table_regimes()."""
    tables = dict(SWEEP.table_outputs())
    own = {
        r.name: {
            f"speedups_{r.name}": f"results/tables/speedups_{r.name}.csv",
            f"throughputs_{r.name}": f"results/tables/throughputs_{r.name}.csv",
            **r.tables,
        }
        for r in regimes.ALL
    }
    for name in own:
        for key in own[name]:
            tables.pop(key, None)
    for name in TABLE_REGIMES:
        tables |= own[name]
    return tables


def has_results(role):
    """Whether the tables of ``role`` have anything to read: files on disk, or (but under
    --until figures) the sweep's jobs of that role."""
    if on_disk_files(role):
        return True
    return not PLOTS_ONLY and bool(SWEEP.outputs(role))


TABLE_REGIMES = table_regimes()
TABLES = table_outputs()


def report_plots_only():
    """--until figures: one line on what the figures are drawn from, and what the configured sweep
    still lacks; with no result on disk at all, one line saying what to run, and no
    job."""
    found = {role: on_disk_files(role) for role in on_disk.LAYOUT}
    count = sum(len(files) for files in found.values())
    if not count:
        exit_with(
            f"no results yet under results/raw/{MACHINE}: measure first with `snakemake "
            f"--cores 8` (the same --config), then `snakemake --until figures` redraws from them"
        )
    have = {f for files in found.values() for f in files}
    planned = [f for role in on_disk.LAYOUT for f in SWEEP.outputs(role)]
    missing = [f for f in planned if f not in have]
    line = f"augbench: tables and figures from the {count} result files on disk"
    if missing:
        line += (
            f"; {len(missing)} of the configured sweep's {len(planned)} are not measured yet "
            f"({on_disk.missing_summary(missing)}): `snakemake --cores 8` measures them"
        )
    print(line, file=sys.stderr)


if PLOTS_ONLY:
    report_plots_only()


def summary_extra_inputs(wildcards):
    """The lazy-output table (its flags), the starvation table, the recommendation and the user
    pipelines' rows, for this workflow's own sweep."""
    if wildcards.root != "results":
        return {}
    extra = {"lazy": LAZY_TABLES["csv"]} if has_results("diagnostic") else {}
    extra["starvation"] = "results/tables/starvation.csv"
    extra["recommendation"] = RECOMMENDATION["table"]
    if PIPELINE_NAMES and has_results("pipelines"):
        extra["pipelines"] = "results/tables/pipeline_results.csv"
    return extra


def after_timed_jobs(wildcards=None):
    """Every timed job's output as ancient() inputs of the untimed jobs that could otherwise start
    while a measurement still runs: they wait for the last timed job instead of sharing its
    cores; a rewritten file never re-runs them by itself, their own inputs do."""
    if ANSWER_ONLY:
        return ancient(pipeline_table_inputs())
    tables = [*aggregate_inputs(), *lazy_outputs_inputs(), *pipeline_table_inputs()]
    return ancient(tables)


# -- figures, report and analysis (downstream of the tidy table only) ------------------------
PLOT_FROM = config.get("plot_from") or {}


def figure_targets(root="results"):
    """The figures folder, the report tables and the summary of one output root."""
    return [
        f"{root}/figures",
        f"{root}/analysis/speedups.html",
        f"{root}/analysis/summary.md",
    ]


def plot_products():
    """What --until figures makes: every table, figure, summary and the answer, from the files
    on disk."""
    pipelines = []
    if PIPELINE_NAMES and has_results("pipelines"):
        pipelines = [*SWEEP.pipeline_tables().values(), sweep.PIPELINE_FIGURE]
        if len(SWEEP.allocators) > 1:
            pipelines.append(sweep.PIPELINE_ALLOCATOR_FIGURE)
    lazy = list(LAZY_TABLES.values()) if has_results("diagnostic") else []
    return [
        *TABLES.values(),
        *lazy,
        *pipelines,
        *figure_targets(),
        *RECOMMENDATION.values(),
    ]


def final_targets():
    if PLOTS_ONLY:
        return plot_products()
    return [
        *SWEEP.targets(),
        *TABLES.values(),
        *figure_targets(),
        *RECOMMENDATION.values(),
    ]


# -- the answer page (augbench.analysis.recommendation) -----------------------------------------
RECOMMENDATION = {
    "table": "results/tables/recommendation.csv",
    "page": "results/analysis/recommendation.md",
}


def recommendation_inputs(wildcards=None):
    """The pipelines' tidy rows and starvation table; none where no pipeline is configured (the
    page then says so)."""
    tables = SWEEP.pipeline_tables()
    if not tables or not has_results("pipelines"):
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


# -- the end of a run ----------------------------------------------------------------------------


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
