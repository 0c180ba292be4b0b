"""The memory allocator a process runs under, as seen from inside it, and its page faults.

Large images and pipelines move by up to 3x with the allocator's state (docs/pipelines.md,
"Measured here"): glibc hands buffers above its mmap threshold back to the kernel on free, and
the next call page-faults them in again. So every result records which allocator was in force
(:func:`in_force`, from ``/proc/<pid>/maps``: the library actually mapped, not only what the
environment asked for, with its version and the allocator settings of the environment), and the
timed windows count minor page faults (:func:`minor_faults`).

Stdlib only: it runs in every library env, in the main process and in DataLoader workers.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from augbench.policy import DEFAULT_ALLOCATOR

# Allocators that replace malloc when preloaded, by the stem of their shared library.
PRELOADED: dict[str, str] = {
    "jemalloc": "libjemalloc",
    "mimalloc": "libmimalloc",
    "tcmalloc": "libtcmalloc",
}
# Environment variables that change an allocator's behaviour (recorded when set).
ENV_PREFIXES: tuple[str, ...] = ("MALLOC_", "MIMALLOC_", "JEMALLOC_", "TCMALLOC_")
ENV_NAMES: tuple[str, ...] = ("LD_PRELOAD", "MALLOC_CONF", "_RJEM_MALLOC_CONF", "GLIBC_TUNABLES")


def mapped_libraries(pid: int | str = "self") -> list[str]:
    """Paths of the shared objects mapped into a process (``/proc/<pid>/maps``), in order."""
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return []
    seen: dict[str, None] = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and ".so" in parts[5]:
            seen.setdefault(parts[5].strip(), None)
    return list(seen)


class Unavailable(RuntimeError):
    """An allocator setting this machine or env cannot provide (its library is not there)."""


# Where a preloaded allocator's library comes from: mimalloc from the pinned cmeel-mimalloc wheel
# in each library env (envs/common.in), jemalloc from Debian's libjemalloc2 (the container image).
JEMALLOC_PATHS: tuple[str, ...] = (
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
)


def preload_library(name: str, prefix: Path | str) -> Path:
    """The shared library to preload for allocator ``name`` in the env at ``prefix`` (a venv);
    raises Unavailable with the reason where it is not installed."""
    if name == "mimalloc":
        found = sorted(
            Path(prefix)
            .resolve()
            .glob("lib/python*/site-packages/cmeel.prefix/lib/libmimalloc.so.*")
        )
        if found:
            return min(found, key=lambda p: len(p.name))  # libmimalloc.so.<major>
        raise Unavailable(f"mimalloc is not installed in {prefix} (the cmeel-mimalloc wheel)")
    if name == "jemalloc":
        for candidate in JEMALLOC_PATHS:
            if Path(candidate).exists():
                return Path(candidate)
        raise Unavailable(
            "jemalloc is not installed on this machine (Debian's libjemalloc2, in the container "
            f"image): none of {', '.join(JEMALLOC_PATHS)}"
        )
    raise Unavailable(f"{name} is not an allocator augbench preloads")


def environment_for(setting: str, prefix: Path | str) -> dict[str, str]:
    """The environment variables that put a process under allocator ``setting``
    (policy.ALLOCATOR_ENV for glibc's own settings; LD_PRELOAD of the library for the others).
    They must be set before the interpreter starts: glibc and the loader read them once."""
    from augbench.policy import ALLOCATOR_ENV, PRELOADED_ALLOCATORS

    if setting in ALLOCATOR_ENV:
        return dict(ALLOCATOR_ENV[setting])
    if setting in PRELOADED_ALLOCATORS:
        return {"LD_PRELOAD": str(preload_library(setting, prefix))}
    raise Unavailable(f"unknown allocator setting {setting!r}")


# The setting a workflow job was launched under (config ``allocators``; set by
# augbench.planning.provision), and why it could not be applied where it could not ("skipped:
# <reason>" / "error: <reason>").
SETTING_ENV_VAR = "AUGBENCH_ALLOCATOR"
PROBLEM_ENV_VAR = "AUGBENCH_ALLOCATOR_PROBLEM"
DEFAULT_SETTING = DEFAULT_ALLOCATOR


class NotApplied(RuntimeError):
    """The job's allocator setting is not the one in force: every row of the job says so, with
    ``status`` skipped (not installed here) or error (installed, but not loaded)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def requested() -> str | None:
    """The allocator setting this process was launched under (None: not by the workflow)."""
    return os.environ.get(SETTING_ENV_VAR) or None


def setting_of(record: dict[str, Any]) -> str:
    """The setting a recorded allocator amounts to: a preloaded allocator's name, ``glibc`` with
    no allocator settings, the ``policy.ALLOCATOR_ENV`` setting whose variables it has, else its
    label (settings a user chose by hand stay visible)."""
    from augbench.policy import ALLOCATOR_ENV

    name = str(record.get("name", "unknown"))
    if name != "glibc":
        return name
    env = {k: v for k, v in (record.get("env") or {}).items() if k != "LD_PRELOAD"}
    for setting, variables in ALLOCATOR_ENV.items():
        if env == variables:
            return setting
    return label(record)


def check_requested(record: dict[str, Any] | None = None) -> None:
    """Raise :class:`NotApplied` where the launcher could not apply the job's setting, or where
    the process does not run under it: ld.so only warns about a preload it cannot load and goes
    on with glibc, so the mapped libraries are the proof. Nothing to check without a setting."""
    setting = requested()
    if setting is None:
        return
    problem = os.environ.get(PROBLEM_ENV_VAR)
    if problem:
        status, _, reason = problem.partition(": ")
        raise NotApplied(status if status in ("skipped", "error") else "error", reason or problem)
    actual = setting_of(record if record is not None else in_force())
    if actual != setting:
        preload = os.environ.get("LD_PRELOAD", "")
        raise NotApplied(
            "error",
            f"allocator {setting} asked for, but the process runs under {actual}"
            + (f" (LD_PRELOAD={preload} was not loaded)" if preload else ""),
        )


def clean_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without allocator settings (MALLOC_*, MIMALLOC_*, ..., GLIBC_TUNABLES, which can
    set glibc.malloc.*, and an allocator's preload in LD_PRELOAD; other preloads kept), so that a
    setting is exactly what the config says."""
    out = {
        k: v
        for k, v in env.items()
        if not k.startswith(ENV_PREFIXES)
        and k not in ("MALLOC_CONF", "_RJEM_MALLOC_CONF", "GLIBC_TUNABLES")  # glibc.malloc.*
    }
    preloads = [
        p
        for p in out.pop("LD_PRELOAD", "").replace(":", " ").split()
        if not Path(p).name.startswith(tuple(PRELOADED.values()))
    ]
    if preloads:
        out["LD_PRELOAD"] = " ".join(preloads)
    return out


def launch_environment(setting: str, prefix: Path | str, env: Mapping[str, str]) -> dict[str, str]:
    """The environment a job's engine starts with under allocator ``setting`` (the launcher,
    augbench.planning.provision): ``env`` cleaned of other allocator settings, the setting's
    variables, its name, and where it cannot be applied the reason (:func:`check_requested` turns it
    into the job's rows: ``skipped`` where the allocator is not installed)."""
    out = {**clean_environment(env), SETTING_ENV_VAR: setting}
    try:
        variables = environment_for(setting, prefix)
    except Unavailable as exc:
        return {**out, PROBLEM_ENV_VAR: f"skipped: {exc}"}
    if "LD_PRELOAD" in variables and "LD_PRELOAD" in out:
        variables["LD_PRELOAD"] = f"{variables['LD_PRELOAD']} {out['LD_PRELOAD']}"
    return {**out, **variables}


def allocator_environment() -> dict[str, str]:
    return {
        key: value
        for key, value in sorted(os.environ.items())
        if key in ENV_NAMES or key.startswith(ENV_PREFIXES)
    }


def _version(name: str, path: str | None) -> str:
    """The allocator's version from the library itself where it says (mimalloc's mi_version,
    glibc's gnu_get_libc_version), else from its file name."""
    try:
        if name == "glibc":
            libc = ctypes.CDLL(None)
            libc.gnu_get_libc_version.restype = ctypes.c_char_p
            return str(libc.gnu_get_libc_version().decode())
        if name == "mimalloc" and path:
            number = int(ctypes.CDLL(path).mi_version())
            if number >= 10000:  # mimalloc 3: major * 10000 + minor * 100 + patch
                return f"{number // 10000}.{number // 100 % 100}.{number % 100}"
            return f"{number // 100}.{number // 10 % 10}.{number % 10}"
    except (OSError, AttributeError):
        pass
    return Path(path).name if path else "unknown"


def in_force(pid: int | str = "self") -> dict[str, Any]:
    """``{"name", "version", "library", "env"}`` of the allocator a process runs under: a
    preloaded allocator found among its mapped libraries, else glibc's own malloc."""
    libraries = mapped_libraries(pid)
    for name, stem in PRELOADED.items():
        path = next((p for p in libraries if Path(p).name.startswith(stem)), None)
        if path is not None:
            return {
                "name": name,
                "version": _version(name, path),
                "library": path,
                "env": allocator_environment(),
            }
    return {
        "name": "glibc",
        "version": _version("glibc", None),
        "library": next((p for p in libraries if Path(p).name.startswith("libc.so")), None),
        "env": allocator_environment(),
    }


def label(record: dict[str, Any]) -> str:
    """A row's allocator column: the name, with the settings that change it
    (``glibc MALLOC_MMAP_THRESHOLD_=...``); LD_PRELOAD is said by the name itself."""
    settings = [f"{k}={v}" for k, v in record.get("env", {}).items() if k != "LD_PRELOAD"]
    return " ".join([str(record.get("name", "unknown")), *settings])


def minor_faults(pid: int | str = "self") -> int:
    """Minor page faults of a process so far (``/proc/<pid>/stat``, field 10), 0 if unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[7])


def tree_minor_faults() -> int:
    """Minor page faults of this process, its live children (DataLoader workers) and the
    children that ended (a non-persistent worker's count moves there when it is reaped)."""
    import resource

    total = minor_faults() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    try:
        children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    except OSError:
        children = []
    return total + sum(minor_faults(child) for child in children)


PAGE_BYTES = 4096


def output_pages(output: Any) -> float:
    """Pages (4 KiB) one output image occupies: the faults per image at which every output
    would be page-faulted in afresh (a sample with targets counts its image)."""
    if isinstance(output, dict):
        output = output["image"]
    if hasattr(output, "nbytes") and not hasattr(output, "element_size"):
        size = int(output.nbytes)  # numpy
    elif hasattr(output, "element_size"):
        size = int(output.numel()) * int(output.element_size())  # torch
    elif hasattr(output, "getbands"):
        size = len(output.getbands()) * output.size[0] * output.size[1]  # PIL
    else:
        return float("nan")
    return size / PAGE_BYTES


def reset_peak_rss() -> str:
    """Reset this process's peak-RSS counter (Linux: /proc/self/clear_refs, value 5), so the peak
    read after a row is that row's, not an earlier one's. Returns the scope of the peak that will
    be read: "transform" or, where the reset is not possible, "process"."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return "process"
    return "transform"


def peak_rss_mb() -> float:
    """This process's peak RSS since start or the last :func:`reset_peak_rss`, MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
