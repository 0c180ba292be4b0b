"""The records every regime module declares and the plan shares, and the registry of regimes.

A **regime** (``micro``, ``cpu_dataloader``, ``gpu_dataloader``, ``dali``, ``training``) is what a
result row is compared within; rows of two regimes never compete. It is measured by one or more
**job kinds**: each a Snakemake rule with its own jobs, e.g. DALI's two variants (``dali`` needs a
GPU, ``dali_cpu`` runs anywhere) or the user pipelines through the regime's engine. A job kind
declares

- ``rule``: the Snakemake rule that runs it (workflow/rules/<file>.smk);
- ``regime`` and ``role``: which rows it writes and what they feed: ``results`` rows go to
  ``aggregate`` (tables, figures, speedups), ``pipelines`` rows to ``pipeline_tables``,
  ``diagnostic`` rows to their own table (the lazy-output check);
- ``result`` and ``log``: the patterns of its result file and of its log/benchmark files
  (wildcards ``machine``, ``dataset``, ``library`` and the kind's own; augbench.paths);
- ``placement``: its machine class, a key of config ``cloud.regimes``;
- ``engine``, ``thread_policy``: the module run in the library's env, and the thread policy the
  launcher sets before Python starts (augbench.policy);
- ``pricing``: how the cost model and the ETA price a job
  (augbench.planning.regimes.pricing.Pricing: from its measured rows, or its measured wall time);
- ``images_key`` (and ``images_cap``): the config key that sets how many images a job reads, so
  its ``--num-images`` and the dataset check before staging come from one place;
- ``runs_key``: the config key that sets how many times each of its jobs runs, each run a job
  and a process of its own (its paths carry the run: augbench.paths.run_suffix); the
  tables pool a setting's runs into one row (augbench.analysis.runs). Empty: one run;
- ``jobs``, ``args``, ``threads``, ``memory``: how its jobs are enumerated from a configuration,
  the engine's flags of one job, its threads and what it holds in memory
  (:class:`augbench.planning.memory.Footprint`): pure functions of a :class:`Planner` (what they
  read of the run's plan; :class:`augbench.planning.sweep.Sweep` implements it).

How to add a regime: docs/architecture.md.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol

from augbench import paths
from augbench.paths import (
    ALLOCATOR_PATTERN,
    ALLOCATOR_WILDCARD,
    RUN_PATTERN,
    RUN_WILDCARD,
)
from augbench.planning.regimes.pricing import Pricing
from augbench.workload import adapters, decoders, loaders

if TYPE_CHECKING:
    from augbench.planning.memory import Footprint, ImageSizes

Wildcards = Mapping[str, str]

ROLES = ("results", "pipelines", "diagnostic")

# Wildcard constraints the kinds' own wildcards share (JobKind.constraints).
SCOPES = "memory|decode"
WORKERS = r"\d+"
RANDOMNESS = "per-sample|batch-shared"

# Jobs that prepare (environments, the dataset) and jobs that summarize (tables, figures, report):
# neither times anything; the plan and the cost model list them by these names.
SETUP_RULES: tuple[str, ...] = (
    "build_env",
    "build_default_archive",
    "stage_dataset",
    "resize_dataset",
    "resolve_pipeline",
)
ANALYSIS_RULES: tuple[str, ...] = (
    "aggregate",
    "draw_figures",
    "speedup_report",
    "summary",
    "lazy_outputs_table",
    "pipeline_tables",
    "pipeline_figure",
    "pipeline_allocator_figure",
    "recommendation",
    "answer_html",
    "calibration",
)


@dataclass(frozen=True)
class JobKind:
    """One Snakemake rule whose jobs time something (module docstring)."""

    rule: str
    regime: str
    role: str
    result: str
    log: str
    placement: str
    engine: str
    # How the cost model and the ETA price a job (augbench.planning.regimes.pricing;
    # augbench.planning.cost).
    pricing: Pricing
    jobs: Callable[[Planner, JobKind, str], list[Job]]
    args: Callable[[Planner, JobKind, Wildcards], dict[str, Any]]
    threads: Callable[[Planner, Wildcards], int]
    # What one job holds in memory (augbench.planning.memory): its rule's mem_mb and the plan's
    # refusal.
    memory: Callable[[Planner, JobKind, Wildcards], Footprint]
    thread_policy: str = ""  # "micro" | "dataloader" | "" (the engine sets its own)
    gpu: bool = False
    # Wildcard constraints of the rule beyond machine/dataset/shard (common.smk); the library's is
    # its regime's libraries (wildcard_constraints).
    constraints: Mapping[str, str] = field(default_factory=dict)
    # The config block holding the kind's measuring parameters (the cost model's defaults for a
    # job priced without its own flags: augbench.planning.cost.estimate_jobs).
    config_block: str = ""
    # The config key (dotted) that sets how many images a job reads (its --num-images): replacing
    # the top-level num_images where set, or, with images_cap, capping it. Planner.num_images_for.
    images_key: str = "num_images"
    images_cap: bool = False
    # What to change when a job does not fit its machine's memory (the plan's refusal).
    memory_fix: str = "lower num_images"
    # Whether a job whose `workers` wildcard exceeds its machine's usable cores writes `skipped`
    # rows without loading anything: "always", or the dotted config key that switches it.
    caps_workers: str = ""
    # The dotted config key that sets how many runs each job makes ("" = one; module docstring).
    runs_key: str = ""

    @property
    def cost(self) -> str:
        """The name of how it is priced (``pyperf``, ``dataloader``, ``stream``, ``breakdown``,
        ``training``, ``whole_job``)."""
        return self.pricing.name

    def log_file(self, folder: str, suffix: str, name: str | None = None) -> str:
        """``<folder>/<log pattern>.<suffix>`` (logs/*.log, benchmarks/*.tsv); ``name`` replaces
        the pattern's last component (a job_per: library job's ``all-settings-{shard}``), which
        keeps the run's wildcard where the pattern has one."""
        if name is not None and self.log.endswith(RUN_WILDCARD):
            name += RUN_WILDCARD
        stem = self.log if name is None else f"{self.log.rsplit('/', 1)[0]}/{name}"
        return f"{folder}/{stem}.{suffix}"

    def result_path(self, machine: str, dataset: str, library: str, **wildcards: str) -> str:
        """A result file's path; ``allocator`` (the suffix, :func:`allocator_suffix`) defaults to
        glibc's empty one, ``run`` (:func:`run_suffix`) to the first run's."""
        wildcards = {"allocator": "", "run": "", "loader": "", "decoder": "", **wildcards}
        return self.result.format(machine=machine, dataset=dataset, library=library, **wildcards)

    def wildcard_constraints(self) -> dict[str, str]:
        """The rule's wildcard constraints: its own, and the libraries its regime measures."""
        return {**self.constraints, "library": "|".join(BY_NAME[self.regime].libraries)}

    def output_pattern(self, **fixed: str) -> str:
        """The result pattern a Snakemake rule declares (``fixed`` fills some wildcards), the
        library and the allocator constrained inline: under a default storage provider an output's
        storage query keeps no global or rule constraint, and the two wildcards are adjacent (so
        are the workers, the decoder and the loader: each of the kind's own constraints is inline
        too)."""
        names = re.findall(r"\{(\w+)\}", self.result)
        libraries = self.wildcard_constraints()["library"]
        inline = {
            **{name: f"{{{name}}}" for name in names},
            **{n: f"{{{n},{c}}}" for n, c in self.constraints.items() if n in names},
            "library": f"{{library,{libraries}}}",
            "allocator": f"{{allocator,{ALLOCATOR_PATTERN}}}",
            "run": f"{{run,{RUN_PATTERN}}}",
            "loader": f"{{loader,{loaders.PATTERN}}}",
            "decoder": f"{{decoder,{decoders.PATTERN}}}",
        }
        return self.result.format(**{**inline, **fixed})

    def wildcards_of(self, path: str) -> dict[str, str] | None:
        """The wildcards of a result path of this kind (any machine, dataset), None if not one."""

        own = {
            "allocator": ALLOCATOR_PATTERN,
            "run": RUN_PATTERN,
            "loader": loaders.PATTERN,
            "decoder": decoders.PATTERN,
        }

        def group(found: re.Match[str]) -> str:
            name = found.group(1)
            return f"(?P<{name}>{own.get(name, '[^/]+?')})"

        pattern = re.sub(r"\\\{(\w+)\\\}", group, re.escape(self.result))
        found = re.search(pattern + "$", path)
        return None if found is None else found.groupdict()


@dataclass(frozen=True)
class Table:
    """A table a regime adds to ``aggregate``'s: its file, the function that computes it from the
    tidy rows (``module:function``, imported where the table is written: the analysis needs
    pandas, the planning does not) and the config keys (dotted) whose values it takes after the
    rows."""

    path: str
    builder: str
    config_keys: tuple[str, ...] = ()

    def build(self, frame: Any, *arguments: Any) -> Any:
        module, _, name = self.builder.partition(":")
        return getattr(importlib.import_module(module), name)(frame, *arguments)


@dataclass(frozen=True)
class Regime:
    """A family of rows that are compared with each other, and the job kinds that measure it.
    It measures every library whose declaration has its capability (``needs``, one of
    augbench.workload.adapters.CAPABILITIES)."""

    name: str
    needs: str
    kinds: tuple[JobKind, ...]
    gpu: bool = False
    # Tables beyond speedups_<regime> and throughputs_<regime> that `aggregate` writes when the
    # regime is configured: output name -> table.
    tables: Mapping[str, Table] = field(default_factory=dict)
    # Figure families drawn once per regime (figure file <family>_<regime>).
    figures: tuple[str, ...] = ("throughput", "stability")

    @property
    def libraries(self) -> tuple[str, ...]:
        """The libraries it measures: those declaring its capability
        (augbench.workload.adapters)."""
        return adapters.with_capability(self.needs)

    def table_outputs(self) -> dict[str, str]:
        """``aggregate``'s tables of the regime, output name -> path: its speedups and
        throughputs, and its own."""
        return {
            f"speedups_{self.name}": paths.table(f"speedups_{self.name}"),
            f"throughputs_{self.name}": paths.table(f"throughputs_{self.name}"),
            **{name: table.path for name, table in self.tables.items()},
        }


@dataclass(frozen=True)
class Job:
    """One planned job: the one record the plan, the Snakemake rules and the cost model share.

    A timed job (its rule a kind of KINDS) has its library, dataset key, wildcards, result files
    and transforms; a setup job (build_env, stage_dataset, ...) its rule and, where it has one,
    its library. What the cost model prices is one job per result file
    (augbench.planning.sweep.Sweep .cost_jobs): the same record with ``output`` (that file),
    ``share`` (of how many a process writes: it carries 1/share of the process's overhead), its
    engine flags (``params_json``), the mean megapixels of its images, its benchmark file and its
    predicted memory."""

    rule: str
    library: str = ""
    dataset: str = ""
    wildcards: tuple[tuple[str, str], ...] = ()
    outputs: tuple[str, ...] = ()
    transforms: tuple[str, ...] = ()
    share: int = 1
    params_json: str = "{}"
    megapixels: float = 0.0  # mean megapixels of the images it holds (0: unknown)
    output: str = ""  # the result file it is priced for
    benchmark: str = ""  # its Snakemake benchmark file
    mem_mb: int = 0  # predicted memory (augbench.planning.memory)
    rss_mb: int = 0
    forked: int = 0  # forked DataLoader workers (shared pages: compare mem_mb with max_pss)

    @property
    def kind(self) -> JobKind:
        """Its kind's declaration (a timed job only)."""
        return KINDS[self.rule]

    @property
    def params(self) -> dict[str, Any]:
        """Its engine flags as keyword names."""
        return {k.replace("-", "_"): v for k, v in json.loads(self.params_json).items()}


class Planner(Protocol):
    """What a kind's functions (``jobs``, ``args``, ``threads``, ``memory``) read of a run's plan:
    the resolved config and what the plan derives from it. ``augbench.planning.sweep.Sweep`` is the
    one implementation; the declarations depend on this much of it and nothing more."""

    config: Mapping[str, Any]
    dataset: str
    machine: str
    host_gpu: bool | None
    transforms: list[str]
    sizes: Mapping[str, ImageSizes]
    policy_json: str
    pipelines: list[dict[str, Any]]
    pipeline_names: list[str]
    pipelines_json: str
    lazy_enabled: bool
    micro_shards: dict[str, list[str]]
    micro_layouts: list[str]
    dataloader_shards: dict[str, list[str]]
    dataloader_settings: list[dict[str, str]]
    dataloader_job_per_library: bool
    gpu_shards: dict[str, list[str]]
    gpu_decoder_shards: dict[str, list[str]]
    dali_shards: dict[str, list[str]]
    dali_variants: list[str]

    def job(
        self,
        kind: JobKind,
        library: str,
        dataset: str,
        wildcards: Mapping[str, str],
        transforms: list[str],
        outputs: list[str] | None = None,
    ) -> Job: ...

    def libraries_of(self, regime: str) -> list[str]: ...

    def gpu_settings(self, library: str) -> list[dict[str, str]]: ...

    def dataloader_settings_of(self, shard: str) -> list[dict[str, str]]: ...

    def num_images_for(self, kind: JobKind) -> int: ...

    def dataset_images(self, dataset: str) -> int: ...

    def mean_pixels(self, dataset: str, images: int) -> float: ...

    def micro_images(self, dataset: str) -> int: ...


def job_kind(regime: str, rule: str, role: str, result: str, log: str, **rest: Any) -> JobKind:
    """A job kind whose result and log paths carry the allocator setting after the library and,
    where it has a ``runs_key``, the run at the end of their names."""
    result, log = (p.replace("{library}", "{library}" + ALLOCATOR_WILDCARD) for p in (result, log))
    if rest.get("runs_key"):
        result, log = result.removesuffix(".json") + RUN_WILDCARD + ".json", log + RUN_WILDCARD
    return JobKind(rule=rule, regime=regime, role=role, result=result, log=log, **rest)


# -- the registry: every regime, in the order tables, figures and job lists follow ------------
# augbench.planning.regimes registers the built-in regimes; tests and extensions register their own.
ALL: tuple[Regime, ...] = ()
BY_NAME: dict[str, Regime] = {}
NAMES: tuple[str, ...] = ()
KINDS: dict[str, JobKind] = {}


def register(regime: Regime) -> None:
    """Add a regime: the registry's views follow."""
    global ALL, NAMES
    ALL = (*ALL, regime)
    BY_NAME[regime.name] = regime
    NAMES = tuple(BY_NAME)
    KINDS.update({k.rule: k for k in regime.kinds})


def unregister(name: str) -> None:
    global ALL, NAMES
    regime = BY_NAME.pop(name)
    ALL = tuple(r for r in ALL if r.name != name)
    NAMES = tuple(BY_NAME)
    for k in regime.kinds:
        KINDS.pop(k.rule, None)


def libraries_for(regime: str, configured: list[str]) -> list[str]:
    """Configured libraries that take part in ``regime``, in configured order."""
    allowed = BY_NAME[regime].libraries
    return [lib for lib in configured if lib in allowed]


def kinds(role: str | None = None) -> list[JobKind]:
    return [k for r in ALL for k in r.kinds if role is None or k.role == role]


def timed_rules() -> tuple[str, ...]:
    """Rules that time something: one at a time on a machine (the bench_slot resource)."""
    return tuple(KINDS)


def timed_rules_in_order() -> tuple[str, ...]:
    """The timed rules as a plan and an estimate list them: those priced from their result rows
    first, then the diagnostic and those priced by their wall time (each in declaration order)."""
    last = [k.rule for k in kinds() if k.role == "diagnostic" or k.pricing.wall_time_only]
    return (*(k.rule for k in kinds() if k.rule not in last), *last)


def gpu_regimes() -> tuple[str, ...]:
    return tuple(r.name for r in ALL if r.gpu)


def kind_of_result(path: str) -> tuple[JobKind, dict[str, str]] | None:
    """The job kind that writes a result file (by its path pattern) and the path's wildcards."""
    for kind in KINDS.values():
        found = kind.wildcards_of(path)
        if found is not None:
            return kind, found
    return None


def benchmark_glob(kind: JobKind) -> tuple[str, str]:
    """Where the benchmark files of a kind lie below benchmarks/ (a glob over every machine and
    dataset) and whether the library is the file's stem or its folder (either may carry an
    allocator suffix: augbench.paths.split_allocator)."""
    pattern = re.sub(r"(\{\w+\})+", "*", kind.log)
    return f"{pattern}.tsv", "stem" if _named_after_library(kind.log) else "folder"


def result_library(kind: JobKind, path: str | PurePath) -> str:
    """The library (with its allocator suffix) a result file of ``kind`` belongs to: the file's
    stem where the kind names its results after the library, else their folder."""
    path = PurePath(path)
    return path.stem if _named_after_library(kind.result.removesuffix(".json")) else path.parts[-2]


def _named_after_library(pattern: str) -> bool:
    """Whether a kind's result or log pattern (without its suffix) names its files after the
    library (they sit in their dataset's folder), not after the job (in the library's folder)."""
    return pattern.endswith(ALLOCATOR_WILDCARD)


# -- what several regimes' kinds share ----------------------------------------------------------
def one_thread(s: Planner, w: Wildcards) -> int:
    return 1


def workers_threads(s: Planner, w: Wildcards) -> int:
    return int(w["workers"]) + 1


def value_bytes(library: str) -> int:
    """Bytes per pixel value of the library's own image form (Kornia: float32)."""
    return adapters.get(library).value_bytes


def temporaries_mb(
    library: str, transforms: list[str] | None, pixels: float, channels: int
) -> float:
    """MiB of the temporaries of the most demanding of ``transforms`` (None: any the library
    has) on one image of ``pixels``, in the library's working dtype
    (augbench.planning.memory.working_copies)."""
    from augbench.planning.memory import working_copies

    copies = working_copies(library, transforms) * adapters.declared(library).working_value_bytes
    return copies * pixels * channels / 2**20
