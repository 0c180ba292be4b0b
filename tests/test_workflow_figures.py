"""Figures, report, summary, plot-from-existing and regression compare on real smoke results."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, SMOKE_CONFIG, WorkflowRun, copy_of

from augbench.analysis.figures import NAMES, plan
from augbench.analysis.groups import read_table

pytestmark = pytest.mark.workflow

FIXTURES = Path(__file__).parent / "fixtures"


def _rules_in_dry_run(run: WorkflowRun, targets: list[str], *config: str) -> set[str]:
    # --quiet and --until take several values: targets first, then flags, then --config.
    proc = run.snakemake(*targets, "-n", "--quiet", "rules", *config)
    out = proc.stdout + proc.stderr
    table = out.split("Job stats:")[-1] if "Job stats:" in out else ""
    rules = set()
    for line in table.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in {"job", "total"}:
            rules.add(parts[0])
    return rules


def test_every_figure_is_written_with_its_caption(smoke_run: WorkflowRun) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]
    figures = smoke_run.workdir / "results/figures"
    # Every family with rows to show is drawn; the others are listed, with why, in skipped.txt
    # (without CUDA or a resolution sweep: the GPU regimes' stability, throughput by resolution).
    planned = plan(read_table(smoke_run.workdir / "results/tables/all_results.csv"))
    assert set(planned.drawn) | {name for name, _ in planned.skipped} == set(NAMES)
    assert {"throughput_micro", "throughput_gpu_dataloader", "coverage"} <= set(planned.drawn)
    skipped = (figures / "skipped.txt").read_text()
    for name, _ in planned.skipped:
        assert name in skipped and not (figures / f"{name}.png").exists(), name
    for name in planned.drawn:
        assert (figures / f"{name}.png").stat().st_size > 1000, name
        assert (figures / f"{name}.pdf").read_bytes().startswith(b"%PDF"), name
        assert (figures / f"{name}.caption.txt").read_text().strip(), name
    micro = (figures / "throughput_micro.caption.txt").read_text()
    assert "Regime: micro." in micro and "Hardware: smoke-test" in micro
    assert "3 transforms (ColorJitter, GaussianBlur, HorizontalFlip)" in micro
    assert "12 images per measurement" in micro
    # The smoke run has every regime, so every regime's figure has rows (the empty-input figure
    # is covered by the synthetic tests in test_figures.py).
    for regime in ("cpu_dataloader", "gpu_dataloader", "dali"):
        caption = (figures / f"throughput_{regime}.caption.txt").read_text()
        assert f"Regime: {regime}." in caption
        assert f"No {regime} rows in these results." not in caption
    summary = (smoke_run.workdir / "results/analysis/summary.md").read_text()
    assert "## smoke-test: micro" in summary and "| pillow | " in summary
    assert "wins / contested" in summary
    diag = pd.read_csv(smoke_run.workdir / "results/analysis/diagnostics.csv")
    tidy = pd.read_csv(smoke_run.workdir / "results/tables/all_results.csv")
    assert len(diag) == (tidy["status"] == "ok").sum()  # one diagnostics row per ok row


def test_report_renders_with_figures_captions_and_speedup_tables(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    run = copy_of(smoke_run, tmp_path / "run")
    report = run.workdir / "report.html"
    run.snakemake("--report", str(report), *SMOKE_CONFIG)
    text = report.read_text()
    assert "winners_by_regime.png" in text and "throughput_micro.png" in text
    assert "Transforms won per library, by regime. Regimes: micro, cpu_dataloader" in text
    assert "speedups.html" in text and "summary.md" in text


def test_plots_from_existing_and_external_results_runs_no_benchmark(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    run = copy_of(smoke_run, tmp_path / "run")
    external = FIXTURES / "external-results"
    config = (*SMOKE_CONFIG, f"plot_from={{'mixed': ['{external}', 'results/raw']}}")
    assert _rules_in_dry_run(run, ["plots"], *config) == {
        "collect_results", "draw_figures", "speedup_report", "summary", "plots",
    }  # fmt: skip
    run.snakemake("--cores", "2", "plots", *config)
    root = run.workdir / "results/plots/mixed"
    table = pd.read_csv(root / "tables/all_results.csv")
    assert set(table["machine"]) == {"smoke-test", "external-darwin-arm64-arm-16cpu"}
    assert (root / "figures/throughput_micro.png").exists()
    summary = (root / "analysis/summary.md").read_text()
    assert (
        "## smoke-test: micro" in summary and "## external-darwin-arm64-arm-16cpu: micro" in summary
    )
    # A missing source is a clear error naming it.
    bad = (*SMOKE_CONFIG, "plot_from={'gone': ['no/such/folder']}")
    proc = run.snakemake("-n", "plots", *bad, check=False)
    assert proc.returncode != 0
    assert "no/such/folder" in proc.stdout + proc.stderr


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    script = REPO / "tools/reports/compare_results.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)


def test_compare_two_result_folders_lists_changed_rows(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    base = smoke_run.workdir / "results/raw"
    new = tmp_path / "raw"
    shutil.copytree(base, new)
    # A second run where albumentationsx's ColorJitter became 30% slower.
    path = next(new.glob("smoke-test/*/micro/albumentationsx/s000.json"))  # <machine>/<dataset>/
    payload = json.loads(path.read_text())
    row = payload["results"]["ColorJitter"]
    row["throughputs"] = [t * 0.7 for t in row["throughputs"]]
    for key in ("median_throughput", "mean_throughput", "std_throughput"):
        row[key] *= 0.7
    path.write_text(json.dumps(payload))

    same = _compare(str(base), str(base), "--fail-on-regression")
    assert same.returncode == 0 and "no row changed" in same.stdout
    out_csv = tmp_path / "rows.csv"
    changed = _compare(str(base), str(new), "--output", str(out_csv))
    assert changed.returncode == 0, changed.stderr
    assert "| albumentationsx | ColorJitter |" in changed.stdout
    assert "-30.0%" in changed.stdout and "1 regression(s)" in changed.stdout
    assert "HorizontalFlip" not in changed.stdout
    tidy = pd.read_csv(smoke_run.workdir / "results/tables/all_results.csv")
    assert len(pd.read_csv(out_csv)) == len(tidy)  # every row of the base set is compared
    failing = _compare(str(base), str(new), "--fail-on-regression", "--threshold", "0.1")
    assert failing.returncode == 1
    assert (
        _compare(str(base), str(new), "--threshold", "0.5", "--fail-on-regression").returncode == 0
    )
    other = _compare(str(base), str(FIXTURES / "external-results"))
    assert other.returncode == 2 and "--cross-machine" in other.stderr
    cross = _compare(str(base), str(FIXTURES / "external-results"), "--cross-machine")
    assert cross.returncode == 0 and "only_in_new" in cross.stdout
