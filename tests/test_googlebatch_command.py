"""The cloud sweep's command as a user types it: ``snakemake --executor googlebatch`` with the
plugin's own flags and no profile plans the sweep that ``--workflow-profile profiles/googlebatch``
plans (the same job groups, the same resources per job), and the plan of the sweep prints in
both. The fs storage plugin stands in for GCS (whose plugin needs credentials even for -n)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import OFFLINE_ENV, REPO

from augbench.planning import launch, plan

# Every regime and library, so that every group of the profile has members.
SWEEP = [
    "preset=smoke", "machine=gcp-test",
    "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
    "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]",
]  # fmt: skip
# The design card's flags: the plugin's project and region, jobs at once, the default storage.
CARD = ["--executor", "googlebatch", "--jobs", "64", "--googlebatch-project", "P",
        "--googlebatch-region", "R"]  # fmt: skip


def dry_run(tmp_path: Path, name: str, *flags: str) -> str:
    """A dry run started in its own working directory (no --directory: as a user types it), as
    a process of its own: the plan of a dry run prints when the process exits."""
    work = tmp_path / name
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile"), *flags,
         "--default-storage-provider", "fs", "--default-storage-prefix", str(tmp_path / "bucket"),
         "--config", *SWEEP],
        cwd=work, env={**os.environ, **OFFLINE_ENV}, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    return out


def jobs_and_groups(out: str) -> tuple[dict[str, tuple[str, str, str]], dict[str, Counter]]:
    """{first output: (rule, resources)} of every planned job, and per group id the number of
    its group jobs by size. Which members share a group job is Snakemake's choice (it fills
    them from a set), so groups are compared by their ids, counts and sizes, and each job by
    the group id it is in."""
    jobs: dict[str, tuple[str, str, str]] = {}
    sizes: dict[str, Counter] = {}
    group, members = None, 0
    for block in re.split(r"\n(?=\S)", out):
        head = re.search(r"Group job (\w+) \(jobs in lexicogr\. order\):", block)
        if head:
            group = head.group(1)
            members = len(re.findall(r"^\s+rule \w+:", block, re.M))
            sizes.setdefault(group, Counter())[members] += 1
        for job in re.split(r"\n(?=\s*(?:local)?rule \w+:)", block):
            rule = re.match(r"\s*(?:local)?rule (\w+):", job)
            output = re.search(r"^\s+output: (\S+)", job, re.M)
            res = re.search(r"^\s+resources: (.*)$", job, re.M)
            if rule and output:
                where = group if head else "-"
                jobs[output.group(1)] = (rule.group(1), where, res.group(1) if res else "")
    return jobs, sizes


@pytest.mark.workflow
def test_the_executor_flag_alone_plans_what_the_googlebatch_profile_plans(
    tmp_path: Path,
) -> None:
    typed = dry_run(tmp_path, "typed", *CARD)
    profiled = dry_run(
        tmp_path, "profile", "--workflow-profile", str(REPO / "profiles" / "googlebatch"), *CARD
    )
    assert "augbench: --executor googlebatch without a profile: running with" in typed
    jobs, groups = jobs_and_groups(typed)
    assert (jobs, groups) == jobs_and_groups(profiled)
    # Short benchmark jobs share VMs (the profile's groups), never one VM per job for all.
    assert {"bench_micro", "bench_cpu_dataloader", "bench_gpu_dataloader"} <= set(groups)
    grouped = Counter(rule for rule, where, _ in jobs.values() if where != "-")
    assert grouped["micro"] and grouped["cpu_dataloader"] and grouped["gpu_dataloader"]
    # The plan prints in both (a storage provider names outputs by their local copies), as
    # VM jobs that run side by side, the timed jobs one at a time on each VM.
    for out in (typed, profiled):
        assert "augbench plan: not available" not in out
        head = r"^augbench plan: \d+ jobs as \d+ googlebatch jobs, up to 64 at once \(timed jobs"
        assert re.search(head + " one at a time on each machine", out, re.M), out[-3000:]


def test_only_a_typed_googlebatch_command_without_a_profile_is_started_again() -> None:
    snakemake = str(Path(sys.executable).parent / "snakemake")
    profile = str(REPO / "profiles" / "googlebatch")
    command = launch.with_profile([snakemake, "-n", *CARD], REPO, sys.executable)
    assert command == [sys.executable, "-m", "snakemake", "--workflow-profile", profile,
                       "-n", *CARD]  # fmt: skip
    assert profile in launch.note(command)
    for argv in (
        [snakemake, "-n"],  # local
        [snakemake, "--executor", "slurm"],
        [snakemake, *CARD, "--workflow-profile", "profiles/googlebatch"],
        [snakemake, *CARD, "--workflow-profile", "none"],
        [snakemake, *CARD, "--profile", "mine"],
        [snakemake, *CARD, "--mode", "remote"],  # a job Snakemake spawned on a VM
        ["python", "script.py", *CARD],  # not Snakemake's command line
    ):
        assert launch.with_profile(argv, REPO, sys.executable) is None, argv
    with pytest.raises(launch.LaunchError, match="--workflow-profile .*profiles/googlebatch"):
        launch.with_profile([snakemake, *CARD, "--directory", "elsewhere"], REPO, sys.executable)


def test_a_storage_query_maps_back_to_the_rules_path() -> None:
    assert plan.unprefixed("gs://b/sweep/results/x.json", "gs://b/sweep") == "results/x.json"
    assert plan.unprefixed("/tmp/bucket/results/x.json", "/tmp/bucket/") == "results/x.json"
    assert plan.unprefixed("gs://other/x.tar", "gs://b/sweep") == "gs://other/x.tar"
    assert plan.unprefixed("results/x.json", None) == "results/x.json"


def test_an_unknown_executor_flag_gets_snakemakes_own_error(tmp_path: Path) -> None:
    """A misspelt plugin flag stops in Snakemake's argument parser, before the workflow runs."""
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile"),
         *CARD, "--googlebatch-regoin", "R", "--config", *SWEEP],
        cwd=tmp_path, env={**os.environ, **OFFLINE_ENV}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "error: unrecognized arguments: --googlebatch-regoin" in proc.stderr
    assert "Traceback" not in proc.stderr and "augbench" not in proc.stderr
