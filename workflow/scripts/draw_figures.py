"""Rule draw_figures: every figure family (PNG, PDF and caption) from one tidy table.

One process draws them all: importing pandas and matplotlib costs more than drawing a figure.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import figures
from augbench.analysis.figures.style import save
from augbench.analysis.groups import read_table
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    frame = read_table(sm.input.table)
    out = Path(sm.output.figures)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{len(frame)} rows from {sm.input.table}")
    for name in figures.NAMES:
        start = time.perf_counter()
        drawn = figures.draw(name, frame)
        save(drawn, out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.caption.txt")
        print(f"{name}: {time.perf_counter() - start:.2f} s")
