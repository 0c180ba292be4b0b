"""What the workflow prints when a run ends (its onsuccess and onerror handlers): the answer
page's short form, and the measurements the run left out of date."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from augbench.analysis import on_disk
from augbench.planning import regimes


def print_recommendation(table: Path) -> None:
    """The answer page's short form, where this run (or an earlier one) has made it."""
    if not table.exists():
        return
    import pandas as pd

    from augbench.analysis import recommendation

    try:
        rec = pd.read_csv(table)
    except (OSError, ValueError) as exc:
        print(f"augbench: {table} not readable ({exc})", file=sys.stderr)
        return
    print(recommendation.short_text(rec), file=sys.stderr)


def measurements_left_behind(workflow: Any) -> list[str]:
    """Timed jobs of this run's job graph that did not run though they are out of date (their
    result is missing, or their params, inputs or command changed). Snakemake does not look at
    a job behind an ancient() input that a job of the same run rewrites (an env being rebuilt):
    the timed rules' env inputs (WorkflowInputs.benchmark_env_inputs) are plain where a job runs
    anyway for a reason known before the run (a missing result, a new lock); this finds the
    rest."""
    dag = workflow.dag
    if not any(j.rule.name == "build_env" for j in dag.finished_jobs):
        return []
    from snakemake.settings.enums import RerunTrigger

    triggers = workflow.rerun_triggers
    store = workflow.persistence
    timed = {kind.rule for kind in regimes.KINDS.values()}
    left = []
    for job in dag.jobs:
        if job.rule.name not in timed or dag.finished(job):
            continue
        outputs = [str(f) for f in job.output]
        stale = (
            not all(Path(f).exists() for f in outputs)
            or (RerunTrigger.PARAMS in triggers and bool(store.params_changed(job)))
            or (RerunTrigger.INPUT in triggers and any(store.input_changed(job)))
            or (RerunTrigger.CODE in triggers and any(store.code_changed(job)))
        )
        if stale:
            left.extend(outputs)
    return left


def report_left_behind(workflow: Any) -> None:
    """At the end of a run: one line naming the measurements it left out of date, and why."""
    try:
        left = measurements_left_behind(workflow)
    except Exception as exc:  # advisory: never fails a finished run
        print(
            f"augbench: could not check for measurements left out of date ({exc})",
            file=sys.stderr,
        )
        return
    if left:
        print(
            f"augbench: {len(left)} result file(s) were not measured again in this run "
            f"({on_disk.missing_summary(left)}): their settings changed while the env builds "
            "they wait on ran; run the same command again to measure them",
            file=sys.stderr,
        )
