"""Rule collect_results: tables from result files that already exist (plot_from)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import collect, speedups
from augbench.logs import redirect_to_log
from augbench.results import write_table_atomic

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    found = collect.collect(list(sm.params.sources))
    for path, why in found.skipped:
        print(f"skipped {path}: {why}")
    frame = found.frame
    Path(sm.output.table).parent.mkdir(parents=True, exist_ok=True)
    write_table_atomic(frame, sm.output.table)
    write_table_atomic(speedups.coverage(frame), sm.output.coverage)
    write_table_atomic(speedups.compute(frame), sm.output.speedups)
    machines = sorted(frame["machine"].unique())
    print(f"{len(frame)} rows from {len(found.files)} result files; machines: {machines}")
