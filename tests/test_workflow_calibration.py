"""The calibration target through the real workflow at smoke size: AlbumentationsX and its second
name measured in separate micro jobs (three pyperf processes per row, so that a pair's interval
reaches the decision level), then results/tables/calibration.csv from the run's own tables, and
the tool that publishes it (tools/checks/calibration.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, run_snakemake

from augbench import decision

pytestmark = pytest.mark.workflow

NAMES = ("albumentationsx", "albumentationsx~b")
TRANSFORMS = ("HorizontalFlip", "Grayscale")


@pytest.fixture(scope="module")
def calibration_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("calibration")
    run_snakemake(
        workdir, "--cores", "2", "calibration", "--config", "preset=smoke", "machine=smoke-test",
        f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}",
        f"libraries=[{','.join(NAMES)}]", "regimes=[micro]", "pipelines=[]",
        f"transforms=[{','.join(TRANSFORMS)}]",
        "micro={processes: 3, min_processes: 3, values: 2, warmups: 1, shard_size: 3}",
        f"calibration={{pairs: [[{','.join(NAMES)}]], regimes: [micro, cpu_dataloader]}}",
        "lazy_outputs={enabled: false}",  # not read here: the smoke run's tests check it
    )  # fmt: skip
    return workdir


def test_each_name_is_its_own_job_and_rows_in_the_base_env(calibration_run: Path) -> None:
    raw = sorted((calibration_run / "results/raw/smoke-test").glob("*/micro/*/*.json"))
    assert {p.parent.name for p in raw} == set(NAMES)
    for path in raw:
        meta = json.loads(path.read_text())["metadata"]
        assert meta["library"] == path.parent.name
        # The second name ran in the base library's venv, from its lock.
        assert "/.venvs/albumentationsx/" in meta["environment"]["python_executable"]
    # One env build: the base library's.
    assert [p.name for p in (calibration_run / "results/envs").glob("*.json")] == [
        "albumentationsx.json"
    ]
    tidy = pd.read_csv(calibration_run / "results/tables/all_results.csv")
    assert set(tidy["library"]) == set(NAMES)
    assert set(tidy["library_base"]) == {"albumentationsx"}


def test_the_table_counts_the_row_pairs_and_their_job_pairs(calibration_run: Path) -> None:
    table = pd.read_csv(calibration_run / "results/tables/calibration.csv")
    for column in ("regime", "pairs", "false_calls", "level", "false_call_rate", "passes"):
        assert column in table.columns
    assert {"machine", "job_pairs", "measured_pairs", "note"} <= set(table.columns)
    by = table.set_index("regime")
    assert list(by.index) == ["micro", "cpu_dataloader"]
    micro = by.loc["micro"]
    assert micro["measured_pairs"] == len(TRANSFORMS) and micro["job_pairs"] == 1
    # Three processes a side: 90 % achieved, every pair at the level.
    assert micro["pairs"] == len(TRANSFORMS) and micro["level"] == decision.DECISION_LEVEL
    assert micro["machine"] == "smoke-test"
    # Two pairs are fewer than the 20 a pass needs: said, and not passing.
    assert not micro["passes"] and f"{len(TRANSFORMS)} pairs" in micro["note"]
    empty = by.loc["cpu_dataloader"]
    assert empty["measured_pairs"] == 0 and not empty["passes"]
    pairs = pd.read_csv(calibration_run / "results/tables/calibration_pairs.csv")
    assert len(pairs) == len(TRANSFORMS)
    assert set(pairs["verdict"]) <= set(decision.VERDICTS)
    assert (pairs["achieved_level"] >= decision.DECISION_LEVEL).all()


def test_the_calibration_target_without_pairs_says_how_to_run_it(tmp_path: Path) -> None:
    proc = run_snakemake(tmp_path, "-n", "calibration", "--config", "machine=m", check=False)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.startswith("augbench:")]
    assert len(lines) == 1 and "--configfile config/calibration.yaml" in lines[0]


def test_the_publishing_tool_copies_the_runs_table(calibration_run: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    done = subprocess.run(
        [sys.executable, str(REPO / "tools/checks/calibration.py"),
         "--results", str(calibration_run / "results"), "--docs", str(docs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    folder = docs / "smoke-test"
    table = calibration_run / "results/tables/calibration.csv"
    assert (folder / "calibration.csv").read_text() == table.read_text()
    assert (folder / "calibration_pairs.csv").is_file()
    readme = (folder / "calibration.md").read_text()
    assert f"| micro | {len(TRANSFORMS)} | " in readme and "Commit:" in readme
    assert "micro: does not pass" in done.stdout
