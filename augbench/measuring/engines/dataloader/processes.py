"""A setting's rows measured in several fresh processes (``--processes``): the unit of a row's
interval is one process.

A DataLoader's rate differs more between processes than between the epochs of one process: each
interpreter gets its own address layout and allocator history, and under glibc as shipped those
decide how many pages a recipe faults in again on every call (docs/allocator.md). One process's
epochs cannot hold that spread, so two runs of one job disagree by more than either row's interval
says. The job's own process measures every row first (each row in a fork of it, as always); each
later process is this engine started again (``later_process``) with the job's arguments and
``--process-request``: a fresh interpreter that imports the library, loads the items and measures
every row still ok, each in a fork of its own, and writes the fields of :data:`PROCESS_FIELDS`.
The processes run one after another, every row in each, so a row's processes spread over the
job's time. ``merged`` makes one row of them: one value per process (``process_throughputs``, the
process's median epoch), the median of those and its distribution-free interval
(augbench.decision.median_interval: 5 processes give [min, max] at 93.75 %).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from augbench import decision
from augbench.measuring.engines.dataloader.settings import DataLoaderSettings
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.results import non_ok_row, summarize_throughputs

# What a later process returns of each row: the values the merged row pools.
PROCESS_FIELDS = (
    "status",
    "reason",
    "throughputs",
    "times",
    "steady_throughputs",
    "minor_faults_per_image",
    "first_batch_s",
    "window_batches",
    "timed_rounds",
)
PROCESS_CI_METHOD = "order statistics of the median over processes (augbench.decision)"


def process_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The part of a row a later process hands back."""
    return {k: row.get(k) for k in PROCESS_FIELDS if k in row}


def later_process(
    settings: DataLoaderSettings, windows: dict[str, int], index: int
) -> dict[str, Any]:
    """Process ``index`` (2, 3, ...) of the setting: this engine started again with the job's
    arguments and ``--process-request`` (``run_process_request``), in the job's environment,
    measuring the rows of ``windows`` (name -> the batches per timed epoch the first process
    sized, so its preflight is not run again). Its output: ``{"rows": {name:
    process_fields(row)}}``, or ``{"error": reason}`` where the interpreter wrote none."""
    from augbench.measuring.engines import skeleton

    return skeleton.in_fresh_interpreter(
        "augbench.measuring.engines.cpu_dataloader",
        settings.argv,
        {
            "scope": settings.scope,
            "workers": settings.workers,
            "loader": settings.loader,
            "decoder": settings.decoder,
            "windows": windows,
            "index": index,
        },
        ("--process-request", "--process-output"),
        f"process {index}",
    )


class _NoBar:
    """A later process shows no progress bar (the job's own shows the process it waits for)."""

    def set_postfix_str(self, text: str) -> None:
        pass


# A later process's measurement of one row: (its setting, the row's name, the batches per timed
# epoch the first process sized, a progress bar) -> the row.
MeasureRow = Callable[[DataLoaderSettings, str, int, Any], dict[str, Any]]


def run_process_request(settings: DataLoaderSettings, measure: MeasureRow) -> int:
    """In a later process: the request's setting, every requested row measured by ``measure``
    (each in a fork of this interpreter), written to ``--process-output``. Only the job's own
    process measures the baselines."""
    assert settings.process_request is not None and settings.process_output is not None
    request = json.loads(settings.process_request.read_text())
    setting = dataclasses.replace(
        settings,
        scope=request["scope"],
        workers=int(request["workers"]),
        loader=request.get("loader") or settings.loader,
        decoder=request.get("decoder") or settings.decoder,
        baseline_runs=0,
    )
    windows: dict[str, int] = request["windows"]
    rows = {
        name: process_fields(measure(setting, name, int(window), _NoBar()))
        for name, window in windows.items()
    }
    settings.process_output.write_text(json.dumps({"rows": rows}))
    return 0


def _median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def merged(first: dict[str, Any], later: Sequence[dict[str, Any]], name: str) -> dict[str, Any]:
    """One row of a setting's processes: ``first`` the job's own process's row (every field),
    ``later`` each later process's output (``later_process``). A row not ok in the first
    process is returned as it is (no later process measures it)."""
    if first.get("status") != "ok":
        return first
    per = [first] + [
        (out.get("rows") or {}).get(name) or non_ok_row("error", out.get("error") or "no row")
        for out in later
    ]
    ok = [r for r in per if r.get("status") == "ok" and r.get("throughputs")]
    groups = [[float(v) for v in r["throughputs"]] for r in ok]
    values = [statistics.median(g) for g in groups]
    interval = decision.median_interval(values)
    row = dict(first)
    row.update(
        summarize_throughputs(
            [v for g in groups for v in g], [t for r in ok for t in r.get("times") or []], groups
        )
    )
    median = interval.median
    row[MEDIAN_THROUGHPUT] = median
    row.update(
        ci_low=interval.low,
        ci_high=interval.high,
        ci_level=interval.level,
        ci_method=PROCESS_CI_METHOD,
        relative_ci=max(interval.high - median, median - interval.low) / median,
        throughputs_by_process=groups,
        process_throughputs=values,
        **interval.fields("process"),
    )
    steady = [s for r in ok if (s := _median_or_none(r.get("steady_throughputs") or []))]
    row["process_steady_throughputs"] = steady
    if steady:
        stream = decision.median_interval(steady)
        row.update(
            steady_throughput=stream.median,
            steady_ci_low=stream.low,
            steady_ci_high=stream.high,
            steady_ci_level=stream.level,
            steady_ci_method=PROCESS_CI_METHOD,
            steady_throughputs=[v for r in ok for v in r.get("steady_throughputs") or []],
        )
    faults = [f for r in ok if (f := r.get("minor_faults_per_image")) is not None]
    row["minor_faults_per_image_by_process"] = faults
    row["minor_faults_per_image"] = _median_or_none(faults)
    row["first_batch_s_by_process"] = [r.get("first_batch_s") for r in ok]
    row["window_batches_by_process"] = [r.get("window_batches") for r in ok]
    row["timed_rounds"] = sum(int(r.get("timed_rounds") or 0) for r in ok)
    kept = {id(r) for r in ok}
    failed = [
        f"process {i + 1}: {r.get('status')} ({r.get('reason') or 'no reason recorded'})"
        for i, r in enumerate(per)
        if id(r) not in kept
    ]
    if failed:
        row["processes_not_ok"] = "; ".join(failed)
    return row
