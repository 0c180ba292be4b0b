"""Rule calibration: the A/A table (augbench.analysis.calibration) from the run's tables; its
short form is printed at the end of the rule (each kind of row, passing or not, and how many
pairs it has)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import calibration
from augbench.analysis.groups import read_table
from augbench.logs import redirect_to_log
from augbench.results import write_table_atomic

sm = snakemake  # noqa: F821
with redirect_to_log(sm.log[0]):
    tables = {"all": read_table(sm.input.all)}
    if sm.input.get("results"):
        tables["pipelines"] = read_table(sm.input.results)
    table, pairs = calibration.calibrate(
        tables, sm.params.pairs, sm.params.regimes, sm.params.machine
    )
    write_table_atomic(pairs, sm.output.pairs)
    write_table_atomic(table, sm.output.table)
    print(calibration.printed(table))
print(calibration.printed(table), file=sys.stderr)
