"""Rule draw_figures: the figure families (PNG, PDF and caption) a tidy table has rows for.

The others are not drawn: ``skipped.txt`` and ``skipped.csv`` in the figures folder name each
with why (``augbench.analysis.figures.plan``; the summary lists them too).

One process imports pandas and matplotlib (that costs more than drawing a figure) and reads the
table; with more than one thread it then forks that many drawing processes, each drawing whole
families (nothing timed runs beside it: analysis waits for the last timed job).
"""

import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import figures
from augbench.analysis.figures.style import save
from augbench.analysis.groups import read_table
from augbench.logs import redirect_to_log

SKIPPED_TXT = "skipped.txt"
SKIPPED_CSV = "skipped.csv"


def write_skipped(skipped: tuple[tuple[str, str], ...], table: str) -> None:
    import csv

    if skipped:
        lines = [f"Figure families not drawn from {table} (no rows to show), and why:"]
        lines += [f"{name}: {why}" for name, why in skipped]
    else:
        lines = [f"Every figure family was drawn from {table}."]
    (out / SKIPPED_TXT).write_text("\n".join(lines) + "\n")
    with (out / SKIPPED_CSV).open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["figure", "reason"])
        writer.writerows(skipped)


def draw_one(name: str) -> str:
    start = time.perf_counter()
    drawn = figures.draw(name, frame)
    save(drawn, out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.caption.txt")
    return f"{name}: {time.perf_counter() - start:.2f} s"


with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    frame = read_table(sm.input.table)
    out = Path(sm.output.figures)
    out.mkdir(parents=True, exist_ok=True)
    drawn, skipped = figures.plan(frame)
    write_skipped(skipped, sm.input.table)
    processes = max(1, min(sm.threads, len(drawn)))
    print(
        f"{len(frame)} rows from {sm.input.table}: {len(drawn)} of {len(figures.NAMES)} figure "
        f"families to draw, {processes} drawing process(es)"
    )
    for name, why in skipped:
        print(f"not drawn: {name}: {why}")
    if processes > 1:
        # fork: the children inherit the imports and the table instead of redoing them.
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            lines = pool.map(draw_one, drawn, chunksize=1)
    else:
        lines = [draw_one(name) for name in drawn]
    print("\n".join(lines))
