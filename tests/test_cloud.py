"""Cloud sweeps without a cloud account: the googlebatch profile's placement (dry-run with the fs
storage plugin), the GCE machine lookup, node-local provisioning, and, as workflow tests, the smoke
workflow against a real GCS-compatible server and a SIGKILLed job that the rerun recovers."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import snakemake_runner
import yaml
from conftest import OFFLINE_ENV, REPO, run_snakemake

from augbench.measuring import cloud
from augbench.planning import provision
from augbench.planning.dataset import build_default_archive, default_identity

BIN = Path(sys.executable).parent
CLOUD_CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["cloud"]
LOCAL_ENVS = f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}"
# Runs of their own test kills, reruns and buckets, not the lazy-output diagnostic: leave it out
# (a --configfile key: --config passes nested values as strings).
# Kill tests plan and count exactly the micro jobs: no lazy-output diagnostic, no user pipelines.
NO_LAZY = {"lazy_outputs": {"enabled": False}, "pipelines": []}


# -- googlebatch profile: placement per rule ---------------------------------------------------
def googlebatch_dry_run(tmp_path: Path, *extra: str) -> str:
    """The cloud profile's plan; fs storage stands in for GCS (whose plugin needs credentials
    even for -n) and the executor is never asked to submit anything."""
    proc = snakemake_runner.run(
        [
            "-n",
            "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path / "work"),
            "--workflow-profile", str(REPO / "profiles" / "googlebatch"),
            "--default-storage-provider", "fs",
            "--default-storage-prefix", str(tmp_path / "bucket"),
            *extra, "--config", "preset=smoke", "machine=gcp-test",
        ],
        tmp_path, {**os.environ, **OFFLINE_ENV},
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    return out


def resources_by_rule(dry_run: str) -> dict[str, list[dict[str, str]]]:
    """{rule: [resources of each planned job]} parsed from a dry-run's job blocks."""
    found: dict[str, list[dict[str, str]]] = {}
    # Jobs of the profile's groups are printed indented, inside their group job.
    for block in re.split(r"\n(?=\s*rule \w+:)", dry_run):
        head = re.match(r"\s*rule (\w+):", block)
        res = re.search(r"^\s+resources: (.*)$", block, re.M)
        if head and res:
            pairs = dict(kv.split("=", 1) for kv in res.group(1).split(", "))
            found.setdefault(head.group(1), []).append(pairs)
    return found


@pytest.mark.workflow
def test_googlebatch_dry_run_places_every_regime_rule_on_its_machine(tmp_path: Path) -> None:
    plan = resources_by_rule(googlebatch_dry_run(tmp_path))
    regime_rules = [rule for rule in plan if rule in CLOUD_CONFIG["regimes"]]
    assert "micro" in regime_rules
    for rule in regime_rules:
        spec = CLOUD_CONFIG["regimes"][rule]
        for res in plan[rule]:
            assert res["googlebatch_machine_type"] == spec["machine_type"], rule
            assert res["googlebatch_cpu_milli"] == str(spec["cpus"] * 1000), rule
            assert res["googlebatch_memory"] == str(spec["memory_mb"]), rule
            assert res.get("nvidia_gpu") == spec.get("gpu"), rule
    # Preparation jobs carry no placement: they get the profile's small default machine.
    for rule in ("build_env", "stage_dataset"):
        assert all("googlebatch_machine_type" not in r for r in plan[rule])


@pytest.mark.workflow
def test_gpu_placement_from_config_reaches_the_job(tmp_path: Path) -> None:
    """A GPU class for a regime (as gpu_dataloader and dali have) becomes nvidia_gpu."""
    override = tmp_path / "gpu.yaml"
    gpu = {"machine_type": "g2-standard-8", "cpus": 8, "memory_mb": 30000, "gpu": "nvidia-l4"}
    override.write_text(yaml.safe_dump({"cloud": {"regimes": {"micro": gpu}}}))
    plan = resources_by_rule(googlebatch_dry_run(tmp_path, "--configfile", str(override)))
    for res in plan["micro"]:
        assert res["googlebatch_machine_type"] == "g2-standard-8"
        assert res["googlebatch_cpu_milli"] == "8000"
        assert res["nvidia_gpu"] == "nvidia-l4"


def test_cloud_profile_sets_what_a_sweep_needs() -> None:
    profile = yaml.safe_load((REPO / "profiles" / "googlebatch" / "profile.yaml").read_text())
    assert profile["executor"] == "googlebatch"
    assert profile["default-storage-provider"] == "gcs"
    assert profile["default-storage-prefix"].startswith("gs://")
    assert int(profile["googlebatch-max-run-duration"].rstrip("s")) > 3600
    assert "micro" in profile["preemptible-rules"]
    # Plugin 0.5.1 drops preemptible-retries (tests/test_batch_spec.py): Snakemake's retries it is.
    assert "preemptible-retries" not in profile and profile["retries"] >= 1
    assert profile["keep-going"] is True
    assert "centos" not in profile["googlebatch-image-family"]
    # bench_slot only sizes a group's VM (one member per layer): a local-scope resource, which
    # Snakemake leaves out of its scheduler's totals for remote jobs, so jobs on separate VMs are
    # never serialized (Job._get_scheduler_resources in Snakemake 9).
    assert profile["resources"] == ["bench_slot=1"]
    assert profile["set-resource-scopes"] == ["bench_slot=local"]
    assert set(profile["group-components"]) == set(profile["groups"].values())


# -- the machine actually used -----------------------------------------------------------------
class _FakeMetadata(BaseHTTPRequestHandler):
    """A loopback stand-in for the GCE metadata server (the real one exists only on GCE)."""

    answers: ClassVar[dict[str, str]] = {
        "machine-type": "projects/123/machineTypes/g2-standard-8",
        "zone": "projects/123/zones/us-central1-a",
        "scheduling/preemptible": "TRUE",
        "id": "42",
    }

    def do_GET(self) -> None:
        key = self.path.split("/instance/", 1)[-1]
        body = self.answers.get(key)
        ok = body is not None and self.headers.get("Metadata-Flavor") == "Google"
        self.send_response(200 if ok else 404)
        self.end_headers()
        if ok:
            self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_machine_actual_comes_from_the_metadata_server(monkeypatch: pytest.MonkeyPatch) -> None:
    server = HTTPServer(("127.0.0.1", 0), _FakeMetadata)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{server.server_port}")
        info = cloud.gce_instance(timeout=2)
    finally:
        server.shutdown()
    assert info is not None
    assert info["machine_type"] == "g2-standard-8"
    assert info["zone"] == "us-central1-a"
    assert info["preemptible"] is True
    assert cloud.machine_actual("gcp-paper", info) == "gce-g2-standard-8"


def test_off_gce_the_configured_label_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GCE_METADATA_HOST", raising=False)
    if cloud.on_gce():
        pytest.skip("running on a Compute Engine VM")
    assert cloud.metadata_host() is None  # nothing is asked, nothing leaves the machine
    assert cloud.gce_instance() is None
    assert cloud.machine_actual("laptop", None) == "laptop"


# -- node-local provisioning -------------------------------------------------------------------
def _staged_manifest(tmp_path: Path) -> tuple[Path, Path]:
    """An archive and the manifest stage_dataset wrote for it, with the images then removed (as
    on a VM that only downloaded the manifest from the bucket)."""
    from augbench.planning.dataset import stage_archive

    archive = tmp_path / "ds.tar"
    build_default_archive(archive, 3)
    stage_archive(archive, tmp_path / "driver", name="ds")
    manifest = tmp_path / "driver" / "manifest.json"
    import shutil

    shutil.rmtree(tmp_path / "driver" / "images")
    return archive, manifest


def test_dataset_is_staged_once_per_node_from_the_archive(tmp_path: Path) -> None:
    archive, manifest = _staged_manifest(tmp_path)
    first = provision.ensure_dataset(manifest, archive, tmp_path / "scratch")
    second = provision.ensure_dataset(manifest, archive, tmp_path / "scratch")
    assert first["staged"] is True and second["staged"] is False
    assert first["manifest"] == second["manifest"]
    staged = json.loads(Path(first["manifest"]).read_text())
    assert staged["archive_sha256"] == json.loads(manifest.read_text())["archive_sha256"]
    assert all((Path(first["manifest"]).parent / "images" / f["path"]).is_file()
               for f in staged["files"])  # fmt: skip


def test_a_changed_archive_is_a_clear_error(tmp_path: Path) -> None:
    archive, manifest = _staged_manifest(tmp_path)
    build_default_archive(archive, 4)  # different bytes than the manifest was staged from
    with pytest.raises(provision.ProvisionError, match="archive changed since stage_dataset"):
        provision.ensure_dataset(manifest, archive, tmp_path / "scratch")


def test_missing_archive_on_a_node_names_what_is_missing(tmp_path: Path) -> None:
    _, manifest = _staged_manifest(tmp_path)
    with pytest.raises(provision.ProvisionError, match="no archive was given"):
        provision.ensure_dataset(manifest, None, tmp_path / "scratch")


def test_env_with_a_matching_lock_stamp_is_reused(tmp_path: Path) -> None:
    lock = tmp_path / "x.txt"
    lock.write_text("# empty lock\n")
    venv = tmp_path / "venvs" / "x"
    venv.mkdir(parents=True)
    (venv / provision.LOCK_STAMP).write_text(provision.sha256_bytes(lock) + "\n")
    report = provision.ensure_env("x", lock, venv, None)
    assert report["reused"] is True
    assert report["lock_sha256"] == provision.sha256_bytes(lock)


# -- workflow: GCS emulator, kill and rerun ----------------------------------------------------
@pytest.mark.workflow
@pytest.mark.slow
def test_smoke_sweep_reads_and_writes_a_gcs_bucket(
    gcs_emulator: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    for key, value in OFFLINE_ENV.items():
        monkeypatch.setenv(key, value)
    from google.cloud import storage

    client = storage.Client(project="test")
    bucket = client.create_bucket("augbench-test")
    archive = tmp_path / "smoke-set.tar"
    build_default_archive(archive, 24)
    bucket.blob("datasets/smoke-set.tar").upload_from_filename(str(archive))

    workdir = tmp_path / "driver"
    workdir.mkdir()
    proc = run_snakemake(
        workdir,
        "--cores", "2",
        "--default-storage-provider", "gcs",
        "--default-storage-prefix", "gs://augbench-test/sweep",
        "--storage-gcs-project", "test",
        # The tables it checks (the figures are tested on the session's smoke run); the
        # pipelines' table asks for their jobs, which stage beside micro's.
        *(f"results/tables/{t}.csv" for t in ("all_results", "coverage", "speedups_micro",
                                              "throughputs_micro", "pipeline_breakdown")),
        # The micro regime is enough to carry every storage path (archive in, results out).
        "--configfile", str(REPO / "tests/fixtures/no-lazy-outputs.yaml"),
        "--config", "preset=smoke", "machine=smoke-gcs", LOCAL_ENVS, "regimes=[micro]",
        # Two libraries carry every storage path; the lazy-output diagnostic adds none, and one
        # pipeline as many as six.
        "libraries=[pillow,albumentationsx]", "pipelines=[config/pipelines/train_light.yaml]",
        "dataset={'archive': 'gs://augbench-test/datasets/smoke-set.tar'}",
        f"cloud={{'scratch': '{tmp_path / 'node-scratch'}'}}",
        env={"STORAGE_EMULATOR_HOST": gcs_emulator, **OFFLINE_ENV},
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]

    names = {b.name for b in client.list_blobs("augbench-test", prefix="sweep/")}
    # results/raw/<machine>/<dataset key>/<regime>/...: the key of a gs:// archive is its name
    # and the md5 the bucket reports for the object.
    key = f"smoke-set-{hashlib.md5(archive.read_bytes()).hexdigest()[:12]}"
    raw = sorted(n for n in names if n.startswith(f"sweep/results/raw/smoke-gcs/{key}/micro/"))
    assert len(raw) == 2  # 2 libraries x 1 shard
    for table in ("all_results", "coverage", "speedups_micro", "throughputs_micro"):
        assert f"sweep/results/tables/{table}.csv" in names
    assert f"sweep/results/data/{key}/manifest.json" in names
    # The staged images, exactly: the archive's images/<file> members as images/<file>, once.
    with tarfile.open(archive) as tar:
        members = [m.name for m in tar.getmembers() if m.isfile()]
    assert all(m.startswith("images/") for m in members)
    staged = {n for n in names if n.startswith(f"sweep/results/data/{key}/images")}
    # ... plus the marker Snakemake keeps in every directory() output.
    assert staged == {f"sweep/results/data/{key}/{m}" for m in members} | {
        f"sweep/results/data/{key}/images/.snakemake_timestamp"
    }
    assert not any("images/images" in n for n in names)
    assert any(n.startswith(f"sweep/benchmarks/smoke-gcs/{key}/micro/") for n in names)
    # Venvs never travel through the bucket.
    assert not any(".venvs" in n or "/bin/python" in n for n in names)

    payload = json.loads(bucket.blob(raw[0]).download_as_text())
    meta = payload["metadata"]
    assert meta["machine"] == "smoke-gcs" and meta["machine_actual"] == "smoke-gcs"
    # The job found no images beside the manifest it downloaded: it staged the archive on its
    # node (once), outside any timed scope, and recorded that.
    assert meta["setup"]["env_reused"] is True
    assert str(tmp_path / "node-scratch") in meta["setup"]["dataset_location"]
    # Every job on the node that needs the images counts: the pipelines' jobs run beside micro,
    # and whichever job comes first stages the archive; the others find it there.
    pipeline_raw = sorted(
        n
        for n in names
        if n.startswith(f"sweep/results/pipelines/raw/smoke-gcs/{key}/") and n.endswith(".json")
    )
    assert pipeline_raw  # the shipped pipelines ran beside micro and wrote to the bucket
    staged = [
        json.loads(bucket.blob(n).download_as_text())["metadata"]["setup"]
        for n in raw + pipeline_raw
    ]
    assert sum(s["dataset_staged"] for s in staged) == 1
    assert any(payload["results"][t]["status"] == "ok" for t in payload["results"])


# Per regime: its config and the result files (names) of its jobs for one library. A killed
# micro shard is the bucket sweep's case below (and a cancelled one, tests/test_slurm.py's).
KILL_CASES = {
    "cpu_dataloader": (
        # One job per setting, as a cloud sweep runs them (the smoke preset runs one per library).
        {"cpu_dataloader": {"shard_size": 2, "job_per": "setting"}},
        ("memory-w0-s000", "memory-w2-s000", "decode-w0-s000", "decode-w2-s000"),
    ),
}


@pytest.mark.workflow
@pytest.mark.slow
@pytest.mark.parametrize("regime", sorted(KILL_CASES))
def test_sigkilled_job_leaves_no_result_and_the_rerun_recovers_exactly_it(
    tmp_path: Path, regime: str
) -> None:
    """Kill the driver and its running benchmark job together (as a preempted VM dies), then
    recover as docs/cloud.md says: --unlock, then --rerun-incomplete. Only the killed job runs
    again; every other result file keeps its bytes."""
    overrides, jobs = KILL_CASES[regime]
    job_config = tmp_path / "kill-config.yaml"
    job_config.write_text(yaml.safe_dump({**overrides, **NO_LAZY}))
    config = (
        "--configfile", str(job_config),
        "--config", "preset=smoke", "machine=kill-test", LOCAL_ENVS, "libraries=[albumentationsx]",
        f"regimes=[{regime}]",
    )  # fmt: skip
    cmd = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(tmp_path), "--workflow-profile", str(REPO / "profiles" / "default"),
        "--cores", "2", *config,
    ]  # fmt: skip

    def progress() -> tuple[list[str], list[str]]:
        raw = _dataset_dir(tmp_path / "results/raw/kill-test") / regime / "albumentationsx"
        logs = _dataset_dir(tmp_path / "logs/kill-test") / regime / "albumentationsx"
        done = [j for j in jobs if (raw / f"{j}.json").exists()]
        running = [j for j in jobs if j not in done and "provision |" in _text(logs / f"{j}.log")]
        return done, running

    _, victim = _kill_during_last_shard(cmd, tmp_path, progress)
    raw = _dataset_dir(tmp_path / "results/raw/kill-test") / regime / "albumentationsx"

    assert not (raw / f"{victim}.json").exists(), "the job finished before the kill; rerun"
    survivors = {p.name: p.read_bytes() for p in raw.glob("*.json")}
    assert f"{victim}.json" not in survivors and len(survivors) >= 2
    mtimes = {p.name: p.stat().st_mtime_ns for p in raw.glob("*.json")}

    # The killed driver left its lock (dry-runs do not lock, so a real run shows it).
    locked = run_snakemake(tmp_path, "--cores", "1", *config, check=False)
    assert locked.returncode != 0 and "cannot be locked" in locked.stdout + locked.stderr
    run_snakemake(tmp_path, "--unlock", *config)
    # The victim left no file at all (atomic write), so even a plain plan re-runs it, and
    # it is the only killed job planned again (jobs never started are planned too).
    plan = run_snakemake(tmp_path, "-n", "--rerun-incomplete", *config)
    victim_path = (raw / f"{victim}.json").relative_to(tmp_path)
    assert f"Missing output files: {victim_path}" in plan.stdout
    planned = {
        Path(p).stem
        for p in re.findall(rf"output: (\S+/{regime}/albumentationsx/\S+\.json)", plan.stdout)
    }
    assert planned == set(jobs) - {Path(n).stem for n in survivors}
    assert victim in planned

    # The tables are what the recovery must reach (the figures are tested on the smoke run).
    tables = f"results/tables/speedups_{regime}.csv"
    run_snakemake(tmp_path, "--cores", "2", "--rerun-incomplete", tables, *config)
    assert {n: (raw / n).read_bytes() for n in survivors} == survivors
    assert {n: (raw / n).stat().st_mtime_ns for n in survivors} == mtimes
    for job in jobs:
        rows = json.loads((raw / f"{job}.json").read_text())["results"]
        assert rows and all(r["status"] for r in rows.values())
    assert (tmp_path / f"results/tables/speedups_{regime}.csv").exists()


def _dataset_dir(machine_dir: Path) -> Path:
    """The one dataset key folder under results/raw/<machine> (or logs/<machine>)."""
    keys = [p for p in machine_dir.glob("*") if p.is_dir()] if machine_dir.is_dir() else []
    return keys[0] if len(keys) == 1 else machine_dir / "not-yet"


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@pytest.mark.workflow
@pytest.mark.slow
def test_killed_job_in_a_bucket_sweep_reruns_alone_and_leaves_every_other_object_untouched(
    gcs_emulator: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kill-and-rerun recovery of docs/cloud.md with every input and output in a GCS bucket
    (the emulator as default storage): the driver and its running benchmark job are SIGKILLed
    together, then --unlock and --rerun-incomplete rerun exactly that job, and every object
    already in the bucket keeps its md5 and generation (nothing else was rewritten)."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    for key, value in OFFLINE_ENV.items():
        monkeypatch.setenv(key, value)
    from google.cloud import storage

    client = storage.Client(project="test")
    client.create_bucket("augbench-kill")
    one_per_shard = tmp_path / "one-transform-per-shard.yaml"
    # Three pyperf processes per transform (none stops early at the CI target): a shard lasts
    # long enough to be killed mid-way.
    micro = {"shard_size": 1, "processes": 3, "min_processes": 3}
    one_per_shard.write_text(yaml.safe_dump({"micro": micro, **NO_LAZY}))
    storage_args = (
        "--default-storage-provider", "gcs", "--default-storage-prefix", "gs://augbench-kill/sweep",
        "--storage-gcs-project", "test",
    )  # fmt: skip
    config = (
        *storage_args, "--configfile", str(one_per_shard),
        "--config", "preset=smoke", "machine=kill-gcs", LOCAL_ENVS, "libraries=[pillow]",
        "regimes=[micro]", f"cloud={{'scratch': '{tmp_path / 'node-scratch'}'}}",
        # Three transforms Pillow implements: an unsupported one (the smoke set's ColorJitter)
        # makes a shard that writes its row at once, and a kill aimed at it comes too late.
        "transforms=[HorizontalFlip,GaussianBlur,Grayscale]",
    )  # fmt: skip
    env = {"STORAGE_EMULATOR_HOST": gcs_emulator, **OFFLINE_ENV}
    # The smoke preset's embedded default dataset (24 images) and its key.
    key = default_identity("default-24", 24).key
    raw = f"sweep/results/raw/kill-gcs/{key}/micro/pillow"
    shards = ("s000", "s001", "s002")

    def objects() -> dict[str, tuple[str, int]]:
        return {
            b.name: (b.md5_hash, b.generation)
            for b in client.list_blobs("augbench-kill", prefix="sweep/")
            if "snakemake-workflow-sources" not in b.name
        }

    cmd = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(tmp_path), "--workflow-profile", str(REPO / "profiles" / "default"),
        "--cores", "2", *config,
    ]  # fmt: skip
    local_copies = tmp_path / ".snakemake" / "storage"

    def progress() -> tuple[list[str], list[str]]:
        # Results count once in the bucket; the running job's log is still only in the driver's
        # local storage copy.
        in_bucket = objects()
        done = [s for s in shards if f"{raw}/{s}.json" in in_bucket]
        try:
            running = [
                s for s in shards if s not in done and any(
                    "provision |" in _text(p)
                    for p in local_copies.glob(f"**/logs/kill-gcs/{key}/micro/pillow/{s}.log"))
            ]  # fmt: skip
        except FileNotFoundError:  # a staging folder the driver removed while it was listed
            running = []
        return done, running

    done, victim = _kill_during_last_shard(cmd, tmp_path, progress, env)

    before = objects()
    assert f"{raw}/{victim}.json" not in before, "the shard finished before the kill; rerun"
    assert sorted(n for n in before if n.startswith(f"{raw}/")) == [
        f"{raw}/{s}.json" for s in sorted(done)
    ]
    run_snakemake(tmp_path, "--unlock", *config, env=env)
    plan = run_snakemake(tmp_path, "-n", "--rerun-incomplete", *config, env=env)
    planned = re.findall(r"output: (\S+/micro/pillow/s\d{3}\.json)", plan.stdout)
    assert [Path(p).name for p in planned] == [f"{victim}.json"], plan.stdout[-4000:]

    tables = "results/tables/speedups_micro.csv"  # the figures are tested on the smoke run
    run_snakemake(tmp_path, "--cores", "2", "--rerun-incomplete", tables, *config, env=env)
    after = objects()
    assert f"{raw}/{victim}.json" in after
    assert {n: after[n] for n in before} == before  # same md5 and generation: untouched
    # New objects: the victim's (result, log, timing) and the downstream tables;
    # no other benchmark, env or staging job ran again.
    new = sorted(set(after) - set(before))
    upstream = tuple(f"sweep/{d}/" for d in ("results/raw", "results/envs", "results/data"))
    upstream += ("sweep/benchmarks/",)
    # benchmarks/analysis/ times the tables and figures: downstream, like them.
    assert [
        n for n in new
        if (n.startswith(upstream) and not n.startswith("sweep/benchmarks/analysis/"))
        or "/micro/" in n
    ] == sorted(
        [f"{raw}/{victim}.json", f"sweep/benchmarks/kill-gcs/{key}/micro/pillow/{victim}.tsv",
         f"sweep/logs/kill-gcs/{key}/micro/pillow/{victim}.log"]
    ), new  # fmt: skip


def _kill_during_last_shard(
    cmd: list[str], tmp_path: Path, progress, env: dict[str, str] | None = None
) -> tuple[list[str], str]:
    """Start the driver, wait until two shards are done and the third is measuring (its engine
    started, its result not written), then SIGKILL the driver with its job, as a VM dies."""
    with (tmp_path / "killed-run.log").open("w") as log:
        driver = subprocess.Popen(
            cmd, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        deadline = time.monotonic() + 600
        while True:
            done, running = progress()
            if len(done) == 2 and running:
                break
            assert driver.poll() is None, _text(tmp_path / "killed-run.log")[-4000:]
            assert time.monotonic() < deadline, "the workflow never reached its last shard"
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    return done, running[0]
