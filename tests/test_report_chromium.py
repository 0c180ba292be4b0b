"""The HTML report opens on the answer: `snakemake --report` of the session's smoke run, opened in
headless Chromium by tools/reports/report_screenshot.py, shows the answer's table, a row per
pipeline, on its first screen; the committed screenshot (docs/figures/report-answer.png) is one
that tool made and checked.

Chromium is Debian's `chromium` package (.ci/run installs it). Without it these tests are skipped
saying so, except under CI, where they fail."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, SMOKE_CONFIG, SMOKE_PIPELINES, WorkflowRun, copy_of

from augbench.analysis.answer_html import ANSWER_ID

TOOL = REPO / "tools" / "reports" / "report_screenshot.py"
SCREENSHOT = REPO / "docs" / "figures" / "report-answer.png"


def _tool():
    spec = importlib.util.spec_from_file_location("report_screenshot", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _tool()


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        return tool.find_chromium()
    except tool.ChromiumMissing as exc:
        message = f"{exc} (.ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _screenshot(report: Path, png: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), str(report), str(png)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def report(smoke_run: WorkflowRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = copy_of(smoke_run, tmp_path_factory.mktemp("report") / "run")  # --report writes there
    path = run.workdir / "report.html"
    run.snakemake("--report", str(path), *SMOKE_CONFIG)
    return path


@pytest.mark.workflow
def test_the_report_opens_on_the_answer_table(report: Path, chromium: str, tmp_path: Path) -> None:
    png = tmp_path / "report-answer.png"
    proc = _screenshot(report, png)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the answer's table on the first screen" in proc.stdout, proc.stdout
    # Every pipeline the run measured (a loaded machine may leave one unmeasured, said in words
    # under the table).
    answer = pd.read_csv(report.parent / "results/tables/recommendation.csv")
    pipelines = set(answer.loc[answer["status"] == "measured", "pipeline"])
    assert pipelines and pipelines <= {Path(p).stem for p in SMOKE_PIPELINES}
    # The DOM after the report's scripts ran: the answer is on the landing screen, a row per
    # pipeline in its table (the report file itself holds it only as a script's string).
    tables = tool.answer_tables(tool.rendered_dom(report, chromium))
    assert tables, "no answer table in the rendered report"
    # A row per pipeline, named first ("name", or "name (yours)").
    assert pipelines <= {cell.split(" (")[0] for cell in tool.pipelines_shown(tables)}
    assert tool.answer_tables(report.read_text()) is None
    # The screenshot is the first screen, not blank, with the table's header on it.
    from PIL import Image

    with Image.open(png) as image:
        assert image.size == tool.WINDOW
        colours = image.convert("RGB").getcolors(maxcolors=image.width * image.height)
    assert len(colours) > 50
    assert tool.header_pixels(png) >= tool.MIN_HEADER_PIXELS and tool.header_framed(png)


@pytest.mark.workflow
def test_a_report_without_the_answer_is_named_in_one_line(chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text("<html><body><script>document.body.append('a report')</script></body></html>")
    proc = _screenshot(page, tmp_path / "shot.png")
    assert proc.returncode == 1
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1 and f"no element #{ANSWER_ID}" in message, message
    proc = _screenshot(tmp_path / "missing.html", tmp_path / "shot.png")
    assert proc.returncode == 1 and proc.stderr.strip().endswith("missing.html"), proc.stderr


def test_the_committed_screenshot_shows_the_answer_table() -> None:
    """docs/figures/report-answer.png is the tool's screenshot of a report's first screen."""
    from PIL import Image

    with Image.open(SCREENSHOT) as image:
        assert image.size == tool.WINDOW
    assert tool.header_pixels(SCREENSHOT) >= tool.MIN_HEADER_PIXELS
    assert tool.header_framed(SCREENSHOT)
    assert "figures/report-answer.png" in (REPO / "docs" / "usage.md").read_text()
