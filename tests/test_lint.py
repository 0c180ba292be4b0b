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


def test_rules_that_read_results_rerun_when_the_package_changes() -> None:
    """Snakemake reruns a rule when its script changes, not when what the script imports does:
    every rule whose script imports augbench.analysis or the cost model takes the package's
    fingerprint as a parameter, so new analysis code redraws tables and figures from the same
    results, and a new cost model prices the sweep again."""
    import re

    imports_analysis = re.compile(
        r"augbench\.analysis|from augbench(\.planning)? import (analysis|[\w, ]*\bcost\b)"
    )
    readers = {
        path.name
        for path in (REPO / "workflow/scripts").glob("*.py")
        if imports_analysis.search(path.read_text())
    }
    assert readers, "no script imports augbench.analysis"
    found = set()
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        for block in re.split(r"\n(?=rule \w+:)", smk.read_text()):
            script = re.search(r'script:\s*\n\s*"\.\./scripts/(\w+\.py)"', block)
            if script and script.group(1) in readers:
                found.add(script.group(1))
                assert "analysis_code=ANALYSIS_CODE" in block, block.splitlines()[0]
    assert found == readers
