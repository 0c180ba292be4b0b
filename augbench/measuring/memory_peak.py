"""The peak memory of a timed job's whole process tree, sampled from a process of its own.

Snakemake's benchmark file samples a job every 0.5 s for its first 30 s and every 30 s after that
(``snakemake.benchmark``), so a long job's peak can fall between two samples and its ``max_rss``
and ``max_pss`` read low. The memory model (augbench.planning.memory) is checked against what a
job really held, so every timed job also has its tree sampled (resident sets every
``policy.JOB_MEMORY_SAMPLE_SECONDS``, proportional sets every ``policy.JOB_MEMORY_PSS_EVERY``-th
sample):

* the launcher (augbench.planning.provision) calls :func:`start` just before it becomes the
  engine: a separate interpreter (never a thread of a timed process) reads the engine's process
  tree from ``/proc`` and keeps the largest sum of resident set sizes and of proportional set
  sizes seen in one sample (between two reads of the proportional sets, followed from the
  resident sets), in a small JSON file named by ``AUGBENCH_JOB_MEMORY_FILE``;
* the engine copies that file into its result's metadata (``job_memory``, :func:`recorded`) when
  it writes its results;
* the sampler ends when the engine's process does, and removes its file.

Pure Python, no third-party imports. Where the machine has no ``/proc`` nothing is started and the
metadata holds None.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from augbench.policy import JOB_MEMORY_PSS_EVERY, JOB_MEMORY_SAMPLE_SECONDS

FILE_ENV_VAR = "AUGBENCH_JOB_MEMORY_FILE"
PROC = Path("/proc")
SCOPE = "the engine's process tree, sampled by a separate process"
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (every thread's children file)."""
    found: list[int] = []
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def tree(root: int, skip: int) -> list[int]:
    """``root`` and every process below it, except ``skip`` (the sampler itself) and a child that
    shares its parent's address space: a command started by vfork (as ``subprocess`` and the
    ``platform`` module start ``uname`` and ``file``) is its parent's pages until it executes,
    and would count them twice for those milliseconds."""
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid == skip:
            continue
        out.append(pid)
        stack.extend(c for c in children(pid) if not shares_address_space(c, pid))
    return out


# kcmp(2) by architecture; KCMP_VM compares two processes' address spaces.
_KCMP_SYSCALL = {"x86_64": 312, "aarch64": 272}.get(
    os.uname().machine if hasattr(os, "uname") else ""
)
_KCMP_VM = 1


def shares_address_space(a: int, b: int) -> bool:
    """Whether processes ``a`` and ``b`` share one address space (kcmp(2)); False where the
    kernel, its filter or the architecture does not say."""
    if _KCMP_SYSCALL is None:
        return False
    return _libc().syscall(_KCMP_SYSCALL, a, b, _KCMP_VM, 0, 0) == 0


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def rss_kb(pid: int) -> int | None:
    """Resident set of ``pid`` in kB from ``statm`` (a counter: cheap at any size); None where
    the process has gone."""
    try:
        return int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return None


def rollup_kb(pid: int) -> tuple[int, int] | None:
    """(resident set, proportional set) of ``pid`` in kB from ``smaps_rollup`` (a walk of its
    page tables: about 10 ms per 600 MB resident, hence read less often; both from one read, so
    the proportional set never exceeds the resident set it is part of); None where the process
    has gone."""
    try:
        text = (PROC / str(pid) / "smaps_rollup").read_text()
    except OSError:
        return None
    found = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss"):
            found[key] = int(rest.split()[0])
    return (found["Rss"], found["Pss"]) if len(found) == 2 else None


def alive(pid: int) -> bool:
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _write(path: Path, peak: dict[str, Any]) -> None:
    scratch = path.with_name(path.name + ".part")
    scratch.write_text(json.dumps(peak))
    os.replace(scratch, path)


def sample_until_gone(
    root: int, path: Path, interval: float, pss_every: int = JOB_MEMORY_PSS_EVERY
) -> dict[str, Any]:
    """Sample ``root``'s tree while ``root`` lives: resident sets every ``interval`` seconds,
    proportional sets every ``pss_every``-th sample; rewrite ``path`` whenever a peak grows and
    return the last peaks.

    Between two proportional-set reads the tree's proportional set is followed from the resident
    sets (:func:`pss_between_reads`): a DataLoader worker's batch lives for a fraction of a second,
    shorter than the reads' interval, and the pages it adds are the worker's own."""
    own = os.getpid()
    peak: dict[str, Any] = {"peak_rss_mb": 0.0, "peak_pss_mb": 0.0, "peak_pss_read_mb": 0.0,
                            "processes_at_peak": 0, "samples": 0, "interval_s": interval,
                            "pss_interval_s": interval * pss_every, "scope": SCOPE}  # fmt: skip
    last_read: dict[int, tuple[int, int]] = {}  # pid -> (resident, proportional) kB at the read
    while alive(root):
        pids = tree(root, own)
        resident = {pid: kb for pid in pids if (kb := rss_kb(pid)) is not None}
        rss, count = sum(resident.values()) / 1024, len(resident)
        grew = peak["samples"] == 0
        if rss > peak["peak_rss_mb"]:
            peak["peak_rss_mb"], peak["processes_at_peak"], grew = round(rss, 1), count, True
        if peak["samples"] % pss_every == 0:
            last_read = {pid: r for pid in pids if (r := rollup_kb(pid)) is not None}
            pss = sum(r[1] for r in last_read.values()) / 1024
            rolled = sum(r[0] for r in last_read.values()) / 1024
            if pss > peak["peak_pss_read_mb"]:
                peak["peak_pss_read_mb"], grew = round(pss, 1), True
            if rolled > peak["peak_rss_mb"]:
                peak["peak_rss_mb"], peak["processes_at_peak"] = round(rolled, 1), len(last_read)
                grew = True
        else:
            pss = pss_between_reads(last_read, resident) / 1024
        if pss > peak["peak_pss_mb"]:
            peak["peak_pss_mb"], grew = round(pss, 1), True
        peak["samples"] += 1
        if grew:
            _write(path, peak)
        time.sleep(interval)
    return peak


def pss_between_reads(last_read: dict[int, tuple[int, int]], resident: dict[int, int]) -> int:
    """The tree's proportional set (kB) followed from resident sets since the last read
    (``last_read``: pid -> (resident, proportional) then; ``resident``: pid -> resident now): the
    last read's sum, plus what each process read then has grown or shrunk by since (new pages are
    its own, counted whole in both), less the last read's share of each that has ended. A process
    started since the read counts from the next read (a fork shares its parent's pages: no more
    than that of the tree's proportional set is new)."""
    total = 0
    for pid, (then_resident, then_pss) in last_read.items():
        if pid in resident:
            total += max(0, then_pss + resident[pid] - then_resident)
    return total


def start(pid: int | None = None, interval: float = JOB_MEMORY_SAMPLE_SECONDS) -> dict[str, str]:
    """Start sampling ``pid`` (this process, about to exec its engine); the environment entry
    the engine reads the peaks through, or {} where nothing can be sampled."""
    pid = os.getpid() if pid is None else pid
    if not (PROC / str(pid) / "smaps_rollup").exists():
        return {}
    handle, name = tempfile.mkstemp(prefix="augbench-job-memory-", suffix=".json")
    os.close(handle)
    cmd = [sys.executable, "-m", __name__, "--pid", str(pid), "--file", name,
           "--interval", str(interval)]  # fmt: skip
    here = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(here), os.environ.get("PYTHONPATH", "")) if p)}  # fmt: skip
    # Its own output closed: a pipe the job's log is read through must end with the engine.
    subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, env=env, close_fds=True)  # fmt: skip
    return {FILE_ENV_VAR: name}


def recorded() -> dict[str, Any] | None:
    """The peaks sampled so far for this job (None where no sampler runs or none has written)."""
    name = os.environ.get(FILE_ENV_VAR)
    if not name:
        return None
    try:
        return json.loads(Path(name).read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Sample a process tree's peak memory.")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--file", type=Path, required=True)
    p.add_argument("--interval", type=float, default=JOB_MEMORY_SAMPLE_SECONDS)
    args = p.parse_args(argv)
    try:
        sample_until_gone(args.pid, args.file, args.interval)
    finally:
        for path in (args.file, args.file.with_name(args.file.name + ".part")):
            path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
