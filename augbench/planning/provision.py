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
   allocator setting (augbench.measuring.allocator.launch_environment: set before the interpreter
   starts, as glibc and the loader require; a setting this node cannot apply is named there, and the
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

from augbench.measuring import allocator, memory_peak, telemetry
from augbench.policy import NETWORK_GUARD_ENV_VAR
from augbench.workload import adapters

LOCK_STAMP = ".augbench-lock.sha256"
SETUP_ENV_VAR = "AUGBENCH_SETUP"


class ProvisionError(RuntimeError):
    """The node cannot be prepared; the message names the env, lock or archive at fault."""


class EnvBuildError(ProvisionError):
    """A library's env cannot be built here: only that library's jobs are lost. Its build marker
    records the one-line reason (:func:`failed_marker`), and each of its timed jobs writes its
    result files with every row ``env_failed`` and that reason (:func:`write_env_failure`)."""


ENV_FAILED = "env_failed"


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


# uv's line for a package it builds from its source distribution (its cache held no wheel), and
# its line for the time it took to get the packages its cache lacked (built or downloaded).
_SOURCE_BUILD = re.compile(r"^\s*Building (\S+==\S+)", re.MULTILINE)
_PREPARED = re.compile(r"^Prepared \d+ packages? in ([\d.]+)(ms|s)\b", re.MULTILINE)


# What every engine imports in a library's env: the library (its adapter's own import), and
# torch with its DataLoader where the env has torch.
_WARM_IMPORTS = (
    "import importlib.util, sys; sys.path.insert(0, {root!r});"
    "from augbench.workload import adapters; adapters.get({library!r}).import_library();"
    "importlib.util.find_spec('torch') and __import__('torch.utils.data')"
)


def warm_imports(library: str, python: Path) -> bool:
    """Import in a new env what its jobs import, so that the bytecode of those modules is written
    now, in the build, and no timed job's import compiles it (the first job in an env would pay
    seconds more than the others: torch's modules). An import that fails here is one line in the
    build's log and False; the jobs record it as their own set-up error."""
    code = _WARM_IMPORTS.format(root=str(Path(__file__).resolve().parents[2]), library=library)
    try:  # in the environment the engines import in (bytecode written, telemetry off)
        _run([str(python), "-c", code], env=engine_environment(os.environ, {}))
    except subprocess.CalledProcessError as exc:
        print(f"{library}: importing it after the build failed: {_last_error_line(exc.stderr)}",
              file=sys.stderr, flush=True)  # fmt: skip
        return False
    return True


def source_builds(log: str) -> list[str]:
    """The ``name==version`` of every package an env build's log shows uv compiling."""
    return _SOURCE_BUILD.findall(log)


def prepare_seconds(log: str) -> float:
    """Seconds an env build's log shows uv taking for the packages its cache lacked (0: none)."""
    return sum(float(v) / (1000 if unit == "ms" else 1) for v, unit in _PREPARED.findall(log))


def _run(cmd: list[str], env: Mapping[str, str] | None = None) -> None:
    """Run ``cmd`` with its output on stderr; on failure, raise with its last error line."""
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, env=env, stdout=sys.stderr, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode:
        raise subprocess.CalledProcessError(done.returncode, cmd, stderr=done.stderr)


def _last_error_line(text: str) -> str:
    """The line of a tool's output that says what failed (its last ``error``), else its last."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[-1][:300]


def build_problem(library: str) -> str | None:
    """Why ``library``'s env cannot be built on this machine (its declaration's check), or None;
    a name no declaration has (an env of another tool) has nothing to check."""
    try:
        declared = adapters.declared(library)
    except KeyError:
        return None
    return declared.build_problem()


def build_variables(library: str) -> dict[str, str]:
    try:
        return adapters.declared(library).build_variables(os.environ)
    except KeyError:
        return {}


def ensure_env(library: str, lock: Path, venv: Path, python: str | None) -> dict[str, Any]:
    """Sync ``venv`` to ``lock`` unless it already is; report what was done and its time.
    Raises EnvBuildError, in one line, where the env cannot be built."""
    lock = Path(lock)
    venv = Path(venv)
    if not lock.exists():
        raise EnvBuildError(f"{library}: lock file not found: {lock}")
    lock_sha = sha256_bytes(lock)
    start = time.perf_counter()
    imported = None  # a reused env is not imported again
    with node_lock(venv.parent / f".{venv.name}.provision-lock"):
        stamp = venv / LOCK_STAMP
        reused = stamp.exists() and stamp.read_text().strip() == lock_sha
        if not reused:
            if problem := build_problem(library):
                raise EnvBuildError(f"{library}: {problem}")
            uv = uv_binary()
            if venv.exists():
                shutil.rmtree(venv)
            # A library built from source compiles with its declaration's variables.
            variables = build_variables(library)
            env = {**os.environ, **variables} if variables else None
            try:
                _run([uv, "venv", "--quiet", "--python", python or sys.executable, str(venv)])
                # uv hardlinks from its cache, so several torch-based envs cost the disk once.
                _run(
                    [uv, "pip", "sync", "--python", str(venv / "bin" / "python"), str(lock)],
                    env=env,
                )
            except subprocess.CalledProcessError as exc:
                raise EnvBuildError(
                    f"{library}: building {venv} from {lock} failed: {_last_error_line(exc.stderr)}"
                ) from exc
            if library in adapters.names():  # an env of another tool (the driver) has none
                imported = warm_imports(library, venv / "bin" / "python")
            stamp.write_text(lock_sha + "\n")
    return {
        "library": library,
        "manager": "uv",
        "python": str(venv.resolve() / "bin" / "python"),
        "lock": str(lock),
        "lock_sha256": lock_sha,
        "reused": reused,
        "imported": imported,
        "setup_seconds": time.perf_counter() - start,
        "build_variables": build_variables(library),
    }


def failed_marker(library: str, lock: Path, reason: str) -> dict[str, Any]:
    """The build marker of an env that could not be built: its status, the one-line reason and
    when (a later run retries the build: workflow/rules/envs.smk)."""
    return {
        "library": library,
        "status": "failed",
        "reason": reason,
        "lock": str(lock),
        "failed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
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


# What augbench.planning.resize adds to a derived dataset's manifest; restaging keeps it.
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
    from augbench.planning.dataset import stage_archive

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
                # A derived dataset of the resolution sweep allows small images
                # (augbench.planning.resize).
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
    interpreter starts: augbench.measuring.telemetry), the setup record, and, where a network
    guard is asked for (augbench/measuring/netguard), its start-up hook first on PYTHONPATH."""
    env = {**base, **telemetry.off_environment(), SETUP_ENV_VAR: json.dumps(setup)}
    # The engine may cache the bytecode of what it imports in the library's venv: where the
    # machine sets PYTHONDONTWRITEBYTECODE, every job and pyperf worker would otherwise compile
    # torch's modules again (docs/results/amd-epyc-2c/2026-11-26-bytecode/). Outside every timed
    # scope.
    env.pop(NO_BYTECODE_ENV_VAR, None)
    if env.get(NETWORK_GUARD_ENV_VAR):
        guard = str(Path(__file__).resolve().parents[1] / "measuring" / "netguard")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (guard, env.get("PYTHONPATH")) if p)
    return env


def _flag_values(args: list[str], flag: str) -> list[str]:
    """The values after ``flag`` in an engine's command line, up to the next flag."""
    if flag not in args:
        return []
    values = []
    for value in args[args.index(flag) + 1 :]:
        if value.startswith("--"):
            break
        values.append(value)
    return values


def _row_names(engine_args: list[str]) -> list[str]:
    """What the engine would have measured, from its command line: its transforms (recipes) or
    its pipelines' names; one row for the job where it names neither."""
    transforms = _flag_values(engine_args, "--transforms")
    if transforms:
        return [t for t in transforms[0].split(",") if t]
    pipelines = _flag_values(engine_args, "--pipelines")
    if pipelines:
        return [p["name"] for p in json.loads(pipelines[0])]
    return ["(every row of the job)"]


def write_env_failure(
    library: str, engine_args: list[str], manifest: Path, reason: str
) -> list[Path]:
    """The result files of a timed job whose library env could not be built: each planned row
    ``env_failed`` with the build's reason, so the tables show what was lost and why while the
    other libraries' jobs run on. Returns the files written."""
    from augbench.measuring.media import dataset_metadata
    from augbench.results import non_ok_row, system_info, write_result_file

    outputs = _flag_values(engine_args, "--outputs") or _flag_values(engine_args, "--output")
    settings = (_flag_values(engine_args, "--settings") or [""])[0].split(",")
    machine = (_flag_values(engine_args, "--machine") or [""])[0]
    num_images = int((_flag_values(engine_args, "--num-images") or ["0"])[0])
    try:
        dataset = dataset_metadata(manifest, num_images)
    except (OSError, ValueError, KeyError):
        dataset = {}
    written = []
    for i, output in enumerate(outputs):
        scope, _, workers = (settings[i] if i < len(settings) else "").partition("-w")
        rows = {
            name: non_ok_row(ENV_FAILED, f"{library}'s env was not built: {reason}")
            for name in _row_names(engine_args)
        }
        metadata = {
            "machine": machine,
            "library": library,
            "system_info": system_info(),
            "dataset": dataset,
            "scope": scope or "memory",
            "benchmark_params": {"workers": int(workers)} if workers.isdigit() else {},
            "env_failure": reason,
        }
        write_result_file(Path(output), metadata, rows)
        written.append(Path(output))
    return written


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("usage: python -m augbench.planning.provision [options] -- ENGINE ARGS...")
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


def env_paths(library: str, lock: Path, venv: Path | None) -> tuple[Path, Path | None]:
    """The lock and the venv a job of ``library`` runs with: a library's second name (A/A runs,
    augbench.workload.adapters) measures in its base library's env, built from the base's lock."""
    if not adapters.is_alias(library):
        return lock, venv
    base = adapters.base_of(library)
    return lock.with_name(f"{base}.txt"), venv.with_name(base) if venv else venv


def main(argv: list[str] | None = None) -> int:
    args, engine_args = parse_args(argv)
    args.lock, args.venv = env_paths(args.library, args.lock, args.venv)
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
        try:
            env = ensure_env(args.library, args.lock, args.venv, args.python)
        except EnvBuildError as exc:
            # Only this library's jobs are lost: the job ends well, its rows say why.
            written = write_env_failure(args.library, engine_args, args.manifest, str(exc))
            print(
                f"provision | {exc}; wrote {len(written)} result file(s) of env_failed rows",
                file=sys.stderr,
            )
            return 0
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
    # The job's true peak memory, which Snakemake's benchmark samples too sparsely to catch.
    sampled = memory_peak.start()
    os.execve(cmd[0], cmd, {**engine_environment(base, setup), **sampled})
    return 0  # not reached


if __name__ == "__main__":
    from augbench.planning.dataset import DatasetError

    try:
        sys.exit(main())
    except (ProvisionError, DatasetError) as exc:
        print(f"provision error: {exc}", file=sys.stderr)
        sys.exit(2)
