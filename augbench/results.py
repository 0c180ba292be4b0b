"""Result files: one JSON per benchmark job, in the common augmentation-benchmark format.

``{"metadata": {...}, "results": {"<transform or recipe>": {row}}}``, declared in
augbench.result_format (field names, schema, version). Rows always carry a ``status`` (ok |
early_stopped | unsupported | skipped | error | env_failed) and a ``reason`` when not ok, so nothing
is silently dropped. Files are checked against the schema's requirements before they are written
(:func:`write_result_file`) and written atomically: a killed job leaves no file that looks complete.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from augbench import result_format
from augbench.intervals import median_interval, process_median_interval
from augbench.policy import CV_UNSTABLE_THRESHOLD, RELATIVE_CI_TARGET
from augbench.result_format import MEDIAN_THROUGHPUT, SCHEMA_VERSION


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; the CPU count where the platform has
    none): what a job may use, what worker counts are capped at, what the plan prices for."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def system_info() -> dict[str, Any]:
    return {
        "python_version": sys.version,
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "system": platform.system(),
        "machine": platform.machine(),
        "processor": cpu_model(),
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_total_bytes": memory_total_bytes(),
        "timestamp": datetime.now(UTC).isoformat(),
    }


def summarize_throughputs(
    throughputs: list[float],
    times: list[float],
    groups: list[list[float]] | None = None,
) -> dict[str, Any]:
    """Median with the interval of the median (augbench.intervals; ``groups``: the throughputs
    split by the process that measured them, where a row has several), mean, sd and CV of
    repeated throughputs; every repeated value is kept."""
    n = len(throughputs)
    mean = statistics.fmean(throughputs)
    std = statistics.stdev(throughputs) if n > 1 else 0.0
    cv = std / mean if mean > 0 else float("nan")
    interval = process_median_interval(groups) if groups else median_interval(throughputs)
    return {
        "throughputs": throughputs,
        MEDIAN_THROUGHPUT: statistics.median(throughputs),
        **interval.fields(),
        "mean_throughput": mean,
        "std_throughput": std,
        "cv_throughput": cv,
        "times": times,
        "mean_time": statistics.fmean(times),
        "std_time": statistics.stdev(times) if n > 1 else 0.0,
        "num_successful_runs": n,
        "variance_stable": bool(cv <= CV_UNSTABLE_THRESHOLD),
        # The wider side of the median's interval over the median (augbench.measuring.stopping).
        "relative_ci": interval.relative_half_width,
        "relative_ci_target": RELATIVE_CI_TARGET,
    }


def ok_row(
    throughputs: list[float],
    times: list[float],
    *,
    warmup_iterations: int,
    groups: list[list[float]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    row: dict[str, Any] = {"status": "ok", "supported": True, "early_stopped": False}
    row.update(summarize_throughputs(throughputs, times, groups))
    row["warmup_iterations"] = warmup_iterations
    row.update(extra)
    return row


def non_ok_row(status: str, reason: str, **extra: Any) -> dict[str, Any]:
    """A row for early_stopped / unsupported / skipped / error, with its reason kept."""
    if status == "ok":
        raise ValueError("use ok_row for measured rows")
    row: dict[str, Any] = {
        "status": status,
        "supported": status != "unsupported",
        "early_stopped": status == "early_stopped",
        "reason": reason,
        "throughputs": [],
        "times": [],
        "num_successful_runs": 0,
    }
    if status == "early_stopped":
        row["early_stop_reason"] = reason
    row.update(extra)
    return row


def status_line(label: str, name: str, row: dict[str, Any]) -> str:
    """The one-line summary a job prints per row: status, median img/s when ok, reason if any."""
    return (
        f"{label} | {name}: {row['status']}"
        + (f" {row[MEDIAN_THROUGHPUT]:.1f} img/s" if row["status"] == "ok" else "")
        + (f" ({row['reason']})" if row.get("reason") else "")
    )


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, indent=2, sort_keys=False, default=json_default)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table_atomic(frame: Any, path: str | Path) -> None:
    """A CSV table (pandas frame) written like a result file: a hidden temporary file in the same
    folder (one fixed name, so a killed writer leaves one leftover that the next write replaces),
    fsync, rename. A reader sees the previous table or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", newline="") as fh:
            frame.to_csv(fh, index=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def json_default(obj: Any) -> Any:
    """What a result holds that JSON lacks: paths, numpy scalars, tuples and sets."""
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, tuple | set):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def result_file(metadata: dict[str, Any], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The payload of a result file: the metadata stamped with the schema's version."""
    metadata = {result_format.SCHEMA_VERSION_FIELD: SCHEMA_VERSION, **metadata}
    return {result_format.METADATA: metadata, result_format.RESULTS: results}


def write_result_file(
    path: Path, metadata: dict[str, Any], results: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A result file, checked against what the schema requires (augbench.result_format.check:
    pure Python, so it runs in every library env) and only then written atomically; a payload
    that fails raises ResultFormatError naming the file and the field, and no file is written.
    Returns the payload."""
    payload = result_file(metadata, results)
    # What a reader will load (numpy scalars, tuples and paths as JSON has them), checked.
    result_format.check(json.loads(json.dumps(payload, default=json_default)), path)
    write_json_atomic(path, payload)
    return payload
