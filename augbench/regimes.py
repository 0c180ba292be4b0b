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
- ``cost``: how the cost model and the ETA price a job (``pyperf``, ``dataloader``, ``stream``: from
  its measured rows; ``whole_job``: its measured wall time);
- ``images_key`` (and ``images_cap``): the config key that sets how many images a job reads, so
  its ``--num-images`` and the dataset check before staging come from one place;
- ``jobs``, ``args``, ``threads``: how its jobs are enumerated from a configuration, the engine's
  flags of one job and its threads: pure functions of an :class:`augbench.sweep.Sweep`.

How to add a regime: docs/architecture.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from augbench.sweep import Job, Sweep

Wildcards = Mapping[str, str]

RAW = "results/raw/{machine}/{dataset}"
PIPELINE_RAW = "results/pipelines/raw/{machine}/{dataset}"
LAZY_RAW = "results/analysis/lazy_outputs/{machine}/{dataset}"
ROLES = ("results", "pipelines", "diagnostic")
COST_MODELS = ("pyperf", "dataloader", "stream", "whole_job")

# Jobs that prepare (environments, the dataset) and jobs that summarize (tables, figures, report):
# neither times anything; the plan and the cost model list them by these names.
SETUP_RULES: tuple[str, ...] = (
    "build_env",
    "build_default_archive",
    "stage_dataset",
    "resize_dataset",
)
ANALYSIS_RULES: tuple[str, ...] = (
    "aggregate",
    "draw_figures",
    "speedup_report",
    "summary",
    "lazy_outputs_table",
    "pipeline_tables",
    "pipeline_figure",
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
    jobs: Callable[[Sweep, JobKind, str], list[Job]]
    args: Callable[[Sweep, JobKind, Wildcards], dict[str, Any]]
    threads: Callable[[Sweep, Wildcards], int]
    thread_policy: str = ""  # "micro" | "dataloader" | "" (the engine sets its own)
    gpu: bool = False
    # Wildcard constraints of the rule beyond machine/dataset/library/shard (common.smk).
    constraints: Mapping[str, str] = field(default_factory=dict)
    # The config block holding the kind's measuring parameters (cost model: target_params).
    config_block: str = ""
    # The config key (dotted) that sets how many images a job reads (its --num-images): replacing
    # the top-level num_images where set, or, with images_cap, capping it. Sweep.num_images_for.
    images_key: str = "num_images"
    images_cap: bool = False

    def log_file(self, folder: str, suffix: str, name: str | None = None) -> str:
        """``<folder>/<log pattern>.<suffix>`` (logs/*.log, benchmarks/*.tsv); ``name`` replaces
        the pattern's last component (a job_per: library job's ``all-settings-{shard}``)."""
        stem = self.log if name is None else f"{self.log.rsplit('/', 1)[0]}/{name}"
        return f"{folder}/{stem}.{suffix}"

    def result_path(self, machine: str, dataset: str, library: str, **wildcards: str) -> str:
        return self.result.format(machine=machine, dataset=dataset, library=library, **wildcards)

    def wildcards_of(self, path: str) -> dict[str, str] | None:
        """The wildcards of a result path of this kind (any machine, dataset), None if not one."""
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+?)", re.escape(self.result))
        found = re.search(pattern + "$", path)
        return None if found is None else found.groupdict()


@dataclass(frozen=True)
class Regime:
    """A family of rows that are compared with each other, and the job kinds that measure it."""

    name: str
    libraries: tuple[str, ...]
    kinds: tuple[JobKind, ...]
    gpu: bool = False
    # Tables beyond speedups_<regime> and throughputs_<regime> that `aggregate` writes when the
    # regime is configured: output name -> path.
    tables: Mapping[str, str] = field(default_factory=dict)
    # Figure families drawn once per regime (figure file <family>_<regime>).
    figures: tuple[str, ...] = ("throughput", "stability")


# -- job enumeration: pure functions of a Sweep (augbench/sweep.py) ----------------------------


def _layout_prefix(layout: str) -> str:
    return "" if layout == "native" else f"{layout}-"


def micro_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
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


def micro_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
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
        "policy": s.policy_json,
    }


def dataloader_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x setting x shard (job_per: setting), or per library x shard writing
    every setting's file (job_per: library)."""
    out = []
    for lib in s.libraries_of(kind.regime):
        for shard, transforms in s.dataloader_shards.items():
            if s.dataloader_job_per_library:
                outputs = [
                    kind.result_path(s.machine, dataset, lib, **setting, shard=shard)
                    for setting in s.dataloader_settings
                ]
                out.append(s.job(kind, lib, dataset, {"shard": shard}, transforms, outputs))
            else:
                out += [
                    s.job(kind, lib, dataset, {**setting, "shard": shard}, transforms)
                    for setting in s.dataloader_settings
                ]
    return out


def _dataloader_common(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
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


def dataloader_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
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
    }


def dataloader_threads(s: Sweep, w: Wildcards) -> int:
    """The main process plus its workers (Snakemake lowers it to --cores where it is larger);
    a job_per: library job, the most workers any of its settings starts."""
    if "workers" in w:
        return int(w["workers"]) + 1
    return max(int(x["workers"]) for x in s.dataloader_settings) + 1


def gpu_dataloader_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
    return [
        s.job(kind, lib, dataset, {**setting, "shard": shard}, transforms)
        for lib in s.libraries_of(kind.regime)
        for setting in s.gpu_settings(lib)
        for shard, transforms in s.gpu_shards.items()
    ]


def _streamed(s: Sweep, kind: JobKind, w: Wildcards, shard_map: dict[str, list[str]]) -> dict:
    """What a GPU-regime job streams: one shard of recipes, or (role pipelines) every pipeline."""
    pipelines = kind.role == "pipelines"
    return {
        "shard": "pipelines" if pipelines else w["shard"],
        "transforms": s.pipeline_names if pipelines else shard_map[w["shard"]],
        **({"pipelines": s.pipelines_json} if pipelines else {}),
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
    }


def _repeats(s: Sweep, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"values": block["values"], "warmups": block["warmups"], "policy": s.policy_json}


def gpu_dataloader_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
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


def workers_threads(s: Sweep, w: Wildcards) -> int:
    return int(w["workers"]) + 1


def dali_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
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


def dali_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
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


def dali_threads(s: Sweep, w: Wildcards) -> int:
    return int(s.config["dali"]["num_threads"]) + 1


def one_thread(s: Sweep, w: Wildcards) -> int:
    return 1


def lazy_outputs_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
    """The lazy-output diagnostic runs on the staged dataset only."""
    if not s.lazy_enabled or dataset != s.dataset:
        return []
    return [s.job(kind, lib, dataset, {}, s.transforms) for lib in s.libraries_of(kind.regime)]


def lazy_outputs_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    return {
        "library": w["library"],
        "transforms": s.transforms,
        "num-images": s.num_images_for(kind),
        "repeats": s.config["lazy_outputs"]["repeats"],
        "machine": w["machine"],
    }


def breakdown_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
    """One breakdown job per library runs every pipeline (staged dataset only)."""
    if not s.pipelines or dataset != s.dataset:
        return []
    return [s.job(kind, lib, dataset, {}, s.pipeline_names) for lib in s.libraries_of(kind.regime)]


def breakdown_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    runs = s.config["pipeline_runs"]
    return {
        "library": w["library"],
        "pipelines": s.pipelines_json,
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
        "min-values": runs["breakdown_min_values"],
        "max-values": max(runs["breakdown_min_values"], runs["breakdown_max_values"]),
        "warmups": runs["breakdown_warmups"],
        "policy": s.policy_json,
    }


def pipeline_dataloader_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
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


def pipeline_dataloader_args(s: Sweep, kind: JobKind, w: Wildcards) -> dict[str, Any]:
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
    }


def pipeline_gpu_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x scope x workers x randomness (the single-transform settings)."""
    if not s.pipelines or dataset != s.dataset:
        return []
    return [
        s.job(kind, lib, dataset, setting, s.pipeline_names)
        for lib in s.libraries_of(kind.regime)
        for setting in s.gpu_settings(lib)
    ]


def pipeline_dali_jobs(s: Sweep, kind: JobKind, dataset: str) -> list[Job]:
    """One DALI job per variant runs every pipeline."""
    if not s.pipelines or dataset != s.dataset:
        return []
    if dali_variant(kind) not in s.dali_variants:
        return []
    return [s.job(kind, lib, dataset, {}, s.pipeline_names) for lib in s.libraries_of(kind.regime)]


# -- the declarations ------------------------------------------------------------------------

CPU_LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow")
GPU_LIBRARIES = ("torchvision", "kornia")
SCOPES = "memory|decode"
WORKERS = r"\d+"
RANDOMNESS = "per-sample|batch-shared"
GPU_TABLES = {
    "gpu_vs_cpu_ratio": "results/tables/gpu_vs_cpu_ratio.csv",
    "gpu_memory": "results/tables/gpu_throughput_memory.csv",
}


def _kind(rule: str, regime: str, role: str, result: str, log: str, **rest: Any) -> JobKind:
    return JobKind(rule=rule, regime=regime, role=role, result=result, log=log, **rest)


MICRO = Regime(
    "micro",
    CPU_LIBRARIES,
    (
        _kind(
            "micro", "micro", "results",
            f"{RAW}/micro/{{library}}/{{shard}}.json",
            "{machine}/{dataset}/micro/{library}/{shard}",
            placement="micro", engine="augbench.engines.micro", cost="pyperf",
            jobs=micro_jobs, args=micro_args, threads=one_thread, thread_policy="micro",
            config_block="micro", images_key="micro.num_images",
        ),
        _kind(
            "lazy_outputs", "micro", "diagnostic",
            f"{LAZY_RAW}/{{library}}.json",
            "{machine}/{dataset}/lazy_outputs/{library}",
            placement="micro", engine="augbench.engines.lazy_outputs", cost="whole_job",
            jobs=lazy_outputs_jobs, args=lazy_outputs_args, threads=one_thread,
            thread_policy="micro", images_key="lazy_outputs.num_images", images_cap=True,
        ),
        _kind(
            "pipeline_breakdown", "micro", "pipelines",
            f"{PIPELINE_RAW}/micro/{{library}}/breakdown.json",
            "{machine}/{dataset}/pipelines/micro/{library}/breakdown",
            placement="micro", engine="augbench.engines.pipeline_breakdown", cost="whole_job",
            jobs=breakdown_jobs, args=breakdown_args, threads=one_thread, thread_policy="micro",
            images_key="pipeline_runs.breakdown_images", images_cap=True,
        ),
    ),
)  # fmt: skip

CPU_DATALOADER = Regime(
    "cpu_dataloader",
    CPU_LIBRARIES,
    (
        _kind(
            "cpu_dataloader", "cpu_dataloader", "results",
            f"{RAW}/cpu_dataloader/{{library}}/{{scope}}-w{{workers}}-{{shard}}.json",
            "{machine}/{dataset}/cpu_dataloader/{library}/{scope}-w{workers}-{shard}",
            placement="cpu_dataloader", engine="augbench.engines.cpu_dataloader",
            cost="dataloader", jobs=dataloader_jobs, args=dataloader_args,
            threads=dataloader_threads, thread_policy="dataloader",
            constraints={"scope": SCOPES, "workers": WORKERS}, config_block="cpu_dataloader",
            images_key="cpu_dataloader.num_images",
        ),
        _kind(
            "pipeline_dataloader", "cpu_dataloader", "pipelines",
            f"{PIPELINE_RAW}/cpu_dataloader/{{library}}/{{scope}}-w{{workers}}.json",
            "{machine}/{dataset}/pipelines/cpu_dataloader/{library}/{scope}-w{workers}",
            placement="cpu_dataloader", engine="augbench.engines.cpu_dataloader",
            cost="whole_job", jobs=pipeline_dataloader_jobs, args=pipeline_dataloader_args,
            threads=workers_threads, thread_policy="dataloader",
            constraints={"scope": SCOPES, "workers": WORKERS},
            images_key="cpu_dataloader.num_images",
        ),
    ),
    tables={
        "worker_scaling_cpu_dataloader": "results/tables/worker_scaling_cpu_dataloader.csv",
        "starvation_cpu_dataloader": "results/tables/starvation_cpu_dataloader.csv",
    },
)  # fmt: skip

GPU_DATALOADER = Regime(
    "gpu_dataloader",
    GPU_LIBRARIES,
    (
        _kind(
            "gpu_dataloader", "gpu_dataloader", "results",
            f"{RAW}/gpu_dataloader/{{library}}/{{scope}}_w{{workers}}_{{randomness}}_{{shard}}.json",
            "{machine}/{dataset}/gpu_dataloader/{library}/{scope}_w{workers}_{randomness}_{shard}",
            placement="gpu_dataloader", engine="augbench.engines.gpu_dataloader", cost="stream",
            jobs=gpu_dataloader_jobs, args=gpu_dataloader_args, threads=workers_threads,
            gpu=True, config_block="gpu_dataloader",
            constraints={"library": "|".join(GPU_LIBRARIES), "scope": SCOPES,
                         "workers": WORKERS, "randomness": RANDOMNESS},
        ),
        # `_` before the randomness mode: its values contain `-`.
        _kind(
            "pipeline_gpu_dataloader", "gpu_dataloader", "pipelines",
            f"{PIPELINE_RAW}/gpu_dataloader/{{library}}/{{scope}}-w{{workers}}_{{randomness}}.json",
            "{machine}/{dataset}/pipelines/gpu_dataloader/{library}/{scope}-w{workers}_{randomness}",
            placement="gpu_dataloader", engine="augbench.engines.gpu_dataloader",
            cost="whole_job", jobs=pipeline_gpu_jobs, args=gpu_dataloader_args,
            threads=workers_threads, gpu=True,
            constraints={"library": "|".join(GPU_LIBRARIES), "scope": SCOPES,
                         "workers": WORKERS, "randomness": RANDOMNESS},
        ),
    ),
    gpu=True,
    tables=GPU_TABLES,
)  # fmt: skip

DALI = Regime(
    "dali",
    ("dali",),
    (
        _kind(
            "dali", "dali", "results",
            f"{RAW}/dali/{{library}}/dali-gpu_{{shard}}.json",
            "{machine}/{dataset}/dali/{library}/dali-gpu_{shard}",
            placement="dali", engine="augbench.engines.dali", cost="stream", jobs=dali_jobs,
            args=dali_args, threads=dali_threads, gpu=True,
            constraints={"library": "dali"}, config_block="dali",
        ),
        # DALI's CPU backend (device_id=None): a separately labelled variant that runs anywhere,
        # its own rule so that only the GPU variant declares a GPU.
        _kind(
            "dali_cpu", "dali", "results",
            f"{RAW}/dali/{{library}}/dali-cpu_{{shard}}.json",
            "{machine}/{dataset}/dali/{library}/dali-cpu_{shard}",
            placement="dali_cpu", engine="augbench.engines.dali", cost="stream", jobs=dali_jobs,
            args=dali_args, threads=dali_threads, constraints={"library": "dali"},
            config_block="dali",
        ),
        _kind(
            "pipeline_dali", "dali", "pipelines",
            f"{PIPELINE_RAW}/dali/{{library}}/dali-gpu.json",
            "{machine}/{dataset}/pipelines/dali/{library}/dali-gpu",
            placement="dali", engine="augbench.engines.dali", cost="whole_job",
            jobs=pipeline_dali_jobs, args=dali_args, threads=dali_threads, gpu=True,
            constraints={"library": "dali"},
        ),
        _kind(
            "pipeline_dali_cpu", "dali", "pipelines",
            f"{PIPELINE_RAW}/dali/{{library}}/dali-cpu.json",
            "{machine}/{dataset}/pipelines/dali/{library}/dali-cpu",
            placement="dali_cpu", engine="augbench.engines.dali", cost="whole_job",
            jobs=pipeline_dali_jobs, args=dali_args, threads=dali_threads,
            constraints={"library": "dali"},
        ),
    ),
    gpu=True,
    tables=GPU_TABLES,
)  # fmt: skip

# Every regime, in the order tables, figures and job lists follow.
ALL: tuple[Regime, ...] = (MICRO, CPU_DATALOADER, GPU_DATALOADER, DALI)
BY_NAME: dict[str, Regime] = {r.name: r for r in ALL}
NAMES: tuple[str, ...] = tuple(BY_NAME)
KINDS: dict[str, JobKind] = {k.rule: k for r in ALL for k in r.kinds}
# Which libraries a regime can measure (a configured library outside the set is not a row of it).
REGIME_LIBRARIES: dict[str, tuple[str, ...]] = {r.name: r.libraries for r in ALL}


def register(regime: Regime) -> None:
    """Add a regime (tests, extensions): the module-level views above follow."""
    global ALL, NAMES
    ALL = (*ALL, regime)
    BY_NAME[regime.name] = regime
    NAMES = tuple(BY_NAME)
    KINDS.update({k.rule: k for k in regime.kinds})
    REGIME_LIBRARIES[regime.name] = regime.libraries


def unregister(name: str) -> None:
    global ALL, NAMES
    regime = BY_NAME.pop(name)
    ALL = tuple(r for r in ALL if r.name != name)
    NAMES = tuple(BY_NAME)
    for k in regime.kinds:
        KINDS.pop(k.rule, None)
    REGIME_LIBRARIES.pop(name, None)


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


def result_kind(regime: str, stem: str) -> JobKind | None:
    """The kind that wrote a result file named ``stem`` in ``regime``'s folder (results role)."""
    for kind in kinds("results"):
        name = kind.result.rsplit("/", 1)[-1].removesuffix(".json")
        pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(name))
        if kind.regime == regime and re.fullmatch(pattern, stem):
            return kind
    return None


def benchmark_glob(kind: JobKind) -> tuple[str, str]:
    """Where the benchmark files of a kind lie below benchmarks/ (a glob over every machine and
    dataset) and whether the library is the file's stem or its folder."""
    pattern = re.sub(r"\{\w+\}", "*", kind.log)
    return f"{pattern}.tsv", "stem" if kind.log.endswith("{library}") else "folder"
