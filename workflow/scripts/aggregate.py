"""Rule aggregate: tidy all_results.csv plus per-regime speedups/throughputs and coverage (and,
with more than one allocator setting, each setting's time against glibc's)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import allocator_effect, resolution, speedups, starvation, tidy
from augbench.logs import redirect_to_log
from augbench.planning import regimes, starvation_model
from augbench.results import write_table_atomic

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    # This run's results (inputs) and every other result of this machine on disk (params).
    files = [Path(p) for p in [*sm.input.results, *sm.params.present]]
    frame = tidy.load_results(files)
    write_table_atomic(frame, sm.output.all)
    for regime in sm.params.regimes:
        part = frame[frame["regime"] == regime]
        write_table_atomic(speedups.compute(part), sm.output[f"speedups_{regime}"])
        write_table_atomic(speedups.throughput_table(part), sm.output[f"throughputs_{regime}"])
    # The regimes' own tables (Regime.tables); one two regimes share is written once.
    own = {n: t for r in sm.params.regimes for n, t in regimes.BY_NAME[r].tables.items()}
    for name, table in own.items():
        arguments = sm.params.table_arguments[name]
        write_table_atomic(table.build(frame, *arguments), sm.output[name])
    write_table_atomic(speedups.coverage(frame), sm.output.coverage)
    if hasattr(sm.output, "allocator_effect"):  # present with more than one allocator setting
        write_table_atomic(allocator_effect.table(frame), sm.output.allocator_effect)
    write_table_atomic(resolution.scaling_table(frame), sm.output.resolution_scaling)
    models = starvation_model.models_from_config(sm.params.starvation, sm.params.throughput_targets)
    write_table_atomic(
        starvation.table(frame, models, sm.params.starvation["dataset_images"]),
        sm.output.starvation,
    )
    print(f"{len(frame)} rows from {len(files)} result files")
