"""Rule pipeline_allocator_figure: the allocator-effect figure of the pipelines' whole rows."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis.figures import allocator
from augbench.analysis.figures.style import save
from augbench.analysis.groups import read_table
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    drawn = allocator.draw(read_table(Path(sm.input.results)))
    save(drawn, Path(sm.output.png), Path(sm.output.pdf), Path(sm.output.caption))
