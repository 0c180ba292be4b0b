"""Is CUDA usable here? One answer for every GPU job (gpu_dataloader, dali) and the cloud checks.

Three inputs decide it, each read where it exists and injectable for tests:

* the NVIDIA driver version: ``/proc/driver/nvidia/version``, else ``nvidia-smi``, else NVML
  (``pynvml``); ``None`` when there is no driver at all;
* the CUDA runtime the measuring library was built for: ``torch.version.cuda`` in the torch
  envs, the CUDA major of the ``nvidia-dali-cuda1xy`` wheel in the DALI env;
* a live probe (device count and name, or the error CUDA initialisation raised).

The verdict is ``ok``, ``no_device`` (no driver or no GPU: rows are ``skipped: no CUDA device``)
or ``unusable`` (a driver is there but CUDA cannot run, e.g. the driver is older than the runtime
needs: rows are ``error`` rows that name the driver found, the runtime and what to do). With
config ``gpu: required`` a job whose verdict is not ``ok`` fails instead (:func:`require`).
"""

from __future__ import annotations

import re
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Verdict = Literal["ok", "no_device", "unusable"]
GPU_MODES: tuple[str, ...] = ("optional", "required")
SKIP_NO_CUDA = "no CUDA device"
PROC_VERSION = Path("/proc/driver/nvidia/version")

# Oldest Linux driver (major version) each CUDA runtime major runs on, with CUDA's minor-version
# compatibility (any 13.x runtime on a 580+ driver, any 12.x on 525+). Source: the CUDA Toolkit
# release notes, table "CUDA Toolkit and Minimum Required Driver Version" (13.0: >= 580.65.06,
# 12.x: >= 525.60.13, 11.x: >= 450.80.02).
MIN_DRIVER_MAJOR: dict[int, int] = {13: 580, 12: 525, 11: 450}


@dataclass(frozen=True)
class CudaEnv:
    verdict: Verdict
    reason: str
    driver_version: str | None
    driver_source: str | None
    cuda_runtime: str | None
    runtime_source: str
    min_driver: int | None
    device_count: int
    device_name: str | None

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def row_fields(self) -> dict[str, Any]:
        """Recorded on every GPU row, whatever its status."""
        return {
            "cuda_driver_version": self.driver_version,
            "cuda_runtime_version": self.cuda_runtime,
        }

    def unavailable_row(self) -> tuple[str, str]:
        """(status, reason) of a row that cannot run here: ``skipped`` or ``error``."""
        if self.verdict == "no_device":
            return "skipped", SKIP_NO_CUDA
        return "error", self.reason


def driver_major(version: str) -> int:
    match = re.match(r"\s*(\d+)", version)
    if match is None:
        raise ValueError(f"not an NVIDIA driver version: {version!r}")
    return int(match.group(1))


def runtime_major(runtime: str) -> int:
    return int(runtime.split(".")[0])


def _advice(min_driver: int | None) -> str:
    if min_driver is None:
        return "use a machine whose NVIDIA driver supports this CUDA runtime"
    return (
        f"install NVIDIA driver >= {min_driver} (e.g. a GPU VM image that ships one) or run on "
        "a machine that has it"
    )


def classify(
    driver_version: str | None,
    cuda_runtime: str | None,
    *,
    device_count: int = 0,
    device_name: str | None = None,
    init_error: str | None = None,
    driver_source: str | None = None,
    runtime_source: str = "torch.version.cuda",
) -> CudaEnv:
    """The verdict from what was found; pure logic, so every case is testable without a GPU."""
    min_driver = (
        MIN_DRIVER_MAJOR.get(runtime_major(cuda_runtime)) if cuda_runtime is not None else None
    )

    def env(verdict: Verdict, reason: str) -> CudaEnv:
        return CudaEnv(
            verdict=verdict,
            reason=reason,
            driver_version=driver_version,
            driver_source=driver_source,
            cuda_runtime=cuda_runtime,
            runtime_source=runtime_source,
            min_driver=min_driver,
            device_count=device_count,
            device_name=device_name,
        )

    if driver_version is None:
        return env(
            "no_device",
            f"{SKIP_NO_CUDA}: no NVIDIA driver found ({PROC_VERSION}, nvidia-smi, NVML)",
        )
    found = f"NVIDIA driver {driver_version}"
    if cuda_runtime is None:
        return env(
            "unusable",
            f"{found} present, but {runtime_source} is None: this build has no CUDA support; "
            "install the library's CUDA build (the locked envs/<library>.txt)",
        )
    if min_driver is not None and driver_major(driver_version) < min_driver:
        return env(
            "unusable",
            f"{found} is older than CUDA {cuda_runtime} ({runtime_source}) needs "
            f"(>= {min_driver}); {_advice(min_driver)}",
        )
    if init_error is not None:
        return env(
            "unusable",
            f"{found} present but CUDA {cuda_runtime} ({runtime_source}) failed to initialise: "
            f"{init_error}; {_advice(min_driver)}",
        )
    if device_count < 1:
        return env("no_device", f"{SKIP_NO_CUDA}: {found} present but no CUDA device visible")
    return env("ok", f"{device_count} CUDA device(s), {device_name}; {found}")


# -- reading the inputs on this machine -------------------------------------------------------
def driver_from_proc(text: str) -> str | None:
    """The version in /proc/driver/nvidia/version ("NVRM version: ... Kernel Module  580.65.06")."""
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def _nvidia_smi() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return lines[0] if out.returncode == 0 and lines else None


def _nvml() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no pynvml, no libnvidia-ml, no driver
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


def find_driver(proc_version: Path = PROC_VERSION) -> tuple[str | None, str | None]:
    """(driver version, where it was found), or (None, None) without a driver."""
    try:
        version = driver_from_proc(proc_version.read_text())
    except OSError:
        version = None
    if version:
        return version, str(proc_version)
    for source, read in (("nvidia-smi", _nvidia_smi), ("nvml", _nvml)):
        version = read()
        if version:
            return version, source
    return None, None


def has_driver() -> bool:
    """Whether this machine has an NVIDIA driver (:func:`find_driver`): without one no process
    here can create a CUDA context."""
    return find_driver()[0] is not None


Probe = Callable[[], tuple[int, str | None]]


def torch_probe() -> tuple[int, str | None]:
    """(device count, name of device 0); raises with torch's own message when CUDA cannot start."""
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    if not available:
        messages = [str(w.message) for w in caught if "CUDA" in str(w.message)]
        if messages:
            raise RuntimeError(" ".join(messages))
        return 0, None
    count = torch.cuda.device_count()
    return count, torch.cuda.get_device_name(0) if count else None


def detect(
    cuda_runtime: str | None,
    probe: Probe,
    *,
    runtime_source: str,
    driver: tuple[str | None, str | None] | None = None,
) -> CudaEnv:
    """Read the driver (unless given), run ``probe`` when a driver exists, and classify."""
    driver_version, driver_source = driver if driver is not None else find_driver()
    count, name, init_error = 0, None, None
    if driver_version is not None:
        try:
            count, name = probe()
        except Exception as exc:  # CUDA refused to start: the message is the evidence
            init_error = f"{type(exc).__name__}: {exc}"
    return classify(
        driver_version,
        cuda_runtime,
        device_count=count,
        device_name=name,
        init_error=init_error,
        driver_source=driver_source,
        runtime_source=runtime_source,
    )


def torch_build_info(package: Path | None = None) -> tuple[str, str | None] | None:
    """(torch version, ``torch.version.cuda``) read from ``version.py`` of the installed torch
    (or of the ``package`` folder) without importing torch (seconds on a small machine); None
    where that file is not there or not in the form torch writes (the caller imports torch)."""
    if package is None:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            return None
        package = Path(spec.origin).parent
    try:
        text = (package / "version.py").read_text()
    except OSError:
        return None
    version = re.search(r"^__version__\s*=\s*'([^']+)'", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*(?:'([^']+)'|None)\s*$", text, re.M)
    if version is None or cuda is None:
        return None
    return version.group(1), cuda.group(1)


def detect_torch() -> CudaEnv:
    """The verdict for a torch env. Without an NVIDIA driver no probe runs, so torch is not
    imported at all (its CUDA build is read from its files): a GPU job on a CPU-only machine
    writes its `skipped` rows in a fraction of a second instead of after a torch import."""
    driver = find_driver()
    build = torch_build_info() if driver[0] is None else None
    if build is None:
        import torch

        build = torch.__version__, torch.version.cuda
    version, cuda = build
    return detect(
        cuda,
        torch_probe,
        runtime_source=f"torch {version.split('+')[0]}, torch.version.cuda",
        driver=driver,
    )


def dali_runtime(distribution: str) -> str | None:
    """CUDA runtime of a DALI wheel from its name: nvidia-dali-cuda120 -> "12.0"."""
    match = re.search(r"cuda(\d{2,3})(\d)$", distribution)
    return f"{int(match.group(1))}.{match.group(2)}" if match else None


class CudaUnavailable(SystemExit):
    """Raised by :func:`require`; a SystemExit, so the job exits non-zero with the message."""


def require(env: CudaEnv, mode: str, job: str) -> None:
    """With ``gpu: required``, a GPU job where CUDA is not usable stops here (non-zero exit)."""
    if mode not in GPU_MODES:
        raise ValueError(f"gpu mode must be one of {GPU_MODES}, got {mode!r}")
    if mode == "required" and not env.ok:
        raise CudaUnavailable(
            f"{job}: config gpu=required, but CUDA is not usable on this machine "
            f"({env.verdict}): {env.reason}. Driver found: {env.driver_version or 'none'}; "
            f"CUDA runtime needed: {env.cuda_runtime} ({env.runtime_source}), driver >= "
            f"{env.min_driver}. What to do: run this job on a machine with an NVIDIA GPU and "
            f"driver >= {env.min_driver}, or set --config gpu=optional to write "
            "skipped/error rows instead."
        )
