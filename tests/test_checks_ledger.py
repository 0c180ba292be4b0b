"""The checks ledger and the published runs: docs/results/checks.md and checks.csv are what
tools/reports/checks_ledger.py writes from every committed run; a page quoting a check's figure
links its pooled figure; every run folder says when and on which commit it was measured; the
hand-run tools start."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
MACHINES = ("amd-epyc-2c", "intel-xeon-2c", "intel-xeon-16c-nvidia-h100-80gb-hbm3")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]*checks\.md)#([^)\s]+)\)")
COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _ledger():
    path = REPO / "tools" / "reports" / "checks_ledger.py"
    spec = importlib.util.spec_from_file_location("checks_ledger", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["checks_ledger"] = module  # its dataclasses resolve their annotations there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ledger():
    return _ledger()


@pytest.fixture(scope="module")
def results(ledger):
    return ledger.outcomes()


def test_ledger_reproduces_the_committed_files(ledger, results):
    assert (RESULTS / "checks.md").read_text() == ledger.render_md(results)
    assert (RESULTS / "checks.csv").read_text() == ledger.render_csv(results)


def test_every_run_file_exists_and_every_file_of_a_check_is_a_run(ledger):
    registered = set()
    for run in ledger.RUNS:
        assert ledger.run_path(run).is_file(), run
        registered.add(f"{run.machine}/{run.folder}/{run.file}")
        for name in run.extends:
            assert ledger.run_path(run, name).is_file(), (run, name)
            registered.add(f"{run.machine}/{run.folder}/{name}")
    registered |= set(ledger.NOT_RUNS)
    kinds = ("training*.csv", "pipeline_rows_vs_fresh_loop*.tsv", "allocator_effect*.csv",
             "cost*validation*.tsv", "training*memory*.tsv")  # fmt: skip
    found = {
        str(path.relative_to(RESULTS))
        for pattern in kinds
        for path in RESULTS.glob(f"*/*/{pattern}")
    }
    found |= {str(path.relative_to(RESULTS)) for path in RESULTS.glob("*/*/analysis/training.csv")}
    assert found <= registered, sorted(found - registered)


def test_the_alternating_training_checks_count_each_run_once(ledger, results):
    figures = ledger.figures(results)
    # 5 + 5, 6 + 6 (twice) and 4 + 4 (twice) runs a side: the 3- and 4-round files are
    # earlier states of the same runs, named but not counted.
    assert figures["training-check-alternating"] == "79 of 96"
    assert figures["calibration"] == "114 of 120"


def _pages() -> list[Path]:
    pages = [REPO / "README.md", REPO / "config" / "README.md"]
    pages += [p for p in (REPO / "docs").rglob("*.md") if RESULTS not in p.parents]
    return [p for p in pages if p.exists()]


def test_links_to_the_ledger_quote_its_pooled_figure(ledger, results):
    figures = ledger.figures(results)
    wrong = []
    for page in _pages():
        for text, target, anchor in LINK.findall(page.read_text()):
            resolved = (page.parent / target).resolve()
            if resolved != (RESULTS / "checks.md").resolve():
                wrong.append(f"{page.relative_to(REPO)}: {target} is not docs/results/checks.md")
            elif anchor not in figures:
                wrong.append(f"{page.relative_to(REPO)}: no check id {anchor!r}")
            elif text != figures[anchor]:
                wrong.append(
                    f"{page.relative_to(REPO)}: [{text}] for #{anchor}, whose pooled figure is "
                    f"{figures[anchor]!r}"
                )
    assert not wrong, "\n".join(wrong)


def _run_folders() -> list[Path]:
    return sorted(p for machine in MACHINES for p in (RESULTS / machine).iterdir() if p.is_dir())


def test_every_run_folder_names_its_date_and_commit():
    folders = _run_folders()
    assert folders
    missing = []
    for folder in folders:
        readme = folder / "README.md"
        assert re.match(r"20\d\d-\d\d-\d\d-[a-z0-9-]+$", folder.name), folder.name
        if not readme.is_file():
            missing.append(f"{folder.relative_to(REPO)}: no README.md")
            continue
        text = readme.read_text()
        if not DATE.search(text) or not COMMIT.search(text):
            missing.append(f"{folder.relative_to(REPO)}/README.md: no date or no full commit")
    assert not missing, "\n".join(missing)


def test_only_machine_folders_and_the_ledger_at_the_top():
    names = {p.name for p in RESULTS.iterdir()}
    assert names <= {*MACHINES, "checks.md", "checks.csv", "README.md"}, names


def test_no_variant_names_under_results():
    bad = [
        str(p.relative_to(RESULTS))
        for p in RESULTS.rglob("*")
        if re.search(r"-again-|-again$|second-check|third-check", p.name)
    ]
    assert not bad, bad


MODULES = sorted(
    p
    for p in (REPO / "tools").rglob("*.py")
    if "__pycache__" not in p.parts and p.parent.name != "bundle"
)
# A tool is a script; a module without a main guard is a part of the tools that import it.
TOOLS = [p for p in MODULES if '__name__ == "__main__"' in p.read_text()]


def test_every_module_of_the_tools_that_is_no_tool_is_imported_by_one() -> None:
    parts = [p for p in MODULES if p not in TOOLS]
    unused = [
        str(p.relative_to(REPO))
        for p in parts
        if not any(re.search(rf"\b{p.stem}\b", t.read_text()) for t in TOOLS)
    ]
    assert not unused, unused


@pytest.mark.parametrize("tool", TOOLS, ids=[str(t.relative_to(REPO)) for t in TOOLS])
def test_every_tool_starts(tool):
    result = subprocess.run(
        [sys.executable, str(tool), "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage" in result.stdout.lower()


def test_tools_readme_names_every_tool_and_only_existing_ones():
    text = (REPO / "tools" / "README.md").read_text()
    named = set(re.findall(r"tools/[a-z_]+/[A-Za-z_]+(?:\.py|\.yaml)?\b", text))
    missing = sorted(
        str(t.relative_to(REPO)) for t in TOOLS if str(t.relative_to(REPO)) not in named
    )
    assert not missing, missing
    absent = sorted(n for n in named if not (REPO / n).exists())
    assert not absent, absent
