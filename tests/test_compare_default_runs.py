"""tools/checks/compare_default_runs.py on fabricated runs (a comparison tool, not a measurement)
and on two committed answer tables: each check holds or fails as the rows say, with its exit
status, and a folder it cannot read is one line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO
from synthetic import row

TOOL = REPO / "tools" / "checks" / "compare_default_runs.py"
COMMITTED = REPO / "docs" / "results" / "amd-epyc-2c"


def loader_row(pipeline: str, library: str, processes: list[float], **extra: object) -> dict:
    """A pipeline's end-to-end DataLoader row measured by one fresh process per value."""
    groups = [[v * 0.99, v * 1.01] for v in processes]
    return row(
        regime="cpu_dataloader",
        scope="decode",
        workers=2,
        batch_size=32,
        transform=pipeline,
        variant="pipeline",
        pipeline=pipeline,
        library=library,
        median_throughput=sorted(processes)[len(processes) // 2],
        throughputs=json.dumps([v for g in groups for v in g]),
        throughputs_by_process=json.dumps(groups),
        under_load=False,
        **extra,
    )


def write_run(folder: Path, rates: dict[tuple[str, str], list[float]]) -> Path:
    folder.mkdir(parents=True)
    rows = [loader_row(p, lib, values) for (p, lib), values in rates.items()]
    pd.DataFrame(rows).to_csv(folder / "pipeline_results.csv", index=False)
    return folder


def run_tool(a: Path, b: Path, out: Path) -> tuple[int, str, list[dict[str, str]]]:
    done = subprocess.run(
        [sys.executable, str(TOOL), str(a), str(b), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    table = list(csv.DictReader(out.open())) if out.exists() else []
    return done.returncode, done.stdout + done.stderr, table


FAST = [900.0, 910.0, 920.0, 905.0, 915.0]
SLOW = [600.0, 610.0, 590.0, 605.0, 595.0]


def test_two_runs_that_agree_pass_every_check(tmp_path: Path) -> None:
    rates = {("train_heavy", "albumentationsx"): FAST, ("train_heavy", "torchvision"): SLOW}
    a = write_run(tmp_path / "a", rates)
    b = write_run(tmp_path / "b", {k: [v * 1.05 for v in vs] for k, vs in rates.items()})
    code, text, table = run_tool(a, b, tmp_path / "out.csv")
    assert code == 0, text
    for check in ("level_ok", "margin_decided", "no_contradiction", "repeats"):
        assert f"{check}: holds" in text
    margin = next(r for r in table if r["kind"] == "margin")
    assert margin["a_winner"] == margin["b_winner"] == "albumentationsx"
    assert margin["a_verdict"] == margin["b_verdict"] == "faster"
    assert float(margin["a_margin_level"]) >= 0.9
    rows = [r for r in table if r["kind"] == "row"]
    assert {r["library"] for r in rows} == {"albumentationsx", "torchvision"}
    assert all(float(r["a_level"]) == 0.9375 and float(r["a_processes"]) == 5 for r in rows)


def test_a_flipped_decided_winner_and_too_few_processes_fail(tmp_path: Path) -> None:
    a = write_run(
        tmp_path / "a",
        {("train_light", "albumentationsx"): FAST, ("train_light", "torchvision"): SLOW},
    )
    b = write_run(
        tmp_path / "b",
        {("train_light", "albumentationsx"): SLOW, ("train_light", "torchvision"): FAST},
    )
    code, text, table = run_tool(a, b, tmp_path / "out.csv")
    assert code == 1
    assert "no_contradiction: FAILS" in text and "margin_decided: FAILS" in text
    assert "repeats: FAILS" in text
    margin = next(r for r in table if r["kind"] == "margin")
    assert "decided winners differ: a albumentationsx, b torchvision" in margin["why"]
    assert "run b decides torchvision faster than albumentationsx" in margin["why"]
    few = write_run(
        tmp_path / "few",
        {("train_light", "albumentationsx"): FAST[:3], ("train_light", "torchvision"): SLOW[:3]},
    )
    code, text, _ = run_tool(a, few, tmp_path / "few.csv")
    assert code == 1 and "level_ok: FAILS" in text and "no_contradiction: holds" in text


def test_committed_answer_tables_are_compared_as_written(tmp_path: Path) -> None:
    code, text, table = run_tool(
        COMMITTED / "2026-11-26-default-run-5",
        COMMITTED / "2026-11-27-default-run-runs-3",
        tmp_path / "out.csv",
    )
    assert code == 1  # the older runs rank from intervals below the level
    assert "level_ok: FAILS" in text
    margins = {r["pipeline"]: r for r in table if r["kind"] == "margin"}
    assert margins["train_light"]["b_verdict"] == "no clear winner"  # the table's "tie"
    assert margins["train_medium"]["a_verdict"] == "not decided"  # "undecided"


def test_a_folder_without_rows_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, text, _ = run_tool(tmp_path / "empty", tmp_path / "missing", tmp_path / "out.csv")
    assert code == 2
    assert text.strip().count("\n") == 0 and "no tidy pipeline rows" in text


def test_answer_tables_the_page_writes_are_read(tmp_path: Path) -> None:
    """A folder with only the page's recommendation.csv: each library's interval from its
    ``libraries`` column, the winner's margin and verdict."""
    from augbench.analysis import recommendation
    from augbench.analysis.groups import normalized

    folders = []
    for side, scale in (("a", 1.0), ("b", 1.05)):
        rows = normalized(
            pd.DataFrame(
                [
                    loader_row("train_heavy", "albumentationsx", [v * scale for v in FAST]),
                    loader_row("train_heavy", "torchvision", [v * scale for v in SLOW]),
                ]
            )
        )
        pipelines = [{"name": "train_heavy", "yours": False}]
        answer = recommendation.recommend(rows, None, pipelines, None, {})
        (tmp_path / side).mkdir()
        answer.to_csv(tmp_path / side / "recommendation.csv", index=False)
        folders.append(tmp_path / side)
    code, text, table = run_tool(*folders, tmp_path / "out.csv")
    assert code == 0, text
    rows = {r["library"]: r for r in table if r["kind"] == "row"}
    assert float(rows["torchvision"]["a_level"]) == 0.9375
    assert float(rows["torchvision"]["b_low"]) == pytest.approx(590.0 * 1.05)
    margin = next(r for r in table if r["kind"] == "margin")
    assert margin["a_verdict"] == margin["b_verdict"] == "faster"
