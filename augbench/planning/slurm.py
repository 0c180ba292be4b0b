"""Sweeps on a SLURM cluster: ``snakemake --workflow-profile profiles/slurm`` (docs/slurm.md).

Each timed job goes to the partition of its placement (config ``slurm.regimes``, keyed like
``cloud.regimes`` by the placements of augbench/planning/regimes/) and asks the scheduler for what
the workflow knows it needs: its threads as cores, its predicted memory (augbench.planning.memory),
a GPU where its kind needs one and the partition has them, a time limit from the cost model's
maximum for its rule, and the node to itself (``--exclusive``: no other job shares the cores it is
measured on). Setup and analysis jobs run on the submitting host (a login node): they build the
envs and stage the dataset on the shared file system once, and make the tables.

Before any job is submitted the cluster is asked (``sinfo``) whether it answers, whether each
configured partition exists and whether its nodes have the cores, memory and GPUs the config
says; each problem is one line. Nothing here runs inside the jobs themselves (Snakemake starts
them with the ``slurm-jobstep`` executor).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from augbench.logs import UserError
from augbench.planning import cost, regimes

EXECUTOR = "slurm"
# What Snakemake runs inside each submitted job (snakemake-executor-plugin-slurm-jobstep).
JOB_STEP_EXECUTOR = "slurm-jobstep"
# sinfo fields: partition (a trailing * marks the default one), cpus, memory (MB) and generic
# resources of every node; one line per node and partition.
SINFO_FORMAT = "%P|%c|%m|%G"


class ClusterError(UserError):
    """The scheduler cannot be used from here: one line naming what is missing."""


@dataclass(frozen=True)
class Placement:
    """What one placement's jobs ask for: a partition (None: the cluster's default) whose nodes
    have at least ``cpus`` cores, ``memory_mb`` MB and ``gpus`` GPUs."""

    name: str
    partition: str | None
    cpus: int
    memory_mb: int
    gpus: int

    @property
    def where(self) -> str:
        return f"partition {self.partition or '(default)'} (slurm.regimes.{self.name})"


def placements(config: Mapping[str, Any]) -> dict[str, Placement]:
    return {
        name: Placement(
            name,
            spec.get("partition") or None,
            int(spec["cpus"]),
            int(spec["memory_mb"]),
            int(spec.get("gpus") or 0),
        )
        for name, spec in (config.get("slurm", {}).get("regimes") or {}).items()
    }


def placement_of(config: Mapping[str, Any], kind: regimes.JobKind) -> Placement:
    found = placements(config).get(kind.placement)
    if found is None:
        raise ClusterError(
            f"config error at slurm.regimes: no placement for {kind.placement!r} (rule "
            f"{kind.rule}); add slurm.regimes.{kind.placement} with partition, cpus and memory_mb"
        )
    return found


# -- what a job asks the scheduler for ---------------------------------------------------------
def resources(config: Mapping[str, Any], kind: regimes.JobKind, minutes: Any) -> dict[str, Any]:
    """The SLURM executor's resources of a timed job (mem_mb comes with its other resources);
    ``minutes``: its time limit, or a function of the job's wildcards that gives it."""
    placement = placement_of(config, kind)
    out: dict[str, Any] = {
        "runtime": minutes,
        # One GPU where the kind needs one and its partition has them; without, it runs on the
        # partition's CPUs and writes `skipped` rows, where slurm.without_gpu allows.
        "gpu": 1 if kind.gpu and placement.gpus > 0 else 0,
    }
    if placement.partition:
        out["slurm_partition"] = placement.partition
    if config["slurm"].get("exclusive", True):
        out["slurm_extra"] = "--exclusive"
    return out


def time_limits(
    config: Mapping[str, Any],
    jobs: list[regimes.Job],
    models: Mapping[Any, cost.KindModel],
) -> dict[str, int]:
    """Minutes each timed rule may run: the cost model's maximum for the rule's longest job (on
    its placement's cores) times ``slurm.time_margin``, at least ``slurm.min_time_minutes``; a
    rule the model cannot price gets ``slurm.max_time_minutes``."""
    spec = config["slurm"]
    by_place = placements(config)

    def cores(job: regimes.Job) -> int:
        kind = regimes.KINDS.get(job.rule)
        placement = by_place.get(kind.placement) if kind else None
        return placement.cpus if placement else 0

    timed = [j for j in jobs if j.rule in regimes.KINDS]
    found, _ = cost.estimate_jobs(timed, dict(models), config, target_cores=cores)
    per_job: dict[tuple[str, str], float] = defaultdict(float)
    unpriced = set()
    for job in timed:
        estimate = found.get(job)
        if estimate is None:
            unpriced.add(job.rule)
            continue
        per_job[(job.rule, job.benchmark or job.output)] += estimate.most
    longest: dict[str, float] = defaultdict(float)
    for (kind, _), seconds in per_job.items():
        longest[kind] = max(longest[kind], seconds)
    ceiling = int(spec["max_time_minutes"])
    limits = {}
    for kind in {j.rule for j in timed}:
        if kind in unpriced or kind not in longest:
            limits[kind] = ceiling
            continue
        minutes = math.ceil(longest[kind] * float(spec["time_margin"]) / 60)
        limits[kind] = min(max(minutes, int(spec["min_time_minutes"])), ceiling)
    return limits


def local_rules(rule_names: Iterable[str]) -> list[str]:
    """Rules that run on the submitting host: every rule but the timed ones."""
    return sorted(name for name in rule_names if not is_submitted(name))


# -- checks before anything is submitted -----------------------------------------------------
def plan_problems(config: Mapping[str, Any], kinds: Iterable[regimes.JobKind]) -> list[str]:
    """What the config asks of the cluster that cannot work, from the config alone (dry runs
    and `snakemake cost` too): a planned rule without a placement, a GPU rule on a partition
    without GPUs (unless slurm.without_gpu is skip). ``kinds``: the planned jobs' kinds."""
    problems: list[str] = []
    without_gpu = config["slurm"].get("without_gpu", "refuse")
    gpu_less: dict[str, set[str]] = defaultdict(set)
    for kind in kinds:
        try:
            placement = placement_of(config, kind)
        except ClusterError as exc:
            if str(exc) not in problems:
                problems.append(str(exc))
            continue
        if kind.gpu and placement.gpus == 0:
            gpu_less[placement.where].add(kind.rule)
    for where, rules in gpu_less.items():
        names = ", ".join(sorted(rules))
        if without_gpu == "refuse":
            problems.append(
                f"slurm: rules {names} need a GPU but {where} has none (gpus: 0); place them on "
                "a GPU partition, or set slurm.without_gpu: skip to run them there as `skipped` "
                "rows"
            )
        elif config.get("gpu") == "required":
            problems.append(
                f"slurm: rules {names} run on {where} without a GPU (slurm.without_gpu: skip) "
                "but gpu: required makes them fail there; set gpu: optional or a GPU partition"
            )
    return problems


def threads(config: Mapping[str, Any], kind: regimes.JobKind, own: int) -> int:
    """The cores a timed job asks for (``--cpus-per-task``): with its node to itself
    (slurm.exclusive) all of the node's, as a cloud job gets its VM's; else its own threads
    (``own``: main process and workers), at most the node's (more workers than cores run
    oversubscribed, as locally)."""
    cpus = placement_of(config, kind).cpus
    return cpus if config["slurm"].get("exclusive", True) else min(own, cpus)


@dataclass(frozen=True)
class Node:
    partition: str
    cpus: int
    memory_mb: int
    gpus: int
    default: bool


def gpu_count(gres: str) -> int:
    """GPUs in a node's generic resources (``gpu:2``, ``gpu:a100:4(S:0-1)``, ``(null)``)."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu":
            total += int(parts[-1]) if parts[-1].isdigit() else 1
    return total


def query_nodes() -> list[Node]:
    """Every node of every partition as ``sinfo`` reports it."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        raise ClusterError(
            "slurm: sbatch is not on PATH: run snakemake on a host that submits to the cluster "
            "(a login node), or install the client (Debian: apt-get install slurm-client)"
        )
    try:
        done = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format", SINFO_FORMAT],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ClusterError("slurm: the scheduler did not answer sinfo within 30 s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        first = said[0] if said else f"exit status {done.returncode}"
        hint = (
            "; munge, which signs every request, is not running (start munged)"
            if "munge" in (done.stderr or "").lower()
            else "; is slurmctld running and this host in its slurm.conf?"
        )
        raise ClusterError(f"slurm: the scheduler does not answer: {first}{hint}")
    nodes = []
    for line in done.stdout.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 4:
            continue
        partition, cpus, mem, gres = fields
        nodes.append(
            Node(partition.rstrip("*"), int(cpus), int(mem.rstrip("+")), gpu_count(gres),
                 partition.endswith("*"))
        )  # fmt: skip
    return nodes


def cluster_problems(config: Mapping[str, Any], nodes: list[Node]) -> list[str]:
    """Each used placement against the cluster: its partition exists and its smallest node has
    the cores, memory and GPUs the config says."""
    partitions = sorted({n.partition for n in nodes})
    default = next((n.partition for n in nodes if n.default), None)
    problems = []
    used = {kind.placement for kind in regimes.KINDS.values()}
    for placement in placements(config).values():
        if placement.name not in used:
            continue
        name = placement.partition or default
        members = [n for n in nodes if n.partition == name]
        if not members:
            problems.append(
                f"slurm: {placement.where} does not exist on this cluster; partitions: {partitions}"
                if placement.partition
                else f"slurm: slurm.regimes.{placement.name} names no partition and the "
                f"cluster has no default one; partitions: {partitions}"
            )
            continue
        cpus = min(n.cpus for n in members)
        memory_mb = min(n.memory_mb for n in members)
        gpus = min(n.gpus for n in members)
        short = [
            f"{what} {have} < {want}"
            for what, have, want in (
                ("cores", cpus, placement.cpus),
                ("memory MB", memory_mb, placement.memory_mb),
                ("GPUs", gpus, placement.gpus),
            )
            if have < want
        ]
        if short:
            problems.append(
                f"slurm: {placement.where}: its smallest node has {', '.join(short)} "
                f"(configured); set slurm.regimes.{placement.name} to what the nodes have"
            )
    return problems


# -- what a sweep costs there ------------------------------------------------------------------
def cost_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as the cost model reads a placement (augbench.planning.cost: cloud.regimes,
    prices, start-up per submitted job) with the cluster's partitions in place of machine types: its
    rows are node-hours per partition (each timed job has its node to itself), priced only
    where slurm.prices_usd_per_node_hour names the partition."""
    spec = config["slurm"]
    placed = {
        p.name: {"machine_type": p.partition or "(default)", "cpus": p.cpus,
                 "memory_mb": p.memory_mb}
        for p in placements(config).values()
    }  # fmt: skip
    cloud = {
        **config["cloud"],
        "regimes": placed,
        "prices_usd_per_hour": dict(spec.get("prices_usd_per_node_hour") or {}),
        "spot_prices_usd_per_hour": {},
        "speed_factors": {},
        "vm_start_s": float(spec["job_start_s"]),
    }
    return {**config, "cloud": cloud}


def is_submitted(kind: str) -> bool:
    """Whether jobs of ``kind`` are submitted to the cluster (the rest run on the login node)."""
    return kind in regimes.KINDS
