"""Re-plotting and re-running on results that are already there, on the session's smoke run:
`--until figures` measures nothing (in a copy at another path, after an engine's file changed, on
a fresh clone), results moved with their checkout re-measure nothing, a run of one regime keeps
every other regime's rows in rebuilt tables, and measurements that wait on an env build run in
the same invocation as the build."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import snakemake_runner
from conftest import REPO, SMOKE_CONFIG, WorkflowRun, copy_of, run_snakemake

from augbench.planning import regimes

pytestmark = pytest.mark.workflow

# Rules that measure, or prepare a measurement: none may be planned by a re-plot.
MEASURING = {*regimes.KINDS, "build_env", "stage_dataset", "build_default_archive"}
ANALYSIS = {
    "aggregate", "lazy_outputs_table", "pipeline_tables", "pipeline_figure", "recommendation",
    "answer_html", "draw_figures", "speedup_report", "summary", "figures", "all",
}  # fmt: skip
# What a re-plot redoes once the tables and figures are gone.
DOWNSTREAM = {"aggregate", "draw_figures", "speedup_report", "summary", "figures"}
NO_RESULTS = "no results yet under results/raw/smoke-test"


def planned_rules(proc: subprocess.CompletedProcess[str]) -> set[str]:
    """The rules of a dry run's job stats (empty where nothing is to be done)."""
    out = proc.stdout + proc.stderr
    if "Job stats:" not in out:
        return set()
    rules = set()
    for line in out.split("Job stats:")[-1].splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in {"job", "total"}:
            rules.add(parts[0])
    return rules


def test_until_figures_in_a_copy_elsewhere_after_an_engine_change_measures_nothing(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    """Only the tables and figures are redone (the ones deleted here), with the raw results
    untouched, in a copy at another path and with an engine's file newer than every result."""
    run = copy_of(smoke_run, tmp_path / "pulled" / "from-the-cluster")
    work = run.workdir
    raw = {p: p.stat().st_mtime_ns for p in (work / "results/raw").rglob("*.json")}
    shutil.rmtree(work / "results/figures")  # something for the re-plot to redo
    (work / "results/tables/all_results.csv").unlink()
    engine = REPO / "augbench/measuring/engines/micro.py"
    before = engine.stat()
    try:
        os.utime(engine)  # the engine's file is newer than every result
        for targets in (["--until", "figures"], ["figures"]):
            proc = run.snakemake(*targets, "-n", "--quiet", "rules", *SMOKE_CONFIG)
            assert planned_rules(proc) == DOWNSTREAM, planned_rules(proc)
            assert "tables and figures from the" in proc.stderr
        run.snakemake("--cores", "2", "--until", "figures", *SMOKE_CONFIG)
    finally:
        os.utime(engine, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert {p: p.stat().st_mtime_ns for p in raw} == raw
    tidy = pd.read_csv(work / "results/tables/all_results.csv")
    assert set(tidy["regime"]) == {"micro", "cpu_dataloader", "gpu_dataloader", "dali"}
    for figure in ("throughput_micro", "winners_by_regime"):
        assert (work / f"results/figures/{figure}.png").exists()
    # Nothing is out of date now, for a plain run of the same config either.
    again = run.snakemake("-n", "--cores", "2", *SMOKE_CONFIG)
    assert planned_rules(again) == set(), again.stdout[-3000:]


def test_until_figures_on_a_fresh_clone_says_what_to_run(tmp_path: Path) -> None:
    for targets in (["--until", "figures"], ["figures"]):
        for dry in (["-n"], ["--cores", "1"]):
            proc = run_snakemake(tmp_path, *targets, *dry, *SMOKE_CONFIG, check=False)
            lines = [line for line in proc.stderr.splitlines() if line.startswith("augbench:")]
            assert proc.returncode == 1, proc.stderr[-3000:]
            assert len(lines) == 1 and NO_RESULTS in lines[0], proc.stderr[-3000:]
            assert "snakemake --cores" in lines[0] and "Traceback" not in proc.stderr
            assert planned_rules(proc) == set()
    assert not (tmp_path / "results").exists()


def test_until_figures_with_partial_results_lists_what_is_missing(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    run = copy_of(smoke_run, tmp_path / "run")
    shutil.rmtree(next((run.workdir / "results/raw/smoke-test").glob("*/dali")))
    proc = run.snakemake("--until", "figures", "-n", "--quiet", "rules", *SMOKE_CONFIG)
    assert planned_rules(proc) <= ANALYSIS
    line = next(x for x in proc.stderr.splitlines() if "tables and figures from the" in x)
    assert "are not measured yet" in line and "dali: " in line and "(dali)" in line
    assert "micro" not in line.split("not measured yet")[1]


def _tracked_checkout(dest: Path) -> Path:
    """The repository's files (tracked, and new ones git does not ignore) at another path."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def test_results_moved_with_their_checkout_re_measure_nothing(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    """The checkout and its results at another path (a run brought back from a cluster): a plain
    run of the same config plans no job, and no rule's params or inputs hold the old path."""
    checkout = _tracked_checkout(tmp_path / "elsewhere" / "augbench")
    run = copy_of(smoke_run, checkout / "work")
    args = [
        "--snakefile", str(checkout / "Snakefile"), "--directory", str(run.workdir),
        "--workflow-profile", str(checkout / "profiles" / "default"),
        "-n", "--cores", "2", *SMOKE_CONFIG,
    ]  # fmt: skip
    proc = snakemake_runner.run(args, run.workdir)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert planned_rules(proc) == set(), (proc.stdout + proc.stderr)[-4000:]
    for record in (smoke_run.workdir / ".snakemake/metadata").iterdir():
        assert str(smoke_run.workdir) not in record.read_text(), record


def test_a_run_of_one_regime_behind_an_env_build_measures_it_and_keeps_every_table(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    """After the full run, a training run whose env build reruns first (its marker older than
    the build script: Snakemake's code trigger): the training jobs run in the same invocation,
    and every table holds every regime's rows, rebuilt together."""
    run = copy_of(smoke_run, tmp_path / "run")
    work = run.workdir
    marker = work / "results/envs/pillow.json"
    os.utime(marker, (1_000_000_000, 1_000_000_000))
    tables = work / "results/tables"
    old = {p.name: p.stat().st_mtime_ns for p in tables.glob("*.csv")}
    before = pd.read_csv(tables / "all_results.csv")
    config = (
        *SMOKE_CONFIG, "libraries=[pillow]", "regimes=[training]",
        "training={workers: [0]}",
    )  # fmt: skip
    plan = run.snakemake("-n", "--quiet", "rules", "--cores", "2", *config)
    assert {"build_env", "training", "aggregate"} <= planned_rules(plan), plan.stderr[-3000:]
    proc = run.snakemake("--cores", "2", *config)
    out = proc.stdout + proc.stderr
    assert "not measured again" not in out
    assert list((work / "results/raw/smoke-test").glob("*/training/pillow/w0*.json"))
    tidy = pd.read_csv(tables / "all_results.csv")
    assert set(tidy["regime"]) == {*before["regime"], "training"}
    assert len(tidy) > len(before)
    # Every table aggregate writes is rewritten from every regime's files; the pipelines'
    # tables and the answer read files that did not change.
    for name in ("speedups_micro.csv", "speedups_cpu_dataloader.csv", "coverage.csv"):
        assert (tables / name).stat().st_mtime_ns > old[name], name
    assert (tables / "speedups_training.csv").exists() and (tables / "training.csv").exists()
    summary = (work / "results/analysis/summary.md").read_text()
    assert "## smoke-test: micro" in summary and "training" in summary
    # Back to the full run's config: nothing to measure, no table to rebuild.
    back = run.snakemake("-n", "--cores", "2", *SMOKE_CONFIG)
    assert planned_rules(back) == set(), back.stderr[-3000:]


def test_a_changed_setting_behind_an_env_build_is_named_at_the_end(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    """A measurement whose settings changed while an env it waits on is rebuilt: Snakemake does
    not look at it in that run; the run's last line says so, and the next run measures it."""
    run = copy_of(smoke_run, tmp_path / "run")
    os.utime(run.workdir / "results/envs/pillow.json", (1_000_000_000, 1_000_000_000))
    config = (*SMOKE_CONFIG, "libraries=[pillow]", "regimes=[micro]", "micro={values: 3}")
    proc = run.snakemake("--cores", "2", *config)
    last = [x for x in proc.stderr.splitlines() if x.startswith("augbench:")][-1]
    assert "not measured again in this run" in last and "micro: 1 (pillow)" in last, last
    plan = run.snakemake("-n", "--quiet", "rules", "--cores", "2", *config)
    assert "micro" in planned_rules(plan)
