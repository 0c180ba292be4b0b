"""What a SLURM sweep asks the scheduler for and refuses before submitting
(augbench/planning/slurm.py), from the config alone; tests/test_slurm.py runs it against a real
scheduler."""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import pytest
import snakemake_runner
import yaml
from conftest import REPO, smoke_settings
from test_memory import paper_sweep

from augbench.planning import command_line, cost, regimes, slurm

SHIPPED = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def cluster_settings(**changes: dict) -> dict:
    """A smoke config with the shipped placements (config/config.yaml), some changed."""
    config = smoke_settings(
        ["pillow", "torchvision"], ["micro", "cpu_dataloader", "gpu_dataloader"],
        slurm=copy.deepcopy(SHIPPED["slurm"]), cloud=copy.deepcopy(SHIPPED["cloud"]),
    )  # fmt: skip
    for name, change in changes.items():
        config["slurm"]["regimes"][name] = {**config["slurm"]["regimes"][name], **change}
    return config


def test_the_shipped_placements_cover_every_timed_rule() -> None:
    config = cluster_settings()
    for kind in regimes.KINDS.values():
        assert slurm.placement_of(config, kind).cpus >= 1
    gpu = slurm.placement_of(config, regimes.KINDS["gpu_dataloader"])
    assert gpu.gpus == 1 and gpu.partition is None and "(default)" in gpu.where


def test_a_timed_job_asks_for_its_partition_a_gpu_a_limit_and_its_node() -> None:
    config = cluster_settings(gpu_dataloader={"partition": "gpu"}, micro={"partition": "short"})
    gpu = slurm.resources(config, regimes.KINDS["gpu_dataloader"], 42)
    assert gpu == {"runtime": 42, "gpu": 1, "slurm_partition": "gpu", "slurm_extra": "--exclusive"}
    micro = slurm.resources(config, regimes.KINDS["micro"], 10)
    assert micro["gpu"] == 0 and micro["slurm_partition"] == "short"
    config["slurm"]["exclusive"] = False
    assert "slurm_extra" not in slurm.resources(config, regimes.KINDS["micro"], 10)
    # Only the timed rules are submitted; the rest run on the login node.
    assert slurm.local_rules(["micro", "aggregate", "build_env", "all"]) == [
        "aggregate", "all", "build_env",
    ]  # fmt: skip


def test_a_gpu_rule_on_a_partition_without_gpus_is_refused_or_skipped_as_configured() -> None:
    config = cluster_settings(gpu_dataloader={"gpus": 0})
    planned = [regimes.KINDS["gpu_dataloader"], regimes.KINDS["micro"]]
    (line,) = slurm.plan_problems(config, planned)
    assert line.startswith("slurm: rules gpu_dataloader need a GPU but partition (default)")
    assert "slurm.without_gpu: skip" in line
    config["slurm"]["without_gpu"] = "skip"
    assert slurm.plan_problems(config, planned) == []
    assert slurm.resources(config, regimes.KINDS["gpu_dataloader"], 5)["gpu"] == 0
    config["gpu"] = "required"
    (line,) = slurm.plan_problems(config, planned)
    assert "gpu: required" in line


def test_a_timed_job_takes_its_nodes_cores_or_its_own_threads() -> None:
    config = cluster_settings(cpu_dataloader={"cpus": 4})
    kind = regimes.KINDS["cpu_dataloader"]
    assert slurm.threads(config, kind, 3) == 4  # exclusive: the whole node
    config["slurm"]["exclusive"] = False
    assert slurm.threads(config, kind, 3) == 3
    assert slurm.threads(config, kind, 9) == 4  # more workers than cores: oversubscribed


def test_a_job_larger_than_its_partition_is_refused_at_plan_time(tmp_path: Path) -> None:
    small = paper_sweep(tmp_path, slurm={"regimes": {"micro": {"memory_mb": 1000}}})
    refusals = small.memory_refusals("cluster", config_key="slurm.regimes")
    # One line per rule that does not fit (micro and the pipelines' breakdown share a placement).
    (line,) = [r for r in refusals if "rule micro " in r]
    assert "partition (default) (slurm.regimes.micro.memory_mb) has 1000 MB" in line, line
    assert "or a partition with larger nodes (slurm.regimes.micro)" in line


NODES = [
    slurm.Node("debug", 2, 7800, 0, True),
    slurm.Node("gpu", 8, 30000, 2, False),
    slurm.Node("gpu", 8, 28000, 1, False),
]


def test_the_config_is_checked_against_the_partitions_the_cluster_reports() -> None:
    config = cluster_settings()
    for name in config["slurm"]["regimes"]:
        config["slurm"]["regimes"][name] = {"partition": None, "cpus": 2, "memory_mb": 7000}
    assert slurm.cluster_problems(config, NODES) == []
    config["slurm"]["regimes"]["training"] = {
        "partition": "gpu", "cpus": 8, "memory_mb": 29000, "gpus": 2,
    }  # fmt: skip
    (line,) = slurm.cluster_problems(config, NODES)
    assert line == (
        "slurm: partition gpu (slurm.regimes.training): its smallest node has memory MB "
        "28000 < 29000, GPUs 1 < 2 (configured); set slurm.regimes.training to what the nodes have"
    )
    config["slurm"]["regimes"]["micro"]["partition"] = "long"
    assert any("partition long (slurm.regimes.micro) does not exist" in p
               for p in slurm.cluster_problems(config, NODES))  # fmt: skip
    no_default = [n for n in NODES if not n.default]
    assert any("names no partition and the cluster has no default one" in p
               for p in slurm.cluster_problems(cluster_settings(), no_default))  # fmt: skip


def test_gpus_are_read_from_every_gres_form() -> None:
    assert slurm.gpu_count("(null)") == 0
    assert slurm.gpu_count("gpu:2") == 2
    assert slurm.gpu_count("gpu:a100:4(S:0-1)") == 4
    assert slurm.gpu_count("gpu:a100:2,gpu:v100:1,shard:8") == 3


def test_sinfo_failing_or_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(slurm.ClusterError, match="sbatch is not on PATH"):
        slurm.query_nodes()


def test_time_limits_come_from_the_cost_models_maximum() -> None:
    config = cluster_settings()
    jobs = [
        regimes.Job("micro", "pillow", transforms=("HorizontalFlip",), output="a", benchmark="a"),
        regimes.Job(
            "cpu_dataloader", "kornia", transforms=("HorizontalFlip",), output="b", benchmark="b"
        ),
    ]
    model = cost.KindModel(per_image_s={"HorizontalFlip": 0.01}, overhead_s=600.0)
    limits = slurm.time_limits(config, jobs, {("micro", "pillow"): model})
    spec = config["slurm"]
    # micro has a model (its overhead at least, times the margin); Kornia's DataLoader job has
    # neither a model nor an assumed rate.
    assert 600 * spec["time_margin"] / 60 <= limits["micro"] < spec["max_time_minutes"]
    assert limits["cpu_dataloader"] == spec["max_time_minutes"]


def test_the_executor_is_read_from_the_command_line_or_its_profile() -> None:
    def executor(*args: str) -> str:
        return command_line.executor(["snakemake", *args], REPO, REPO)

    assert executor() == "local"
    assert executor("--executor", "slurm") == "slurm"
    assert executor("--workflow-profile", str(REPO / "profiles" / "slurm")) == "slurm"
    assert executor("--workflow-profile", "slurm") == "slurm"  # a profile of the workflow's
    assert executor("--workflow-profile", "profiles/googlebatch") == "googlebatch"
    assert executor("--profile", str(REPO / "profiles" / "slurm"), "-n") == "slurm"


def test_the_cost_of_a_slurm_sweep_is_node_hours_per_partition() -> None:
    config = cluster_settings(micro={"partition": "short"})
    priced = slurm.cost_config(config)
    assert priced["cloud"]["regimes"]["micro"]["machine_type"] == "short"
    assert priced["cloud"]["vm_start_s"] == config["slurm"]["job_start_s"]
    model = cost.KindModel(per_image_s={"HorizontalFlip": 0.001}, overhead_s=36.0)
    jobs = [
        regimes.Job("micro", "pillow", transforms=("HorizontalFlip",), output=f"r{i}")
        for i in range(3)
    ]
    rows = cost.estimate(jobs, {("micro", "pillow"): model}, priced, "login", set(), 0.0)
    text = cost.report(rows, ["micro"], 8, {}, unit="node")
    assert "node h exp" in text and "SLURM jobs" in text
    assert "no USD (no price per node-hour for short: slurm.prices_usd_per_node_hour)" in text
    config["slurm"]["prices_usd_per_node_hour"] = {"short": 2.0}
    rows = cost.estimate(jobs, {("micro", "pillow"): model}, slurm.cost_config(config), "login",
                         set(), 0.0)  # fmt: skip
    assert "0.06 USD at the configured node-hour prices" in cost.report(
        rows, ["micro"], 8, {}, unit="node"
    )


def path_without_slurm(folder: Path) -> str:
    """A PATH with `which` (the SLURM executor looks for sacct with it) and no SLURM client."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "which").symlink_to(shutil.which("which") or "/usr/bin/which")
    return str(folder)


def test_no_sbatch_on_a_real_command_line_is_one_line(tmp_path: Path) -> None:
    """The workflow itself, launched with the SLURM profile where no scheduler is installed on
    PATH: one line, before anything is submitted."""
    done = snakemake_runner.run(
        ["--snakefile",
         str(REPO / "Snakefile"), "--directory", str(tmp_path), "--workflow-profile",
         str(REPO / "profiles" / "slurm"), "--config", "preset=smoke", "libraries=[pillow]",
         "regimes=[micro]"],
        tmp_path, {"PATH": path_without_slurm(tmp_path / "bin"), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.startswith("augbench:")]
    assert lines == [
        "augbench: slurm: sbatch is not on PATH: run snakemake on a host that submits to the "
        "cluster (a login node), or install the client (Debian: apt-get install slurm-client)"
    ], done.stderr[-3000:]


@pytest.mark.workflow
def test_snakemake_cost_of_the_slurm_profile_prints_node_hours(tmp_path: Path) -> None:
    """docs/slurm.md's cost command on a fresh directory: node-hours per partition of the example
    cluster, no dollars (no price configured), the login node's jobs not counted."""
    done = snakemake_runner.run(
        ["cost", "--cores", "1", "--snakefile",
         str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(REPO / "profiles" / "slurm" / "cluster.yaml"), "--config", "preset=paper",
         "cloud={profile: profiles/slurm}"],
        os.getcwd(), {**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    total = next(line for line in done.stdout.splitlines() if line.startswith("total: "))
    assert "SLURM jobs" in total and "node-hours expected" in total
    assert "no USD (no price per node-hour for cpu, gpu: slurm.prices_usd_per_node_hour)" in total
    table = (tmp_path / "results" / "cost" / "estimate.tsv").read_text()
    assert "\nmicro\t" in table and "\tcpu\t" in table and "\tgpu\t" in table
    assert "build_env" not in table and "stage_dataset" not in table
