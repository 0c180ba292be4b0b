"""Rule collect_results: tables from result files that already exist (plot_from).

Unreadable files (broken JSON, a result file whose rows cannot be read) are skipped and named in
one line on the terminal, the rest are read; JSON files that are not result files (env markers,
manifests of a pulled results/ folder) are listed in the log. Sources without any result file
fail the job with one line saying what they hold (no traceback).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import collect, speedups, training
from augbench.logs import redirect_to_log
from augbench.results import write_table_atomic

sm = snakemake  # noqa: F821
name = f"plot_from.{sm.wildcards.name}"
failure = ""
with redirect_to_log(sm.log[0]):
    try:
        found = collect.collect(list(sm.params.sources))
    except (collect.NoResultFiles, FileNotFoundError, ValueError) as exc:
        failure = (
            f"augbench: {name}: {' '.join(str(exc).split())}; point {name} at result files or "
            "folders of them"
        )
        print(failure)
    else:
        for path, why in found.skipped:
            print(f"skipped {path}: not a result file ({why})")
        for path, why in found.unreadable:
            print(f"skipped unreadable {path}: {why}")
        if found.unreadable:
            # One line on the terminal as well: these files were meant to be results.
            print(
                f"augbench: {name}: skipped {len(found.unreadable)} unreadable result "
                f"file(s), read {len(found.files)}: "
                f"{collect.describe(found.unreadable, limit=10)}",
                file=sys.__stderr__,
            )
        frame = found.frame
        Path(sm.output.table).parent.mkdir(parents=True, exist_ok=True)
        write_table_atomic(frame, sm.output.table)
        write_table_atomic(speedups.coverage(frame), sm.output.coverage)
        write_table_atomic(speedups.compute(frame), sm.output.speedups)
        # The training rows beside their out-of-sample predictions (empty without training rows).
        write_table_atomic(training.predicted_vs_measured(frame), sm.output.training)
        machines = sorted(frame["machine"].unique())
        print(
            f"{len(frame)} rows from {len(found.files)} result files "
            f"({len(found.skipped)} other JSON files, {len(found.unreadable)} unreadable); "
            f"machines: {machines}"
        )
if failure:  # one line, no traceback (also in the log, which Snakemake shows)
    print(failure, file=sys.stderr)
    sys.exit(1)
