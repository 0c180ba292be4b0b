"""Open a Snakemake report in headless Chromium, screenshot its first screen, and check that the
answer's table is on it.

    uv run python tools/reports/report_screenshot.py report.html report-answer.png

The report is `snakemake --report report.html`. Chromium (Debian's `chromium` package, or
`--chromium PATH`) runs the report's scripts, then the page as they left it is read: the answer
(workflow/rules/report.smk) must be there with a table that has a row per pipeline, and its
header must show in the screenshot of the first screen (`--window-size`). Prints the pipelines
found; exits 1 with one line saying what is missing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.analysis.answer_html import ANSWER_ID, BORDER_RGB, HEADER_RGB  # noqa: E402

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
WINDOW = (1600, 1000)
# Long enough for the report's scripts (React renders the first screen) on a slow machine;
# virtual time runs as fast as the page lets it.
SCRIPT_BUDGET_MS = 10_000
# The answer's table header on the first screen: at least this many pixels of its colour (one
# header row of the narrowest table is several thousand).
MIN_HEADER_PIXELS = 2_000


# HTML's void elements: a start tag and no end tag.
VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "wbr")
)


class ChromiumMissing(RuntimeError):
    pass


class AnswerNotShown(RuntimeError):
    pass


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium to run: ``explicit``, or the first of CHROMIUM_NAMES on PATH."""
    for name in (explicit,) if explicit else CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    names = explicit or ", ".join(CHROMIUM_NAMES)
    raise ChromiumMissing(f"no Chromium found ({names}); on Debian: apt-get install chromium")


def _chromium(binary: str, report: Path, *args: str, timeout: float = 120) -> str:
    command = [
        binary,
        "--headless",
        # Root in a container has no user namespace for the sandbox; the page is a local file.
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        "--force-device-scale-factor=1",
        f"--virtual-time-budget={SCRIPT_BUDGET_MS}",
        *args,
        report.resolve().as_uri(),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{binary} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return proc.stdout


def rendered_dom(report: Path, binary: str) -> str:
    """The report's DOM after its scripts ran."""
    return _chromium(binary, report, "--dump-dom")


def screenshot(report: Path, png: Path, binary: str, window: tuple[int, int] = WINDOW) -> None:
    """The report's first screen, as a user opening it in a ``window``-sized browser sees it."""
    png.parent.mkdir(parents=True, exist_ok=True)
    _chromium(binary, report, f"--window-size={window[0]},{window[1]}", f"--screenshot={png}")
    if not png.exists():
        raise RuntimeError(f"{binary} wrote no screenshot to {png}")


class _AnswerTables(HTMLParser):
    """The rows (cell texts) of every table inside the element with id ANSWER_ID."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # open elements inside the answer, the answer's own included
        self.found = False
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0 and ("id", ANSWER_ID) not in attrs:
            return
        self.found = True
        if tag not in VOID:  # void elements have no end tag
            self.depth += 1
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if self.depth == 0 or tag in VOID:
            return
        self.depth -= 1
        if tag in ("td", "th") and self.cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.depth and self.cell is not None:
            self.cell.append(data)


def answer_tables(dom: str) -> list[list[list[str]]] | None:
    """The answer's tables in a rendered DOM (rows of cell texts, header row first); None where
    the DOM has no answer at all."""
    parser = _AnswerTables()
    parser.feed(dom)
    parser.close()
    return parser.tables if parser.found else None


def _pixels(png: Path):
    import numpy as np
    from PIL import Image

    with Image.open(png) as image:
        return np.asarray(image.convert("RGB"))


def header_pixels(png: Path) -> int:
    """How many pixels of the screenshot have the answer's table-header colour."""
    return int((_pixels(png) == HEADER_RGB).all(axis=-1).sum())


def header_framed(png: Path) -> bool:
    """Whether the answer's table header lies whole on the screen: the table's rule just left of,
    above and right of the header's colour (a table pushed off the screen's edge, or under the
    report's menu, has none there)."""
    import numpy as np

    pixels = _pixels(png)
    rows, cols = np.nonzero((pixels == HEADER_RGB).all(axis=-1))
    if not len(rows):
        return False
    top, left, right = rows.min(), cols.min(), cols.max()
    middle = (top + rows.max()) // 2
    if top == 0 or left == 0 or right + 1 >= pixels.shape[1]:
        return False
    edges = (
        pixels[middle, left - 1],
        pixels[top - 1, (left + right) // 2],
        pixels[middle, right + 1],
    )
    return all(tuple(int(v) for v in edge) == BORDER_RGB for edge in edges)


def pipelines_shown(tables: list[list[list[str]]]) -> list[str]:
    """The first cell of every body row of the answer's tables (a row per pipeline)."""
    return [row[0] for table in tables for row in table[1:] if row and row[0]]


def check(report: Path, png: Path, binary: str, window: tuple[int, int] = WINDOW) -> list[str]:
    """Screenshot the report's first screen to ``png`` and return the pipelines its answer table
    shows; raises AnswerNotShown naming what is missing."""
    tables = answer_tables(rendered_dom(report, binary))
    if tables is None:
        raise AnswerNotShown(
            f"{report}: the report's first screen has no answer (no element #{ANSWER_ID}; "
            "was results/analysis/recommendation.html made before --report?)"
        )
    pipelines = pipelines_shown(tables)
    if not pipelines:
        raise AnswerNotShown(f"{report}: the answer on the first screen has no table row")
    screenshot(report, png, binary, window)
    pixels = header_pixels(png)
    if pixels < MIN_HEADER_PIXELS:
        raise AnswerNotShown(
            f"{png}: the answer's table header is not on the first screen "
            f"({pixels} pixels of its colour, at least {MIN_HEADER_PIXELS} expected)"
        )
    if not header_framed(png):
        raise AnswerNotShown(f"{png}: the answer's table is cut off at the first screen's edge")
    return pipelines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("report", type=Path, help="a report from `snakemake --report report.html`")
    p.add_argument("png", type=Path, help="where the screenshot of the first screen goes")
    p.add_argument("--chromium", help="the Chromium binary (default: found on PATH)")
    p.add_argument(
        "--window-size", default=f"{WINDOW[0]},{WINDOW[1]}", help="WIDTH,HEIGHT in pixels"
    )
    args = p.parse_args()
    if not args.report.is_file():
        print(f"report_screenshot: no report at {args.report}", file=sys.stderr)
        return 1
    try:
        width, height = (int(v) for v in args.window_size.split(","))
    except ValueError:
        print(
            f"report_screenshot: --window-size {args.window_size!r}: not WIDTH,HEIGHT",
            file=sys.stderr,
        )
        return 1
    try:
        pipelines = check(args.report, args.png, find_chromium(args.chromium), (width, height))
    except (ChromiumMissing, AnswerNotShown, RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"report_screenshot: {exc}", file=sys.stderr)
        return 1
    print(f"{args.png}: the answer's table on the first screen, rows: {', '.join(pipelines)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
