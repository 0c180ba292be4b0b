"""Rule pipeline_figure: the per-step breakdown figure (PNG, PDF, caption) from its table."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

import pandas as pd

from augbench.analysis.figures import pipelines
from augbench.analysis.figures.style import save
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    table = pd.read_csv(sm.input.table, dtype={"reason": str, "step": str})
    save(pipelines.draw(table), Path(sm.output.png), Path(sm.output.pdf), Path(sm.output.caption))
