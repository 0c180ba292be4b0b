"""What the workflow's rules ask for (augbench/workflow_inputs.py) and what a command line asks
of it (augbench/planning/command_line.py), computed from a resolved config without Snakemake's
parser of the Snakefile: the table inputs planned and on disk, the env markers' ancient() flags, the
targets of a run and of `--until figures`."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from augbench import paths
from augbench import workflow_inputs as wi
from augbench.planning import command_line, regimes
from augbench.planning.config import deep_merge, resolve

REPO = Path(__file__).resolve().parents[1]


def smoke_config() -> dict:
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return resolve(deep_merge(base, {"preset": "smoke", "machine": "m"}), REPO)


def ancient(value: object) -> tuple[str, object]:
    return ("ancient", value)


def inputs(argv: list[str] | None = None) -> wi.WorkflowInputs:
    return wi.WorkflowInputs(smoke_config(), REPO, Path.cwd(), argv or ["pytest"], ancient=ancient)


def write(path: str, text: str = "{}") -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)


def test_a_key_pattern_matches_only_its_keys() -> None:
    assert wi.key_pattern(["a.b-0123", "c"]) == r"a\.b-0123|c"


def test_a_failed_env_build_is_retried_and_a_built_one_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lib = SimpleNamespace(library="kornia")
    assert wi.env_build_retry(lib) == ""
    write(wi.env_marker("kornia"), json.dumps({"status": "failed", "failed_at": "t1"}))
    assert wi.env_build_retry(lib) == "t1"
    write(wi.env_marker("kornia"), json.dumps({"status": "built"}))
    assert wi.env_build_retry(lib) == ""


def test_the_tables_read_other_datasets_results_as_plain_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    other = "results/raw/m/other-0123456789ab/micro/kornia/s000.json"
    write(other)
    run = inputs()
    assert run.aggregate_inputs() == [*run.sweep.outputs("results"), other]
    assert run.present_files("results") == []
    assert "micro" in run.table_regimes
    assert set(run.tables.values()) <= set(run.final_targets())
    assert {"results/figures", *paths.RECOMMENDATION.values()} <= set(run.final_targets())


def test_a_measured_job_waits_on_ancient_env_markers_a_missing_one_on_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = inputs()
    job = next(j for j in run.sweep.jobs() if j.rule == "micro")
    values = run.sweep.wildcards_of(job)
    wildcards = SimpleNamespace(**values, items=values.items)
    missing = run.benchmark_env_inputs("micro")(wildcards)
    assert missing["env"] == wi.env_marker(values["library"])
    write(regimes.KINDS["micro"].result.format(**values))
    there = run.benchmark_env_inputs("micro")(wildcards)
    assert there["env"] == ancient(wi.env_marker(values["library"]))


def test_until_figures_with_no_results_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        inputs(["snakemake", "--until", "figures"])
    assert "no results yet under results/raw/m" in capsys.readouterr().err


def test_until_figures_plans_only_the_tables_of_results_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = inputs()
    measured = first.sweep.outputs("results")[0]
    write(measured)
    run = inputs(["snakemake", "--until", "figures"])
    assert run.plots_only and run.timed_kinds == []
    assert run.aggregate_inputs() == [measured]
    assert run.final_targets() == run.plot_products()


def test_a_command_line_is_read_only_from_snakemake() -> None:
    assert command_line.parse(["pytest", "-n"]) is None
    assert command_line.dry_run(["/venv/bin/snakemake", "-n"])
    assert not command_line.dry_run(["/venv/bin/snakemake", "--cores", "1"])
    assert command_line.executor(["/venv/bin/snakemake"], REPO, REPO) == "local"


def test_the_package_fingerprint_changes_with_its_code(tmp_path: Path) -> None:
    (tmp_path / "augbench").mkdir()
    (tmp_path / "augbench" / "a.py").write_text("x = 1\n")
    before = wi.package_fingerprint(tmp_path)
    (tmp_path / "augbench" / "a.py").write_text("x = 2\n")
    assert wi.package_fingerprint(tmp_path) != before
