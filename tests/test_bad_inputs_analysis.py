"""Re-plots of odd or broken result folders through the real rules (issue 31, round two).

Every case of ``TABLE`` is a folder of small synthetic result files (or the published foreign
fixture) configured as ``plot_from={name: [folder]}``. One ``--keep-going`` Snakemake run builds,
for every case, the outputs of the ``plots`` target it reads (its collected table, figures
folder, summary: the rules collect_results, draw_figures and summary, as ``snakemake plots``
runs them; speedup_report is left out to keep the run short), so the cases' jobs share the two
cores; each case then checks its own outcome. In every case the output holds no Python traceback
and the files already in the working directory (this workflow's own figures and table, an earlier
re-plot) are untouched.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_snakemake

from augbench import result_format
from augbench.analysis import figures
from augbench.results import non_ok_row, ok_row

pytestmark = pytest.mark.workflow

FIXTURE = Path(__file__).parent / "fixtures" / "external-results" / "pillow_micro_results.json"
TRANSFORMS = ("HorizontalFlip", "GaussianBlur")
# Files of the working directory that a re-plot must leave as they are.
EARLIER = {
    "results/figures/winners_by_regime.png": b"own run's figure",
    "results/tables/all_results.csv": b"machine,regime\nown,micro\n",
    "results/plots/old/figures/skipped.txt": b"an earlier re-plot\n",
}


# -- result files in this workflow's format, small --------------------------------------------
def _ok(median: float, **extra: object) -> dict:
    runs = [median * 0.98, median, median * 1.02]
    return ok_row(runs, [8 / r for r in runs], warmup_iterations=1, **extra)


def _result(
    folder: Path,
    name: str,
    *,
    library: str,
    regime: str = "micro",
    machine: str = "m1",
    actual: str | None = None,
    rows: dict[str, dict] | None = None,
) -> Path:
    metadata = {
        "machine": machine,
        "machine_actual": actual or machine,
        "regime": regime,
        "library": library,
        "dataset": {"key": "tiny-0123456789ab", "name": "tiny", "file_count": 8},
        "benchmark_params": {"num_images": 8},
        "system_info": {"processor": "Test CPU", "hostname": "test"},
        "library_versions": {library: "1.0"},
    }
    if rows is None:
        rows = {t: _ok(1000.0 / (i + 1), peak_rss_mb=120.0) for i, t in enumerate(TRANSFORMS)}
    path = folder / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metadata": metadata, "results": rows}))
    return path


def _micro(folder: Path, machine: str = "m1") -> None:
    for library in ("albumentationsx", "pillow"):
        _result(folder / machine, library, library=library, machine=machine)


# -- the cases ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """What one case left: its plot root, the output of the run it was part of."""

    root: Path
    output: str
    returncode: int
    source: Path
    earlier: dict[str, int]  # mtime of each EARLIER file before the runs

    def figures(self) -> set[str]:
        return {p.stem for p in (self.root / "figures").glob("*.png")}

    def skipped(self) -> dict[str, str]:
        table = pd.read_csv(self.root / "figures/skipped.csv")
        return dict(zip(table["figure"], table["reason"], strict=True))


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], None]  # writes the case's results into an empty folder
    plots: bool  # whether the re-plot succeeds
    check: Callable[[Run], None]
    # What the case reads, below results/plots/<name>/ (outputs of the plots target).
    targets: tuple[str, ...] = ("tables/all_results.csv", "figures")


FIGURES_AND_SUMMARY = ("figures", "analysis/summary.md")


def _only_micro(run: Run) -> None:
    assert run.figures() == {
        "winners_by_regime", "coverage", "throughput_micro", "stability_micro",
        "throughput_vs_memory",
    }  # fmt: skip
    skipped = run.skipped()
    assert set(skipped) | run.figures() == set(figures.NAMES)
    assert skipped["throughput_gpu_dataloader"] == "no gpu_dataloader rows"
    assert skipped["cpu_vs_gpu"] == "no gpu_dataloader or dali rows"
    text = (run.root / "figures/skipped.txt").read_text()
    assert "stability_dali: no dali rows" in text
    summary = (run.root / "analysis/summary.md").read_text()
    assert "## Figures not drawn" in summary
    assert "| worker_scaling | no ok DataLoader rows (cpu_dataloader, gpu_dataloader) |" in summary


def _bad_json(folder: Path) -> None:
    _micro(folder)
    (folder / "m1/broken.json").write_text('{"metadata": {"machine": "m1"}, "results": {')
    (folder / "m1/bad_rows.json").write_text(json.dumps({"results": {"HorizontalFlip": 3}}))
    # A file of this workflow's schema version whose row has no status: it breaks the schema.
    no_status = _result(folder / "m1", "no_status", library="kornia")
    payload = json.loads(no_status.read_text())
    payload["metadata"]["schema_version"] = result_format.SCHEMA_VERSION
    del payload["results"]["GaussianBlur"]["status"]
    no_status.write_text(json.dumps(payload))
    (folder / "envs/pillow.json").parent.mkdir()
    (folder / "envs/pillow.json").write_text(json.dumps({"lock_sha256": "0" * 64}))


def _bad_json_check(run: Run) -> None:
    table = pd.read_csv(run.root / "tables/all_results.csv")
    assert set(table["library"]) == {"albumentationsx", "pillow"} and len(table) == 4
    assert "throughput_micro" in run.figures()
    lines = [line for line in run.output.splitlines() if "broken.json" in line]
    assert len(lines) == 1, lines  # one line names the three unreadable files and why
    assert "skipped 3 unreadable result file(s), read 2" in lines[0]
    assert "not readable JSON" in lines[0] and "bad_rows.json" in lines[0]
    # A file that breaks the result schema: named with the first field at fault.
    assert "bad_rows.json: not a valid result file (metadata: missing)" in lines[0]
    assert (
        "no_status.json: not a valid result file (results.GaussianBlur.status: missing)"
        in (lines[0])
    )
    assert "bad_json/envs/pillow.json" not in run.output  # not a result file: in the log only
    log = (run.source.parents[1] / "logs/plots/bad_json/collect.log").read_text()
    assert "envs/pillow.json" in log


def _fails_with(line: str) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        assert run.returncode != 0
        assert any(line in out for out in run.output.splitlines()), run.output[-3000:]
        assert not (run.root / "tables/all_results.csv").exists()

    return check


def _foreign(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE, folder / FIXTURE.name)


def _foreign_check(run: Run) -> None:
    table = pd.read_csv(run.root / "tables/all_results.csv")
    assert set(table["machine"]) == {"external-darwin-arm64-arm-16cpu"}
    assert set(table["library"]) == {"pillow"} and len(table) == 24
    assert {"throughput_micro", "stability_micro", "winners_by_regime"} <= run.figures()
    caption = (run.root / "figures/throughput_micro.caption.txt").read_text()
    assert "Transform set: 24 transforms" in caption
    assert "Hardware: external-darwin-arm64-arm-16cpu" in caption


def _two_machines(folder: Path) -> None:
    _micro(folder, "m1")
    _micro(folder, "m2")


def _two_machines_check(run: Run) -> None:
    table = pd.read_csv(run.root / "tables/all_results.csv")
    assert set(table["machine"]) == {"m1", "m2"}
    summary = (run.root / "analysis/summary.md").read_text()
    assert "## m1: micro" in summary and "## m2: micro" in summary
    caption = (run.root / "figures/throughput_micro.caption.txt").read_text()
    assert "m1" in caption and "m2" in caption


def _cloud(folder: Path) -> None:
    """One label, CPU rows from a CPU VM, GPU rows from a GPU VM (a cloud sweep)."""
    for w in (1, 2):
        cpu = {t: _ok(500.0 * w, workers=w, batch_size=4, scope="memory") for t in TRANSFORMS}
        _result(
            folder, f"cpu_w{w}", library="albumentationsx", regime="cpu_dataloader",
            machine="gcp", actual="gce-n2-standard-16", rows=cpu,
        )  # fmt: skip
    gpu = {t: _ok(3000.0, workers=1, batch_size=4, scope="memory") for t in TRANSFORMS}
    gpu["Identity"] = non_ok_row("skipped", "no CUDA device", workers=1, batch_size=4)
    _result(
        folder, "gpu", library="torchvision", regime="gpu_dataloader", machine="gcp",
        actual="gce-g2-standard-8", rows=gpu,
    )  # fmt: skip


def _cloud_check(run: Run) -> None:
    assert {"cpu_vs_gpu", "worker_scaling", "throughput_gpu_dataloader"} <= run.figures()
    caption = (run.root / "figures/cpu_vs_gpu.caption.txt").read_text()
    assert "gcp: CPU rows from gce-n2-standard-16, GPU rows from gce-g2-standard-8" in caption
    assert "micro" in run.skipped()["throughput_micro"]


TABLE: tuple[Case, ...] = (
    Case("only_micro", _micro, True, _only_micro, FIGURES_AND_SUMMARY),
    Case("bad_json", _bad_json, True, _bad_json_check),
    Case("foreign", _foreign, True, _foreign_check),
    Case("two_machines", _two_machines, True, _two_machines_check, FIGURES_AND_SUMMARY),
    Case("cloud", _cloud, True, _cloud_check),
    Case(
        "empty",
        lambda folder: folder.mkdir(parents=True),
        False,
        _fails_with("augbench: plot_from.empty: no result files in 'sources/empty': no JSON files"),
        ("tables/all_results.csv",),
    ),
    Case(
        "no_results",
        lambda folder: _bad_json(folder) or shutil.rmtree(folder / "m1"),
        False,
        _fails_with(
            "no result files in 'sources/no_results': of its 1 JSON file(s), 1 not a result "
            "file (sources/no_results/envs/pillow.json: no 'results' object)"
        ),
        ("tables/all_results.csv",),
    ),
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    work = tmp_path_factory.mktemp("bad-inputs")
    for relative, content in EARLIER.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_bytes(content)
    before = {relative: (work / relative).stat().st_mtime_ns for relative in EARLIER}
    sources = {}
    for case in TABLE:
        sources[case.name] = work / "sources" / case.name
        case.build(sources[case.name])

    entries = ", ".join(f"'{c.name}': ['sources/{c.name}']" for c in TABLE)
    targets = [f"results/plots/{c.name}/{t}" for c in TABLE for t in c.targets]
    # One drawing process per draw_figures job: five small jobs share the two cores better.
    proc = run_snakemake(
        work, *targets, "--cores", "2", "--keep-going", "--set-threads", "draw_figures=1",
        "--config", f"plot_from={{{entries}}}", check=False,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    return {
        case.name: Run(
            work / "results/plots" / case.name, output, proc.returncode, sources[case.name], before
        )
        for case in TABLE
    }


def _failed_jobs(output: str) -> list[str]:
    """The first lines of each "Error in rule" block Snakemake printed."""
    return ["\n".join(block.splitlines()[:6]) for block in output.split("Error in rule")[1:]]


@pytest.mark.parametrize("case", TABLE, ids=[c.name for c in TABLE])
def test_bad_or_odd_inputs_are_replotted_or_refused_in_one_line(
    case: Case, runs: dict[str, Run]
) -> None:
    run = runs[case.name]
    assert "Traceback" not in run.output, run.output[-5000:]
    failed = [job for job in _failed_jobs(run.output) if f"results/plots/{case.name}/" in job]
    if case.plots:
        assert not failed, run.output[-5000:]
        for target in case.targets:
            assert (run.root / target).exists(), target
    else:
        assert failed, run.output[-5000:]
    case.check(run)
    work = run.source.parents[1]
    for relative, content in EARLIER.items():
        assert (work / relative).read_bytes() == content, relative
        assert (work / relative).stat().st_mtime_ns == run.earlier[relative], relative
