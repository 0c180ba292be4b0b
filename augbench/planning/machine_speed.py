"""How fast this machine is now, against when a run measured its jobs.

A 2-core VM's speed moves through a day (neighbours, host load): the same env builds from the same
warm cache took 1.02 and 1.21 times their prediction in two runs a day apart on intel-xeon-2c.
A time model learned from a run prices another run at the speed of the first; the probe measures
the difference. A run that times jobs records a reading where it starts (``record``); an estimate
that prices this machine's jobs from an earlier run takes a reading now and scales that run's
seconds by now / then (``factor``). Readings are per machine label, so a run copied from another
machine moves nothing.

The reading times what every job spends its time on, with the driver's own packages: fresh
interpreters importing numpy and Pillow (a job's start) and JPEG decodes and resizes (its work).
"""

from __future__ import annotations

import csv
import io
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from augbench import paths, policy

# A reading of another probe version is not compared with this one's.
PROBE_VERSION = 1
COLUMNS = ("utc", "probe_version", "seconds", "start_s", "decode_s")


@dataclass(frozen=True)
class Reading:
    start_s: float  # the median fresh interpreter's start and imports, times the starts counted
    decode_s: float  # the median pass of decodes and resizes

    @property
    def seconds(self) -> float:
        return self.start_s + self.decode_s


def _jpeg() -> bytes:
    import numpy as np
    from PIL import Image

    pixels = (np.random.default_rng(0).random((512, 512, 3)) * 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def _decode_pass(data: bytes) -> float:
    import numpy as np
    from PIL import Image

    begin = time.perf_counter()
    for _ in range(policy.MACHINE_SPEED_DECODES):
        with Image.open(io.BytesIO(data)) as image:
            small = image.convert("RGB").resize((224, 224), Image.Resampling.BILINEAR)
        int(np.asarray(small).sum())  # the pixels are read, not only scheduled
    return time.perf_counter() - begin


def _start() -> float:
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy, PIL.Image"], check=True)
    return time.perf_counter() - begin


def probe() -> Reading:
    data = _jpeg()
    _decode_pass(data)  # warm: the first pass pays the codec's set-up
    repeats = policy.MACHINE_SPEED_REPEATS
    starts = [sum(_start() for _ in range(policy.MACHINE_SPEED_STARTS)) for _ in range(repeats)]
    decodes = [_decode_pass(data) for _ in range(repeats)]
    return Reading(statistics.median(starts), statistics.median(decodes))


def record_path(run_dir: Path, machine: str) -> Path:
    return run_dir / paths.MACHINE_SPEED.format(machine=machine)


def record(run_dir: Path, machine: str, reading: Reading | None = None) -> Reading:
    """Take a reading (unless given) and append it to the run's record for ``machine``."""
    reading = reading or probe()
    path = record_path(run_dir, machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        if new:
            out.writerow(COLUMNS)
        utc = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.writerow([
            utc, PROBE_VERSION, f"{reading.seconds:.4f}", f"{reading.start_s:.4f}",
            f"{reading.decode_s:.4f}",
        ])  # fmt: skip
    return reading


def recorded_seconds(run_dir: Path, machine: str) -> float | None:
    """The median reading of this probe version a run recorded for ``machine`` (None: none)."""
    path = record_path(run_dir, machine)
    if not path.is_file():
        return None
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    seconds = [
        float(row["seconds"])
        for row in rows
        if row.get("probe_version") == str(PROBE_VERSION) and row.get("seconds")
    ]
    return statistics.median(seconds) if seconds else None


@dataclass(frozen=True)
class Factor:
    """This machine's seconds now over its seconds when ``run_dir`` was measured."""

    value: float
    now_s: float
    then_s: float

    def line(self, run_dir: Path) -> str:
        return (
            f"probe {self.now_s:.2f} s now, {self.then_s:.2f} s when {run_dir} was measured: "
            f"its seconds on this machine x {self.value:.2f}"
        )


def factor(run_dir: Path, machine: str, reading: Reading | None = None) -> Factor | None:
    """None where the run is the current directory (its seconds are now's) or recorded no reading
    for this machine label."""
    if run_dir.resolve() == Path.cwd().resolve():
        return None
    then = recorded_seconds(run_dir, machine)
    if then is None or then <= 0:
        return None
    now = (reading or probe()).seconds
    return Factor(now / then, now, then)
