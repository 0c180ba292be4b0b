"""The skeleton every batch-pipeline engine shares (gpu_dataloader and dali; cpu_dataloader can
adopt it): rows decided without measuring, one measured recipe per fresh process, the status
line, and the result file.

An engine supplies three things:

* ``precheck(name) -> row | None``: the row of a recipe that is not measured here (import
  failure, ``unsupported``, ``skipped``/``error`` because CUDA is not usable), else None;
* ``measure`` and ``kwargs(name)``: a module-level function returning the row of one recipe and
  its keyword arguments, both picklable. ``measure`` sets its pipeline up, drives it with
  augbench.engines.streaming.run_stream (first batch, preflight, warm-up, timed repetitions) and
  turns the result into a row with :func:`stream_row`, after checking its last output with
  :func:`output_problems`;
* ``fields(name) -> dict``: what every row of the job records (recipe, scope, device, ...).

:func:`run_rows` runs each measured recipe in its own spawned process (``isolate=True``), so a
CUDA device-side assert, an illegal memory access or a crash of the library poisons nothing but
its own row: the next recipe starts with a fresh process and a fresh CUDA context. A process that
dies without writing its row becomes an ``error`` row naming its exit code or signal.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench import adapters, media
from augbench.engines.streaming import StreamPlan, StreamResult
from augbench.policy import SlowTransformPolicy
from augbench.results import non_ok_row, ok_row, result_file, status_line, write_json_atomic

Row = dict[str, Any]
CUDA_ERROR_MARKERS = ("CUDA error", "cudaError", "device-side assert", "illegal memory access")


@dataclass(frozen=True)
class JobInputs:
    """What every batch-pipeline job derives from its command line before measuring."""

    transforms: list[str]
    policy: SlowTransformPolicy
    plan: StreamPlan
    files: list[Path]


def job_inputs(args: Any, check_name: Callable[[str], None]) -> JobInputs:
    """From the engine's parsed arguments (``transforms``, ``policy``, ``manifest``,
    ``num_images``, ``batch_size``, ``warmups``, ``values``): the recipe names (each checked, so
    unknown names fail the job before any measuring), the slow-transform policy, the stream plan
    and the selected image files."""
    names = [t for t in args.transforms.split(",") if t]
    for name in names:
        check_name(name)
    slow = SlowTransformPolicy(**json.loads(args.policy))
    plan = StreamPlan.for_images(
        args.num_images, args.batch_size, warmup_reps=args.warmups, reps=args.values, policy=slow
    )
    return JobInputs(names, slow, plan, media.select_files(args.manifest, args.num_images))


def import_failure(adapter: adapters.Adapter) -> str | None:
    """Why the library cannot be imported in this env (every row then says so), or None."""
    try:
        adapter.import_library()
    except Exception as exc:
        return f"import failed: {type(exc).__name__}: {exc}"
    return None


def precheck_row(
    *,
    import_error: str | None,
    unsupported: str | None,
    unavailable: tuple[str, str] | None,
) -> Row | None:
    """The row of a recipe that is not measured, in order of precedence: the library does not
    import (error), it lacks the recipe (unsupported), the hardware is not usable here
    (skipped/error, e.g. augbench.cuda_env); None when the recipe is to be measured."""
    if import_error is not None:
        return non_ok_row("error", import_error)
    if unsupported is not None:
        return non_ok_row("unsupported", unsupported)
    if unavailable is not None:
        return non_ok_row(*unavailable)
    return None


def output_problems(
    *,
    shape: list[int],
    expected_shape: list[int],
    dtype: str,
    expected_dtype: str,
    device: str,
    expected_device: str,
) -> list[str]:
    """What is wrong with a recipe's last output (device, shape, dtype); empty when nothing."""
    problems = []
    if device != expected_device:
        problems.append(f"output is on {device}, expected {expected_device}")
    if shape != expected_shape or dtype != expected_dtype:
        problems.append(f"output is {shape} {dtype}, expected {expected_shape} {expected_dtype}")
    return problems


def stream_row(
    result: StreamResult,
    plan: StreamPlan,
    details: dict[str, Any],
    problems: list[str],
    **output: Any,
) -> Row:
    """The row of one streamed recipe: early_stopped, an error naming what is wrong with its
    output, or ok with every repetition's throughput and the output's description."""
    if result.early_stop_reason is not None:
        return non_ok_row("early_stopped", result.early_stop_reason, **details)
    if problems:
        return non_ok_row("error", "recipe " + "; ".join(problems), **details)
    return ok_row(
        result.throughputs,
        result.times,
        warmup_iterations=plan.warmup_reps,
        num_images=result.images_per_rep,
        **output,
        **details,
    )


def error_row(exc: BaseException) -> Row:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    message = f"{type(exc).__name__}: {exc}"
    row = non_ok_row("error", message, traceback=tb[-4000:])
    if any(marker in message for marker in CUDA_ERROR_MARKERS):
        # The CUDA context of the process that raised this is unusable from here on; only the
        # process isolation keeps the following recipes measurable.
        row["cuda_error"] = True
    return row


def measure_row(measure: Callable[..., Row], kwargs: dict[str, Any]) -> Row:
    """One recipe's row; a mapping the library lacks is ``unsupported``, any failure ``error``."""
    try:
        return measure(**kwargs)
    except adapters.Unsupported as exc:
        return non_ok_row("unsupported", str(exc))
    except Exception as exc:  # one failing recipe never loses the others
        return error_row(exc)


def _child(measure: Callable[..., Row], kwargs: dict[str, Any], out: str) -> None:
    row = measure_row(measure, kwargs)
    Path(out).write_text(json.dumps(row, default=str))


def _death_reason(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not finish"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def measure_isolated(measure: Callable[..., Row], kwargs: dict[str, Any]) -> Row:
    """``measure(**kwargs)`` in a fresh spawned process (no CUDA state is inherited)."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="augbench-recipe-") as tmp:
        out = Path(tmp) / "row.json"
        # Not a daemon: the recipe's own DataLoader workers are children of this process.
        proc = ctx.Process(target=_child, args=(measure, kwargs, str(out)), daemon=False)
        proc.start()
        proc.join()
        if out.exists():
            row: Row = json.loads(out.read_text())
        else:
            row = non_ok_row(
                "error",
                f"the recipe's process {_death_reason(proc.exitcode)} before writing its row "
                "(isolated: the other recipes of this job are unaffected)",
                cuda_error=None,
            )
    row["isolation"] = f"own process (spawn), exit code {proc.exitcode}"
    return row


def run_rows(
    transforms: list[str],
    *,
    label: str,
    precheck: Callable[[str], Row | None],
    measure: Callable[..., Row],
    kwargs: Callable[[str], dict[str, Any]],
    fields: Callable[[str], dict[str, Any]],
    isolate: bool = True,
) -> dict[str, Row]:
    """Every recipe's row, in order, each printed as one status line when done."""
    rows: dict[str, Row] = {}
    for name in transforms:
        row = precheck(name)
        if row is None:
            args = kwargs(name)
            row = measure_isolated(measure, args) if isolate else measure_row(measure, args)
        row.update(fields(name))
        rows[name] = row
        print(status_line(label, name, row), file=sys.stderr, flush=True)
    return rows


def write_result(output: Path, metadata: dict[str, Any], rows: dict[str, Row]) -> None:
    write_json_atomic(output, result_file(metadata, rows))
