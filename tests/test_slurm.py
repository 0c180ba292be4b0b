"""profiles/slurm against a real SLURM scheduler started on this machine (tests/slurm_cluster.py):
the smoke preset submitted through `--executor slurm`, a benchmark job cancelled through the
scheduler and redone alone by `--rerun-incomplete`, and the checks made before anything is
submitted. docs/slurm.md shows these commands."""

from __future__ import annotations

import csv
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import slurm_cluster
import yaml
from conftest import REPO, SNAKEMAKE, WorkflowRun
from test_slurm_plan import path_without_slurm

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

LIBRARIES = ("torchvision",)
# The GPU regimes' placement on a partition without GPUs is tests/test_slurm_plan.py's (refused,
# or submitted without a GPU request); here, the CPU regimes and a pipeline.
REGIMES = ("micro", "cpu_dataloader")
PIPELINE = "config/pipelines/train_light.yaml"
# One of the smoke preset's two DataLoader scopes: the scheduler's part is the same for both.
SCOPE = "memory"
# The executor's settings for this cluster: no accounts and no accounting database (status from
# squeue), and a first status query after 2 s instead of 40 (jobs here take seconds).
CLUSTER_FLAGS = (
    "--slurm-no-account",
    "--slurm-status-command", "squeue",
    "--slurm-init-seconds-before-status-checks", "2",
)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurm_cluster.Cluster]:
    missing = slurm_cluster.missing_commands()
    if missing:
        message = (
            f"SLURM is not installed here ({', '.join(missing)} missing): "
            "apt-get install munge slurmctld slurmd slurm-client (.ci/run does)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with slurm_cluster.running(tmp_path_factory.mktemp("slurm")) as found:
        yield found


TEST_CLUSTER = REPO / "tests" / "fixtures" / "slurm-test-cluster.yaml"


def cluster_config(path: Path, **changes: dict) -> Path:
    """The test cluster's config file (every placement on its one partition, GPU rules as
    `skipped` rows), with some placements changed."""
    config = yaml.safe_load(TEST_CLUSTER.read_text())
    for name, change in changes.items():
        config["slurm"]["regimes"][name].update(change)
    path.write_text(yaml.safe_dump(config))
    return path


def smoke_args(configfile: Path) -> list[str]:
    return [
        "--configfile", str(configfile),
        "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        f"libraries=[{','.join(LIBRARIES)}]", f"regimes=[{','.join(REGIMES)}]",
        f"pipelines=[{PIPELINE}]", f"cpu_dataloader={{scopes: [{SCOPE}]}}",
        "lazy_outputs={enabled: false}",
    ]  # fmt: skip


def slurm_command(workdir: Path, *args: str) -> list[str]:
    return [
        *SNAKEMAKE,
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir),
        "--workflow-profile", str(REPO / "profiles" / "slurm"),
        *CLUSTER_FLAGS,
        *args,
    ]  # fmt: skip


def run(cluster: slurm_cluster.Cluster, command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, env=cluster.env, cwd=command_dir(command),
        timeout=900,
    )  # fmt: skip


def command_dir(command: list[str]) -> str:
    return command[command.index("--directory") + 1]


RESULT_FOLDERS = ("results/raw", "results/pipelines/raw")


def result_files(workdir: Path) -> dict[str, float]:
    """Every timed job's result file (path -> modification time)."""
    return {
        str(p.relative_to(workdir)): p.stat().st_mtime
        for folder in RESULT_FOLDERS
        for p in (workdir / folder).rglob("*.json")
    }


# A row measured to the end and one the slow-transform policy stopped are both measured rows: which
# of the two a slow row becomes depends on how busy the machine was during that run, not on the
# executor. Every other status (error, skipped, unsupported) is compared as it is.
MEASURED = {"ok": "measured", "early_stopped": "measured"}


def rows(path: Path, columns: tuple[str, ...]) -> Counter[tuple[str, ...]]:
    with path.open() as fh:
        return Counter(
            tuple(MEASURED.get(row[c], row[c]) if c == "status" else row[c] for c in columns)
            for row in csv.DictReader(fh)
        )


ROW_KEY = ("regime", "scope", "library", "transform", "workers", "status")
PIPELINE_KEY = ("pipeline", "regime", "library", "scope", "workers", "status")


def test_the_smoke_preset_runs_through_slurm_and_a_cancelled_job_is_redone_alone(
    cluster: slurm_cluster.Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = TEST_CLUSTER
    # No retries: the cancelled job stays lost in this run, as when the login connection is lost.
    first = slurm_command(workdir, *smoke_args(config), "--retries", "0")
    proc = subprocess.Popen(
        first, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cluster.env,
        cwd=workdir,
    )  # fmt: skip
    cancelled = None
    deadline = time.monotonic() + 600
    while cancelled is None and proc.poll() is None and time.monotonic() < deadline:
        for job in cluster.jobs():
            if job["state"] == "RUNNING" and ("micro" in job["comment"]):
                cluster.run("scancel", job["id"])
                cancelled = job
                break
        time.sleep(0.5)
    output, _ = proc.communicate(timeout=900)
    assert cancelled is not None, f"no micro job ran on the cluster:\n{output[-4000:]}"
    assert proc.returncode != 0, output[-4000:]
    # The scheduler has the job as cancelled, and Snakemake reported its rules failed.
    states = {job["id"]: job["state"] for job in cluster.jobs()}
    assert states[cancelled["id"]] == "CANCELLED", states
    assert "Error in rule micro" in output or "Error in group" in output, output[-4000:]
    # The cancelled job left no result and no table was made from an incomplete set.
    assert not (workdir / "results" / "tables" / "all_results.csv").exists()
    before = result_files(workdir)
    assert before, output[-4000:]

    # The rerun goes as far as the tables read below (the figures are the local runs' to check).
    targets = ("results/tables/all_results.csv", "results/tables/pipeline_results.csv")
    again = run(
        cluster, slurm_command(workdir, *targets, *smoke_args(config), "--rerun-incomplete")
    )
    assert again.returncode == 0, (again.stdout + again.stderr)[-6000:] + cluster.log()
    after = result_files(workdir)
    redone = {path for path in after if path not in before}
    # Only the cancelled job's results are new; every other result file is untouched.
    assert redone and all(after[path] == mtime for path, mtime in before.items())
    # The cancelled job was the micro placement's group (micro and the pipelines' breakdown):
    # none of the DataLoader jobs ran again.
    assert all("/micro/" in path for path in redone), redone

    # Every benchmark job went through the scheduler, each SLURM job with its node to itself, a
    # time limit and no GPU request (this partition has none).
    ours = [
        job for job in cluster.jobs()
        if job["state"] == "COMPLETED" and job["name"] in (again.stdout + again.stderr + output)
    ]  # fmt: skip
    assert ours, cluster.jobs()
    details = cluster.run("scontrol", "show", "job", ours[0]["id"]).stdout
    assert "OverSubscribe=NO" in details and "TimeLimit=" in details, details

    # The rows are a local smoke run's rows for these libraries and regimes, as many of each:
    # none lost, none duplicated by the cancelled job or its rerun.
    local: WorkflowRun = request.getfixturevalue("smoke_run")
    assert local.returncode == 0, local.output[-3000:]
    tables, local_tables = workdir / "results" / "tables", local.workdir / "results" / "tables"
    ours_rows = rows(tables / "all_results.csv", ROW_KEY)
    wanted = Counter({
        key: n for key, n in rows(local_tables / "all_results.csv", ROW_KEY).items()
        if key[0] in REGIMES and key[2] in LIBRARIES and (key[0] == "micro" or key[1] == SCOPE)
    })  # fmt: skip
    assert ours_rows == wanted
    pipeline_rows = rows(tables / "pipeline_results.csv", PIPELINE_KEY)
    assert pipeline_rows == Counter({
        key: n for key, n in rows(local_tables / "pipeline_results.csv", PIPELINE_KEY).items()
        if key[0] == "train_light" and key[1] in REGIMES and key[2] in LIBRARIES
    })  # fmt: skip


def test_a_cluster_that_cannot_take_the_jobs_is_one_line_before_any_submission(
    cluster: slurm_cluster.Cluster, tmp_path: Path
) -> None:
    workdir = tmp_path / "bad"
    workdir.mkdir()
    submitted = len(cluster.jobs())

    def one_line(configfile: Path, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            slurm_command(workdir, *smoke_args(configfile)), capture_output=True, text=True,
            env=env or cluster.env, cwd=workdir, timeout=300,
        )  # fmt: skip
        assert done.returncode != 0
        lines = [line for line in done.stderr.splitlines() if line.startswith("augbench: slurm")]
        assert len(lines) >= 1, done.stderr[-3000:]
        return lines[0]

    # A partition the cluster does not have.
    nope = cluster_config(tmp_path / "nope.yaml", micro={"partition": "nope"})
    assert one_line(nope) == (
        "augbench: slurm: partition nope (slurm.regimes.micro) does not exist on this cluster; "
        f"partitions: ['{slurm_cluster.PARTITION}']"
    )
    # Nodes smaller than the config says.
    big = cluster_config(tmp_path / "big.yaml", cpu_dataloader={"cpus": 64})
    assert "its smallest node has cores 2 < 64" in one_line(big)
    # munge not answering: a slurm.conf whose munge socket is not there.
    conf = Path(cluster.env["SLURM_CONF"])
    broken = tmp_path / "slurm.conf"
    broken.write_text(conf.read_text().replace("AuthInfo=socket=", f"AuthInfo=socket={tmp_path}/x"))
    good = TEST_CLUSTER
    line = one_line(good, {**cluster.env, "SLURM_CONF": str(broken)})
    assert line.startswith("augbench: slurm: the scheduler does not answer:") and "munge" in line
    # No sbatch on PATH.
    no_path = {**cluster.env, "PATH": path_without_slurm(tmp_path / "bin")}
    assert "sbatch is not on PATH" in one_line(good, no_path)
    assert len(cluster.jobs()) == submitted  # nothing was submitted
