"""What the locked googlebatch plugin (0.5.1) really sends to Google Batch for our jobs, and what
its job script really does on a VM, without a cloud account.

A real Snakemake run through profiles/googlebatch, from a git checkout (Snakemake deploys the
git-tracked files to jobs), with the GCS emulator as default storage; only the Batch client is a
stand-in (tests/helpers/batch_standin.py), since there is no Batch service here. Then the
plugin-written scripts of two jobs run in a local shell the way the VM runs them: the setup
runnables on the host, the job script as the container's `/bin/bash /tmp/workdir/entrypoint.sh`
with the image's BASH_ENV (container/job-shell.sh) and driver env.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import OFFLINE_ENV, REPO, gcs_emulator_at

PROFILE = yaml.safe_load((REPO / "profiles" / "googlebatch" / "profile.yaml").read_text())
CLOUD = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["cloud"]
# Measuring rules and the regime whose cloud placement (config cloud.regimes) each one uses.
BENCH_PLACEMENT = {
    "micro": "micro",
    "cpu_dataloader": "cpu_dataloader",
    "gpu_dataloader": "gpu_dataloader",
    "dali": "dali",
    "dali_cpu": "dali_cpu",
    "lazy_outputs": "micro",  # a diagnostic that times calls like micro does
    "pipeline_breakdown": "micro",  # user pipelines, one thread (workflow/rules/pipelines.smk)
    "pipeline_dataloader": "cpu_dataloader",
    "pipeline_gpu_dataloader": "gpu_dataloader",
    "pipeline_dali": "dali",
    "pipeline_dali_cpu": "dali_cpu",
}
BENCH_RULES = set(BENCH_PLACEMENT)
SETUP_RULES = {"build_default_archive", "build_env", "stage_dataset"}
BUCKET = "augbench-batch"


def checkout_copy(dest: Path) -> Path:
    """The working tree's files in a fresh git repository, as a user's checkout."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, files):
        src = REPO / rel
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():  # profiles -> workflow/profiles
            (dest / rel).symlink_to(os.readlink(src))
        elif src.is_file():
            shutil.copy2(src, dest / rel)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    return dest


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("batch")
    checkout = checkout_copy(root / "checkout")
    with gcs_emulator_at(root / "emulator.log") as host:
        env = {**os.environ, **OFFLINE_ENV, "STORAGE_EMULATOR_HOST": host}
        from google.cloud import storage

        os.environ["STORAGE_EMULATOR_HOST"] = host
        try:
            storage.Client(project="test").create_bucket(BUCKET)
        finally:
            del os.environ["STORAGE_EMULATOR_HOST"]
        out = root / "requests.json"
        proc = subprocess.run(
            [sys.executable, str(checkout / "tests/helpers/batch_standin.py"), str(out), "--",
             "--workflow-profile", "profiles/googlebatch",
             "--default-storage-prefix", f"gs://{BUCKET}/sweep", "--storage-gcs-project", "test",
             "--config", "preset=smoke", "machine=gcp-test",
             "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
             "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]"],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
        yield {"requests": json.loads(out.read_text()), "env": env, "root": root}


def task_of(request: dict[str, Any]) -> dict[str, Any]:
    return request["job"]["taskGroups"][0]["taskSpec"]


def instance_policy(request: dict[str, Any]) -> dict[str, Any]:
    return request["job"]["allocationPolicy"]["instances"][0]


@pytest.mark.workflow
def test_job_spec_of_every_rule(batch_run: dict[str, Any]) -> None:
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for rec in batch_run["requests"]:
        if rec["rule"] != "group":  # group jobs: their own test below
            by_rule.setdefault(rec["rule"], []).append(rec["request"])
    assert by_rule.keys() >= BENCH_RULES | SETUP_RULES
    cos = "projects/batch-custom-image/global/images/family/batch-cos-stable-official"
    for rule, requests in by_rule.items():
        for req in requests:
            task, inst = task_of(req), instance_policy(req)
            policy = inst["policy"]
            runnables = task["runnables"]
            # Every job runs our image, via /bin/bash on the plugin's entrypoint script.
            container = runnables[3]["container"]
            assert container["imageUri"] == PROFILE["googlebatch-container"], rule
            assert container["entrypoint"] == "/bin/bash"
            assert container["commands"] == ["/tmp/workdir/entrypoint.sh"]
            assert task["maxRunDuration"] == PROFILE["googlebatch-max-run-duration"], rule
            # Task retries are googlebatch-retry-count for every rule: 0.5.1 writes
            # preemptible-retries into a copy of the task that is never sent.
            assert int(task["maxRetryCount"]) == PROFILE["googlebatch-retry-count"], rule
            # The boot disk keeps the COS family (the profile repeats it as boot disk image).
            assert policy["bootDisk"]["image"] == cos, rule
            if rule in BENCH_RULES:
                spec = CLOUD["regimes"][BENCH_PLACEMENT[rule]]
                # Preemptible VMs (Batch's PREEMPTIBLE model, not SPOT): no on-demand fallback.
                assert policy["provisioningModel"] == "PREEMPTIBLE", rule
                assert policy["machineType"] == spec["machine_type"], rule
                assert int(task["computeResource"]["cpuMilli"]) == spec["cpus"] * 1000
                assert int(task["computeResource"]["memoryMib"]) == spec["memory_mb"]
                assert int(policy["bootDisk"]["sizeGb"]) == CLOUD["boot_disk_gb"]
                if spec.get("gpu"):
                    assert [(a["type"], int(a["count"])) for a in policy["accelerators"]] == [
                        (spec["gpu"], 1)
                    ], rule
                    assert inst["installGpuDrivers"] is True  # a driver Batch picks, unpinned
                else:
                    assert not policy.get("accelerators"), rule
            else:
                assert policy["provisioningModel"] == "PROVISIONING_MODEL_UNSPECIFIED", rule
                assert policy["machineType"] == PROFILE["googlebatch-machine-type"], rule
                assert not policy.get("accelerators"), rule


@pytest.mark.workflow
def test_a_group_job_runs_on_one_vm_sized_for_its_largest_member(
    batch_run: dict[str, Any],
) -> None:
    """The profile's groups bundle short benchmark jobs of one machine class into one Batch job
    (one VM, one start-up): the VM's machine type, cpus and memory are the placement's, not the
    sum over its members (bench_slot is a local-scope resource: one member per layer), it is
    preemptible like its members, and its script runs every member (one Snakemake call)."""
    groups = [rec for rec in batch_run["requests"] if rec["rule"] == "group"]
    assert {rec["group"] for rec in groups} >= {"bench_micro", "bench_cpu_dataloader"}
    for rec in groups:
        rules = set(rec["rules"])
        placements = {BENCH_PLACEMENT[rule] for rule in rules}
        assert len(placements) == 1, rec["rules"]  # one machine class per group
        spec = CLOUD["regimes"][placements.pop()]
        task, inst = task_of(rec["request"]), instance_policy(rec["request"])
        assert rec["jobs"] <= PROFILE["group-components"][rec["group"]]
        assert inst["policy"]["machineType"] == spec["machine_type"], rec["group"]
        assert inst["policy"]["provisioningModel"] == "PREEMPTIBLE", rec["group"]
        assert int(task["computeResource"]["memoryMib"]) == spec["memory_mb"], rec["group"]
        assert int(task["computeResource"]["cpuMilli"]) == spec["cpus"] * 1000, rec["group"]
        assert int(rec["request"]["job"]["taskGroups"][0].get("taskCount", 1)) == 1  # one VM
    micro = [rec for rec in groups if rec["group"] == "bench_micro"]
    assert sum(rec["jobs"] for rec in micro) == sum(
        1 for rec in batch_run["requests"] if rec["rule"] in ("micro", "lazy_outputs",
                                                             "pipeline_breakdown")
    )  # fmt: skip


def run_like_a_vm(record: dict[str, Any], vm: Path, env: dict[str, str]):
    """The job's three scripts as Batch runs them: setup and Snakefile on the host, then the
    container's command. The plugin hard-codes /tmp/workdir (the host folder mounted into the
    container); here it is a folder of the test, the only change made to the scripts."""
    runnables = task_of(record["request"])["runnables"]
    workdir = vm / "workdir"
    for step in runnables[:2]:
        subprocess.run(
            ["bash", "-c", step["script"]["text"].replace("/tmp/workdir", str(workdir))],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    container = runnables[3]
    job_env = {
        **env,
        **container["environment"]["variables"],
        "PYTHONUNBUFFERED": "1",  # from the container options
        # What container/Dockerfile sets: BASH_ENV and the driver env first on PATH.
        "BASH_ENV": str(REPO / "container" / "job-shell.sh"),
        "AUGBENCH_BATCH_ENTRYPOINT": str(workdir / "entrypoint.sh"),
        "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",
    }
    cmd = [container["container"]["entrypoint"]] + [
        c.replace("/tmp/workdir", str(workdir)) for c in container["container"]["commands"]
    ]
    return subprocess.run(cmd, cwd=workdir, env=job_env, capture_output=True, text=True)


@pytest.mark.workflow
def test_source_archive_extracts_in_any_order(batch_run: dict[str, Any]) -> None:
    """Every job unpacks the workflow's sources from one archive, whose members Snakemake
    writes in no fixed order. A member reached through a symlink member (a path under
    `profiles/`, the link to workflow/profiles) fails to extract whenever it comes before the
    link's target folder: no member may lie under a symlink."""
    import io
    import tarfile

    from google.cloud import storage

    os.environ["STORAGE_EMULATOR_HOST"] = batch_run["env"]["STORAGE_EMULATOR_HOST"]
    try:
        bucket = storage.Client(project="test").bucket(BUCKET)
        (blob,) = bucket.list_blobs(prefix="sweep/snakemake-workflow-sources.")
        data = blob.download_as_bytes()
    finally:
        del os.environ["STORAGE_EMULATOR_HOST"]
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = archive.getmembers()
    links = {m.name.rstrip("/") for m in members if m.issym()}
    assert "profiles" in links  # the link itself is shipped, as git tracks it
    through = [m.name for m in members if any(m.name.startswith(f"{link}/") for link in links)]
    assert through == [], through


@pytest.mark.workflow
def test_plugin_job_script_exits_with_the_job_status_and_installs_nothing(
    batch_run: dict[str, Any],
) -> None:
    records = batch_run["requests"]
    entrypoint = task_of(records[0]["request"])["runnables"][0]["script"]["text"]
    # Why the image's job shell exists: 0.5.1 runs pip installs after the job command.
    assert "python3 -m pip install urllib3==1.26.17\nEOF" in entrypoint

    # A job whose command succeeds: it runs and its output lands in the bucket; exit 0.
    archive = next(r for r in records if r["rule"] == "build_default_archive")
    ok = run_like_a_vm(archive, batch_run["root"] / "vm-ok", batch_run["env"])
    out = ok.stdout + ok.stderr
    assert ok.returncode == 0, out[-6000:]
    assert "already installed, nothing to install" in out
    assert "skipped the plugin's post-job 'urllib3==1.26.17' install" in out
    assert "Successfully installed" not in out and "Collecting " not in out

    # A benchmark job whose command fails (its inputs were never produced): the script, and so
    # the Batch task, exits non-zero although the plugin's last line would have succeeded.
    micro = next(r for r in records if r["rule"] == "micro")
    failed = run_like_a_vm(micro, batch_run["root"] / "vm-failed", batch_run["env"])
    out = failed.stdout + failed.stderr
    assert failed.returncode != 0, out[-6000:]
    assert "--target-jobs 'micro:" in task_of(micro["request"])["runnables"][0]["script"]["text"]
    assert "Failed to retrieve input from storage" in out
    assert "skipped the plugin's post-job 'urllib3==1.26.17' install" in out
