"""The skeleton every engine shares: set-up -> preflight -> warm-up -> timed window -> row ->
finish. A timing or row fix made here lands in every engine.

* set-up: the command line parsed into the engine's settings record (augbench.measuring.engines.cli;
  the batch-pipeline engines' shared part is :class:`StreamSettings`), the job's stream plan and
  images (:func:`job_inputs` for the batch-pipeline engines), :func:`import_library` (the
  allocator setting checked, then the library imported), :func:`import_failure` and
  :func:`precheck_row` for rows decided without measuring, and the :class:`Job` (label, regime,
  scope, library) that its status lines and its result file name;
* preflight: augbench.measuring.engines.preflight (the same fields in every engine's rows; per
  sample in cpu_dataloader and pipeline_breakdown); warm-up and timed window:
  augbench.measuring.engines.streaming for the batch streams of the GPU regimes, while
  cpu_dataloader's interleaved epochs (augbench.measuring.engines.dataloader.timing) and micro's
  pyperf workers keep their own windows;
* rows: :class:`RowLog` holds the job's rows and prints each one's status line the moment it is
  final; :func:`each_row` is the row loop; :func:`stage_error_row` is the row of a failure at a
  named stage;
* finish: :meth:`Job.finish` writes the result file atomically with the job's metadata and
  returns the job's exit status (:func:`write_result` for a diagnostic's file,
  :func:`exit_status` for a job that measures several settings).

The batch-pipeline engines (gpu_dataloader and dali) supply three things to :func:`run_rows`:

* ``precheck(name) -> row | None``: the row of a recipe that is not measured here (import
  failure, ``unsupported``, ``skipped``/``error`` because CUDA is not usable), else None;
* ``measure`` and ``kwargs(name)``: a module-level function returning the row of one recipe and
  its keyword arguments, both picklable. ``measure`` sets its pipeline up, drives it with
  augbench.measuring.engines.streaming.run_stream (first batch, preflight, warm-up, timed
  repetitions) and turns the result into a row with :func:`stream_row`, after checking its last
  output with
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
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from augbench.measuring import allocator, media, memory_peak, quietness
from augbench.measuring.engines import cli
from augbench.measuring.engines.common import job_metadata
from augbench.measuring.engines.streaming import StreamPlan, StreamResult
from augbench.policy import SlowTransformPolicy, ThreadPolicy
from augbench.results import non_ok_row, ok_row, status_line, write_json_atomic, write_result_file
from augbench.workload import adapters, gpu_recipes, pipelines

Row = dict[str, Any]
CUDA_ERROR_MARKERS = ("CUDA error", "cudaError", "device-side assert", "illegal memory access")


@dataclass(frozen=True, kw_only=True)
class StreamSettings(
    cli.ShardSettings, cli.ValuesFlag, cli.WarmupsFlag, cli.PipelinesFlag, cli.GpuFlag
):
    """What the batch-pipeline engines (gpu_dataloader, dali) share: the shared flags they both
    take, and the batch size of their streams."""

    batch_size: int


@dataclass(frozen=True)
class JobInputs:
    """What every batch-pipeline job derives from its settings before measuring."""

    transforms: list[str]
    policy: SlowTransformPolicy
    plan: StreamPlan
    files: list[Path]


def job_inputs(settings: StreamSettings) -> JobInputs:
    """From the engine's settings: the recipe names (checked when the command line was parsed),
    the slow-transform policy, the stream plan and the selected image files."""
    # The images the job really has (fewer than asked under dataset.allow_fewer) size the stream.
    files = media.select_files(settings.manifest, settings.num_images)
    plan = StreamPlan.for_images(
        len(files),
        settings.batch_size,
        warmup_reps=settings.warmups,
        reps=settings.values,
        policy=settings.policy,
    )
    return JobInputs(list(settings.transforms), settings.policy, plan, files)


def stream_params(
    settings: StreamSettings, inputs: JobInputs, own: dict[str, Any], timing: dict[str, Any]
) -> dict[str, Any]:
    """A batch-pipeline job's ``benchmark_params`` (after ``num_images``): the engine's ``own``
    settings, the repetitions and the stream plan, what is timed and how (``timing``), then what
    every such job states (isolation, policy, shard, transforms, GPU mode)."""
    return {
        **own,
        "values": settings.values,
        "warmups": settings.warmups,
        "stream_plan": inputs.plan.to_dict(),
        **timing,
        "isolation": "each measured recipe in its own spawned process",
        "slow_transform_policy": inputs.policy.to_dict(),
        "shard": settings.shard,
        "transforms": inputs.transforms,
        "gpu": settings.gpu,
    }


def import_library(adapter: adapters.Adapter) -> None:
    """Every engine's set-up of its library: the job's allocator setting is checked first
    (augbench.measuring.allocator.check_requested raises NotApplied where it is not in force), then
    the library is imported. Both failures make every row of the job say why
    (:func:`setup_problem`)."""
    allocator.check_requested()
    adapter.import_library()


def setup_problem(stage: str, exc: BaseException) -> tuple[str, str]:
    """(status, reason) of every row of a job whose set-up failed: an allocator setting not
    applied keeps its own status (``skipped`` where it is not installed) and reason; any other
    failure is an ``error`` naming the stage and the exception."""
    if isinstance(exc, allocator.NotApplied):
        return exc.status, str(exc)
    return "error", f"{stage}: {type(exc).__name__}: {exc}"


def import_failure(adapter: adapters.Adapter) -> tuple[str, str] | None:
    """(status, reason) where the library cannot be set up in this process (every row then says
    so: :func:`setup_problem`), or None."""
    try:
        import_library(adapter)
    except Exception as exc:
        return setup_problem("import failed", exc)
    return None


def precheck_row(
    *,
    import_error: tuple[str, str] | None,
    unsupported: str | None,
    unavailable: tuple[str, str] | None,
) -> Row | None:
    """The row of a recipe that is not measured, in order of precedence: the library cannot be
    set up (:func:`import_failure`), it lacks the recipe (unsupported), the hardware is not
    usable here (skipped/error, e.g. augbench.cuda_env); None when the recipe is measured."""
    if import_error is not None:
        return non_ok_row(*import_error)
    if unsupported is not None:
        return non_ok_row("unsupported", unsupported)
    if unavailable is not None:
        return non_ok_row(*unavailable)
    return None


def recipe_precheck(
    adapter: adapters.Adapter,
    user_pipelines: dict[str, pipelines.Pipeline],
    import_error: tuple[str, str] | None,
    unavailable: tuple[str, str] | None,
) -> Callable[[str], Row | None]:
    """The GPU regimes' ``precheck``: a user pipeline whose step (or target) the GPU path lacks
    is one row naming it, never composed; otherwise :func:`precheck_row`."""

    def precheck(name: str) -> Row | None:
        pipeline = user_pipelines.get(name)
        problem = pipelines.gpu_problem_row(adapter, pipeline, import_error)
        return problem or precheck_row(
            import_error=import_error,
            unsupported=None if pipeline else gpu_recipes.unsupported_reason(adapter, name),
            unavailable=unavailable,
        )

    return precheck


def recipe_fields(adapter: adapters.Adapter, name: str) -> dict[str, Any]:
    """The first fields of a GPU regime's single-transform row: the mapping and the recipe."""
    identity = name == gpu_recipes.IDENTITY
    return {
        "mapping": "identity (no transform)" if identity else adapter.mapping_call(name),
        "recipe": gpu_recipes.recipe(name),
    }


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


def original_error(exc: BaseException) -> BaseException:
    """The error ``exc`` wraps, followed down: an exception group's first member, an error's
    ``__cause__`` (a thread pipeline reports a failed sample as a group of errors raised from
    it); ``exc`` itself where it wraps none."""
    seen = {id(exc)}
    while True:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            inner: BaseException | None = exc.exceptions[0]
        else:
            inner = exc.__cause__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def describe(exc: BaseException) -> str:
    """``Type: message``, followed by the original error's where ``exc`` wraps one."""
    text = f"{type(exc).__name__}: {exc}"
    root = original_error(exc)
    return text if root is exc else f"{text} (from {type(root).__name__}: {root})"


def traceback_tail(exc: BaseException) -> str:
    """The end of ``exc``'s traceback, as much as a row keeps."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def stage_error_row(stage: str, exc: BaseException, **extra: Any) -> Row:
    """The ``error`` row of a failure at a named stage (setup, preflight, measurement): the
    stage and the library's message, and the traceback's end (an allocator setting that is not
    in force: its own status and reason, :func:`setup_problem`)."""
    if isinstance(exc, allocator.NotApplied):
        return non_ok_row(*setup_problem(stage, exc), **extra)
    message = f"{stage}: {describe(exc)}"
    return non_ok_row("error", message, traceback=traceback_tail(exc), **extra)


def error_row(exc: BaseException) -> Row:
    message = describe(exc)
    row = non_ok_row("error", message, traceback=traceback_tail(exc))
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


def in_fresh_interpreter(
    module: str, argv: Sequence[str], request: Any, flags: tuple[str, str], what: str
) -> dict[str, Any]:
    """Run engine ``module`` again in a fresh interpreter with the job's ``argv`` and ``request``
    (JSON), passed as ``flags`` = (request flag, output flag); its JSON output, or
    ``{"error": reason}`` naming ``what`` where the interpreter wrote none."""
    with tempfile.TemporaryDirectory(prefix="augbench-fresh-") as tmp:
        request_file, output = Path(tmp) / "request.json", Path(tmp) / "output.json"
        request_file.write_text(json.dumps(request))
        command = [
            sys.executable, "-m", module, *argv,
            flags[0], str(request_file), flags[1], str(output),
        ]  # fmt: skip
        sys.stdout.flush()
        sys.stderr.flush()
        run = subprocess.run(command, capture_output=True, text=True)
        if output.exists():
            return json.loads(output.read_text())
    tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
    return {
        "error": f"{what}'s fresh interpreter {death_reason(run.returncode)} "
        f"before writing its result: {tail[0]}"
    }


def death_reason(exitcode: int | None) -> str:
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
                f"the recipe's process {death_reason(proc.exitcode)} before writing its row "
                "(isolated: the other recipes of this job are unaffected)",
                cuda_error=None,
            )
    row["isolation"] = f"own process (spawn), exit code {proc.exitcode}"
    return row


def recreate_torch_thread_pool() -> None:
    """In a process forked after torch used its thread pool: have the pool re-created now, in
    this one thread. torch marks it for re-creation in a forked child and re-creates it on first
    use, racily where several threads use it first at once (a thread loader's threads fail with
    "Invalid thread pool!"). A fresh process, a user's, has no pool to re-create."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(torch.get_num_threads())


def _forked_child(measure: Callable[[], Any], out: str) -> None:
    recreate_torch_thread_pool()
    try:
        result = measure()
    except Exception as exc:  # one failing unit never loses the others
        result = error_row(exc)
    Path(out).write_text(json.dumps(result, default=str))


def in_fresh_fork(measure: Callable[[], Any], what: str = "measurement") -> Any:
    """``measure()`` in a child forked from this process, its JSON-able result returned.

    The parent only imports and loads; every measurement runs in a child that starts from that
    state, so no measurement depends on which ran before it in the job: glibc's allocator adapts
    its thresholds to what a process freed before (augbench.measuring.allocator), and a process that
    timed a large recipe first would time the next one differently from a user's fresh process. A
    fork costs milliseconds where a fresh interpreter pays the library's import again. (Forking is
    safe here: the parent has started no threads; CUDA processes use :func:`measure_isolated`.) A
    child that dies without writing its result becomes an ``error`` row naming its exit code or
    signal."""
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="augbench-fork-") as tmp:
        out = Path(tmp) / "result.json"
        # Not a daemon: the measurement's own DataLoader workers are children of this process.
        proc = ctx.Process(target=_forked_child, args=(measure, str(out)), daemon=False)
        sys.stdout.flush()
        sys.stderr.flush()  # nothing buffered is written twice, by parent and child
        proc.start()
        proc.join()
        if out.exists():
            return json.loads(out.read_text())
    return non_ok_row(
        "error",
        f"the {what}'s process {death_reason(proc.exitcode)} before writing its result "
        "(the job's other measurements are unaffected)",
    )


class RowLog:
    """The job's rows by name, in the order they became final, each reported by one status line
    on stderr at that moment (through ``bar``'s writer where the job shows a tqdm bar, so the
    line does not tear it; ``label`` None: no status lines, for a diagnostic's rows)."""

    def __init__(self, label: str | None, bar: Any = None) -> None:
        self.label = label
        self.bar = bar
        self.rows: dict[str, Row] = {}

    def add(self, name: str, row: Row, *, more: dict[str, Row] | None = None) -> None:
        """Keep ``row`` under ``name`` and report it; ``more``: rows that belong to it (a
        pipeline's step rows), kept after it and not reported."""
        self.rows[name] = row
        if more:
            self.rows.update(more)
        if self.label is None:
            return
        line = status_line(self.label, name, row)
        if self.bar is None:
            print(line, file=sys.stderr, flush=True)
        else:
            self.bar.write(line, file=sys.stderr)


def each_row(names: Iterable[str], row_of: Callable[[str], Row], log: RowLog) -> dict[str, Row]:
    """The row loop: each name's row in turn, the bar (if any) naming the row being measured."""
    for name in names:
        if log.bar is not None:
            log.bar.set_postfix_str(name)
        log.add(name, row_of(name))
    return log.rows


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

    def row_of(name: str) -> Row:
        row = precheck(name)
        if row is None:
            given = kwargs(name)
            row = measure_isolated(measure, given) if isolate else measure_row(measure, given)
        row.update(fields(name))
        return row

    return each_row(transforms, row_of, RowLog(label))


def thread_record(policy: ThreadPolicy) -> dict[str, Any]:
    """The thread policy a job runs under and the variables it exported (before any import)."""
    return {"policy": policy.to_dict(), "environment": policy.environment()}


def write_result(
    output: Path,
    metadata: dict[str, Any],
    rows: dict[str, Row],
    *,
    versioned: bool = True,
    started: quietness.Snapshot | None = None,
) -> int:
    """The result file, written atomically (a killed job leaves none that looks complete), and
    the exit status of a job that wrote it. ``versioned`` False: the metadata as given, without
    the result schema's version (the lazy-outputs diagnostic is not a result file). The
    metadata's ``quietness`` (augbench.measuring.quietness) runs from ``started`` (the Job's start),
    else from the engine process's start, to now; none where neither is known. ``job_memory``:
    the peaks of the job's processes so far."""
    started = started or quietness.claim_engine_start()
    if started is not None:
        metadata = {**metadata, "quietness": quietness.finish(started)}
    # The peak memory of the job's processes so far (augbench.measuring.memory_peak; None when
    # the engine runs without the launcher): every result file, diagnostics too, is written here.
    metadata = {**metadata, "job_memory": memory_peak.recorded()}
    if versioned:  # checked against the result schema's requirements before it is written
        write_result_file(output, metadata, rows)
    else:
        write_json_atomic(output, {"metadata": metadata, "results": rows})
    return 0


@dataclass(frozen=True)
class Job:
    """What a job is, decided at its set-up: the label of its status lines, and the regime, scope
    and library its result file records (with the shared settings: machine, manifest, number of
    images, output, env marker). Every engine ends through :meth:`finish`."""

    settings: cli.CommonSettings
    adapter: adapters.Adapter
    regime: str
    scope: str
    label: str
    # Where the job's quietness record starts (augbench.measuring.quietness.job_start).
    quiet_start: quietness.Snapshot = field(
        default_factory=quietness.job_start, repr=False, compare=False
    )

    def row_log(self, bar: Any = None) -> RowLog:
        return RowLog(self.label, bar)

    def run_rows(
        self,
        transforms: list[str],
        precheck: Callable[[str], Row | None],
        measure: Callable[..., Row],
        kwargs: Callable[[str], dict[str, Any]],
        fields: Callable[[str], dict[str, Any]],
    ) -> dict[str, Row]:
        """:func:`run_rows`, each measured recipe in its own process."""
        return run_rows(
            transforms,
            label=self.label,
            precheck=precheck,
            measure=measure,
            kwargs=kwargs,
            fields=fields,
        )

    def finish(
        self,
        rows: dict[str, Row],
        thread_settings: dict[str, Any],
        params: dict[str, Any],
        extra: dict[str, Any] | None = None,
    ) -> int:
        """The end of every job: its metadata (augbench.measuring.engines.common.job_metadata;
        ``params`` follow ``num_images`` in ``benchmark_params``), the result file written
        atomically to ``--output``, and the job's exit status."""
        settings = self.settings
        metadata = job_metadata(
            adapter=self.adapter,
            regime=self.regime,
            scope=self.scope,
            machine=settings.machine,
            manifest=settings.manifest,
            num_images=settings.num_images,
            benchmark_params={"num_images": settings.num_images, **params},
            thread_settings=thread_settings,
            env_marker=settings.env_marker,
            extra=extra,
        )
        return write_result(settings.output, metadata, rows, started=self.quiet_start)


def exit_status(label: str, failed: list[str]) -> int:
    """A job that measures several settings in turn: 0 when every one wrote its file, else 1
    after one line naming those that failed (each one's traceback is printed already)."""
    if not failed:
        return 0
    print(f"{label}: settings failed: {', '.join(failed)}", file=sys.stderr)
    return 1
