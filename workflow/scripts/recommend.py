"""Rule recommendation: the answer page (augbench.analysis.recommendation) from the pipelines'
tidy rows and their starvation table; what is not measured is said in words."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import recommendation
from augbench.analysis.groups import read_table
from augbench.logs import redirect_to_log
from augbench.planning import starvation_model
from augbench.results import write_table_atomic

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    rows, starved = (sm.input.get(name) for name in ("rows", "starvation"))
    rows = read_table(rows) if rows else None
    starved = read_table(starved) if starved else None
    model = starvation_model.target_model(sm.params.starvation, sm.params.throughput_targets)
    rec = recommendation.recommend(rows, starved, sm.params.pipelines, model, sm.params.cloud)
    write_table_atomic(rec, sm.output.table)
    page = recommendation.markdown(rec, depth=1)
    Path(sm.output.page).write_text("\n".join(page) + "\n")
    print(recommendation.short_text(rec))
