"""The coverage simulation (tools/checks/coverage_simulation.py), run small: the decision rule's
intervals hold the truth at least as often as their achieved level says, within the
simulation's error, and A/A margins are called at most as often as the level allows."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from conftest import REPO

TOOL = REPO / "tools" / "checks" / "coverage_simulation.py"
# Standard errors of slack: the simulation is seeded, so this is a fixed allowance, not a retry.
SLACK = 3.0
# The ratio's interval assumes one shape shifted; this model breaks that on purpose.
SHIFT_MODELS = ("lognormal", "heavy-tailed", "slow-processes")


def test_coverage_reaches_the_achieved_level(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    run = subprocess.run(
        [sys.executable, str(TOOL), "--simulations", "300", "--seed", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "median_coverage" in run.stdout.splitlines()[0]
    rows = list(csv.DictReader((out / "coverage.csv").open()))
    assert {r["model"] for r in rows} == {*SHIFT_MODELS, "unequal-spread"}
    assert sorted({int(r["processes"]) for r in rows}) == [3, 4, 5, 6, 7, 8]
    for r in rows:
        f = {k: float(v) for k, v in r.items() if k != "model" and v != ""}
        where = f"{r['model']} with {r['processes']} processes"
        assert f["median_coverage"] >= f["median_level"] - SLACK * f["median_coverage_se"], where
        if r["model"] in SHIFT_MODELS:
            assert f["ratio_coverage"] >= f["ratio_level"] - SLACK * f["ratio_coverage_se"], where
            allowed = 1.0 - f["ratio_level"] + SLACK * f["aa_false_calls_se"]
            assert f["aa_false_calls"] <= allowed, where
    readme = (out / "README.md").read_text()
    assert "Commit:" in readme and "--simulations 300" in readme


def test_bad_arguments_are_one_line() -> None:
    run = subprocess.run(
        [sys.executable, str(TOOL), "--simulations", "0"], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "--simulations must be at least 1, got 0" in run.stderr
