"""Shared fixtures. The workflow fixture runs the real Snakemake workflow once per session at the
smoke preset, in a scratch working directory, with the repository's library envs (built there on
first use: uv hardlinks from its cache, so later runs spend seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


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


def raw_dir(workdir: Path, machine: str, regime: str) -> Path:
    """Raw results of one regime, below the only dataset key measured in ``workdir``."""
    keys = sorted(p for p in (workdir / "results/raw" / machine).glob("*") if p.is_dir())
    if len(keys) != 1:
        raise AssertionError(f"expected one dataset key under results/raw/{machine}, got {keys}")
    return keys[0] / regime


def run_snakemake(
    workdir: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        *SNAKEMAKE,
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir),
        "--workflow-profile", str(REPO / "profiles" / "default"),
        *args,
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=workdir
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


SMOKE_CONFIG = (
    "--config",
    "preset=smoke",
    "machine=smoke-test",
    f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
    "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
    "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]",
)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> WorkflowRun:
    workdir = tmp_path_factory.mktemp("smoke")
    proc = run_snakemake(workdir, "--cores", "2", *SMOKE_CONFIG)
    return WorkflowRun(workdir, "smoke-test", proc.returncode, proc.stdout + proc.stderr)
