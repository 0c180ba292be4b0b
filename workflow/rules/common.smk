# Configuration and input functions shared by every rule file. What the sweep plans (which jobs,
# their wildcards, result files and engine flags) comes from augbench.planning.sweep, which reads the
# regime declarations in augbench/planning/regimes/; augbench.workflow_inputs connects them to the
# rules, and this file hands its functions to them.
import os
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)
# Every job's Python (the scripts of rules, the engines and their launcher, augbench.planning.provision)
# may cache the bytecode of what it imports. Where the machine sets PYTHONDONTWRITEBYTECODE, each
# process would compile its imports again, 2-3 s apiece
# (docs/results/amd-epyc-2c/2026-11-26-bytecode/).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from augbench.workload import adapters, matrix  # noqa: E402
from augbench.planning import command_line, regimes, slurm, sweep  # noqa: E402
from augbench import paths  # noqa: E402
from augbench.analysis import run_end  # noqa: E402
from augbench import workflow_inputs as wi  # noqa: E402
from augbench.workload.pipeline_sources import torchvision_module  # noqa: E402
from augbench.planning.config import resolve  # noqa: E402
from augbench.logs import exit_on_user_error, exit_with  # noqa: E402
from augbench.analysis import on_disk  # noqa: E402

# Paths of this machine (the checkout, the driver's interpreter) reach the timed jobs through the
# environment, never through a rule's params or inputs, which Snakemake records with each result:
# results moved or copied to another folder or machine re-measure nothing. A job step that parses
# the workflow on another node (a cloud VM, a SLURM job) sets its own.
os.environ[wi.ROOT_VAR] = workflow.basedir
os.environ[wi.PYTHON_VAR] = sys.executable

# Errors a user can fix (config, dataset, plan) end the run here, before any job, as one line
# each ("augbench: config error at <key>: ..."), never as a traceback: exit_with and
# exit_on_user_error (augbench/logs.py), also inside input and params functions.
# Under a default storage provider the jobs run on machines the sweep provisions (a cloud
# sweep): config gpu: auto is then required there (augbench.planning.config.gpu_mode).
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
# Rules that turn results into tables, figures and summaries rerun when the package's code does.
ANALYSIS_CODE = wi.package_fingerprint(Path(workflow.basedir))


wildcard_constraints:
    machine=MACHINE.replace(".", r"\."),
    library="|".join(adapters.names()),
    shard=r"(contiguous-)?(c9)?s\d{3}",
    allocator=regimes.ALLOCATOR_PATTERN,
    n=r"\d+",


# The run: its datasets and sweep, what the command line asks for (`snakemake cost`, `answer`,
# `--until figures`, a SLURM executor), every job's placement and memory checked before any job.
INPUTS = wi.WorkflowInputs(
    config,
    Path(workflow.basedir),
    Path(workflow.workdir_init),
    sys.argv,
    provisioned=PROVISIONED_MACHINES,
    mem_limit=getattr(workflow.global_resources.get("mem_mb"), "value", None),
    ancient=ancient,
    storage_of=storage,
)
SWEEP = INPUTS.sweep
DATASET_ID = INPUTS.dataset_id
DATASET = INPUTS.dataset
DERIVED = INPUTS.derived
MANIFEST = INPUTS.manifest
PLOTS_ONLY = INPUTS.plots_only
SUBMITTING_TO_SLURM = INPUTS.submitting_to_slurm
ON_SLURM = INPUTS.on_slurm
_EXECUTOR = INPUTS.executor
key_pattern = wi.key_pattern


# Only the datasets this config measures: a benchmark rule never re-creates other datasets' results.
wildcard_constraints:
    dataset=key_pattern([DATASET, *DERIVED]),


# -- input, params, threads and resources functions of the rules (augbench.workflow_inputs) ------
DATASET_MANIFEST = paths.DATASET_MANIFEST
dataset_archive = INPUTS.dataset_archive
cost_profile = INPUTS.cost_profile

# environments
venv_dir = INPUTS.venv_dir
env_build_retry = wi.env_build_retry
lock_digest = INPUTS.lock_digest
benchmark_env_inputs = INPUTS.benchmark_env_inputs
MODULE_PIPELINE_LIBRARY = wi.MODULE_PIPELINE_LIBRARY
MODULE_PIPELINES = INPUTS.module_pipelines
resolve_pipeline_env = INPUTS.resolve_pipeline_env

# timed rules: one pattern for every job kind of augbench/planning/regimes/
TIMED_SHELL = wi.TIMED_SHELL
timed_result = wi.timed_result
timed_log = wi.timed_log
timed_benchmark = wi.timed_benchmark
timed_constraints = wi.timed_constraints
timed_threads = INPUTS.timed_threads
timed_priority = INPUTS.timed_priority
timed_resources = INPUTS.timed_resources
timed_params = INPUTS.timed_params
timed_extra_inputs = INPUTS.timed_extra_inputs
REGIME_OF_RULE = wi.REGIME_OF_RULE
TIMED_KINDS = INPUTS.timed_kinds

# what the sweep produces: the tables' inputs, planned and on disk (augbench.analysis.on_disk)
LAZY_TABLES = paths.LAZY_TABLES
PIPELINE_NAMES = SWEEP.pipeline_names
present_files = INPUTS.present_files
aggregate_inputs = INPUTS.aggregate_inputs
lazy_outputs_inputs = INPUTS.lazy_outputs_inputs
pipeline_table_inputs = INPUTS.pipeline_table_inputs
TABLE_REGIMES = INPUTS.table_regimes
TABLES = INPUTS.tables
after_timed_jobs = INPUTS.after_timed_jobs

# figures, report, the answer page and the cost estimate
RECOMMENDATION = paths.RECOMMENDATION
summary_extra_inputs = INPUTS.summary_extra_inputs
plot_products = INPUTS.plot_products
final_targets = INPUTS.final_targets
recommendation_inputs = INPUTS.recommendation_inputs
recommendation_pipelines = INPUTS.recommendation_pipelines
tidy_table = wi.tidy_table
plot_from_sources = INPUTS.plot_from_sources
plot_from_fingerprint = INPUTS.plot_from_fingerprint
plot_targets = INPUTS.plot_targets


def measured_run_fingerprint():
    """Changes with the local run's timings, so `cost` reruns (it never plans timed rules)."""
    return wi.measured_run_fingerprint(CLOUD["estimate_from"])


# -- the end of a run (augbench.analysis.run_end) ---------------------------------------------------------
def print_recommendation():
    """The answer page's short form, where this run (or an earlier one) has made it."""
    run_end.print_recommendation(Path(RECOMMENDATION["table"]))


def report_left_behind():
    """One line naming the timed jobs this run left out of date, and why."""
    run_end.report_left_behind(workflow)


# A timed rule's conda env file: a library's second name (A/A runs) uses its base library's.
library_conda_env = wi.library_conda_env
