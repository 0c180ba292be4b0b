"""The jobs a configuration plans, as pure functions of the resolved config (no Snakemake).

:class:`Sweep` is the configuration seen through the regime declarations
(augbench/planning/regimes/): shards of transforms, DataLoader settings, GPU settings, pipelines.
``Sweep.jobs()`` lists every timed job with its wildcards, result files and transforms; the
workflow's rules request exactly these files (workflow/rules/common.smk), the cost estimate prices
exactly these jobs, and the engine flags of one job come from :func:`engine_command`. Unit-tested in
tests/test_sweep.py.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from augbench import paths
from augbench.measuring import allocator, media
from augbench.planning import memory, profile, regimes
from augbench.planning.regimes import Job, JobKind, Regime
from augbench.planning.regimes.cpu_dataloader import settings_at
from augbench.policy import DATALOADER_THREADS, MICRO_THREADS, SlowTransformPolicy
from augbench.results import usable_cores
from augbench.workload import catalog, decoders, gpu_recipes, matrix

THREAD_POLICIES = {"micro": MICRO_THREADS, "dataloader": DATALOADER_THREADS}


class PlanError(ValueError):
    """A configuration the workflow cannot plan; the message names the key to change."""


def shards(items: list[str], size: int, prefix: str = "") -> dict[str, list[str]]:
    return {
        f"{prefix}s{i:03d}": items[start : start + size]
        for i, start in enumerate(range(0, len(items), size))
    }


class Sweep:
    """The resolved configuration (augbench.planning.config.resolve) of one run, on one staged
    dataset (its key) and the datasets derived from it for the resolution sweep (their keys)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        dataset: str,
        derived: tuple[str, ...] = (),
        sizes: Mapping[str, memory.ImageSizes] | None = None,
        resolutions: Mapping[str, int] | None = None,
    ) -> None:
        self.config = config
        self.dataset = dataset
        self.derived = tuple(derived)
        # Image sizes per dataset key, known before staging (augbench.planning.memory.plan_sizes);
        # without them every dataset is taken to have the assumed size (tests, tools).
        assumed = memory.ImageSizes((tuple(config["dataset"]["assumed_image_size"]),), "assumed")
        self.sizes: dict[str, memory.ImageSizes] = {
            key: (sizes or {}).get(key, assumed) for key in (dataset, *self.derived)
        }
        self.resolutions: dict[str, int] = dict(resolutions or {})
        # Predictions asked for again by the refusal, each rule's mem_mb and the cost plan.
        self._memory: dict[tuple[Any, ...], memory.Prediction] = {}
        self._micro_images: dict[str, int] = {}
        self.machine: str = config["machine"]
        # Whether the machine that runs the jobs has an NVIDIA driver: set by the workflow for
        # jobs that run where it runs; None where they run on placements (cloud, SLURM) or the
        # caller does not say: a training job's memory then follows its placement's GPU.
        self.host_gpu: bool | None = None
        self.libraries: list[str] = list(config["libraries"])
        self.regimes: list[str] = list(config["regimes"])
        self.transforms: list[str] = list(config["transforms"])
        self.policy_json = json.dumps(SlowTransformPolicy.from_config(dict(config)).to_dict())
        micro = config["micro"]
        channels = config["channels"]
        # The 9-channel scenario writes its own shards (c9s000, ...) next to the RGB ones.
        prefix = "" if channels == 3 else f"c{channels}"
        self.micro_shards = shards(self.transforms, micro["shard_size"], prefix)
        # Input layouts other than native write their own shards (contiguous-s000, ...).
        self.micro_layouts: list[str] = micro.get("layouts", ["native"])
        dl = config["cpu_dataloader"]
        chosen = dl.get("transforms")
        dl_transforms = (
            self.transforms if chosen is None else catalog.names() if chosen == "all" else chosen
        )
        # The recipes of the worker sweep first (every `workers` value), then the others (only
        # `other_workers`), each in shards of their own, numbered on.
        swept = dl.get("sweep_transforms")
        swept = list(dl_transforms) if swept is None else [t for t in dl_transforms if t in swept]
        rest = [t for t in dl_transforms if t not in swept]
        self.dataloader_shards = shards(swept, dl["shard_size"])
        self.dataloader_swept = set(self.dataloader_shards)
        numbered = shards(rest, dl["shard_size"])
        self.dataloader_shards |= {
            f"s{len(self.dataloader_swept) + i:03d}": part
            for i, part in enumerate(numbered.values())
        }
        # Every (scope, workers, decoder, loader) setting, in the order a job_per: library job
        # measures them: the decoders besides native and the loaders besides process
        # (augbench.workload.decoders, .loaders) measure the decode scope only.
        self.dataloader_settings = settings_at(dl, dl["workers"])
        # The recipes outside the worker sweep: the default feed only (decoders and loaders
        # besides it are compared on the swept recipes and the pipelines).
        self.dataloader_other_settings = settings_at(dl, dl["other_workers"], feeds=False)
        # Which jobs run under the allocator settings after the first (Sweep.sweeps_allocators).
        chosen = config.get("allocator_jobs") or {}
        rules, layouts = chosen.get("rules"), chosen.get("layouts")
        self.allocator_rules = set(regimes.timed_rules() if rules is None else rules)
        self.allocator_layouts = None if layouts is None else set(layouts)
        self.allocator_resolution_sweep = bool(chosen.get("resolution_sweep", True))
        self.dataloader_job_per_library = dl["job_per"] == "library"
        # The Identity baseline (crop + Normalize only) leads every GPU regime's recipe list.
        gpu_recipes_list = [gpu_recipes.IDENTITY, *self.transforms]
        gpu = config["gpu_dataloader"]
        self.gpu_shards = shards(gpu_recipes_list, gpu["shard_size"])
        # The decoders besides native (nvJPEG) on a subset of those recipes where one is named.
        chosen = gpu.get("decoder_transforms")
        self.gpu_decoder_shards = (
            self.gpu_shards
            if chosen is None
            else shards([r for r in gpu_recipes_list if r in {gpu_recipes.IDENTITY, *chosen}],
                        gpu["shard_size"])
        )  # fmt: skip
        self.dali_shards = shards(gpu_recipes_list, config["dali"]["shard_size"])
        self.dali_variants: list[str] = list(config["dali"]["variants"])
        self.pipelines: list[dict[str, Any]] = list(config.get("pipeline_definitions") or [])
        self.pipeline_names = [p["name"] for p in self.pipelines]
        # The resolved pipelines, passed to the engines (a changed pipeline re-runs its jobs).
        self.pipelines_json = json.dumps(self.pipelines, sort_keys=True)
        self.lazy_enabled = bool(config["lazy_outputs"]["enabled"]) and "micro" in self.regimes
        self.resolution_regimes: list[str] = list(config.get("resolution_regimes") or ["micro"])
        # Every timed job runs once per allocator setting (augbench.measuring.allocator; its paths
        # carry it: regimes.allocator_suffix); a diagnostic job runs once, under glibc as shipped.
        self.allocators: list[str] = list(config.get("allocators") or [allocator.DEFAULT_SETTING])
        self._unit_ranks: dict[tuple, int] | None = None  # timed_priority's plan order

    # -- what the declarations' enumerators use ------------------------------------------------
    def dataloader_settings_of(self, shard: str) -> list[dict[str, str]]:
        """The (scope, workers) settings a DataLoader shard is measured at."""
        if shard in self.dataloader_swept:
            return self.dataloader_settings
        return self.dataloader_other_settings

    def libraries_of(self, regime: str) -> list[str]:
        return regimes.libraries_for(regime, self.libraries)

    def gpu_settings(self, library: str) -> list[dict[str, str]]:
        """(scope, decoder, workers, randomness) of the GPU DataLoader: scope memory times batches
        already on the GPU, so it has no workers (one job) and no decoder; the decode scope has
        each configured decoder (``decoder``: its result-name part, empty for native); the
        randomness modes the library has."""
        gpu = self.config["gpu_dataloader"]
        allowed = gpu_recipes.randomness_of(library)
        modes = [r for r in gpu["torchvision_randomness"] if r in allowed] or list(allowed)
        chosen = gpu.get("decoders") or [decoders.NATIVE]
        return [
            {"scope": scope, "decoder": decoder, "workers": str(workers), "randomness": mode}
            for scope in gpu["scopes"]
            for decoder in ([""] if scope == "memory" else map(decoders.device_suffix, chosen))
            for workers in ([0] if scope == "memory" else gpu["workers"])
            for mode in modes
        ]

    def job(
        self,
        kind: JobKind,
        library: str,
        dataset: str,
        wildcards: Mapping[str, str],
        transforms: list[str],
        outputs: list[str] | None = None,
    ) -> Job:
        return Job(
            kind.rule,
            library,
            dataset,
            tuple(wildcards.items()),
            tuple(outputs or [kind.result_path(self.machine, dataset, library, **wildcards)]),
            tuple(transforms),
        )

    def training_supply_gaps(self) -> list[str]:
        """Training rows (cpu feed) whose out-of-sample prediction will be missing: no planned
        cpu_dataloader decode row of the same library, recipe, workers and batch size
        (augbench.analysis.training). One line per library and recipe, naming what to add."""
        if "training" not in self.regimes or "cpu" not in self.config["training"]["feeds"]:
            return []
        t, dl, runs = (
            self.config["training"],
            self.config["cpu_dataloader"],
            self.config["pipeline_runs"],
        )
        measured = "cpu_dataloader" in self.regimes and t["batch_size"] == dl["batch_size"]
        recipes = {name for shard in self.dataloader_shards.values() for name in shard}
        lines = []
        for recipe in t["transforms"]:
            pipeline = recipe in self.pipeline_names
            scopes, workers = (
                (runs["dataloader_scopes"], runs["dataloader_workers"])
                if pipeline
                else (dl["scopes"], dl["workers"])
            )
            has = measured and "decode" in scopes and (pipeline or recipe in recipes)
            missing = [w for w in t["workers"] if not has or w not in workers]
            libraries = [
                lib
                for lib in self.libraries_of("training")
                if lib in self.libraries_of("cpu_dataloader")
            ]
            if missing and libraries:
                where = "pipeline_runs.dataloader_workers" if pipeline else "cpu_dataloader"
                lines.append(
                    f"augbench: training {recipe} at workers {missing}, batch {t['batch_size']}: "
                    "no out-of-sample prediction (no cpu_dataloader decode row of it is planned; "
                    f"add regime cpu_dataloader with the recipe, scope decode, those workers in "
                    f"{where} and batch_size {t['batch_size']})"
                )
        return lines

    # -- the plan -------------------------------------------------------------------------------
    def configured(self) -> list[Regime]:
        return [r for r in regimes.ALL if r.name in self.regimes]

    def jobs(self, role: str | None = None) -> list[Job]:
        """Every timed job: the configured regimes on the staged dataset, then the resolution
        regimes' single-transform jobs on each derived dataset; each under every allocator
        setting (its role's), the settings outermost."""
        out = [
            job
            for regime in self.configured()
            for kind in regime.kinds
            if role is None or kind.role == role
            for job in kind.jobs(self, kind, self.dataset)
        ]
        if role in (None, "results"):
            out += [
                job
                for key in self.derived
                for regime in self.configured()
                if regime.name in self.resolution_regimes
                for kind in regime.kinds
                if kind.role == "results"
                for job in kind.jobs(self, kind, key)
            ]
        settings = [
            self.under_allocator(job, setting)
            for setting in self.allocators
            for job in out
            if setting == self.allocators[0] or self.sweeps_allocators(job.kind, job)
        ]
        return [
            self.under_run(job, run)
            for run in range(1, self.most_runs() + 1)
            for job in settings
            if run <= self.runs_of(job.kind)
        ]

    def runs_of(self, kind: JobKind) -> int:
        """How many runs each job of ``kind`` makes: its ``runs_key``'s value, 1 without one."""
        return int(self.config_value(kind.runs_key) or 1) if kind.runs_key else 1

    def most_runs(self) -> int:
        """The most runs any configured kind makes (the plan's passes over the sweep)."""
        return max((self.runs_of(k) for r in self.configured() for k in r.kinds), default=1)

    def sweeps_allocators(self, kind: JobKind, job: Job | None = None) -> bool:
        """Whether a kind's jobs (``job``: this one) run under every allocator setting, not just
        the first (config allocator_jobs: its rules, the resolution sweep, the layouts)."""
        if kind.role not in regimes.ALLOCATOR_ROLES or kind.rule not in self.allocator_rules:
            return False
        if job is None:
            return True
        if job.dataset in self.derived and not self.allocator_resolution_sweep:
            return False
        shard = dict(job.wildcards).get("shard", "")
        layout = "contiguous" if shard.startswith("contiguous-") else "native"
        return self.allocator_layouts is None or layout in self.allocator_layouts

    def timed_priority(self, kind: JobKind, wildcards: Mapping[str, str]) -> int:
        """The scheduler's priority of a timed job (the bench_slot resource runs one timed job at
        a time, the highest priority first).

        With several runs (a kind's ``runs_key``), of the jobs ready to start every run k comes
        before any run k + 1: each run is a pass over the sweep, so the runs of one setting are
        spread over the sweep's time (its drift is inside their spread) and the runs of a
        supply and of the training loops it predicts alternate (docs/training.md).

        Within a run, with several allocator settings, the jobs of one work unit (the same job
        under each setting) get adjacent priorities, units in plan order and the settings' order
        reversed every other unit (A B C, C B A, ...): a setting's row and glibc's are measured
        minutes apart, not a sweep apart, and each setting comes first as often as last."""
        later_runs = self.most_runs() - regimes.run_number(wildcards.get("run", ""))
        return later_runs * self._allocator_span() + self._allocator_priority(kind, wildcards)

    def _work_units(self) -> dict[tuple, int]:
        """Each work unit's rank in the plan's order (its settings and runs are outermost)."""
        if self._unit_ranks is None:
            units = (
                self._unit(j.rule, j.library, j.dataset, dict(j.wildcards)) for j in self.jobs()
            )
            self._unit_ranks = {unit: i for i, unit in enumerate(dict.fromkeys(units))}
        return self._unit_ranks

    def _allocator_span(self) -> int:
        """One more than any :meth:`_allocator_priority`."""
        if len(self.allocators) < 2:
            return 1
        return (len(self._work_units()) + 1) * (len(self.allocators) + 1)

    def _allocator_priority(self, kind: JobKind, wildcards: Mapping[str, str]) -> int:
        """A job's priority among its run's jobs: 0 with one allocator setting."""
        if len(self.allocators) < 2 or not self.sweeps_allocators(kind):
            return 0
        units = self._work_units()
        rank = units.get(
            self._unit(kind.rule, wildcards["library"], wildcards["dataset"], wildcards)
        )
        if rank is None:
            return 0
        setting = regimes.allocator_setting(wildcards.get("allocator", ""))
        if setting not in self.allocators:
            return 0
        index = self.allocators.index(setting)
        within = len(self.allocators) - index if rank % 2 == 0 else index + 1
        return (len(units) - rank) * (len(self.allocators) + 1) + within

    @staticmethod
    def _unit(rule: str, library: str, dataset: str, wildcards: Mapping[str, str]) -> tuple:
        """A work unit: the job without its allocator setting, run (or machine)."""
        rest = tuple(
            sorted(
                (k, str(v))
                for k, v in wildcards.items()
                if k not in ("machine", "dataset", "library", "allocator", "run")
            )
        )
        return (rule, library, dataset, rest)

    def under_allocator(self, job: Job, setting: str) -> Job:
        """``job`` (planned without a setting) run under allocator ``setting``: its ``allocator``
        wildcard and the result files that carry it (a diagnostic job: glibc as shipped)."""
        if job.kind.role not in regimes.ALLOCATOR_ROLES:
            setting = allocator.DEFAULT_SETTING
        return self._with_wildcard(job, "allocator", regimes.allocator_suffix(setting))

    def under_run(self, job: Job, run: int) -> Job:
        """``job`` as its run ``run`` (1, 2, ...): its ``run`` wildcard and the result files that
        carry it. A kind without a ``runs_key`` has one run, ``job`` itself."""
        if not job.kind.runs_key:
            return job
        return self._with_wildcard(job, "run", regimes.run_suffix(run))

    @staticmethod
    def _with_wildcard(job: Job, name: str, value: str) -> Job:
        """``job`` with its wildcard ``name`` set to ``value``, in its wildcards and in every
        result path of its kind's pattern."""
        outputs = []
        for output in job.outputs:
            wildcards = job.kind.wildcards_of(output)
            if wildcards is None:
                raise PlanError(f"{output} is not a result path of rule {job.rule}")
            outputs.append(job.kind.result.format(**{**wildcards, name: value}))
        wildcards = (*((k, v) for k, v in job.wildcards if k != name), (name, value))
        return dataclasses.replace(job, wildcards=wildcards, outputs=tuple(outputs))

    def outputs(self, role: str) -> list[str]:
        return [path for job in self.jobs(role) for path in job.outputs]

    # -- tables and figures ---------------------------------------------------------------------
    def table_outputs(self) -> dict[str, str]:
        tables = {"all": paths.table("all_results"), "coverage": paths.table("coverage")}
        for regime in self.configured_in_config_order():
            tables |= regime.table_outputs()
        if len(self.allocators) > 1:  # time under each setting / glibc's (docs/allocator.md)
            tables["allocator_effect"] = paths.ALLOCATOR_TABLES["results"]
        tables |= {
            "resolution_scaling": paths.table("resolution_scaling"),
            "starvation": paths.table("starvation"),
        }
        return tables

    def pipeline_tables(self) -> dict[str, str]:
        """Tidy pipeline rows, the breakdown, starvation and one speedup table per pipeline."""
        if not self.pipeline_names:
            return {}
        return {
            "results": paths.table("pipeline_results"),
            "breakdown": paths.table("pipeline_breakdown"),
            # "Will my GPU starve?" for the pipelines (augbench.analysis.starvation).
            "starvation": paths.table("starvation_pipelines"),
            **(
                {"allocator_effect": paths.ALLOCATOR_TABLES["pipelines"]}
                if len(self.allocators) > 1
                else {}
            ),
            **{
                f"speedups_{name}": paths.table(f"speedups_pipeline_{name}")
                for name in self.pipeline_names
            },
        }

    def targets(self) -> list[str]:
        """Everything a run makes besides the figures: raw results (targets in their own right,
        so a deleted or killed shard is re-run even when the tables built from it still exist),
        tables, the lazy-output diagnostic, the pipelines' results, tables and figure."""
        pipelines = [*self.outputs("pipelines"), *self.pipeline_tables().values()]
        return [
            *self.outputs("results"),
            *self.table_outputs().values(),
            *(paths.LAZY_TABLES.values() if self.lazy_enabled else []),
            *pipelines,
            *([paths.PIPELINE_FIGURE] if self.pipeline_names else []),
            *(
                [paths.PIPELINE_ALLOCATOR_FIGURE]
                if self.pipeline_names and len(self.allocators) > 1
                else []
            ),
        ]

    def placement(self, kind: JobKind) -> dict[str, Any]:
        """Resources of a timed job: its machine class (config cloud.regimes; the googlebatch
        executor reads googlebatch_* and nvidia_gpu, local runs ignore them), the bench slot
        (timed jobs never overlap) and a GPU where the kind needs one."""
        cloud = self.config["cloud"]
        spec = cloud.get("regimes", {}).get(kind.placement)
        if spec is None:
            raise PlanError(
                f"config error at cloud.regimes: no placement for {kind.placement!r} (rule "
                f"{kind.rule}); configured: {sorted(cloud.get('regimes', {}))}"
            )
        resources = {
            "googlebatch_machine_type": spec["machine_type"],
            "googlebatch_cpu_milli": spec["cpus"] * 1000,
            "googlebatch_memory": spec["memory_mb"],
            "googlebatch_boot_disk_gb": cloud["boot_disk_gb"],
        }
        if spec.get("gpu"):
            resources["nvidia_gpu"] = spec["gpu"]
        return {**resources, "bench_slot": 1, **({"gpu": 1} if kind.gpu else {})}

    def timed_threads(self, kind: JobKind, wildcards: Mapping[str, str], cloud: bool) -> int:
        """The threads Snakemake schedules a timed job with: locally its own (main process and
        workers); in a cloud sweep every cpu of its machine, so that a VM running a group of
        jobs (the googlebatch profile's groups) runs one timed job at a time."""
        if cloud:
            return int(self.config["cloud"]["regimes"][kind.placement]["cpus"])
        return kind.threads(self, wildcards)

    def resources(self, kind: JobKind, wildcards: Mapping[str, str]) -> dict[str, Any]:
        """A timed job's resources: its placement and its predicted memory (mem_mb)."""
        job_wildcards = {k: v for k, v in wildcards.items() if k not in ("machine",)}
        dataset, library = job_wildcards.pop("dataset"), job_wildcards.pop("library")
        job = Job(kind.rule, library, dataset, tuple(job_wildcards.items()), (), ())
        return {**self.placement(kind), "mem_mb": self.memory(job).mem_mb}

    def placement_problems(self) -> list[str]:
        """Every placement that the declared job kinds need and cloud.regimes lacks, one line each
        (all at once, rather than the first rule's PlanError)."""
        missing: dict[str, list[str]] = {}
        for kind in regimes.KINDS.values():
            try:
                self.placement(kind)
            except PlanError:
                missing.setdefault(kind.placement, []).append(kind.rule)
        configured = sorted(self.config["cloud"].get("regimes") or {})
        return [
            f"config error at cloud.regimes: no placement for {placement!r} (rules "
            f"{', '.join(rules)}); configured: {configured}; add cloud.regimes.{placement} "
            "with machine_type, cpus and memory_mb (config/config.yaml has one)"
            for placement, rules in missing.items()
        ]

    def launcher(self, library: str, python: str, allocator: str = "") -> str:
        """The command that prepares a job's node and execs its engine
        (augbench.planning.provision): the library's venv, the staged dataset and the allocator
        setting the engine starts under (``allocator``: the job's wildcard); --lock, --archive,
        --manifest follow."""
        envs = self.config["envs"]
        setting = regimes.allocator_setting(allocator)
        words = [
            *(
                python,
                "-m",
                "augbench.planning.provision",
                "--library",
                library,
                "--allocator",
                setting,
            ),
            *("--manager", envs["manager"], "--venv", str(Path(envs["dir"]) / library)),
            *(
                "--python",
                envs.get("python") or python,
                "--scratch",
                self.config["cloud"]["scratch"],
            ),
        ]
        return " ".join(shlex.quote(w) for w in words)

    def configured_in_config_order(self) -> list[Regime]:
        return [regimes.BY_NAME[name] for name in self.regimes]

    # -- the cost model's view ------------------------------------------------------------------
    def cost_jobs(self) -> list[Job]:
        """Every job the sweep runs, as the cost model prices it: a result-writing job is one
        model job per result file (each carries its share of the job's per-process overhead),
        with its engine flags (micro: the images its pixel budget holds), the mean megapixels
        of its images, its benchmark file and predicted memory; the setup jobs come from the
        libraries and the dataset."""
        out = []
        for job in self.jobs():
            kind = job.kind
            wildcards = self.wildcards_of(job)
            # A job_per: library DataLoader job writes every setting of its shard (one file when
            # the sweep has one setting), under its own benchmark name.
            many = len(job.outputs) > 1 or (
                kind.rule == "cpu_dataloader" and self.dataloader_job_per_library
            )
            name = matrix.dataloader_library_job(wildcards["shard"]) if many else None
            benchmark = kind.log_file("benchmarks", "tsv", name).format(**wildcards)
            predicted = self.memory(job)
            flags = dict(kind.args(self, kind, wildcards))
            budgeted = "max-megapixels" in flags  # micro: the images its pixel budget holds
            images = (
                self.micro_images(job.dataset)
                if budgeted
                else int(flags.get("num-images") or self.num_images_for(kind))
            )
            images = min(images, self.dataset_images(job.dataset))
            if "num-images" in flags:
                flags["num-images"] = images
            for output in job.outputs:
                setting = kind.wildcards_of(output) or {}
                own = {k: setting[k] for k in ("scope", "workers") if k in setting}
                out.append(dataclasses.replace(
                    job, share=len(job.outputs),
                    params_json=json.dumps({**flags, **own}, sort_keys=True),
                    megapixels=self.mean_pixels(job.dataset, images) / 1e6, output=output,
                    benchmark=benchmark, mem_mb=predicted.mem_mb, rss_mb=predicted.rss_mb,
                    forked=predicted.forked,
                ))  # fmt: skip
        out += [Job("build_env", lib) for lib in self.libraries]
        out.append(Job("stage_dataset"))
        if not self.config["dataset"].get("archive"):
            out.append(Job("build_default_archive"))
        base = self.sizes[self.dataset]
        for key in self.derived:  # a resize job reads its base images and writes them resized
            known = self.sizes[key].source != "assumed"
            count = len(self.sizes[key].sizes) if known else int(self.config["num_images"])
            flags = {"num_images": count, "input_megapixels": base.mean_pixels(count) / 1e6}
            out.append(Job("resize_dataset", params_json=json.dumps(flags),
                                megapixels=self.mean_pixels(key, count) / 1e6,
                                output=paths.DATASET_ARCHIVE.format(dataset=key)))  # fmt: skip
        return out

    # -- memory (augbench.planning.memory) ---------------------------------------------------------
    def dataset_images(self, dataset: str) -> int:
        """Images of a dataset, as far as the plan knows (an assumed size: any number)."""
        sizes = self.sizes[dataset]
        return 10**9 if sizes.source == "assumed" else len(sizes.sizes)

    def mean_pixels(self, dataset: str, images: int) -> float:
        return self.sizes[dataset].mean_pixels(max(images, 1))

    def micro_images(self, dataset: str) -> int:
        """Images one micro job holds on ``dataset``: num_images, or the first images within
        micro.max_megapixels (the rule the engine applies to the staged manifest)."""
        if dataset not in self._micro_images:
            wanted = self.num_images_for(regimes.KINDS["micro"])
            pixels = self.sizes[dataset].first(wanted)
            budget = self.config["micro"]["max_megapixels"]
            self._micro_images[dataset] = media.images_within_budget(pixels, wanted, budget)
        return self._micro_images[dataset]

    def memory(self, job: Job) -> memory.Prediction:
        """The predicted memory of one planned job (its rule's mem_mb)."""
        key = (job.rule, job.library, job.dataset, job.wildcards)
        if key not in self._memory:
            kind = job.kind
            self._memory[key] = memory.predict(kind.memory(self, kind, self.wildcards_of(job)))
        return self._memory[key]

    def skipped_for_cores(self, job: Job, cores: int) -> bool:
        """Whether ``job`` would write only `skipped` rows on a machine of ``cores``: more workers
        than cores where its kind skips those (JobKind.caps_workers)."""
        switch = job.kind.caps_workers
        workers = dict(job.wildcards).get("workers", "")
        if not switch or not workers.isdigit() or int(workers) <= cores:
            return False
        return switch == "always" or bool(self.config_value(switch))

    def memory_checks(
        self, available: Callable[[JobKind], tuple[str, int]], cores: int | None = None
    ) -> list[memory.Check]:
        """Every planned job's predicted memory against ``available(kind)``: (the machine's
        name, its MiB). With ``cores`` (a local run), jobs that would write only `skipped` rows
        on a machine of that many cores are left out: they load nothing."""
        checks = []
        for job in self.jobs():
            if cores is not None and self.skipped_for_cores(job, cores):
                continue
            machine, mb = available(job.kind)
            wildcards = {k: v for k, v in job.wildcards if k != "shard" and v}
            checks.append(
                memory.Check(
                    job.rule, job.library, job.dataset,
                    f"{self.resolutions[job.dataset]} px" if job.dataset in self.resolutions
                    else "as staged",
                    ", ".join(f"{k} {v}" for k, v in wildcards.items()),
                    self.memory(job).mem_mb, mb, machine,
                )
            )  # fmt: skip
        return checks

    def memory_refusals(
        self, where: str, limit_mb: int | None = None, config_key: str = "cloud.regimes"
    ) -> list[str]:
        """Why some planned job cannot fit its machine (empty: every job fits), one line per
        rule (its largest job). ``where``: "cloud" (a cloud sweep: its placement's memory_mb),
        "cluster" (a SLURM cluster: slurm.regimes, ``config_key``), else "local" (``--resources
        mem_mb`` where given, else this machine's memory)."""
        if where in ("cloud", "cluster"):
            available = functools.partial(self.placement_memory, config_key)
        else:
            local = (
                ("--resources mem_mb", limit_mb)
                if limit_mb
                else ("this machine", memory.this_machine_mb())
            )
            available = lambda kind: local  # noqa: E731
        larger = "a larger machine" if where == "cloud" else "a partition with larger nodes"
        fixes = {
            kind.rule: f"{kind.memory_fix}"
            + (f", or {larger} ({config_key}.{kind.placement})" if where != "local" else "")
            for kind in regimes.KINDS.values()
        }  # fmt: skip
        cores = None if where != "local" else usable_cores()
        return memory.refusals(self.memory_checks(available, cores), fixes)

    def placement_memory(self, config_key: str, kind: JobKind) -> tuple[str, int]:
        """The machine a kind is placed on (``config_key``: cloud.regimes, a machine type, or
        slurm.regimes, a partition's nodes) and its memory."""
        section, table = config_key.split(".")
        spec = self.config[section][table][kind.placement]
        machine = spec.get("machine_type") or f"partition {spec.get('partition') or '(default)'}"
        return f"{machine} ({config_key}.{kind.placement}.memory_mb)", int(spec["memory_mb"])

    def cost_plan(self, placement: profile.Profile) -> dict[str, Any]:
        """Every job of the sweep as the cost model prices it, plus what the profile it would run
        under says about placement: its preemptible rules, default machine type, jobs at once and
        groups (jobs of one VM job share its start-up)."""
        preemptible = set(placement.preemptible_rules)
        return {
            "jobs": self.cost_jobs(),
            "planned": self.planned_kinds(),
            "preemptible": [r for r in regimes.timed_rules() if r in preemptible],
            "default_machine": placement.default_machine,
            "jobs_at_once": placement.jobs_at_once,
            "groups": dict(placement.groups),
            "group_components": dict(placement.group_components),
            "profile": str(placement.path),
            "executor": placement.executor,
        }

    def config_value(self, key: str) -> Any:
        """The value of a dotted config key (``micro.num_images``), None where it is not set."""
        node: Any = self.config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return node

    def num_images_for(self, kind: JobKind) -> int:
        """Images one job of ``kind`` reads (its --num-images): the kind's own key where set,
        capping num_images where the key is a cap (augbench/planning/regimes/ ``images_key``)."""
        top = int(self.config["num_images"])
        own = self.config_value(kind.images_key)
        if own is None:
            return top
        return min(int(own), top) if kind.images_cap else int(own)

    def required_images(self) -> dict[str, int]:
        """The images the planned jobs read, by the config key that decides each count: ``{key:
        the most images a job reads because of it}``, e.g. ``{"num_images": 12,
        "lazy_outputs.num_images": 10}``; empty when no job reads images. The largest value is
        the most images any configured job uses (rule stage_dataset checks the staged dataset
        against it). A kind's own key (``images_key``) is named where it decides the count: set
        (``micro.num_images``), or a cap below ``num_images``; else ``num_images``."""
        top = int(self.config["num_images"])
        asked: dict[str, int] = {}
        for job in self.jobs():
            kind = job.kind
            if "num-images" not in kind.args(self, kind, self.wildcards_of(job)):
                continue
            count = self.num_images_for(kind)
            own = self.config_value(kind.images_key)
            decides = own is not None and not (kind.images_cap and count == top)
            key = kind.images_key if decides else "num_images"
            asked[key] = max(asked.get(key, 0), count)
        return asked

    def wildcards_of(self, job: Job) -> dict[str, str]:
        """Every wildcard of a job's rule: machine, dataset, library and the kind's own."""
        base = {"machine": self.machine, "dataset": job.dataset, "library": job.library}
        return {**base, **dict(job.wildcards)}

    def planned_kinds(self) -> list[str]:
        """The rules this sweep runs (what the estimate must cover), setup first."""
        kinds = [job.rule for job in self.cost_jobs()]
        setup = [k for k in regimes.SETUP_RULES if k in kinds]
        return setup + list(dict.fromkeys(k for k in kinds if k not in setup))


def dataset_facts(
    config: Mapping[str, Any],
    dataset: str,
    derived: Mapping[str, Any],
    data_dir: Path = Path(paths.DATA),
) -> tuple[dict[str, memory.ImageSizes], dict[str, int]]:
    """What the plan knows of the datasets before staging: image sizes per key (for memory) and
    the resolution of each derived key (``derived``: key -> (identity, ResizeSpec))."""
    specs = {key: spec for key, (_, spec) in derived.items()}
    sizes = memory.plan_sizes(config, dataset, specs, data_dir)
    return sizes, {key: spec.resolution for key, spec in specs.items()}


# -- one job's command line --------------------------------------------------------------------
def flag_words(flags: Mapping[str, Any]) -> list[str]:
    """``{"num-images": 12, "transforms": ["A", "B"]}`` -> ``--num-images 12 --transforms A,B``."""
    words: list[str] = []
    for name, value in flags.items():
        words.append(f"--{name}")
        words.append(",".join(value) if isinstance(value, list | tuple) else str(value))
    return words


def engine_command(sweep: Sweep, kind: JobKind, wildcards: Mapping[str, str]) -> str:
    """The engine module and its flags for one job (the output flag is the rule's: it names
    Snakemake's own output paths), shell-quoted."""
    words = ["-m", kind.engine, *flag_words(kind.args(sweep, kind, wildcards))]
    return " ".join(shlex.quote(w) for w in words)


def thread_env(kind: JobKind) -> str:
    """Thread-count variables set before the interpreter starts (policy per kind)."""
    policy = THREAD_POLICIES.get(kind.thread_policy)
    return policy.shell_prefix() if policy is not None else ""


def check_regimes(config: Mapping[str, Any]) -> list[str]:
    """Why the configured regimes cannot run (empty: they can)."""
    problems = []
    libraries = list(config["libraries"])
    for name in config["regimes"]:
        if name not in regimes.BY_NAME:
            problems.append(
                f"config error at regimes: {name!r} has no rules in this version; "
                f"implemented: {list(regimes.NAMES)}"
            )
        elif not regimes.libraries_for(name, libraries):
            problems.append(
                f"config error at regimes: {name!r} measures "
                f"{list(regimes.BY_NAME[name].libraries)}, none of which is in libraries "
                f"{libraries}; add one to libraries or drop the regime"
            )
    dl = config.get("cpu_dataloader") or {}
    if dl.get("sweep_transforms") is not None:
        known = set(catalog.names())
        unknown = [t for t in dl["sweep_transforms"] if t not in known]
        if unknown:
            problems.append(
                f"config error at cpu_dataloader.sweep_transforms: {unknown} are not catalog "
                "recipes (docs/transforms.md)"
            )
        if dl.get("job_per") == "library":
            problems.append(
                "config error at cpu_dataloader.sweep_transforms: needs job_per: setting (a "
                "job_per: library job writes every setting of its shard); set "
                "cpu_dataloader.job_per: setting or sweep_transforms: null"
            )
    for name in config.get("resolution_regimes") or [] if config.get("resolutions") else []:
        if name not in config["regimes"]:
            problems.append(
                f"config error at resolution_regimes: {name!r} is not in regimes "
                f"{list(config['regimes'])}; add it to regimes or drop it from resolution_regimes"
            )
    return problems
