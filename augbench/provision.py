"""Provision a benchmark job on whatever node runs it, then start its engine.

Every benchmark rule launches its engine through this module (in the driver's interpreter, before
any clock starts):

1. the library's venv at ``--venv`` is synced to its lock unless the venv already records that
   lock's sha256: at most one build per node and lock, reused by every later job there (a file
   lock serializes concurrent jobs on one node); with ``--manager system`` nothing is built: the
   running interpreter is the env (an offline node's own Python, augbench.gpu_node), and its
   marker records the versions installed there and where they differ from the lock;
2. the staged dataset is found next to ``--manifest`` (a local run: stage_dataset's images), or
   else extracted once per node from ``--archive`` into ``--scratch`` (a cloud VM, or a run whose
   outputs live in a bucket), and checked against the manifest's archive sha256;
3. the engine is exec'd in the venv's interpreter with ``--manifest`` (the staged copy) and
   ``--env-marker`` (this node's env) appended, the setup record in ``AUGBENCH_SETUP`` so the
   result file keeps what the setup cost, and, with ``--allocator``, the environment of that
   allocator setting (augbench.allocator.launch_environment: set before the interpreter starts,
   as glibc and the loader require; a setting this node cannot apply is named there, and the
   engine's rows say so).

Venvs never travel through a bucket: they are built where they are used.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from augbench import allocator
from augbench.policy import NETWORK_GUARD_ENV_VAR, TELEMETRY_OFF_ENV

LOCK_STAMP = ".augbench-lock.sha256"
SETUP_ENV_VAR = "AUGBENCH_SETUP"


class ProvisionError(RuntimeError):
    """The node cannot be prepared; the message names the env, lock or archive at fault."""


@contextmanager
def node_lock(path: Path) -> Iterator[None]:
    """An exclusive lock shared by every job on this node that prepares the same thing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def sha256_bytes(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def uv_binary() -> str:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except ImportError:
        found = shutil.which("uv")
        if not found:
            raise ProvisionError(
                "uv is required to build library environments (pip install uv)"
            ) from None
        return found


def _run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr, stderr=sys.stderr)


def ensure_env(library: str, lock: Path, venv: Path, python: str | None) -> dict[str, Any]:
    """Sync ``venv`` to ``lock`` unless it already is; report what was done and its time."""
    lock = Path(lock)
    venv = Path(venv)
    if not lock.exists():
        raise ProvisionError(f"{library}: lock file not found: {lock}")
    lock_sha = sha256_bytes(lock)
    start = time.perf_counter()
    with node_lock(venv.parent / f".{venv.name}.provision-lock"):
        stamp = venv / LOCK_STAMP
        reused = stamp.exists() and stamp.read_text().strip() == lock_sha
        if not reused:
            uv = uv_binary()
            if venv.exists():
                shutil.rmtree(venv)
            try:
                _run([uv, "venv", "--quiet", "--python", python or sys.executable, str(venv)])
                # uv hardlinks from its cache, so several torch-based envs cost the disk once.
                _run([uv, "pip", "sync", "--python", str(venv / "bin" / "python"), str(lock)])
            except subprocess.CalledProcessError as exc:
                raise ProvisionError(
                    f"{library}: building {venv} from {lock} failed: {exc}"
                ) from exc
            stamp.write_text(lock_sha + "\n")
    return {
        "library": library,
        "manager": "uv",
        "python": str(venv.resolve() / "bin" / "python"),
        "lock": str(lock),
        "lock_sha256": lock_sha,
        "reused": reused,
        "setup_seconds": time.perf_counter() - start,
    }


def lock_pins(lock: Path) -> dict[str, str]:
    """``{normalized name: version}`` of every ``name==version`` line of a uv/pip lock."""
    pins: dict[str, str] = {}
    for line in Path(lock).read_text().splitlines():
        requirement = line.split("#", 1)[0].split(";", 1)[0].strip()
        name, sep, version = requirement.partition("==")
        if sep and name and not name.startswith("-"):
            pins[normalized_name(name)] = version.strip()
    return pins


def normalized_name(name: str) -> str:
    """A distribution name as the packaging standards compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def system_env(library: str, lock: Path) -> dict[str, Any]:
    """The running interpreter as the library's env (``--manager system``): nothing is built.
    The marker has the fields of a built env's (:func:`ensure_env`'s and those
    workflow/scripts/build_env.py adds: interpreter, every installed version), with the lock it
    was compared with instead of one it was built from (``lock_sha256`` is None), and each locked
    package whose installed version differs (``differs_from_lock``: torch 2.11.0 where the lock
    says 2.13.0) or that is not installed (``missing_from_lock``)."""
    lock = Path(lock)
    if not lock.exists():
        raise ProvisionError(f"{library}: lock file not found: {lock}")
    start = time.perf_counter()
    installed: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:  # first on sys.path wins, as for the import system
            installed.setdefault(normalized_name(name), dist.version)
    pins = lock_pins(lock)
    return {
        "library": library,
        "manager": "system",
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "packages": dict(sorted(installed.items())),
        "lock": str(lock),
        "lock_sha256": None,
        "compared_with_lock_sha256": sha256_bytes(lock),
        "differs_from_lock": {
            name: {"lock": pin, "installed": installed[name]}
            for name, pin in sorted(pins.items())
            if name in installed and installed[name] != pin
        },
        "missing_from_lock": sorted(name for name in pins if name not in installed),
        "reused": True,
        "setup_seconds": time.perf_counter() - start,
    }


def _images_present(manifest: Path, doc: dict[str, Any]) -> bool:
    images = manifest.parent / doc.get("images_dir", "images")
    return images.is_dir() and all((images / f["path"]).is_file() for f in doc["files"])


# What augbench.resize adds to a derived dataset's manifest; restaging keeps it.
# Fields of the sweep's manifest that a node's own staging keeps: the resolution sweep's, and what
# dataset.allow_fewer decided (so every node's engines take the same images).
SWEEP_FIELDS = (
    "resolution", "resize", "base_key", "base_archive_sha256", "min_side",
    "allow_fewer", "fewer_than_configured",
)  # fmt: skip


def _keep_sweep_fields(doc: dict[str, Any], staged_manifest: Path) -> None:
    extra = {k: doc[k] for k in SWEEP_FIELDS if k in doc}
    if extra:
        staged = json.loads(staged_manifest.read_text())
        staged_manifest.write_text(json.dumps({**staged, **extra}, indent=1) + "\n")


def ensure_dataset(manifest: Path, archive: Path | None, scratch: Path) -> dict[str, Any]:
    """A manifest whose images are on this node's disk, staging ``archive`` once per node."""
    from augbench.dataset import stage_archive

    manifest = Path(manifest)
    doc = json.loads(manifest.read_text())
    start = time.perf_counter()
    if _images_present(manifest, doc):
        return {"manifest": str(manifest), "staged": False, "seconds": 0.0, "where": "beside"}
    expected = doc["archive_sha256"]
    target = Path(scratch) / "datasets" / f"{doc['name']}-{expected[:16]}"
    with node_lock(target.parent / f".{target.name}.provision-lock"):
        staged_manifest = target / "manifest.json"
        staged = False
        if not staged_manifest.exists():
            if archive is None or not Path(archive).exists():
                raise ProvisionError(
                    f"images of {manifest} are not on this node and no archive was given to "
                    f"stage them from (expected sha256 {expected})"
                )
            stage_archive(
                Path(archive),
                target,
                name=doc["name"],
                source=doc.get("source"),
                # A derived dataset of the resolution sweep allows small images (augbench.resize).
                min_side=doc.get("min_side", 224),
                key=doc.get("key"),
            )
            _keep_sweep_fields(doc, staged_manifest)
            staged = True
        got = json.loads(staged_manifest.read_text())["archive_sha256"]
        if got != expected:
            shutil.rmtree(target, ignore_errors=True)
            raise ProvisionError(
                f"archive {archive} has sha256 {got}, but {manifest} was staged from {expected}: "
                "the archive changed since stage_dataset ran; rerun it"
            )
    return {
        "manifest": str(staged_manifest),
        "staged": staged,
        "seconds": time.perf_counter() - start,
        "where": str(target),
    }


def write_marker(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


NO_BYTECODE_ENV_VAR = "PYTHONDONTWRITEBYTECODE"


def engine_environment(base: Mapping[str, str], setup: dict[str, Any]) -> dict[str, str]:
    """The engine's environment: the job's, with library telemetry off (set before the engine's
    interpreter starts: augbench.policy.TELEMETRY_OFF_ENV), the setup record, and, where a network
    guard is asked for (augbench/netguard), its start-up hook first on PYTHONPATH."""
    env = {**base, **TELEMETRY_OFF_ENV, SETUP_ENV_VAR: json.dumps(setup)}
    # The engine may cache the bytecode of what it imports in the library's venv: where the
    # machine sets PYTHONDONTWRITEBYTECODE, every job and pyperf worker would otherwise compile
    # torch's modules again (docs/results/bytecode-amd-epyc-2c.md). Outside every timed scope.
    env.pop(NO_BYTECODE_ENV_VAR, None)
    if env.get(NETWORK_GUARD_ENV_VAR):
        guard = str(Path(__file__).resolve().parent / "netguard")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (guard, env.get("PYTHONPATH")) if p)
    return env


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("usage: python -m augbench.provision [options] -- ENGINE ARGS...")
    split = argv.index("--")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--library", required=True)
    p.add_argument(
        "--manager",
        choices=["uv", "conda", "system"],
        default="uv",
        help="system: run the engine in this interpreter as it is (an offline node's Python)",
    )
    p.add_argument("--lock", type=Path, required=True)
    p.add_argument("--venv", type=Path, default=None, help="the library's venv (manager uv)")
    p.add_argument("--python", default=None, help="interpreter for new venvs (default: this one)")
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--archive", type=Path, default=None)
    p.add_argument("--scratch", type=Path, required=True)
    p.add_argument(
        "--allocator",
        default=None,
        help="allocator setting of the engine (config allocators); default: the environment's",
    )
    args = p.parse_args(argv[:split])
    if args.manager == "uv" and args.venv is None:
        p.error("--venv is required with --manager uv")
    return args, argv[split + 1 :]


def main(argv: list[str] | None = None) -> int:
    args, engine_args = parse_args(argv)
    if args.manager == "conda":
        # --sdm conda: Snakemake activated the library's env; its interpreter is on PATH.
        env = {
            "library": args.library,
            "manager": "conda",
            "python": shutil.which("python") or sys.executable,
            "lock_sha256": sha256_bytes(args.lock),
            "reused": True,
            "setup_seconds": 0.0,
        }
    elif args.manager == "system":
        env = system_env(args.library, args.lock)
    else:
        env = ensure_env(args.library, args.lock, args.venv, args.python)
    data = ensure_dataset(args.manifest, args.archive, args.scratch)
    marker = args.scratch / "envs" / f"{args.library}.json"
    write_marker(marker, env)
    setup = {
        "env_reused": env["reused"],
        "env_seconds": round(env["setup_seconds"], 3),
        "dataset_staged": data["staged"],
        "dataset_seconds": round(data["seconds"], 3),
        "dataset_location": data["where"],
    }
    print(f"provision | {args.library}: {json.dumps(setup)}", file=sys.stderr, flush=True)
    cmd = [
        env["python"],
        *engine_args,
        "--manifest",
        data["manifest"],
        "--env-marker",
        str(marker),
    ]
    base: Mapping[str, str] = os.environ
    if args.allocator is not None:
        prefix = Path(env["python"]).parent.parent  # the venv (or conda env) the engine runs in
        base = allocator.launch_environment(args.allocator, prefix, os.environ)
        if problem := base.get(allocator.PROBLEM_ENV_VAR):
            print(f"provision | {args.library}: allocator {problem}", file=sys.stderr)
    sys.stderr.flush()
    os.execve(cmd[0], cmd, engine_environment(base, setup))
    return 0  # not reached


if __name__ == "__main__":
    from augbench.dataset import DatasetError

    try:
        sys.exit(main())
    except (ProvisionError, DatasetError) as exc:
        print(f"provision error: {exc}", file=sys.stderr)
        sys.exit(2)
