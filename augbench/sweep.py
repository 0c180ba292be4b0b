"""The jobs a configuration plans, as pure functions of the resolved config (no Snakemake).

:class:`Sweep` is the configuration seen through the regime declarations (augbench/regimes.py):
shards of transforms, DataLoader settings, GPU settings, pipelines. ``Sweep.jobs()`` lists every
timed job with its wildcards, result files and transforms; the workflow's rules request exactly
these files (workflow/rules/common.smk), the cost estimate prices exactly these jobs, and the
engine flags of one job come from :func:`engine_command`. Unit-tested in tests/test_sweep.py.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench import catalog, cost, gpu_recipes, regimes
from augbench.policy import DATALOADER_THREADS, MICRO_THREADS, SlowTransformPolicy
from augbench.regimes import JobKind, Regime

THREAD_POLICIES = {"micro": MICRO_THREADS, "dataloader": DATALOADER_THREADS}
LAZY_TABLES = {
    "csv": "results/analysis/lazy_outputs.csv",
    "markdown": "results/analysis/lazy_outputs.md",
}
PIPELINE_FIGURE = "results/analysis/pipeline_breakdown.png"


class PlanError(ValueError):
    """A configuration the workflow cannot plan; the message names the key to change."""


@dataclass(frozen=True)
class Job:
    """One planned job of a timed rule."""

    rule: str
    library: str
    dataset: str
    wildcards: tuple[tuple[str, str], ...]
    outputs: tuple[str, ...]
    transforms: tuple[str, ...]

    @property
    def kind(self) -> JobKind:
        return regimes.KINDS[self.rule]


def shards(items: list[str], size: int, prefix: str = "") -> dict[str, list[str]]:
    return {
        f"{prefix}s{i:03d}": items[start : start + size]
        for i, start in enumerate(range(0, len(items), size))
    }


class Sweep:
    """The resolved configuration (augbench.config.resolve) of one run, on one staged dataset
    (its key) and the datasets derived from it for the resolution sweep (their keys)."""

    def __init__(
        self, config: Mapping[str, Any], dataset: str, derived: tuple[str, ...] = ()
    ) -> None:
        self.config = config
        self.dataset = dataset
        self.derived = tuple(derived)
        self.machine: str = config["machine"]
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
        self.dataloader_shards = shards(list(dl_transforms), dl["shard_size"])
        # Every (scope, workers) setting, in the order a job_per: library job measures them.
        self.dataloader_settings = [
            {"scope": scope, "workers": str(workers)}
            for scope in dl["scopes"]
            for workers in dl["workers"]
        ]
        self.dataloader_job_per_library = dl["job_per"] == "library"
        # The Identity baseline (crop + Normalize only) leads every GPU regime's recipe list.
        gpu_recipes_list = [gpu_recipes.IDENTITY, *self.transforms]
        self.gpu_shards = shards(gpu_recipes_list, config["gpu_dataloader"]["shard_size"])
        self.dali_shards = shards(gpu_recipes_list, config["dali"]["shard_size"])
        self.dali_variants: list[str] = list(config["dali"]["variants"])
        self.pipelines: list[dict[str, Any]] = list(config.get("pipeline_definitions") or [])
        self.pipeline_names = [p["name"] for p in self.pipelines]
        # The resolved pipelines, passed to the engines (a changed pipeline re-runs its jobs).
        self.pipelines_json = json.dumps(self.pipelines, sort_keys=True)
        self.lazy_enabled = bool(config["lazy_outputs"]["enabled"]) and "micro" in self.regimes
        self.resolution_regimes: list[str] = list(config.get("resolution_regimes") or ["micro"])

    # -- what the declarations' enumerators use ------------------------------------------------
    def libraries_of(self, regime: str) -> list[str]:
        return regimes.libraries_for(regime, self.libraries)

    def gpu_settings(self, library: str) -> list[dict[str, str]]:
        """(scope, workers, randomness) of the GPU DataLoader: scope memory times batches already
        on the GPU, so it has no workers (one job); the randomness modes the library has."""
        gpu = self.config["gpu_dataloader"]
        allowed = gpu_recipes.LIBRARY_RANDOMNESS[library]
        modes = [r for r in gpu["torchvision_randomness"] if r in allowed] or list(allowed)
        return [
            {"scope": scope, "workers": str(workers), "randomness": mode}
            for scope in gpu["scopes"]
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

    # -- the plan -------------------------------------------------------------------------------
    def configured(self) -> list[Regime]:
        return [r for r in regimes.ALL if r.name in self.regimes]

    def jobs(self, role: str | None = None) -> list[Job]:
        """Every timed job: the configured regimes on the staged dataset, then the resolution
        regimes' single-transform jobs on each derived dataset."""
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
        return out

    def outputs(self, role: str) -> list[str]:
        return [path for job in self.jobs(role) for path in job.outputs]

    def shards_by_regime(self) -> dict[str, dict[str, list[str]]]:
        """Shard wildcard -> transforms, per regime, from the jobs that write result rows (what
        the plan's cost model reads to price a job Snakemake plans)."""
        out: dict[str, dict[str, list[str]]] = {name: {} for name in regimes.NAMES}
        for job in self.jobs("results"):
            shard = dict(job.wildcards).get("shard")
            if shard is not None:
                out[job.kind.regime][shard] = list(job.transforms)
        return out

    # -- tables and figures ---------------------------------------------------------------------
    def table_outputs(self) -> dict[str, str]:
        tables = {
            "all": "results/tables/all_results.csv",
            "coverage": "results/tables/coverage.csv",
        }
        names = [r.name for r in self.configured_in_config_order()]
        tables |= {f"speedups_{r}": f"results/tables/speedups_{r}.csv" for r in names}
        tables |= {f"throughputs_{r}": f"results/tables/throughputs_{r}.csv" for r in names}
        for regime in self.configured_in_config_order():
            tables |= regime.tables
        tables |= {
            "resolution_scaling": "results/tables/resolution_scaling.csv",
            "starvation": "results/tables/starvation.csv",
        }
        return tables

    def pipeline_tables(self) -> dict[str, str]:
        """Tidy pipeline rows, the breakdown, starvation and one speedup table per pipeline."""
        if not self.pipeline_names:
            return {}
        return {
            "results": "results/tables/pipeline_results.csv",
            "breakdown": "results/tables/pipeline_breakdown.csv",
            # "Will my GPU starve?" for the pipelines (augbench.analysis.starvation).
            "starvation": "results/tables/starvation_pipelines.csv",
            **{
                f"speedups_{name}": f"results/tables/speedups_pipeline_{name}.csv"
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
            *(LAZY_TABLES.values() if self.lazy_enabled else []),
            *pipelines,
            *([PIPELINE_FIGURE] if self.pipeline_names else []),
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

    def launcher(self, library: str, python: str) -> str:
        """The command that prepares a job's node and execs its engine (augbench.provision):
        the library's venv and the staged dataset; --lock, --archive, --manifest follow."""
        envs = self.config["envs"]
        words = [
            *(python, "-m", "augbench.provision", "--library", library),
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
    def cost_jobs(self) -> list[cost.Job]:
        """Every job the sweep runs, as the cost model prices it: a result-writing job is one
        model job per result file (each carries its share of the job's per-process overhead), a
        whole-job kind is itself, and the setup jobs come from the libraries and the dataset."""
        out = []
        for job in self.jobs():
            if job.kind.cost == "whole_job":
                out.append(cost.Job(job.rule, job.library))
                continue
            out += [
                cost.Job(job.rule, job.library, job.transforms, share=len(job.outputs))
                for _ in job.outputs
            ]
        out += [cost.Job("build_env", lib) for lib in self.libraries]
        out.append(cost.Job("stage_dataset"))
        if not self.config["dataset"].get("archive"):
            out.append(cost.Job("build_default_archive"))
        out += [cost.Job("resize_dataset") for _ in self.derived]
        return out

    def config_value(self, key: str) -> Any:
        """The value of a dotted config key (``micro.num_images``), None where it is not set."""
        node: Any = self.config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return node

    def num_images_for(self, kind: JobKind) -> int:
        """Images one job of ``kind`` reads (its --num-images): the kind's own key where set,
        capping num_images where the key is a cap (augbench/regimes.py ``images_key``)."""
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
        setup = ["build_env", "stage_dataset"]
        return setup + list(dict.fromkeys(job.rule for job in self.jobs()))


def other_dataset_files(root: Path, machine: str, keep: set[str], pattern: str) -> list[str]:
    """Files below ``root/<machine>/<key>/`` matching ``pattern`` for every dataset key not in
    ``keep``: what this machine measured on other datasets (rows carry their dataset), so the
    tables keep them and switching datasets back and forth re-runs nothing."""
    base = root / machine
    if not base.is_dir():
        return []
    return sorted(
        str(path)
        for key in base.iterdir()
        if key.is_dir() and key.name not in keep
        for path in key.glob(pattern)
    )


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
    for name in config.get("resolution_regimes") or [] if config.get("resolutions") else []:
        if name not in config["regimes"]:
            problems.append(
                f"config error at resolution_regimes: {name!r} is not in regimes "
                f"{list(config['regimes'])}; add it to regimes or drop it from resolution_regimes"
            )
    return problems
