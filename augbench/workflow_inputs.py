"""What the workflow's rules ask for, computed from the resolved config and the command line:
the sweep (augbench.planning.sweep) connected to Snakemake. workflow/rules/common.smk builds one
:class:`WorkflowInputs` while the Snakefile is parsed and hands its methods to the rules as input,
params, threads and resources functions.

Snakemake's own flags (``ancient``, ``storage``) are given to it as functions, so this module
imports nothing of Snakemake and its pure parts run in unit tests
(tests/test_workflow_inputs.py).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from augbench import cuda_env, paths, result_format
from augbench.analysis import on_disk
from augbench.logs import exit_on_user_error, exit_with
from augbench.planning import command_line, regimes, slurm, sweep
from augbench.planning.resize import configured_datasets
from augbench.workload import adapters
from augbench.workload import pipelines as user_pipelines
from augbench.workload.pipeline_sources import torchvision_module

# Paths of this machine reach the timed jobs through the environment (common.smk sets them).
ROOT_VAR, PYTHON_VAR = "AUGBENCH_ROOT", "AUGBENCH_PYTHON"


# The shell of every timed rule: thread policy, the launcher (augbench.planning.provision: the
# node's venv and staged dataset; it appends --manifest and --env-marker), the engine and its flags
# (augbench.planning.sweep), then --output, or --outputs for a job writing several files.
TIMED_SHELL = (
    '{params.thread_env} PYTHONPATH="$AUGBENCH_ROOT" {params.provision}'
    ' --lock "$AUGBENCH_ROOT"/envs/{wildcards.library}.txt'
    " --archive {input.archive:q} --manifest {input.manifest:q}"
    " -- {params.engine} {params.output_flag} {output:q} 2>&1 | tee {log:q}"
)


# The library whose env imports pipelines given as package.module:attribute (a torchvision v2
# Compose; augbench/workload/pipeline_sources/torchvision_module.py).
MODULE_PIPELINE_LIBRARY = torchvision_module.LIBRARY

# Each timed rule's regime.
REGIME_OF_RULE = {kind.rule: r.name for r in regimes.ALL for kind in r.kinds}


def package_fingerprint(basedir: Path) -> str:
    """A hash of the augbench package's source. Snakemake reruns a rule when its script file
    changes, not when the modules the script imports do: the rules that turn results into
    tables, figures and summaries take this as a parameter, so new analysis code redraws them
    (timed rules do not take it: new code never re-measures). The result schema the tables
    validate raw files against (augbench.result_format) counts as their code."""
    digest = hashlib.sha256()
    package = basedir / "augbench"
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    schema = basedir / result_format.SCHEMA_FILE
    if schema.is_file():
        digest.update(str(result_format.SCHEMA_FILE).encode())
        digest.update(schema.read_bytes())
    return digest.hexdigest()[:16]


def key_pattern(keys: Iterable[str]) -> str:
    """A wildcard constraint matching exactly these dataset keys (keys are [A-Za-z0-9_.-]; no
    URL syntax: with a default storage provider, output patterns are parsed as URLs)."""
    return "|".join(key.replace(".", r"\.") for key in keys)


def env_marker(library: str) -> str:
    """The marker of the env ``library`` measures in: a second name's is its base library's."""
    return paths.ENV_RECORD.format(library=adapters.base_of(library))


def library_conda_env(wildcards: Any) -> str:
    """A timed rule's conda env file (``--sdm conda``; Snakemake also records its content with
    every job): the library's, a second name's its base library's (augbench.workload.adapters)."""
    return f"../../envs/{adapters.base_of(wildcards.library)}.yaml"


def env_build_failure(library: str) -> dict[str, Any] | None:
    """The marker of ``library``'s env build where the last run could not build it, else None."""
    try:
        marker = json.loads(Path(env_marker(library)).read_text())
    except (OSError, ValueError):
        return None
    return marker if marker.get("status") == "failed" else None


def env_build_retry(wildcards: Any) -> str:
    """build_env's param: when the env failed to build last time, when that was; so a new run
    tries the build again (a changed param reruns the job), and a built env is left as it is.
    """
    failure = env_build_failure(wildcards.library)
    return failure["failed_at"] if failure else ""


def figure_targets(root: str = "results") -> list[str]:
    """The figures folder, the report tables and the summary of one output root."""
    return [
        f"{root}/figures",
        f"{root}/analysis/speedups.html",
        f"{root}/analysis/summary.md",
    ]


def tidy_table(wildcards: Any) -> str:
    return f"{wildcards.root}/tables/all_results.csv"


def timed_result(rule: str, **fixed: str) -> str:
    """A kind's result pattern (``fixed`` fills some wildcards): JobKind.output_pattern."""
    return regimes.KINDS[rule].output_pattern(**fixed)


def timed_log(rule: str, name: str | None = None) -> str:
    return regimes.KINDS[rule].log_file("logs", "log", name)


def timed_benchmark(rule: str, name: str | None = None) -> str:
    return regimes.KINDS[rule].log_file("benchmarks", "tsv", name)


def timed_constraints(rule: str) -> dict[str, str]:
    return regimes.KINDS[rule].wildcard_constraints()


def measured_run_fingerprint(estimate_from: str) -> str:
    """Changes with the local run's timings, so `cost` reruns (it never plans timed rules)."""
    files = sorted(Path(estimate_from).glob("benchmarks/**/*.tsv"))
    return f"{len(files)}:{max((f.stat().st_mtime_ns for f in files), default=0)}"


def identity(value: Any) -> Any:
    return value


class WorkflowInputs:
    """The run's sweep, what its command line asks for, and the functions the rules call.

    ``config``: resolved (augbench.planning.config.resolve). ``argv``: the command line Snakemake
    was started with. ``provisioned``: a default storage provider is set (a cloud sweep: the jobs
    run on machines the sweep provisions). ``mem_limit``: --resources mem_mb, if given. ``ancient``
    and ``storage_of``: Snakemake's ancient() and storage() (identity where not given)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        basedir: Path,
        workdir: Path,
        argv: list[str],
        provisioned: bool = False,
        mem_limit: int | None = None,
        ancient: Callable[[Any], Any] = identity,
        storage_of: Callable[[str], Any] = identity,
    ) -> None:
        self.config = config
        self.basedir = basedir
        self.provisioned = provisioned
        self.ancient = ancient
        self.storage_of = storage_of
        self.machine = config["machine"]
        self.libraries = config["libraries"]
        self.regimes = config["regimes"]
        self.cloud_config = config["cloud"]
        self._on_disk: dict[str, list[str]] = {}
        self._present: dict[str, list[str]] = {}
        self._lock_digests: dict[str, str] = {}
        self._slurm_limits: dict[str, int] | None = None
        self._read_datasets()
        self._read_command_line(argv, workdir)
        self._check_placement(argv, mem_limit)
        self.module_pipelines = user_pipelines.module_refs(
            [user_pipelines.Pipeline.from_dict(p) for p in self.sweep.pipelines]
        )
        # The kinds timed.smk covers: every kind, but not cpu_dataloader where one job per library
        # measures every setting (cpu_dataloader.smk: several result files); none under --until
        # figures (plots_only), and only the configured regimes' kinds otherwise: no rule
        # re-creates the result of a regime this run does not measure (the tables read those
        # files as plain inputs).
        self.timed_kinds = [
            kind
            for kind in regimes.KINDS.values()
            if not (kind.rule == "cpu_dataloader" and self.sweep.dataloader_job_per_library)
            and REGIME_OF_RULE[kind.rule] in self.regimes
            and not self.plots_only
        ]
        self.table_regimes = self._table_regimes()
        self.tables = self._table_outputs()
        if self.plots_only:
            self.report_plots_only()

    # -- setup ----------------------------------------------------------------------------------
    def _read_datasets(self) -> None:
        """The dataset key (<name>-<12 hex digits>) names the staged folder and every raw result
        folder: results of two datasets sit side by side, and switching back schedules nothing
        already measured. derived: the resolution sweep's datasets (docs/resolution.md). A
        missing archive stops here."""
        with exit_on_user_error():
            dataset_id, derived = configured_datasets(
                self.config, Path(".augbench/dataset-ids.json")
            )
        if dataset_id.note:
            print(f"augbench: {dataset_id.note}", file=sys.stderr)
        self.dataset_id = dataset_id
        self.dataset = dataset_id.key
        self.derived = derived
        self.manifest = paths.DATASET_MANIFEST.format(dataset=self.dataset)
        with exit_on_user_error():
            self.sweep = sweep.Sweep(
                self.config,
                self.dataset,
                tuple(derived),
                *sweep.dataset_facts(self.config, self.dataset, derived),
            )

    def _read_command_line(self, argv: list[str], workdir: Path) -> None:
        targets = command_line.targets(argv)
        # Every job's memory (augbench.planning.memory) against its machine: the cloud placement
        # under a default storage provider (a cloud sweep, dry runs included) or when only the cost
        # of the cloud sweep is asked for (`snakemake cost`), else --resources mem_mb or this one.
        self.costing_only = targets == {"cost"}
        # `snakemake answer`: only the configured pipelines' jobs and their answer page (no micro
        # or transform DataLoader job waits to be measured first).
        self.answer_only = targets == {"answer"}
        # `snakemake --until figures` or `snakemake figures`: the tables and figures from the
        # results on disk (augbench.analysis.on_disk), no measurement in the job graph. A cloud
        # sweep's results are in its bucket: there the figures follow its jobs, as any target does.
        parsed = command_line.parse(argv)
        self.plots_only = (
            parsed is not None
            and not self.provisioned
            and (set(parsed.until or ()) == {"figures"} or targets == {"figures"})
        )
        self.cloud = self.provisioned or self.costing_only
        # A SLURM cluster (`--executor slurm`, profiles/slurm; augbench/planning/slurm.py): every
        # job against its partition (slurm.regimes), and, before anything is submitted, the
        # partitions against the cluster itself (a dry run asks the config only). Inside a
        # submitted job (the executor's job step) the rules keep the resources they were
        # submitted with, and nothing is checked again.
        self.executor = command_line.executor(argv, self.basedir, workdir)
        self.submitting_to_slurm = self.executor == slurm.EXECUTOR and not self.costing_only
        self.on_slurm = self.submitting_to_slurm or self.executor == slurm.JOB_STEP_EXECUTOR
        # `snakemake cost` of a SLURM profile (cloud.profile: profiles/slurm) checks the same plan.
        self.costing_slurm = self.costing_only and self.cost_profile().executor == slurm.EXECUTOR

    def _check_placement(self, argv: list[str], mem_limit: int | None) -> None:
        # A job that runs here counts a CUDA context in its memory only where this machine has an
        # NVIDIA driver (a training job picks its device when it runs); placed jobs (a cloud
        # sweep, SLURM, `snakemake cost`) count their placement's GPU.
        if not (self.cloud or self.on_slurm or self.costing_slurm):
            self.sweep.host_gpu = cuda_env.has_driver()
        problems = []
        if self.submitting_to_slurm or self.costing_slurm:
            problems = self.sweep.placement_problems() or slurm.plan_problems(
                self.config, (job.kind for job in self.sweep.jobs())
            )
            problems = problems or self.sweep.memory_refusals("cluster", config_key="slurm.regimes")
            if not problems and self.submitting_to_slurm and not command_line.dry_run(argv):
                with exit_on_user_error():
                    problems = slurm.cluster_problems(self.config, slurm.query_nodes())
        elif not (self.on_slurm or self.plots_only):
            problems = self.sweep.placement_problems() or self.sweep.memory_refusals(
                "cloud" if self.cloud else "local", mem_limit
            )
        if problems:
            exit_with(*problems)

    def cost_profile(self) -> Any:
        """The profile `cost` prices (config cloud.profile), read as a file: no plugin starts."""
        from augbench.planning import profile

        folder = Path(self.cloud_config["profile"])
        if not folder.is_absolute():
            folder = self.basedir / folder
        try:
            return profile.read(folder)
        except profile.ProfileError as exc:
            exit_with(f"config error at cloud.profile: {exc}")

    def slurm_time_limits(self) -> dict[str, int]:
        """Each timed rule's SLURM time limit (augbench.planning.slurm.time_limits), computed once:
        when a job's runtime is first asked for."""
        if self._slurm_limits is None:
            from augbench.planning import plan

            reference = self.basedir / "workflow" / "resources" / "time_model.json"
            models, _ = plan.load_models(reference, Path("."))
            self._slurm_limits = slurm.time_limits(self.config, self.sweep.cost_jobs(), models)
        return self._slurm_limits

    # -- dataset and environments ---------------------------------------------------------------
    def dataset_archive(self, wildcards: Any) -> Any:
        derived = getattr(wildcards, "dataset", self.dataset)
        if derived in self.derived:
            return paths.DATASET_ARCHIVE.format(dataset=derived)
        archive = self.config["dataset"].get("archive")
        if not archive:
            return paths.DATASET_ARCHIVE.format(
                dataset=f"default-{self.config['dataset']['default_images']}"
            )
        if archive.startswith("gs://"):
            return self.storage_of(archive)
        return archive

    def venv_dir(self, library: str) -> str:
        return str(Path(self.config["envs"]["dir"]) / adapters.base_of(library))

    def lock_digest(self, library: str) -> str:
        library = adapters.base_of(library)
        if library not in self._lock_digests:
            from augbench.planning.provision import sha256_bytes

            try:
                digest = sha256_bytes(self.basedir / "envs" / f"{library}.txt")
            except OSError:
                digest = ""
            self._lock_digests[library] = digest
        return self._lock_digests[library]

    def env_lock_changed(self, library: str) -> bool:
        """Whether the library's lock differs from the one its env was built from (its marker's
        lock_sha256): the env is rebuilt with other versions, and its results are measured
        again."""
        try:
            built = json.loads(Path(env_marker(library)).read_text()).get("lock_sha256")
        except (OSError, ValueError, AttributeError):
            return False
        return built != self.lock_digest(library)

    def outputs_missing(self, name: str, wildcards: Any) -> bool:
        """Whether a timed job's result file(s) are not on disk (it runs whatever else holds)."""
        kind = regimes.KINDS[name]
        values = dict(wildcards.items())
        settings: list[dict[str, str]] = [{}]
        if name == "cpu_dataloader" and self.sweep.dataloader_job_per_library:
            settings = self.sweep.dataloader_settings
        try:
            paths = [kind.result.format(**{**values, **s}) for s in settings]
        except (KeyError, IndexError):
            return True
        return any(not Path(path).exists() for path in paths)

    def benchmark_env_inputs(self, rule: str) -> Callable[[Any], dict[str, Any]]:
        """A timed rule's env markers: it waits for every env build (no build competes with a
        measurement). A marker is ancient() where the job's result is there and its env keeps
        its versions: a rebuilt env (a moved venv, a retried build) never re-measures by itself.
        It is a plain input where the job runs anyway (its result is missing), where its own env
        failed to build last time (the retried build reruns it), or where its lock changed (new
        versions): Snakemake then schedules the job in the same run as the env builds it waits
        on; behind an ancient() marker of an env being rebuilt, a job is not looked at in that
        run at all. `archive` lets the launcher restage the dataset on a node that lacks it (a
        cloud VM); the lock is read there from the workflow's sources ($AUGBENCH_ROOT)."""

        def inputs(wildcards: Any) -> dict[str, Any]:
            # A library's second name (A/A runs) waits for its base library's env, once.
            own = adapters.base_of(wildcards.library)
            # A cloud sweep's results are in the bucket, not here: its markers stay as they were.
            runs_anyway = not self.provisioned and self.outputs_missing(rule, wildcards)
            markers = {}
            for lib in dict.fromkeys(map(adapters.base_of, self.libraries)):
                plain = runs_anyway or (
                    lib == own and bool(env_build_failure(lib) or self.env_lock_changed(lib))
                )
                marker = env_marker(lib)
                markers["env" if lib == own else f"env_{lib}"] = (
                    marker if plain else self.ancient(marker)
                )
            return {**markers, "archive": self.dataset_archive(wildcards)}

        return inputs

    def resolve_pipeline_env(self, wildcards: Any) -> Any:
        """resolve_pipeline's env marker: ancient() where the pipeline is resolved already, else
        plain, so that the resolution runs in the same run as the env build it waits on."""
        marker = env_marker(MODULE_PIPELINE_LIBRARY)
        done = Path(paths.RESOLVED_PIPELINE.format(pipeline=wildcards.pipeline)).exists()
        return self.ancient(marker) if done else marker

    def resolved_pipeline_inputs(self, wildcards: Any) -> dict[str, str]:
        return {
            f"resolved_{name}": paths.RESOLVED_PIPELINE.format(pipeline=name)
            for name in self.module_pipelines
        }

    # -- timed rules: one pattern for every job kind of augbench/planning/regimes/ -----------------
    def launcher(self, wildcards: Any) -> str:
        """The job's launcher (Sweep.launcher) with the driver's interpreter as $AUGBENCH_PYTHON,
        left for the shell to expand (the launcher quotes every word it is given)."""
        command = self.sweep.launcher(wildcards.library, f"${PYTHON_VAR}", wildcards.allocator)
        return command.replace(f"'${PYTHON_VAR}'", f'"${PYTHON_VAR}"')

    def timed_threads(self, rule: str) -> Callable[[Any], int]:
        kind = regimes.KINDS[rule]

        def own(wildcards: Any) -> int:
            return self.sweep.timed_threads(kind, dict(wildcards.items()), self.cloud)

        if self.on_slurm:
            return lambda wildcards: slurm.threads(self.config, kind, own(wildcards))
        return own

    def timed_priority(self, rule: str) -> Callable[[Any], int]:
        """Adjacent priorities for a work unit's allocator settings (Sweep.timed_priority)."""
        kind = regimes.KINDS[rule]
        return lambda wildcards: self.sweep.timed_priority(kind, dict(wildcards.items()))

    def timed_resources(self, rule: str) -> dict[str, Any]:
        kind = regimes.KINDS[rule]
        with exit_on_user_error():
            placement = self.sweep.placement(kind)

        def mem_mb(wildcards: Any) -> int:
            return self.sweep.resources(kind, dict(wildcards.items()))["mem_mb"]

        if (
            self.on_slurm
        ):  # partition, GPUs, time limit, the node to itself (augbench/planning/slurm.py)

            def limit(wildcards: Any) -> int:
                return self.slurm_time_limits().get(
                    kind.rule, self.config["slurm"]["max_time_minutes"]
                )

            return {**placement, "mem_mb": mem_mb, **slurm.resources(self.config, kind, limit)}
        return {**placement, "mem_mb": mem_mb}

    def timed_params(self, rule: str, output_flag: str = "--output") -> dict[str, Any]:
        kind = regimes.KINDS[rule]
        return dict(
            provision=self.launcher,
            thread_env=sweep.thread_env(kind),
            engine=lambda wildcards: sweep.engine_command(
                self.sweep, kind, dict(wildcards.items())
            ),
            output_flag=output_flag,
        )

    def timed_extra_inputs(self, rule: str) -> Callable[[Any], dict[str, str]]:
        """A pipelines kind's jobs also wait for the module pipelines resolved before them."""
        if regimes.KINDS[rule].role == "pipelines":
            return self.resolved_pipeline_inputs
        return lambda wildcards: {}

    # -- what the sweep produces ----------------------------------------------------------------
    def on_disk_files(self, role: str) -> list[str]:
        """This machine's result files of ``role`` on disk, on every dataset. None under a
        default storage provider (a cloud sweep): local files are not in the bucket, and a
        sweep's tables hold that sweep."""
        if role not in self._on_disk:
            self._on_disk[role] = [] if self.provisioned else on_disk.files(role, self.machine)
        return self._on_disk[role]

    def planned_files(self, role: str) -> list[str]:
        """The configured sweep's result files: inputs of the tables (under --until figures,
        those on disk: no rule writes one there)."""
        planned = self.sweep.outputs(role)
        if self.plots_only:
            have = set(self.on_disk_files(role))
            return [f for f in planned if f in have]
        return planned

    def rewritable(self, role: str, path: str) -> bool:
        """Whether a timed rule of this run matches ``path`` (its dataset and regime are
        configured)."""
        dataset, folder = on_disk.dataset_and_folder(role, path)
        regime = REGIME_OF_RULE["lazy_outputs"] if role == "diagnostic" else folder
        return dataset in {self.dataset, *self.derived} and regime in self.regimes

    def unplanned_files(self, role: str, rewritable_ones: bool) -> list[str]:
        planned = set(self.sweep.outputs(role))
        return [
            f
            for f in self.on_disk_files(role)
            if f not in planned and self.rewritable(role, f) == rewritable_ones
        ]

    def present_files(self, role: str) -> list[str]:
        """The result files on disk that the configured sweep does not plan though a rule of
        this run matches them (a library, setting or shard it no longer measures): the tables
        read them through params, so that rule never re-measures them
        (augbench.analysis.on_disk)."""
        if role not in self._present:
            self._present[role] = self.unplanned_files(role, True)
        return self._present[role]

    def table_inputs(self, role: str) -> list[str]:
        """The planned result files, and every other one on disk that no rule of this run writes
        (other datasets, other regimes): plain inputs of the tables."""
        return [*self.planned_files(role), *self.unplanned_files(role, False)]

    def aggregate_inputs(self, wildcards: Any = None) -> list[str]:
        return self.table_inputs("results")

    def lazy_outputs_inputs(self, wildcards: Any = None) -> list[str]:
        return self.table_inputs("diagnostic")

    def pipeline_table_inputs(self, wildcards: Any = None) -> list[str]:
        return self.table_inputs("pipelines")

    def _table_regimes(self) -> list[str]:
        """The regimes the tables are written for, in the declared order (the same whichever of
        them a run measures): every regime with results on disk, and the configured ones (but
        under --until figures, which measures none)."""
        present = on_disk.regimes_of(self.on_disk_files("results"))
        configured = set() if self.plots_only else set(self.regimes)
        return [r for r in regimes.NAMES if r in present | configured]

    def _table_outputs(self) -> dict[str, str]:
        """aggregate's tables (Sweep.table_outputs, named the same way) for table_regimes."""
        tables = dict(self.sweep.table_outputs())
        own = {r.name: r.table_outputs() for r in regimes.ALL}
        for name in own:
            for key in own[name]:
                tables.pop(key, None)
        for name in self.table_regimes:
            tables |= own[name]
        return tables

    def table_arguments(self) -> dict[str, list[Any]]:
        """What each regime table of table_regimes takes beyond the rows (Table.arguments)."""
        return {
            name: [self.sweep.config_value(key) for key in table.config_keys]
            for regime in self.table_regimes
            for name, table in regimes.BY_NAME[regime].tables.items()
        }

    def has_results(self, role: str) -> bool:
        """Whether the tables of ``role`` have anything to read: files on disk, or (but under
        --until figures) the sweep's jobs of that role."""
        if self.on_disk_files(role):
            return True
        return not self.plots_only and bool(self.sweep.outputs(role))

    def report_plots_only(self) -> None:
        """--until figures: one line on what the figures are drawn from, and what the configured
        sweep still lacks; with no result on disk at all, one line saying what to run, and no
        job."""
        found = {role: self.on_disk_files(role) for role in on_disk.LAYOUT}
        count = sum(len(files) for files in found.values())
        if not count:
            exit_with(
                f"no results yet under results/raw/{self.machine}: measure first with `snakemake "
                f"--cores 8` (the same --config), then `snakemake --until figures` redraws from "
                "them"
            )
        have = {f for files in found.values() for f in files}
        planned = [f for role in on_disk.LAYOUT for f in self.sweep.outputs(role)]
        missing = [f for f in planned if f not in have]
        line = f"augbench: tables and figures from the {count} result files on disk"
        if missing:
            line += (
                f"; {len(missing)} of the configured sweep's {len(planned)} are not measured yet "
                f"({on_disk.missing_summary(missing)}): `snakemake --cores 8` measures them"
            )
        print(line, file=sys.stderr)

    def summary_extra_inputs(self, wildcards: Any) -> dict[str, str]:
        """The lazy-output table (its flags), the starvation table, the recommendation and the
        user pipelines' rows, for this workflow's own sweep."""
        if wildcards.root != "results":
            return {}
        extra = {"lazy": paths.LAZY_TABLES["csv"]} if self.has_results("diagnostic") else {}
        extra["starvation"] = paths.table("starvation")
        extra["recommendation"] = paths.RECOMMENDATION["table"]
        if self.sweep.pipeline_names and self.has_results("pipelines"):
            extra["pipelines"] = paths.table("pipeline_results")
        return extra

    def after_timed_jobs(self, wildcards: Any = None) -> Any:
        """Every timed job's output as ancient() inputs of the untimed jobs that could otherwise
        start while a measurement still runs: they wait for the last timed job instead of
        sharing its cores; a rewritten file never re-runs them by itself, their own inputs do."""
        if self.answer_only:
            return self.ancient(self.pipeline_table_inputs())
        tables = [
            *self.aggregate_inputs(),
            *self.lazy_outputs_inputs(),
            *self.pipeline_table_inputs(),
        ]
        return self.ancient(tables)

    # -- figures, report and the answer page ----------------------------------------------------
    def plot_products(self) -> list[str]:
        """What --until figures makes: every table, figure, summary and the answer, from the
        files on disk."""
        pipelines = []
        if self.sweep.pipeline_names and self.has_results("pipelines"):
            pipelines = [*self.sweep.pipeline_tables().values(), paths.PIPELINE_FIGURE]
            if len(self.sweep.allocators) > 1:
                pipelines.append(paths.PIPELINE_ALLOCATOR_FIGURE)
        lazy = list(paths.LAZY_TABLES.values()) if self.has_results("diagnostic") else []
        return [
            *self.tables.values(),
            *lazy,
            *pipelines,
            *figure_targets(),
            *paths.RECOMMENDATION.values(),
        ]

    def final_targets(self) -> list[str]:
        if self.plots_only:
            return self.plot_products()
        return [
            *self.sweep.targets(),
            *self.tables.values(),
            *figure_targets(),
            *paths.RECOMMENDATION.values(),
        ]

    def recommendation_inputs(self, wildcards: Any = None) -> dict[str, str]:
        """The pipelines' tidy rows and starvation table; none where no pipeline is configured
        (the page then says so)."""
        tables = self.sweep.pipeline_tables()
        if not tables or not self.has_results("pipelines"):
            return {}
        return {"rows": tables["results"], "starvation": tables["starvation"]}

    def recommendation_pipelines(self) -> list[dict[str, Any]]:
        """The configured pipelines in config order, each marked as the user's own or shipped."""
        return [
            {"name": p["name"], "yours": not user_pipelines.shipped(p["source"], self.basedir)}
            for p in self.config["pipeline_definitions"]
        ]

    def plot_from_sources(self, name: str) -> Any:
        plot_from = self.config.get("plot_from") or {}
        if name not in plot_from:
            exit_with(
                f"config error at plot_from: no entry {name!r} (results/plots/{name} was asked "
                f"for); configured: {sorted(plot_from)}; add plot_from.{name} or ask for one of "
                "them"
            )
        return plot_from[name]

    def plot_from_fingerprint(self, wildcards: Any) -> str:
        from augbench.analysis.collect import fingerprint

        try:
            return fingerprint(self.plot_from_sources(wildcards.name))
        except OSError as exc:
            exit_with(
                f"config error at plot_from.{wildcards.name}: {exc} (relative paths are read "
                f"from the working directory {Path.cwd()}); fix the path or remove it"
            )

    def plot_targets(self) -> list[str]:
        plot_from = self.config.get("plot_from") or {}
        return [f for name in plot_from for f in figure_targets(f"results/plots/{name}")]
