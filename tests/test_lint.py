"""Static checks that CI must keep clean: snakemake --lint, snakefmt, ruff."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import snakemake_runner

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def test_snakemake_lint_is_clean() -> None:
    proc = snakemake_runner.run(["--lint", "--config", "preset=smoke"], REPO)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Congratulations, your workflow is in a good condition!" in out, out


def test_snakefmt_check() -> None:
    proc = _run(str(BIN / "snakefmt"), "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_check_and_format() -> None:
    lint = _run(str(BIN / "ruff"), "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
