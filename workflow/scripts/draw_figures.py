"""Rule draw_figures: every figure family (PNG, PDF and caption) from one tidy table.

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
    print(f"{len(frame)} rows from {sm.input.table}; {sm.threads} drawing process(es)")
    if sm.threads > 1:
        # fork: the children inherit the imports and the table instead of redoing them.
        with multiprocessing.get_context("fork").Pool(sm.threads) as pool:
            lines = pool.map(draw_one, figures.NAMES, chunksize=1)
    else:
        lines = [draw_one(name) for name in figures.NAMES]
    print("\n".join(lines))
