"""Build the offline GPU node's bundle (``tools/gpu_node/bundle``), on a machine with network.

The node (docs/gpu_regimes.md, "On an offline GPU node") has a system Python with torch and
torchvision and no network; what the GPU regimes need beyond that travels in one folder:

- ``wheels/``: manylinux x86_64 wheels for the node's interpreter (``--python-version``), one
  ``pip download --only-binary=:all: --no-deps`` per pinned requirement: what the node's
  libraries' GPU paths and the engines import that the node lacks, each pinned by its library's
  lock (augbench.gpu_node.libraries reads both from the library declarations: for the shipped
  libraries Kornia and kornia-rs, the Kornia GPU path, and tqdm, every engine's progress bar,
  pinned by ``envs/kornia.txt``); pip itself (the node's interpreter may have none; prove.sh runs
  it from its wheel). What is not brought, and why, goes into the manifest: a library whose
  wheels cannot travel (DALI's, about 1.1 GB), the CPU reference (AlbumentationsX) and pyperf,
  which the GPU regimes' engines do not import;
- ``augbench-project.tar.gz``: this checkout's working tree (the ``augbench`` package, ``config/``,
  the ``envs/`` locks the node's env markers are compared with, ``tools/gpu_node``);
- ``dataset-sources/``: the photographs the embedded default dataset is cut from (scikit-image's
  sample images, which the node lacks), so the node builds the workflow's own default dataset;
- ``plan.json``: the engine jobs of every step (augbench.gpu_node.plan), ``prove.sh`` (the node's
  command), ``SHA256SUMS`` and ``bundle.json`` (the Python version it was built for, each file's
  size and sha256, what the node is expected to have and what is not brought).

Downloads are cached per interpreter (``--cache``, default ``.augbench/gpu-node/wheels``, ignored
by git), so a rebuild is offline. A bundle over ``--limit-mib`` (60) is refused before anything
is written: exit 1, every file's size listed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.gpu_node import libraries as node_libraries
from augbench.gpu_node.libraries import normalized

LIMIT_MIB = 60.0
# Room kept under the limit for the two manifests written last (bundle.json, SHA256SUMS: a few KB).
MANIFESTS_ALLOWANCE = 64 * 1024
PIP_VERSION = "26.3"
# Platform tags pip may pick wheels for: the node's glibc is at least 2.28 (its torch wheels are
# manylinux_2_28), and older manylinux tags are accepted by pip below these.
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
# What the node is expected to have (augbench.gpu_node.libraries, where the libraries it runs and
# the packages the bundle brings are read from the library declarations).
NODE_PROVIDES = node_libraries.NODE_PROVIDES
# The working tree's paths the node needs.
PROJECT_PATHS = ("augbench", "config", "envs", "tools/gpu_node", "pyproject.toml")
PROJECT_ARCHIVE = "augbench-project.tar.gz"
SOURCES_DIR = "dataset-sources"
PROVE_SCRIPT = "tools/gpu_node/prove.sh"


class BundleError(RuntimeError):
    """The bundle cannot be built; the message says what to change."""


@dataclass(frozen=True)
class Requirement:
    name: str
    version: str
    pinned_by: str  # the lock (or "builder" / "--also") that decided the version

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


def python_tag(version: str) -> str:
    """``3.12`` -> ``cp312``."""
    found = re.fullmatch(r"3\.(\d+)", version.strip())
    if not found:
        raise BundleError(f"--python-version {version!r}: expected 3.N, e.g. 3.12")
    return f"cp3{found.group(1)}"


def requirements(repo: Path, also: list[str]) -> list[Requirement]:
    """The pinned requirements the bundle brings: what the node's libraries and the engines
    import that the node lacks (augbench.gpu_node.libraries.requirements), each from its lock;
    pip; ``also``."""
    from augbench.planning.provision import lock_pins

    try:
        needed = node_libraries.requirements()
    except ValueError as exc:  # no library can run on the node
        raise BundleError(str(exc)) from exc
    out = []
    for name, lock in needed:
        pins = lock_pins(repo / lock)
        if normalized(name) not in pins:
            raise BundleError(f"{lock} pins no {name}: re-lock it (tools/maintenance/lock_envs.py)")
        out.append(Requirement(name, pins[normalized(name)], lock))
    out.append(Requirement("pip", PIP_VERSION, "builder (runs the offline install)"))
    for spec in also:
        name, sep, version = spec.partition("==")
        if not sep or not name or not version:
            raise BundleError(f"--also {spec!r}: expected NAME==VERSION")
        out.append(Requirement(name.strip(), version.strip(), "--also"))
    return out


def wheel_tags(filename: str) -> tuple[str, str, str, str]:
    """(distribution, python tags, abi tag, platform tags) of a wheel file name."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) not in (5, 6) or not filename.endswith(".whl"):
        raise BundleError(f"{filename}: not a wheel file name")
    return parts[0], parts[-3], parts[-2], parts[-1]


def wheel_problem(filename: str, version: str) -> str | None:
    """Why a wheel cannot be installed by CPython ``version`` on manylinux x86_64 (None: it can)."""
    _dist, pythons, abi, platforms = wheel_tags(filename)
    tag = python_tag(version)
    minor = int(tag[3:])
    py_ok = any(
        p in (tag, "py3", "py2.py3")
        or (abi == "abi3" and p.startswith("cp3") and int(p[3:]) <= minor)
        for p in pythons.split(".")
    )
    abi_ok = abi in (tag, "abi3", "none")
    plat_ok = any(
        p == "any" or (p.startswith("manylinux") and p.endswith("_x86_64"))
        for p in platforms.split(".")
    )
    if py_ok and abi_ok and plat_ok:
        return None
    return f"{filename}: tags {pythons}-{abi}-{platforms} do not fit {tag} on manylinux x86_64"


def cached_wheel(folder: Path, req: Requirement, version: str) -> Path | None:
    """A wheel of ``req`` in ``folder`` that fits the interpreter, if one was downloaded before."""
    for path in sorted(folder.glob("*.whl")):
        dist, *_ = wheel_tags(path.name)
        file_version = path.name.split("-")[1]
        same = normalized(dist) == normalized(req.name) and file_version == req.version
        if same and wheel_problem(path.name, version) is None:
            return path
    return None


def pip_command() -> list[str]:
    """A pip that can download: this interpreter's, a python3 on PATH, else uv running pip."""
    candidates = [[sys.executable, "-m", "pip"]]
    candidates += [
        [found, "-m", "pip"] for n in ("python3", "python") if (found := shutil.which(n))
    ]
    for cmd in candidates:
        probe = subprocess.run([*cmd, "--version"], capture_output=True, env=pip_environment())
        if probe.returncode == 0:
            return cmd
    from augbench.planning.provision import uv_binary

    return [uv_binary(), "tool", "run", "--from", f"pip=={PIP_VERSION}", "pip"]


def pip_environment() -> dict[str, str]:
    """pip without this machine's configuration (local find-links, mirrors, constraint files):
    the bundle is for another machine, so PyPI decides what exists."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def download(req: Requirement, version: str, folder: Path, pip: list[str]) -> Path:
    """The wheel of ``req`` for CPython ``version`` on manylinux x86_64, from the cache or PyPI."""
    folder.mkdir(parents=True, exist_ok=True)
    found = cached_wheel(folder, req, version)
    if found is not None:
        return found
    cmd = [
        *pip, "download", "--only-binary=:all:", "--no-deps", "--implementation", "cp",
        "--python-version", version, *(w for p in PLATFORMS for w in ("--platform", p)),
        "--dest", str(folder), req.spec,
    ]  # fmt: skip
    print(f"bundle | downloading {req.spec} for {python_tag(version)}", file=sys.stderr)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=pip_environment())
    found = cached_wheel(folder, req, version)
    if proc.returncode != 0 or found is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise BundleError(
            f"no wheel of {req.spec} for {python_tag(version)} manylinux x86_64 "
            f"(pinned by {req.pinned_by}): {' / '.join(tail)}"
        )
    return found


def project_files(repo: Path) -> list[str]:
    """The working tree's files under PROJECT_PATHS (tracked or new, never ignored), sorted."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--",
             *PROJECT_PATHS],
            cwd=repo, capture_output=True, check=True,
        ).stdout.decode().split("\0")  # fmt: skip
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file there
        listed = [
            str(p.relative_to(repo))
            for top in PROJECT_PATHS
            for p in ([repo / top] if (repo / top).is_file() else (repo / top).rglob("*"))
        ]
    return sorted(
        f for f in listed
        if f and (repo / f).is_file() and "__pycache__" not in f and not f.endswith(".pyc")
    )  # fmt: skip


def project_archive(repo: Path) -> bytes:
    """A deterministic .tar.gz of the project files: zeroed times and owners, executables 755."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in project_files(repo):
            data = (repo / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o755 if os.access(repo / name, os.X_OK) else 0o644
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def git_state(repo: Path) -> dict[str, Any]:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    return {"git_commit": git("rev-parse", "HEAD") or None,
            "uncommitted_changes": bool(git("status", "--porcelain"))}  # fmt: skip


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def size_report(contents: dict[str, int]) -> list[str]:
    width = max(len(name) for name in contents)
    return [f"  {name:<{width}}  {mib(size):>12}" for name, size in
            sorted(contents.items(), key=lambda kv: -kv[1])]  # fmt: skip


def build(
    repo: Path,
    out: Path,
    version: str,
    cache: Path,
    limit_mib: float = LIMIT_MIB,
    also: list[str] | None = None,
    add_wheels: list[Path] | None = None,
) -> dict[str, Any]:
    """Build the bundle into ``out`` (replacing an earlier bundle there); return its manifest.

    Raises BundleError (nothing written) when a wheel is missing or does not fit the interpreter,
    or when the bundle would exceed ``limit_mib``."""
    from augbench.gpu_node.plan import build_plan
    from augbench.planning.dataset import DEFAULT_SOURCES, skimage_data_dir

    tag = python_tag(version)
    out = Path(out)
    if out.exists() and not (out / "bundle.json").is_file():
        raise BundleError(f"{out} exists and is not a bundle: choose another --out")
    pip = pip_command()
    reqs = requirements(repo, also or [])
    wheels = {req: download(req, version, Path(cache) / tag, pip) for req in reqs}
    extra = [Path(w) for w in add_wheels or []]
    for path in extra:
        if not path.is_file():
            raise BundleError(f"--add-wheel {path}: no such file")
    for path in [*wheels.values(), *extra]:
        if problem := wheel_problem(path.name, version):
            raise BundleError(problem)
    archive = project_archive(repo)
    plan = (json.dumps(build_plan(repo), indent=1) + "\n").encode()
    sources = {name: skimage_data_dir() / name for name in DEFAULT_SOURCES}
    # Every file but the manifests, by its path in the bundle: sized before anything is copied.
    contents: dict[str, int] = {f"wheels/{p.name}": p.stat().st_size for p in wheels.values()}
    contents |= {f"wheels/{p.name}": p.stat().st_size for p in extra}
    contents |= {f"{SOURCES_DIR}/{n}": p.stat().st_size for n, p in sources.items()}
    contents |= {PROJECT_ARCHIVE: len(archive), "plan.json": len(plan),
                 "prove.sh": (repo / PROVE_SCRIPT).stat().st_size}  # fmt: skip
    limit = int(limit_mib * 2**20)
    total = sum(contents.values())
    if total + MANIFESTS_ALLOWANCE > limit:
        raise BundleError(
            "\n".join(
                [f"the bundle would be {mib(total)}, over the {limit_mib:g} MiB limit:",
                 *size_report(contents)]
            )
        )  # fmt: skip
    staging = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        manifest = write_bundle(staging, repo, version, wheels, extra, sources, archive, plan)
    except BaseException:  # never a half-written folder beside the bundle
        shutil.rmtree(staging, ignore_errors=True)
        raise
    manifest["total_bytes"], manifest["limit_bytes"] = total, limit
    (staging / "bundle.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return manifest


def write_bundle(
    staging: Path,
    repo: Path,
    version: str,
    wheels: dict[Requirement, Path],
    extra: list[Path],
    sources: dict[str, Path],
    archive: bytes,
    plan: bytes,
) -> dict[str, Any]:
    """Every file of the bundle into ``staging`` and its SHA256SUMS; returns the manifest
    (written by the caller)."""
    (staging / "wheels").mkdir(parents=True)
    (staging / SOURCES_DIR).mkdir()
    for path in [*wheels.values(), *extra]:
        shutil.copyfile(path, staging / "wheels" / path.name)
    for name, path in sources.items():
        shutil.copyfile(path, staging / SOURCES_DIR / name)
    (staging / PROJECT_ARCHIVE).write_bytes(archive)
    (staging / "plan.json").write_bytes(plan)
    shutil.copyfile(repo / PROVE_SCRIPT, staging / "prove.sh")
    (staging / "prove.sh").chmod(0o755)
    pinned = {f"wheels/{p.name}": req for req, p in wheels.items()}
    names = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
    files = [
        {"path": name, "bytes": (staging / name).stat().st_size,
         "sha256": file_sha256(staging / name),
         **({"requirement": pinned[name].spec, "pinned_by": pinned[name].pinned_by}
            if name in pinned else {})}
        for name in names
    ]  # fmt: skip
    (staging / "SHA256SUMS").write_text("".join(f"{f['sha256']}  {f['path']}\n" for f in files))
    return {
        "bundle_format": 1,
        "python_version": version,
        "python_tag": python_tag(version),
        "platforms": list(PLATFORMS),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "built_from": git_state(repo),
        "node_provides": list(NODE_PROVIDES),
        "not_brought": node_libraries.not_brought(),
        "wheels": [f for f in files if f["path"].startswith("wheels/")],
        "files": [f for f in files if not f["path"].startswith("wheels/")],
    }


def main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parents[2]
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--python-version", required=True, help="the node's python3, e.g. 3.12")
    p.add_argument("--out", type=Path, default=None,
                   help="bundle folder (default: .augbench/gpu-node/bundle-<cpXY>)")  # fmt: skip
    p.add_argument("--cache", type=Path, default=repo / ".augbench/gpu-node/wheels")
    p.add_argument("--limit-mib", type=float, default=LIMIT_MIB)
    p.add_argument("--also", action="append", default=[], metavar="NAME==VERSION",
                   help="one more wheel to download (a package the node lacks)")  # fmt: skip
    p.add_argument("--add-wheel", action="append", default=[], type=Path, metavar="FILE",
                   help="a local wheel file to bring as well")  # fmt: skip
    args = p.parse_args(argv)
    try:
        tag = python_tag(args.python_version)
        out = args.out or repo / ".augbench/gpu-node" / f"bundle-{tag}"
        manifest = build(
            repo, out, args.python_version, args.cache, args.limit_mib, args.also, args.add_wheel
        )
    except BundleError as exc:
        print(f"bundle: {exc}", file=sys.stderr)
        return 1
    print(f"bundle | {out}: {mib(manifest['total_bytes'])} for Python {args.python_version} "
          f"({tag}), limit {args.limit_mib:g} MiB")  # fmt: skip
    for wheel in manifest["wheels"]:
        print(f"bundle |   {wheel['path']}  {mib(wheel['bytes'])}")
    print(f"bundle | copy the folder to the node and run: bash {out.name}/prove.sh OUT")
    return 0
