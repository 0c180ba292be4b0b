"""How quiet the machine was while a job ran: what other processes did to its CPUs.

A job's throughput is only the library's when nothing else competes for the cores it runs on.
:func:`start` reads the machine at a job's start and :func:`finish` at its end; the difference
gives, over the job's wall time,

* ``other_load_cores``: CPU time other processes used on the job's CPUs, in cores on average:
  the busy time Linux counts for those CPUs (``/proc/stat``), minus the CPU time of this process
  and every process it started (reaped children from ``getrusage``, live ones from ``/proc``);
* ``steal_fraction``: the share of those CPUs' time the hypervisor gave to another guest;
* the 1/5/15-minute load average and the CPU clock (min/median/max MHz) at both ends.

A short sample before the job starts its work (its process asleep) reads the load others put on
the machine at that moment (``pre_start``). augbench.policy holds the thresholds that call a row
"under load" (:func:`verdict`). Pure Python, no third-party imports: it runs in every library's
environment. Where the machine has no ``/proc`` (not Linux) the readings are None.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.policy import (
    QUIETNESS_MIN_WALL_SECONDS,
    QUIETNESS_PRESTART_SECONDS,
    UNDER_LOAD_CLOCK_DROP,
    UNDER_LOAD_OTHER_CORES_FRACTION,
    UNDER_LOAD_STEAL_FRACTION,
)

try:
    import resource
except ImportError:  # not a Unix: no own-CPU accounting
    resource = None  # type: ignore[assignment]

PROC = Path("/proc")
SYS_CPU = Path("/sys/devices/system/cpu")
ENGINE_PACKAGE = "augbench.measuring.engines."
# /proc/stat's columns after the CPU's name; guest time is already inside user and nice.
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")


def clock_ticks_per_second() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100


@dataclass(frozen=True)
class CpuJiffies:
    """Jiffies summed over the counted CPUs since boot."""

    busy: int
    steal: int
    total: int


def parse_proc_stat(text: str, cpus: tuple[int, ...] | None = None) -> CpuJiffies | None:
    """The busy, steal and total jiffies of ``cpus`` (their ``cpuN`` lines), or of the whole
    machine (the ``cpu`` line) where ``cpus`` is None or a counted CPU has no line."""
    lines: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        words = line.split()
        if not words or not words[0].startswith("cpu"):
            continue
        values = [int(v) for v in words[1 : 1 + len(STAT_FIELDS)]]
        values += [0] * (len(STAT_FIELDS) - len(values))  # old kernels: fewer columns
        lines[words[0]] = dict(zip(STAT_FIELDS, values, strict=True))
    names = ["cpu"] if cpus is None else [f"cpu{n}" for n in cpus]
    if not all(name in lines for name in names):
        names = ["cpu"]
    if "cpu" not in lines and names == ["cpu"]:
        return None
    rows = [lines[name] for name in names]
    return CpuJiffies(
        busy=sum(row[f] for row in rows for f in BUSY_FIELDS),
        steal=sum(row["steal"] for row in rows),
        total=sum(row[f] for row in rows for f in STAT_FIELDS),
    )


def parse_loadavg(text: str) -> list[float] | None:
    """The 1, 5 and 15-minute load averages of ``/proc/loadavg``."""
    words = text.split()
    try:
        return [float(w) for w in words[:3]] if len(words) >= 3 else None
    except ValueError:
        return None


def parse_cpuinfo_mhz(text: str, cpus: tuple[int, ...] | None = None) -> list[float]:
    """The ``cpu MHz`` of each processor block of ``/proc/cpuinfo`` (those in ``cpus``)."""
    out = []
    for block in text.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "cpu MHz" not in fields:
            continue
        processor = fields.get("processor", "")
        if cpus is not None and processor.isdigit() and int(processor) not in cpus:
            continue
        try:
            out.append(float(fields["cpu MHz"]))
        except ValueError:
            continue
    return out


def parse_pid_stat(text: str) -> tuple[int, int] | None:
    """(parent pid, CPU ticks) of a ``/proc/<pid>/stat`` line: its user and system time and
    those of the children it reaped. The command name may hold spaces and parentheses, so the
    fields are counted from its last ')'."""
    _, sep, rest = text.rpartition(")")
    if not sep:
        return None
    fields = rest.split()
    # After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
    try:
        return int(fields[1]), sum(int(fields[i]) for i in (11, 12, 13, 14))
    except (IndexError, ValueError):
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def counted_cpus() -> tuple[int, ...] | None:
    """The CPUs this process may run on (its affinity): other load elsewhere does not compete."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return tuple(sorted(os.sched_getaffinity(0)))


def cpu_mhz(cpus: tuple[int, ...] | None) -> dict[str, Any] | None:
    """Min, median and max current clock of ``cpus`` in MHz: cpufreq's ``scaling_cur_freq``
    where the kernel exposes it, else ``cpu MHz`` of /proc/cpuinfo; None where neither does."""
    values: list[float] = []
    source = None
    for n in cpus if cpus is not None else ():
        text = _read(SYS_CPU / f"cpu{n}" / "cpufreq" / "scaling_cur_freq")
        if text is not None and text.strip().isdigit():
            values.append(int(text) / 1000.0)  # kHz
    if values:
        source = "scaling_cur_freq"
    else:
        text = _read(PROC / "cpuinfo")
        values = parse_cpuinfo_mhz(text, cpus) if text else []
        source = "/proc/cpuinfo"
    if not values:
        return None
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "source": source,
    }


def descendants_cpu_seconds(pid: int | None = None) -> float:
    """CPU seconds of the live processes below ``pid`` (this one): children that ``getrusage``
    does not count yet, because nobody has reaped them (a DataLoader's persistent workers)."""
    pid = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    try:
        entries = [e for e in os.listdir(PROC) if e.isdigit()]
    except OSError:
        return 0.0
    for entry in entries:
        text = _read(PROC / entry / "stat")
        parsed = parse_pid_stat(text) if text else None
        if parsed is not None:
            children.setdefault(parsed[0], []).append(int(entry))
            ticks[int(entry)] = parsed[1]
    total, stack = 0, list(children.get(pid, []))
    while stack:
        child = stack.pop()
        total += ticks.get(child, 0)
        stack.extend(children.get(child, []))
    return total / clock_ticks_per_second()


def own_cpu_seconds() -> float | None:
    """User + system CPU seconds of this process and every process it started, reaped or not."""
    if resource is None:
        return None
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage) + descendants_cpu_seconds()


@dataclass(frozen=True)
class Reading:
    """The machine and this process tree at one moment."""

    monotonic: float
    epoch: float
    jiffies: CpuJiffies | None
    own_cpu_seconds: float | None
    loadavg: list[float] | None
    cpu_mhz: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        jiffies = self.jiffies
        return {
            "time": self.epoch,
            "loadavg": self.loadavg,
            "cpu_mhz": self.cpu_mhz,
            "busy_jiffies": jiffies.busy if jiffies else None,
            "steal_jiffies": jiffies.steal if jiffies else None,
            "total_jiffies": jiffies.total if jiffies else None,
            "own_cpu_seconds": None
            if self.own_cpu_seconds is None
            else round(self.own_cpu_seconds, 4),
        }


def read(cpus: tuple[int, ...] | None) -> Reading:
    own = own_cpu_seconds()
    stat = _read(PROC / "stat")
    loadavg = _read(PROC / "loadavg")
    return Reading(
        monotonic=time.monotonic(),
        epoch=time.time(),
        jiffies=parse_proc_stat(stat, cpus) if stat else None,
        own_cpu_seconds=own,
        loadavg=parse_loadavg(loadavg) if loadavg else None,
        cpu_mhz=cpu_mhz(cpus),
    )


def between(first: Reading, last: Reading) -> dict[str, Any]:
    """What other processes did on the counted CPUs from ``first`` to ``last``: busy seconds,
    in cores on average, and the steal share of the CPUs' time (None where unreadable)."""
    wall = last.monotonic - first.monotonic
    out: dict[str, Any] = {
        "wall_seconds": round(wall, 4),
        "busy_seconds": None,
        "own_cpu_seconds": None,
        "other_busy_seconds": None,
        "other_load_cores": None,
        "steal_seconds": None,
        "steal_fraction": None,
    }
    a, b = first.jiffies, last.jiffies
    if a is None or b is None or wall <= 0:
        return out
    hz = clock_ticks_per_second()
    busy = (b.busy - a.busy) / hz
    total = b.total - a.total
    out["busy_seconds"] = round(busy, 4)
    out["steal_seconds"] = round((b.steal - a.steal) / hz, 4)
    out["steal_fraction"] = round((b.steal - a.steal) / total, 5) if total > 0 else None
    if first.own_cpu_seconds is not None and last.own_cpu_seconds is not None:
        own = last.own_cpu_seconds - first.own_cpu_seconds
        # Tick-sampled busy time against exact own time: a quiet job reads a few hundredths of
        # a core either side of 0; kept as read (a negative value shows that resolution).
        out["own_cpu_seconds"] = round(own, 4)
        out["other_busy_seconds"] = round(busy - own, 4)
        out["other_load_cores"] = round((busy - own) / wall, 4)
    return out


@dataclass(frozen=True)
class Snapshot:
    """A job's start: the reading its span begins with, the CPUs it counts, and what the short
    sample before it (its process asleep) read of the others' load (None where not taken)."""

    reading: Reading
    cpus: tuple[int, ...] | None
    pre_start: dict[str, Any] | None = None


def start(sample_seconds: float = 0.0) -> Snapshot:
    """Read the machine at a job's start; with ``sample_seconds`` first sleep that long and
    record what the others did meanwhile (the job's span starts after the sample)."""
    cpus = counted_cpus()
    first = read(cpus)
    if sample_seconds <= 0:
        return Snapshot(first, cpus)
    time.sleep(sample_seconds)
    last = read(cpus)
    sample = between(first, last)
    pre_start = {key: sample[key] for key in ("wall_seconds", "other_load_cores", "steal_fraction")}
    pre_start["loadavg"] = first.loadavg
    return Snapshot(last, cpus, pre_start)


def finish(snapshot: Snapshot) -> dict[str, Any]:
    """The ``quietness`` block of a job's result file: both readings, the pre-start sample and
    what other processes did on the job's CPUs over its span."""
    last = read(snapshot.cpus)
    cpus = len(snapshot.cpus) if snapshot.cpus else os.cpu_count()
    before, after = snapshot.reading.cpu_mhz, last.cpu_mhz
    clock_change = (
        round(after["max"] / before["max"] - 1.0, 4)
        if before and after and before["max"] > 0
        else None
    )
    return {
        "source": "linux /proc" if snapshot.reading.jiffies is not None else None,
        "cpus": cpus,
        "cpu_ids": list(snapshot.cpus) if snapshot.cpus else None,
        "clock_ticks_per_second": clock_ticks_per_second(),
        "start": snapshot.reading.to_dict(),
        "end": last.to_dict(),
        "pre_start": snapshot.pre_start,
        **between(snapshot.reading, last),
        # The fastest counted CPU's clock at the end against the start (cpu_mhz max).
        "cpu_mhz_max_change": clock_change,
    }


def verdict(block: dict[str, Any] | None) -> tuple[bool | None, str]:
    """(under load, why) of a job from its ``quietness`` block, by the thresholds of
    augbench.policy; (None, "") where the block is missing, too short or unreadable."""
    if not isinstance(block, dict):
        return None, ""
    wall = block.get("wall_seconds")
    other, steal = block.get("other_load_cores"), block.get("steal_fraction")
    if wall is None or wall < QUIETNESS_MIN_WALL_SECONDS or other is None:
        return None, ""
    cpus = block.get("cpus") or 1
    limit = UNDER_LOAD_OTHER_CORES_FRACTION * cpus
    reasons = []
    if other > limit:
        reasons.append(
            f"other processes used {other:.2f} cores on average (> {limit:.2f}: "
            f"{UNDER_LOAD_OTHER_CORES_FRACTION:.1%} of {cpus} cores)"
        )
    if steal is not None and steal > UNDER_LOAD_STEAL_FRACTION:
        reasons.append(f"steal {steal:.1%} of CPU time (> {UNDER_LOAD_STEAL_FRACTION:.0%})")
    change = block.get("cpu_mhz_max_change")
    if change is not None and change < -UNDER_LOAD_CLOCK_DROP:
        reasons.append(f"CPU clock {change:.0%} from start to end (< -{UNDER_LOAD_CLOCK_DROP:.0%})")
    return bool(reasons), "; ".join(reasons)


# -- the start of an engine's jobs -------------------------------------------------------------
_engine_start: Snapshot | None = None


def launched_as_engine(argv: list[str] | None = None) -> bool:
    """True in a process started as ``python -m augbench.measuring.engines.<engine>`` (the
    workflow's jobs), not in the driver, the tests, pyperf's workers or multiprocessing's
    children."""
    argv = list(getattr(sys, "orig_argv", []) if argv is None else argv)
    for i, word in enumerate(argv[:-1]):
        if word == "-m":
            return argv[i + 1].startswith(ENGINE_PACKAGE)
    return False


def engine_process_started() -> None:
    """Take the engine process's start snapshot, with the pre-start sample, where this process
    is an engine (once; augbench.measuring.engines calls it on import)."""
    global _engine_start
    if _engine_start is None and launched_as_engine():
        _engine_start = start(QUIETNESS_PRESTART_SECONDS)


def claim_engine_start() -> Snapshot | None:
    """The engine process's start snapshot, for its first job only (None after that, and in a
    process that is not an engine)."""
    global _engine_start
    snapshot, _engine_start = _engine_start, None
    return snapshot


def job_start() -> Snapshot:
    """The start of a job: the engine process's start for its first job (an engine that sets
    its job up late still counts from its start), else now: the later settings of a process
    that measures several, and engines run in-process (tests). Only the process's start is
    sampled: a sample costs its length of wall time, paid once per engine process."""
    return claim_engine_start() or start(0.0)
