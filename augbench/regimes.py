"""The regimes, declared once: every other module reads them from here.

A **regime** (``micro``, ``cpu_dataloader``, ``gpu_dataloader``, ``dali``) is what a result row is
compared within; rows of two regimes never compete. It is measured by one or more **job kinds**:
each a Snakemake rule with its own jobs, e.g. DALI's two variants (``dali`` needs a GPU,
``dali_cpu`` runs anywhere) or the user pipelines through the regime's engine. A job kind declares

- ``rule``: the Snakemake rule that runs it (workflow/rules/<file>.smk);
- ``regime`` and ``role``: which rows it writes and what they feed: ``results`` rows go to
  ``aggregate`` (tables, figures, speedups), ``pipelines`` rows to ``pipeline_tables``,
  ``diagnostic`` rows to their own table (the lazy-output check);
- ``result`` and ``log``: the patterns of its result file and of its log/benchmark files
  (wildcards ``machine``, ``dataset``, ``library`` and the kind's own);
- ``placement``: its machine class, a key of config ``cloud.regimes``;
- ``engine``, ``thread_policy``: the module run in the library's env, and the thread policy the
  launcher sets before Python starts (augbench.policy);
- ``cost``: how the cost model and the ETA price a job (``pyperf``, ``dataloader``, ``stream``,
  ``breakdown``, ``training``: from its measured rows, augbench.cost; ``whole_job``: its
  measured wall time);
- ``images_key`` (and ``images_cap``): the config key that sets how many images a job reads, so
  its ``--num-images`` and the dataset check before staging come from one place;
- ``runs_key``: the config key that sets how many times each of its jobs runs, each run a job
  and a process of its own (its paths carry the run: :func:`run_suffix`); the tables pool a
  setting's runs into one row (augbench.analysis.runs). Empty: one run;
- ``jobs``, ``args``, ``threads``, ``memory``: how its jobs are enumerated from a configuration,
  the engine's flags of one job, its threads and what it holds in memory
  (:class:`augbench.memory.Footprint`): pure functions of a :class:`Planner` (what they read of
  the run's plan; :class:`augbench.sweep.Sweep` implements it).

How to add a regime: docs/architecture.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from augbench import adapters, policy
from augbench.adapters.base import (
    CPU_TRANSFORMS,
    DALI_PIPELINE,
    GPU_BATCHES,
    TRAINING_FEED,
)

if TYPE_CHECKING:
    from augbench.memory import Footprint, ImageSizes

Wildcards = Mapping[str, str]

RAW = "results/raw/{machine}/{dataset}"
# The allocator setting (config ``allocators``, augbench.allocator) is a dimension of every timed
# job: its result and log paths carry it after the library, ``<library>+<setting>``, empty for
# glibc as shipped (so glibc's paths are the ones a run without the dimension writes).
ALLOCATOR_SEPARATOR = "+"
ALLOCATOR_WILDCARD = "{allocator}"
ALLOCATOR_PATTERN = r"(|\+[a-z][a-z-]*)"  # no "?": a storage query is parsed as a URL
# Roles whose jobs run once per allocator setting (a diagnostic checks outputs, not time).
ALLOCATOR_ROLES = ("results", "pipelines")
# Runs of one job (a kind's ``runs_key``): run 1 writes the paths a run without the dimension
# writes; run k > 1 adds ``-run<k>`` to its result file's and its log's names.
RUN_WILDCARD = "{run}"
RUN_PREFIX = "-run"
RUN_PATTERN = r"(|-run[0-9]+)"
PIPELINE_RAW = "results/pipelines/raw/{machine}/{dataset}"
LAZY_RAW = "results/analysis/lazy_outputs/{machine}/{dataset}"
ROLES = ("results", "pipelines", "diagnostic")
COST_MODELS = ("pyperf", "dataloader", "stream", "breakdown", "training", "whole_job")

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
    cost: str
    jobs: Callable[[Planner, JobKind, str], list[Job]]
    args: Callable[[Planner, JobKind, Wildcards], dict[str, Any]]
    threads: Callable[[Planner, Wildcards], int]
    # What one job holds in memory (augbench.memory): its rule's mem_mb and the plan's refusal.
    memory: Callable[[Planner, JobKind, Wildcards], Footprint]
    thread_policy: str = ""  # "micro" | "dataloader" | "" (the engine sets its own)
    gpu: bool = False
    # Wildcard constraints of the rule beyond machine/dataset/shard (common.smk); the library's is
    # its regime's libraries (wildcard_constraints).
    constraints: Mapping[str, str] = field(default_factory=dict)
    # The config block holding the kind's measuring parameters (the cost model's defaults for a
    # job priced without its own flags: augbench.cost.estimate_jobs).
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
        wildcards = {"allocator": "", "run": "", **wildcards}
        return self.result.format(machine=machine, dataset=dataset, library=library, **wildcards)

    def wildcard_constraints(self) -> dict[str, str]:
        """The rule's wildcard constraints: its own, and the libraries its regime measures."""
        return {**self.constraints, "library": "|".join(BY_NAME[self.regime].libraries)}

    def output_pattern(self, **fixed: str) -> str:
        """The result pattern a Snakemake rule declares (``fixed`` fills some wildcards), the
        library and the allocator constrained inline: under a default storage provider an output's
        storage query keeps no global or rule constraint, and the two wildcards are adjacent."""
        names = re.findall(r"\{(\w+)\}", self.result)
        libraries = self.wildcard_constraints()["library"]
        inline = {
            **{name: f"{{{name}}}" for name in names},
            "library": f"{{library,{libraries}}}",
            "allocator": f"{{allocator,{ALLOCATOR_PATTERN}}}",
            "run": f"{{run,{RUN_PATTERN}}}",
        }
        return self.result.format(**{**inline, **fixed})

    def wildcards_of(self, path: str) -> dict[str, str] | None:
        """The wildcards of a result path of this kind (any machine, dataset), None if not one."""

        own = {"allocator": ALLOCATOR_PATTERN, "run": RUN_PATTERN}

        def group(found: re.Match[str]) -> str:
            name = found.group(1)
            return f"(?P<{name}>{own.get(name, '[^/]+?')})"

        pattern = re.sub(r"\\\{(\w+)\\\}", group, re.escape(self.result))
        found = re.search(pattern + "$", path)
        return None if found is None else found.groupdict()


@dataclass(frozen=True)
class Regime:
    """A family of rows that are compared with each other, and the job kinds that measure it.
    It measures every library whose declaration has its capability (``needs``, one of
    augbench.adapters.CAPABILITIES)."""

    name: str
    needs: str
    kinds: tuple[JobKind, ...]
    gpu: bool = False
    # Tables beyond speedups_<regime> and throughputs_<regime> that `aggregate` writes when the
    # regime is configured: output name -> path.
    tables: Mapping[str, str] = field(default_factory=dict)
    # Figure families drawn once per regime (figure file <family>_<regime>).
    figures: tuple[str, ...] = ("throughput", "stability")

    @property
    def libraries(self) -> tuple[str, ...]:
        """The libraries it measures: those declaring its capability (augbench.adapters)."""
        return adapters.with_capability(self.needs)


@dataclass(frozen=True)
class Job:
    """One planned job: the one record the plan, the Snakemake rules and the cost model share.

    A timed job (its rule a kind of KINDS) has its library, dataset key, wildcards, result files
    and transforms; a setup job (build_env, stage_dataset, ...) its rule and, where it has one,
    its library. What the cost model prices is one job per result file (augbench.sweep.Sweep
    .cost_jobs): the same record with ``output`` (that file), ``share`` (of how many a process
    writes: it carries 1/share of the process's overhead), its engine flags (``params_json``),
    the mean megapixels of its images, its benchmark file and its predicted memory."""

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
    mem_mb: int = 0  # predicted memory (augbench.memory)
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
    the resolved config and what the plan derives from it. ``augbench.sweep.Sweep`` is the one
    implementation; the declarations depend on this much of it and nothing more."""

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


# -- job enumeration: pure functions of a Planner ----------------------------------------------


def _layout_prefix(layout: str) -> str:
    return "" if layout == "native" else f"{layout}-"


def micro_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    from augbench import matrix

    return [
        s.job(kind, lib, dataset, {"shard": f"{_layout_prefix(layout)}{shard}"}, transforms)
        for lib in s.libraries_of(kind.regime)
        for layout in matrix.layouts_for(lib, s.micro_layouts)
        for shard, transforms in s.micro_shards.items()
    ]


def micro_layout(shard: str) -> str:
    from augbench import matrix

    for layout in matrix.LAYOUTS:
        if layout != "native" and shard.startswith(_layout_prefix(layout)):
            return layout
    return "native"


def micro_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    layout = micro_layout(w["shard"])
    micro = s.config["micro"]
    return {
        "library": w["library"],
        "shard": w["shard"],
        "transforms": s.micro_shards[w["shard"].removeprefix(_layout_prefix(layout))],
        "channels": s.config["channels"],
        "layout": layout,
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
        "processes": micro["processes"],
        "min-processes": micro["min_processes"],
        "values": micro["values"],
        "warmups": micro["warmups"],
        "transform-timeout": micro["transform_timeout_s"],
        "max-megapixels": micro["max_megapixels"],
        "policy": s.policy_json,
    }


def dataloader_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x setting x shard (job_per: setting), or per library x shard writing
    every setting's file (job_per: library)."""
    out = []
    for lib in s.libraries_of(kind.regime):
        for shard, transforms in s.dataloader_shards.items():
            if s.dataloader_job_per_library:
                outputs = [
                    kind.result_path(s.machine, dataset, lib, **setting, shard=shard)
                    for setting in s.dataloader_settings_of(shard)
                ]
                out.append(s.job(kind, lib, dataset, {"shard": shard}, transforms, outputs))
            else:
                out += [
                    s.job(kind, lib, dataset, {**setting, "shard": shard}, transforms)
                    for setting in s.dataloader_settings_of(shard)
                ]
    return out


def _dataloader_common(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    dl = s.config["cpu_dataloader"]
    return {
        "library": w["library"],
        "machine": w["machine"],
        "num-images": s.num_images_for(kind),
        "batch-size": dl["batch_size"],
        "prefetch-factor": dl["prefetch_factor"],
        "persistent-workers": dl["persistent_workers"],
        "cap-workers-at-cores": dl["cap_workers_at_cores"],
        "batch-timeout": dl["batch_timeout_s"],
        "policy": s.policy_json,
    }


def dataloader_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    from augbench import matrix

    dl = s.config["cpu_dataloader"]
    which: dict[str, Any] = (
        {"settings": [matrix.dataloader_setting(**x) for x in s.dataloader_settings]}
        if s.dataloader_job_per_library
        else {"scope": w["scope"], "workers": w["workers"]}
    )
    return {
        **which,
        **_dataloader_common(s, kind, w),
        "shard": w["shard"],
        "transforms": s.dataloader_shards[w["shard"]],
        "batches-per-run": dl["batches_per_run"],
        "num-runs": dl["num_runs"],
        "baseline-runs": dl["baseline_runs"],
        "processes": int(dl.get("processes", 1)),
        "window-seconds": float(dl.get("window_s", 0.0)),
    }


def dataloader_threads(s: Planner, w: Wildcards) -> int:
    """The main process plus its workers (Snakemake lowers it to --cores where it is larger);
    a job_per: library job, the most workers any of its settings starts."""
    if "workers" in w:
        return int(w["workers"]) + 1
    return max(int(x["workers"]) for x in s.dataloader_settings) + 1


def gpu_dataloader_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    return [
        s.job(kind, lib, dataset, {**setting, "shard": shard}, transforms)
        for lib in s.libraries_of(kind.regime)
        for setting in s.gpu_settings(lib)
        for shard, transforms in s.gpu_shards.items()
    ]


def _streamed(s: Planner, kind: JobKind, w: Wildcards, shard_map: dict[str, list[str]]) -> dict:
    """What a GPU-regime job streams: one shard of recipes, or (role pipelines) every pipeline."""
    pipelines = kind.role == "pipelines"
    return {
        "shard": "pipelines" if pipelines else w["shard"],
        "transforms": s.pipeline_names if pipelines else shard_map[w["shard"]],
        **({"pipelines": s.pipelines_json} if pipelines else {}),
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
    }


def _repeats(s: Planner, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"values": block["values"], "warmups": block["warmups"], "policy": s.policy_json}


def gpu_dataloader_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    gpu = s.config["gpu_dataloader"]
    return {
        "library": w["library"],
        **_streamed(s, kind, w, s.gpu_shards),
        **{name: w[name] for name in ("scope", "workers", "randomness")},
        "batch-size": gpu["batch_size"],
        "worker-crop": gpu["worker_crop"],
        **_repeats(s, gpu),
        "gpu": s.config["gpu"],
    }


def workers_threads(s: Planner, w: Wildcards) -> int:
    return int(w["workers"]) + 1


def dali_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    if dali_variant(kind) not in s.dali_variants:
        return []
    return [
        s.job(kind, lib, dataset, {"shard": shard}, transforms)
        for lib in s.libraries_of(kind.regime)
        for shard, transforms in s.dali_shards.items()
    ]


def dali_variant(kind: JobKind) -> str:
    """dali -> dali-gpu, dali_cpu -> dali-cpu (also for the pipeline_ kinds)."""
    return "dali-cpu" if kind.rule.endswith("_cpu") else "dali-gpu"


def dali_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    dali = s.config["dali"]
    gpu = dali_variant(kind) == "dali-gpu"
    return {
        "variant": dali_variant(kind),
        **_streamed(s, kind, w, s.dali_shards),
        "batch-size": dali["batch_size"],
        "num-threads": dali["num_threads"],
        "prefetch-queue-depth": dali["prefetch_queue_depth"],
        **_repeats(s, dali),
        # The CUDA device and what to do without one: only the variant that uses a GPU.
        **({"device-id": dali["device_id"], "gpu": s.config["gpu"]} if gpu else {}),
    }


def dali_threads(s: Planner, w: Wildcards) -> int:
    return int(s.config["dali"]["num_threads"]) + 1


def one_thread(s: Planner, w: Wildcards) -> int:
    return 1


def lazy_outputs_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """The lazy-output diagnostic runs on the staged dataset only."""
    if not s.lazy_enabled or dataset != s.dataset:
        return []
    return [s.job(kind, lib, dataset, {}, s.transforms) for lib in s.libraries_of(kind.regime)]


def lazy_outputs_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    return {
        "library": w["library"],
        "transforms": s.transforms,
        "num-images": s.num_images_for(kind),
        "repeats": s.config["lazy_outputs"]["repeats"],
        "machine": w["machine"],
    }


def breakdown_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One breakdown job per library runs every pipeline (staged dataset only), unless
    ``pipeline_runs.breakdown`` is off."""
    if not s.pipelines or dataset != s.dataset or not s.config["pipeline_runs"]["breakdown"]:
        return []
    return [s.job(kind, lib, dataset, {}, s.pipeline_names) for lib in s.libraries_of(kind.regime)]


def breakdown_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    runs = s.config["pipeline_runs"]
    return {
        "library": w["library"],
        "pipelines": s.pipelines_json,
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
        "min-values": runs["breakdown_min_values"],
        "max-values": max(runs["breakdown_min_values"], runs["breakdown_max_values"]),
        "warmups": runs["breakdown_warmups"],
        "values-per-process": int(
            runs.get("breakdown_values_per_process", policy.BREAKDOWN_VALUES_PER_PROCESS)
        ),
        "policy": s.policy_json,
    }


def pipeline_dataloader_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x scope x workers runs every pipeline as its recipe."""
    if not s.pipelines or dataset != s.dataset:
        return []
    runs = s.config["pipeline_runs"]
    return [
        s.job(kind, lib, dataset, {"scope": scope, "workers": str(w)}, s.pipeline_names)
        for lib in s.libraries_of(kind.regime)
        for scope in runs["dataloader_scopes"]
        for w in runs["dataloader_workers"]
    ]


def pipeline_processes(runs: Mapping[str, Any]) -> int:
    """Fresh processes per pipeline DataLoader row (config
    ``pipeline_runs.dataloader_processes``; one where the key is absent): each gives the row one
    value (augbench.engines.dataloader.processes)."""
    return int(runs.get("dataloader_processes", 1))


def pipeline_dataloader_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    runs = s.config["pipeline_runs"]
    return {
        "scope": w["scope"],
        "workers": w["workers"],
        **_dataloader_common(s, kind, w),
        "shard": "pipelines",
        "transforms": s.pipeline_names,
        "pipelines": s.pipelines_json,
        "batches-per-run": runs["dataloader_batches_per_run"],
        "num-runs": runs["dataloader_num_runs"],
        "baseline-runs": runs["dataloader_baseline_runs"],
        "processes": pipeline_processes(runs),
        "window-seconds": float(runs.get("dataloader_window_s", 0.0)),
    }


def pipeline_gpu_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x scope x workers x randomness (the single-transform settings)."""
    if not s.pipelines or dataset != s.dataset:
        return []
    return [
        s.job(kind, lib, dataset, setting, s.pipeline_names)
        for lib in s.libraries_of(kind.regime)
        for setting in s.gpu_settings(lib)
    ]


def pipeline_dali_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One DALI job per variant runs every pipeline."""
    if not s.pipelines or dataset != s.dataset:
        return []
    if dali_variant(kind) not in s.dali_variants:
        return []
    return [s.job(kind, lib, dataset, {}, s.pipeline_names) for lib in s.libraries_of(kind.regime)]


# -- what one job holds in memory (augbench.memory) ---------------------------------------------


def _value_bytes(library: str) -> int:
    """Bytes per pixel value of the library's own image form (Kornia: float32)."""
    from augbench import adapters

    return adapters.get(library).value_bytes


def _working_mb(
    s: Planner, library: str, dataset: str, images: int, transforms: list[str] | None = None
) -> float:
    """The temporaries of the job's most demanding transform (None: any the library has) on the
    largest of its images (augbench.memory.working_copies)."""
    from augbench.memory import working_copies

    pixels = max(s.sizes[dataset].first(max(images, 1)) or [0])
    copies = working_copies(library, transforms) * adapters.declared(library).working_value_bytes
    return copies * pixels * s.config["channels"] / 2**20


def micro_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """One pyperf worker at a time holds the job's images (within micro.max_megapixels) twice at
    its peak: the decoded cache and the library's own form of them (float32 for Kornia; and its
    row-major copy for the contiguous layout); a light manager process runs beside it."""
    from augbench.memory import Footprint

    images = s.micro_images(w["dataset"])
    # The contiguous layout's row-major copy replaces a view (torchvision: a uint8 copy more) or
    # a float32 copy (Kornia: one image at a time): one more byte per value.
    layout = micro_layout(w["shard"])
    contiguous = layout != "native"
    transforms = s.micro_shards[w["shard"].removeprefix(_layout_prefix(layout))]
    return Footprint(
        w["library"], images=images, pixels=s.mean_pixels(w["dataset"], images),
        channels=s.config["channels"], copies=1 + _value_bytes(w["library"]) + contiguous,
        extra_mb=policy.MANAGER_RSS_MB,
        working_mb=_working_mb(s, w["library"], w["dataset"], images, transforms),
    )  # fmt: skip


def held_images_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """A job holding its images in the library's form and one output per image (the lazy-output
    check; the pipeline breakdown, whose float32 tensor tails need torch). The breakdown runs
    each round of passes after the first in a fresh interpreter of its own
    (augbench.engines.pipeline_breakdown): one more process that imports the library and holds
    its own decoded and prepared images, and times every pass in a child forked from it, one at
    a time, which shares its pages and copies the inputs into a layout of its own: one forked
    process with one more copy."""
    from augbench.memory import Footprint

    images = min(s.num_images_for(kind), s.dataset_images(w["dataset"]))
    value = _value_bytes(w["library"])
    pixels = s.mean_pixels(w["dataset"], images)
    breakdown = kind.role == "pipelines"
    image_mb = images * pixels * s.config["channels"] / 2**20
    # The fork's copy of the inputs, and the round interpreter's decoded and prepared images.
    round_mb = image_mb * (value + 1 + value) if breakdown else 0.0
    return Footprint(
        w["library"], torch=breakdown, images=images, pixels=pixels,
        copies=1 + value + (4 if breakdown else value),
        working_mb=_working_mb(s, w["library"], w["dataset"], images),
        processes=2 if breakdown else 1, forked=1 if breakdown else 0, extra_mb=round_mb,
    )  # fmt: skip


def output_pixels(steps: list[Any], pixels: float) -> float:
    """Pixels of a pipeline's output image (its steps: augbench.pipelines.Step): the last size a
    step sets (``size``: an int or (h, w); ``max_size``: its square, an upper bound), else the
    input's."""
    for step in steps:
        params = step.params or {}
        if "size" in params:
            size = params["size"]
            pixels = size * size if isinstance(size, int) else size[0] * size[1]
        elif "max_size" in params:
            pixels = params["max_size"] ** 2
    return float(pixels)


def dataloader_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """The main process (torch and the library) holds the memory scope's decoded images (in the
    decode scope too, for its memory-scope companion); every live DataLoader (the regime's, the
    bare loop's, the companion's) has its own forked workers; the loader measured at a time has
    workers x prefetch_factor batches in flight and the main process one more (float32 CHW
    outputs, masks included). A job_per: library job runs its settings one after another: its
    largest."""
    from augbench import recipes
    from augbench.memory import Footprint

    dl = s.config["cpu_dataloader"]
    pipelines = kind.role == "pipelines"
    runs = s.config["pipeline_runs"]
    baselines = runs["dataloader_baseline_runs"] if pipelines else dl["baseline_runs"]
    batch = dl["batch_size"]
    settings = (
        [{"scope": w["scope"], "workers": w["workers"]}] if "scope" in w
        else s.dataloader_settings
    )  # fmt: skip
    images = min(s.num_images_for(kind), s.dataset_images(w["dataset"]))
    pixels = s.mean_pixels(w["dataset"], images)
    loaders = max(
        1 + (baselines > 0) + (x["scope"] == "decode" and baselines > 0) for x in settings
    )
    workers = max(int(x["workers"]) for x in settings)
    if pipelines:  # the largest output of the pipelines the library runs, masks included
        from augbench import adapters
        from augbench import pipelines as user_pipelines

        adapter = adapters.get(w["library"])
        largest = max(s.sizes[w["dataset"]].first(images) or [0])
        mask = _value_bytes(w["library"])
        per_image = max(
            [
                output_pixels(p.steps, largest) * (12 + (mask if "mask" in p.targets else 0))
                for p in user_pipelines.from_json(s.pipelines_json).values()
                if user_pipelines.support_problem(adapter, p) is None
            ],
            default=0.0,
        )
    else:
        per_image = recipes.OUTPUT_SIZE**2 * 12.0  # every recipe ends in a 224 px float32 crop
    in_flight = (workers * dl["prefetch_factor"] + 1) * batch
    # Each row (and the baselines) runs in a fresh fork of the job process, which forks the
    # loaders' workers: all of them share the job process's pages. With several processes per
    # row, each later one is a fresh interpreter started while the job's process waits.
    later = (pipeline_processes(runs) if pipelines else int(dl.get("processes", 1))) > 1
    return Footprint(
        w["library"], torch=True, forked=1 + workers * loaders, processes=1 + later,
        images=images if baselines > 0 or any(x["scope"] == "memory" for x in settings) else 0,
        pixels=pixels, value_bytes=_value_bytes(w["library"]),
        batches_mb=in_flight * per_image / 2**20,
    )  # fmt: skip


def training_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x worker count, every training recipe (catalog recipes and user
    pipelines) in it."""
    transforms = list(s.config["training"]["transforms"])
    return [
        s.job(kind, lib, dataset, {"workers": str(workers)}, transforms)
        for lib in s.libraries_of(kind.regime)
        for workers in s.config["training"]["workers"]
    ]


def training_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    t = s.config["training"]
    transforms = list(t["transforms"])
    used = [p for p in s.pipelines if p["name"] in transforms]
    return {
        "library": w["library"],
        "machine": w["machine"],
        "workers": w["workers"],
        "transforms": transforms,
        "num-images": s.num_images_for(kind),
        "batch-size": t["batch_size"],
        "prefetch-factor": s.config["cpu_dataloader"]["prefetch_factor"],
        "accelerator": t["accelerator"],
        "model": t["model"],
        "cpu-input-size": t["cpu_input_size"],
        "steps": t["steps"],
        "warmup-steps": t["warmup_steps"],
        "model-steps": t["model_steps"],
        "blocks": t["blocks"],
        "feeds": ",".join(t["feeds"]),
        "worker-crop": s.config["gpu_dataloader"]["worker_crop"],
        **({"pipelines": json.dumps(used, sort_keys=True)} if used else {}),
    }


def training_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """The DataLoader of the decode scope (forked workers, batches in flight) and the model's
    training state in the main process (policy.TRAINING_MODEL_MB: weights, gradients, momentum
    and activations at the batch size). The state is always counted: the device is chosen when
    the job runs (CUDA where usable), so a job placed on a GPU machine may still train on the
    CPU; where the job can have a GPU (its placement's, or, for a job that runs where the
    workflow runs, an NVIDIA driver on this machine: ``Planner.host_gpu``) the host's CUDA
    context is counted too, as for the GPU regimes."""
    from augbench import recipes
    from augbench.memory import Footprint

    t = s.config["training"]
    workers = int(w["workers"])
    batch = t["batch_size"]
    in_flight = (workers * s.config["cpu_dataloader"]["prefetch_factor"] + 2) * batch
    model = "sleep" if str(t["accelerator"]).startswith("sleep:") else "resnet18"
    if t["model"] == "resnet50":  # on a CPU machine: ~2.5x resnet18's training state
        model = "resnet50"
    placed = "gpu" in s.config["cloud"]["regimes"].get(kind.placement, {})
    # A CUDA context where the job can have one: its placement's GPU, or this machine's driver.
    gpu = placed if s.host_gpu is None else s.host_gpu
    declared = adapters.declared(w["library"])
    # A library with its own pipeline loader (DALI) runs its workers as threads, not forks.
    own_loader = DALI_PIPELINE in declared.capabilities
    return Footprint(
        w["library"], torch=declared.env_has_torch,
        forked=0 if own_loader else workers,
        worker_private_mb=policy.TRAINING_WORKER_PRIVATE_MB,
        batches_mb=in_flight * recipes.OUTPUT_SIZE**2 * 12.0 / 2**20,  # float32 224 px
        extra_mb=policy.TRAINING_MODEL_MB[model] * batch / 32, gpu=gpu,
    )  # fmt: skip


def gpu_dataloader_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """Host side: torch with a CUDA context and the DataLoader's forked workers (batches live
    on the GPU)."""
    from augbench.memory import Footprint

    return Footprint(w["library"], torch=True, forked=int(w["workers"]), gpu=True)


def dali_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """DALI's pipeline holds its prefetch queue of batches (plus one in flight), each batch in
    its stages' buffers: decoded, augmented (uint8) and the float32 output."""
    from augbench.memory import Footprint

    dali = s.config["dali"]
    batches = dali["batch_size"] * (dali["prefetch_queue_depth"] + 1)
    return Footprint(
        w["library"], images=batches, pixels=s.mean_pixels(w["dataset"], s.num_images_for(kind)),
        copies=1 + 1 + 4, gpu=dali_variant(kind) == "dali-gpu",
    )  # fmt: skip


# -- the declarations ------------------------------------------------------------------------

SCOPES = "memory|decode"
WORKERS = r"\d+"
RANDOMNESS = "per-sample|batch-shared"
GPU_TABLES = {
    "gpu_vs_cpu_ratio": "results/tables/gpu_vs_cpu_ratio.csv",
    "gpu_memory": "results/tables/gpu_throughput_memory.csv",
}


def _kind(rule: str, regime: str, role: str, result: str, log: str, **rest: Any) -> JobKind:
    """A job kind whose result and log paths carry the allocator setting after the library and,
    where it has a ``runs_key``, the run at the end of their names."""
    result, log = (p.replace("{library}", "{library}" + ALLOCATOR_WILDCARD) for p in (result, log))
    if rest.get("runs_key"):
        result, log = result.removesuffix(".json") + RUN_WILDCARD + ".json", log + RUN_WILDCARD
    return JobKind(rule=rule, regime=regime, role=role, result=result, log=log, **rest)


MICRO = Regime(
    "micro",
    CPU_TRANSFORMS,
    (
        _kind(
            "micro", "micro", "results",
            f"{RAW}/micro/{{library}}/{{shard}}.json",
            "{machine}/{dataset}/micro/{library}/{shard}",
            placement="micro", engine="augbench.engines.micro", cost="pyperf",
            jobs=micro_jobs, args=micro_args, threads=one_thread, thread_policy="micro",
            memory=micro_memory,
            config_block="micro", images_key="micro.num_images",
            memory_fix="lower micro.max_megapixels or micro.num_images",
        ),
        _kind(
            "lazy_outputs", "micro", "diagnostic",
            f"{LAZY_RAW}/{{library}}.json",
            "{machine}/{dataset}/lazy_outputs/{library}",
            placement="micro", engine="augbench.engines.lazy_outputs", cost="whole_job",
            jobs=lazy_outputs_jobs, args=lazy_outputs_args, threads=one_thread,
            memory=held_images_memory,
            thread_policy="micro", images_key="lazy_outputs.num_images", images_cap=True,
            memory_fix="lower lazy_outputs.num_images",
        ),
        _kind(
            "pipeline_breakdown", "micro", "pipelines",
            f"{PIPELINE_RAW}/micro/{{library}}/breakdown.json",
            "{machine}/{dataset}/pipelines/micro/{library}/breakdown",
            placement="micro", engine="augbench.engines.pipeline_breakdown", cost="breakdown",
            jobs=breakdown_jobs, args=breakdown_args, threads=one_thread, thread_policy="micro",
            memory=held_images_memory,
            images_key="pipeline_runs.breakdown_images", images_cap=True,
            memory_fix="lower pipeline_runs.breakdown_images",
        ),
    ),
)  # fmt: skip

CPU_DATALOADER = Regime(
    "cpu_dataloader",
    CPU_TRANSFORMS,
    (
        _kind(
            "cpu_dataloader", "cpu_dataloader", "results",
            f"{RAW}/cpu_dataloader/{{library}}/{{scope}}-w{{workers}}-{{shard}}.json",
            "{machine}/{dataset}/cpu_dataloader/{library}/{scope}-w{workers}-{shard}",
            placement="cpu_dataloader", engine="augbench.engines.cpu_dataloader",
            cost="dataloader", jobs=dataloader_jobs, args=dataloader_args,
            threads=dataloader_threads, thread_policy="dataloader", memory=dataloader_memory,
            constraints={"scope": SCOPES, "workers": WORKERS}, config_block="cpu_dataloader",
            images_key="cpu_dataloader.num_images",
            memory_fix="lower cpu_dataloader.num_images or the largest cpu_dataloader.workers",
            caps_workers="cpu_dataloader.cap_workers_at_cores", runs_key="cpu_dataloader.runs",
        ),
        _kind(
            "pipeline_dataloader", "cpu_dataloader", "pipelines",
            f"{PIPELINE_RAW}/cpu_dataloader/{{library}}/{{scope}}-w{{workers}}.json",
            "{machine}/{dataset}/pipelines/cpu_dataloader/{library}/{scope}-w{workers}",
            placement="cpu_dataloader", engine="augbench.engines.cpu_dataloader",
            cost="dataloader", jobs=pipeline_dataloader_jobs, args=pipeline_dataloader_args,
            threads=workers_threads, thread_policy="dataloader", memory=dataloader_memory,
            constraints={"scope": SCOPES, "workers": WORKERS},
            images_key="cpu_dataloader.num_images",
            memory_fix="lower cpu_dataloader.num_images or pipeline_runs.dataloader_workers",
            caps_workers="cpu_dataloader.cap_workers_at_cores", runs_key="cpu_dataloader.runs",
        ),
    ),
    tables={
        "worker_scaling_cpu_dataloader": "results/tables/worker_scaling_cpu_dataloader.csv",
        "starvation_cpu_dataloader": "results/tables/starvation_cpu_dataloader.csv",
    },
)  # fmt: skip

GPU_DATALOADER = Regime(
    "gpu_dataloader",
    GPU_BATCHES,
    (
        _kind(
            "gpu_dataloader", "gpu_dataloader", "results",
            f"{RAW}/gpu_dataloader/{{library}}/{{scope}}_w{{workers}}_{{randomness}}_{{shard}}.json",
            "{machine}/{dataset}/gpu_dataloader/{library}/{scope}_w{workers}_{randomness}_{shard}",
            placement="gpu_dataloader", engine="augbench.engines.gpu_dataloader", cost="stream",
            jobs=gpu_dataloader_jobs, args=gpu_dataloader_args, threads=workers_threads,
            gpu=True, memory=gpu_dataloader_memory,
            memory_fix="lower gpu_dataloader.workers", config_block="gpu_dataloader",
            constraints={"scope": SCOPES, "workers": WORKERS, "randomness": RANDOMNESS},
        ),
        # `_` before the randomness mode: its values contain `-`.
        _kind(
            "pipeline_gpu_dataloader", "gpu_dataloader", "pipelines",
            f"{PIPELINE_RAW}/gpu_dataloader/{{library}}/{{scope}}-w{{workers}}_{{randomness}}.json",
            "{machine}/{dataset}/pipelines/gpu_dataloader/{library}/{scope}-w{workers}_{randomness}",
            placement="gpu_dataloader", engine="augbench.engines.gpu_dataloader",
            cost="stream", jobs=pipeline_gpu_jobs, args=gpu_dataloader_args,
            threads=workers_threads, gpu=True, memory=gpu_dataloader_memory,
            memory_fix="lower gpu_dataloader.workers",
            constraints={"scope": SCOPES, "workers": WORKERS, "randomness": RANDOMNESS},
        ),
    ),
    gpu=True,
    tables=GPU_TABLES,
)  # fmt: skip

DALI = Regime(
    "dali",
    DALI_PIPELINE,
    (
        _kind(
            "dali", "dali", "results",
            f"{RAW}/dali/{{library}}/dali-gpu_{{shard}}.json",
            "{machine}/{dataset}/dali/{library}/dali-gpu_{shard}",
            placement="dali", engine="augbench.engines.dali", cost="stream", jobs=dali_jobs,
            args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth", gpu=True,
            config_block="dali",
        ),
        # DALI's CPU backend (device_id=None): a separately labelled variant that runs anywhere,
        # its own rule so that only the GPU variant declares a GPU.
        _kind(
            "dali_cpu", "dali", "results",
            f"{RAW}/dali/{{library}}/dali-cpu_{{shard}}.json",
            "{machine}/{dataset}/dali/{library}/dali-cpu_{shard}",
            placement="dali_cpu", engine="augbench.engines.dali", cost="stream", jobs=dali_jobs,
            args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth",
            config_block="dali",
        ),
        _kind(
            "pipeline_dali", "dali", "pipelines",
            f"{PIPELINE_RAW}/dali/{{library}}/dali-gpu.json",
            "{machine}/{dataset}/pipelines/dali/{library}/dali-gpu",
            placement="dali", engine="augbench.engines.dali", cost="stream",
            jobs=pipeline_dali_jobs, args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth", gpu=True,
        ),
        _kind(
            "pipeline_dali_cpu", "dali", "pipelines",
            f"{PIPELINE_RAW}/dali/{{library}}/dali-cpu.json",
            "{machine}/{dataset}/pipelines/dali/{library}/dali-cpu",
            placement="dali_cpu", engine="augbench.engines.dali", cost="stream",
            jobs=pipeline_dali_jobs, args=dali_args, threads=dali_threads, memory=dali_memory,
            memory_fix="lower dali.batch_size or dali.prefetch_queue_depth",
        ),
    ),
    gpu=True,
    tables=GPU_TABLES,
)  # fmt: skip

TRAINING = Regime(
    "training",
    TRAINING_FEED,
    (
        _kind(
            "training", "training", "results",
            f"{RAW}/training/{{library}}/w{{workers}}.json",
            "{machine}/{dataset}/training/{library}/w{workers}",
            placement="training", engine="augbench.engines.training", cost="training",
            jobs=training_jobs, args=training_args, threads=workers_threads,
            thread_policy="dataloader", memory=training_memory,
            constraints={"workers": WORKERS}, config_block="training",
            images_key="training.num_images",
            memory_fix="lower training.batch_size or the largest training.workers",
            caps_workers="always", runs_key="training.runs",
        ),
    ),
    tables={"training": "results/tables/training.csv"},
    figures=("throughput",),
)  # fmt: skip

# Every regime, in the order tables, figures and job lists follow.
ALL: tuple[Regime, ...] = (MICRO, CPU_DATALOADER, GPU_DATALOADER, DALI, TRAINING)
BY_NAME: dict[str, Regime] = {r.name: r for r in ALL}
NAMES: tuple[str, ...] = tuple(BY_NAME)
KINDS: dict[str, JobKind] = {k.rule: k for r in ALL for k in r.kinds}


def register(regime: Regime) -> None:
    """Add a regime (tests, extensions): the module-level views above follow."""
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
    allocator suffix: :func:`split_allocator`)."""
    pattern = re.sub(r"(\{\w+\})+", "*", kind.log)
    return f"{pattern}.tsv", "stem" if kind.log.endswith(ALLOCATOR_WILDCARD) else "folder"


# -- the allocator dimension (config allocators; augbench.allocator) --------------------------
def allocator_suffix(setting: str) -> str:
    """The ``{allocator}`` wildcard of a setting: empty for glibc as shipped."""
    from augbench.allocator import DEFAULT_SETTING

    return "" if setting == DEFAULT_SETTING else f"{ALLOCATOR_SEPARATOR}{setting}"


def allocator_setting(suffix: str) -> str:
    """The setting of an ``{allocator}`` wildcard (:func:`allocator_suffix` reversed)."""
    from augbench.allocator import DEFAULT_SETTING

    return suffix.removeprefix(ALLOCATOR_SEPARATOR) or DEFAULT_SETTING


# -- the run dimension (a kind's runs_key) -------------------------------------------------------
def run_suffix(run: int) -> str:
    """The ``{run}`` wildcard of run ``run`` (1, 2, ...): empty for the first."""
    if run < 1:
        raise ValueError(f"runs count from 1, got {run}")
    return "" if run == 1 else f"{RUN_PREFIX}{run}"


def run_number(suffix: str) -> int:
    """The run of a ``{run}`` wildcard (:func:`run_suffix` reversed)."""
    return int(suffix.removeprefix(RUN_PREFIX)) if suffix else 1


def without_run(path: str) -> tuple[str, int]:
    """A result or log path of some run -> (the first run's path, the run): what the runs of one
    job share (augbench.analysis.runs pools their rows)."""
    found = re.search(rf"{re.escape(RUN_PREFIX)}([0-9]+)(\.json|\.tsv|\.log)?$", path)
    if found is None:
        return path, 1
    return path[: found.start()] + (found.group(2) or ""), int(found.group(1))


def split_allocator(name: str) -> tuple[str, str]:
    """``albumentationsx+mimalloc`` -> (``albumentationsx``, ``mimalloc``): a path component
    of a library's results, and the allocator setting it was measured under."""
    library, separator, setting = name.partition(ALLOCATOR_SEPARATOR)
    return library, allocator_setting(separator + setting)
