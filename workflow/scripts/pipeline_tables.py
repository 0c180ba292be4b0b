"""Rule pipeline_tables: the per-step breakdown table and one speedup table per pipeline (and,
with more than one allocator setting, each setting's time against glibc's, per step too)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import allocator_effect, pipelines, starvation, tidy
from augbench.logs import redirect_to_log
from augbench.planning import starvation_model
from augbench.results import write_table_atomic

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    # This run's results (inputs) and every other pipeline result of this machine on disk.
    frame = tidy.load_results([Path(p) for p in [*sm.input.results, *sm.params.present]])
    write_table_atomic(frame, sm.output.results)
    write_table_atomic(pipelines.breakdown(frame), sm.output.breakdown)
    for name in sm.params.pipelines:
        write_table_atomic(pipelines.speedup_table(frame, name), sm.output[f"speedups_{name}"])
    if hasattr(sm.output, "allocator_effect"):  # present with more than one allocator setting
        write_table_atomic(allocator_effect.table(frame), sm.output.allocator_effect)
    if hasattr(sm.output, "starvation"):  # from the pipelines' end-to-end (decode-scope) rows
        models = starvation_model.models_from_config(
            sm.params.starvation, sm.params.throughput_targets
        )
        whole = pipelines.pipeline_rows(frame)
        write_table_atomic(
            starvation.table(whole, models, sm.params.starvation["dataset_images"]),
            sm.output.starvation,
        )
    print(f"{len(pipelines.pipeline_rows(frame))} pipeline rows, "
          f"{len(pipelines.step_rows(frame))} step rows")  # fmt: skip
