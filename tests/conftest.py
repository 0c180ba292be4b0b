"""Shared fixtures. The workflow fixture runs the real Snakemake workflow once per session at the
smoke preset, in a scratch working directory, with the repository's library envs (built there on
first use: uv hardlinks from its cache, so later runs spend seconds)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import snakemake_runner

from augbench.policy import NETWORK_GUARD_ENV_VAR

REPO = Path(__file__).resolve().parents[1]
NETWORK_GUARD_LOG = "network-guard.jsonl"
# The tests start hundreds of Python processes (Snakemake, engines, library envs): let them cache
# the bytecode of what they import where the machine says not to (PYTHONDONTWRITEBYTECODE), as
# the workflow's engines do (augbench.planning.provision.engine_environment).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


# Tests run on pytest-xdist workers (pyproject.toml: -n auto --dist loadscope: each module's
# tests on one worker, so a module-scoped workflow run is made once). The session's smoke run is
# shared by every worker through a file lock (``smoke_run``); the module of the first smoke test
# is scheduled first, so one worker starts that run while the others take the modules that do
# not need it, and the rest of the smoke modules come last, when the run is there.
SMOKE_FIRST = "tests/test_workflow_micro.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    needs_smoke = {module(i) for i in items if "smoke_run" in getattr(i, "fixturenames", ())}
    rank = {
        module(i): 0 if module(i) == SMOKE_FIRST else 2 if module(i) in needs_smoke else 1
        for i in items
    }
    items.sort(key=lambda item: rank[module(item)])  # stable: collection order within a rank


@dataclass
class WorkflowRun:
    workdir: Path
    machine: str
    returncode: int
    output: str

    def snakemake(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_snakemake(self.workdir, *args, check=check)

    def raw(self, regime: str) -> Path:
        """results/raw/<machine>/<dataset key>/<regime> of this run's one dataset."""
        return raw_dir(self.workdir, self.machine, regime)

    @property
    def manifest(self) -> Path:
        """The manifest of the dataset this run staged (its only one)."""
        return next((self.workdir / "results/data").glob("*/manifest.json"))


def env_python(library: str) -> Path:
    """The interpreter of a library's env (.venvs/<library>, built by the workflow)."""
    return REPO / ".venvs" / library / "bin" / "python"


def library_env(library: str) -> Path:
    """A library env's interpreter, the env synced to its lock first where it is not (the
    workflow's own provisioning, under its node lock: a smoke run building the same env on
    another pytest worker waits for it, or reuses it)."""
    from augbench.planning.provision import ensure_env

    venv = REPO / ".venvs" / library
    ensure_env(library, REPO / "envs" / f"{library}.txt", venv, sys.executable)
    return venv / "bin" / "python"


@pytest.fixture(scope="session")
def torchvision_env() -> Path:
    return library_env("torchvision")


@pytest.fixture(scope="session")
def albumentationsx_env() -> Path:
    return library_env("albumentationsx")


def raw_dir(workdir: Path, machine: str, regime: str) -> Path:
    """Raw results of one regime, below the only dataset key measured in ``workdir``."""
    keys = sorted(p for p in (workdir / "results/raw" / machine).glob("*") if p.is_dir())
    if len(keys) != 1:
        raise AssertionError(f"expected one dataset key under results/raw/{machine}, got {keys}")
    return keys[0] / regime


def run_snakemake(
    workdir: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    snakemake_args = [
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir),
        "--workflow-profile", str(REPO / "profiles" / "default"),
        *args,
    ]  # fmt: skip
    proc = snakemake_runner.run(snakemake_args, workdir, {**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


# Three of the shipped pipelines in the shared smoke run: the classification reference preset,
# the one with a mask and the lightest trio member. Every shipped pipeline's mapping to every
# library is checked in tests/test_pipelines.py, and its GPU chain is run on CPU tensors in
# tests/test_workflow_gpu.py; the default run profiles all six.
SMOKE_PIPELINES = (
    "config/pipelines/imagenet_train.yaml",
    "config/pipelines/highres_segmentation.yaml",
    "config/pipelines/train_light.yaml",
)
# The shared smoke run's libraries: the four CPU libraries and DALI (the two forks beside their
# originals have a run of their own: tests/test_workflow_forks.py).
SMOKE_LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow", "dali")
SMOKE_CONFIG = (
    "--config",
    "preset=smoke",
    "machine=smoke-test",
    f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
    f"libraries=[{','.join(SMOKE_LIBRARIES)}]",
    "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]",
    f"pipelines=[{','.join(SMOKE_PIPELINES)}]",
)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> WorkflowRun:
    """The one full smoke run of the test session (every library and regime), shared by all
    pytest-xdist workers: the first to need it runs it under a file lock, the others wait for
    it and read what it left. Tests only read it (dry runs included); a test that changes or
    adds to a working directory works on ``copy_of`` it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    workdir, done = shared / "smoke-run", shared / "smoke-run.json"
    with (shared / "smoke-run.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            workdir.mkdir(exist_ok=True)
            # Every benchmark process of the run records (and refuses) any connection that
            # would leave the machine (augbench/measuring/netguard; tests/test_network.py reads the
            # log).
            guard = {NETWORK_GUARD_ENV_VAR: str(workdir / NETWORK_GUARD_LOG)}
            proc = run_snakemake(workdir, "--cores", "2", *SMOKE_CONFIG, check=False, env=guard)
            result = {"returncode": proc.returncode, "output": proc.stdout + proc.stderr}
            done.write_text(json.dumps(result))
    result = json.loads(done.read_text())
    return WorkflowRun(workdir, "smoke-test", result["returncode"], result["output"])


def copy_of(run: WorkflowRun, dest: Path) -> WorkflowRun:
    """A private copy of a finished run's working directory (results, staged data, Snakemake's
    metadata, file times kept), so a test can break or extend it without a run of its own."""
    if run.returncode != 0:
        raise AssertionError(f"the shared run failed:\n{run.output[-5000:]}")
    shutil.copytree(run.workdir, dest, symlinks=True)
    return WorkflowRun(dest, run.machine, run.returncode, run.output)


def smoke_settings(libraries: Iterable[str], regimes: list[str], **extra: Any) -> dict[str, Any]:
    """The resolved config of a smoke run of ``libraries`` in ``regimes`` on the tests' machine
    name, with the preset's generated dataset and default envs: what the workflow tests expect."""
    from augbench.planning.config import resolve

    config = {
        "preset": "smoke",
        "machine": "smoke-test",
        "dataset": {"archive": None},
        "libraries": list(libraries),
        "regimes": regimes,
        "envs": {},
        **extra,
    }
    return resolve(config, REPO)


# What makes modules unimportable in a process and every process it starts (its sitecustomize).
HIDDEN_MODULES_PATH = REPO / "tests" / "helpers" / "hidden_modules"


def hiding(*modules: str) -> dict[str, str]:
    """The environment (this one's, the repository on PYTHONPATH) in which Python processes find
    ``modules`` missing, as in an env without their packages: fresh interpreters that an engine
    starts inherit it."""
    if not modules:
        return {**os.environ, "PYTHONPATH": str(REPO)}
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join((str(REPO), str(HIDDEN_MODULES_PATH))),
        "AUGBENCH_TEST_HIDDEN_MODULES": ",".join(modules),
    }


def run_engine(
    python: Path | str, module: str, *args: str, output: Path, hide: tuple[str, ...] = ()
) -> dict:
    """Run ``python -m augbench.measuring.engines.<module> *args`` as machine ``t``, writing
    ``output``, with the repository on PYTHONPATH (a failed run raises); return the JSON document
    written. ``hide``: modules the engine's processes find missing (:func:`hiding`)."""
    subprocess.run(
        [str(python), "-m", f"augbench.measuring.engines.{module}", *args,
         "--machine", "t", "--output", str(output)],
        check=True, env=hiding(*hide), capture_output=True,
    )  # fmt: skip
    return json.loads(output.read_text())


def assert_every_row(rows: dict[str, dict], status: str, reason: str) -> None:
    """Every row of an engine's ``results`` has ``status``, with ``reason`` in its reason."""
    assert {r["status"] for r in rows.values()} == {status}
    assert all(reason in r["reason"] for r in rows.values()), rows


def jpeg_manifest(folder: Path, count: int = 6, size: tuple[int, int] = (320, 288)) -> Path:
    """A dataset manifest of ``count`` plain JPEGs of ``size`` (width, height) in
    ``folder``/images: large enough for every 224 px recipe."""
    from PIL import Image

    images = folder / "images"
    images.mkdir()
    files = []
    for i in range(count):
        Image.new("RGB", size, (i * 30 % 256, 90, 180)).save(images / f"{i}.jpg")
        files.append({"path": f"{i}.jpg", "bytes": 1, "width": size[0], "height": size[1]})
    manifest = folder / "manifest.json"
    manifest.write_text(
        json.dumps(
            {"name": "t", "source": "test", "archive_sha256": "0" * 64, "file_count": count,
             "total_bytes": count, "images_dir": "images", "files": files}
        )
    )  # fmt: skip
    return manifest


def undersized_manifest(folder: Path) -> Path:
    """A dataset manifest of four 160x120 JPEGs in ``folder``/images: smaller than the 224 crops,
    so a crop recipe raises on them while the others are measured."""
    from PIL import Image

    images = folder / "images"
    images.mkdir()
    files = []
    for i in range(4):
        Image.new("RGB", (160, 120), (i * 40, 80, 200)).save(images / f"{i}.jpg")
        files.append({"path": f"{i}.jpg", "bytes": 1, "width": 160, "height": 120})
    manifest = folder / "manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "name": "tiny",
                "source": "test",
                "archive_sha256": "0" * 64,
                "file_count": 4,
                "total_bytes": 4,
                "images_dir": "images",
                "files": files,
            }
        )
    )
    return manifest


def check_crop_larger_than_the_images(
    folder: Path, engine: str, failing: str, measured: str, *args: str
) -> None:
    """Run torchvision through ``engine`` on the undersized images (``undersized_manifest`` in
    ``folder``): the ``failing`` transform's crop raises, so its row is an error with the
    library's message, and ``measured`` is still measured."""
    rows = run_engine(
        env_python("torchvision"), engine, "--library", "torchvision",
        "--transforms", f"{failing},{measured}", "--manifest", str(undersized_manifest(folder)),
        "--num-images", "4", *args,
        output=folder / "out.json",
    )["results"]  # fmt: skip
    assert rows[failing]["status"] == "error"
    assert "crop size" in rows[failing]["reason"].lower()
    assert rows[measured]["status"] == "ok"


# -- GCS: a real GCS-compatible server on loopback (gcp-storage-emulator) -----------------------
# Requests the google libraries could make to a metadata server stay on loopback.
OFFLINE_ENV = {"NO_GCE_CHECK": "true", "GOOGLE_CLOUD_PROJECT": "test"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def gcs_emulator_at(log_path: Path) -> Iterator[str]:
    """Start gcp-storage-emulator (in memory) and yield its STORAGE_EMULATOR_HOST value."""
    port = free_port()
    log = log_path.open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "gcp-storage-emulator"), "start", "--host=127.0.0.1",
         f"--port={port}", "--in-memory"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"gcp-storage-emulator did not start on port {port}") from None
            time.sleep(0.2)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(autouse=True)
def _registered_libraries_restored() -> Iterator[None]:
    """Each test starts with the libraries the session started with: loading a config that names
    a second name of a library (``torchvision~b``) registers it for the rest of that process
    (augbench.planning.config), and a later test on the same worker must not see it."""
    from augbench.workload import adapters

    before = set(adapters.names())
    yield
    for name in set(adapters.names()) - before:
        adapters.unregister(name)


@pytest.fixture
def gcs_emulator(tmp_path: Path) -> Iterator[str]:
    """A real GCS-compatible server on loopback, stopped when the test ends."""
    with gcs_emulator_at(tmp_path / "emulator.log") as host:
        yield host
