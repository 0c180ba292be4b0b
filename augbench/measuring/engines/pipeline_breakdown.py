"""Pipeline breakdown job: one library, every configured pipeline, one thread -> one result file.

For each pipeline (``augbench.workload.pipelines``) on the same decoded images (the library's own
decoder, native layout, decoded before any clock), three kinds of pass:

- **whole** (the row a user reads): the library's own composition object (``A.Compose``,
  ``v2.Compose``, ``K.AugmentationSequential``, a Pillow function chain; the user's own Compose
  for a pipeline written in the library's format), built once per job and called once per
  image through the harness, its final output materialized once and nothing in between;
- **bare**: a plain loop over the same object on the same images, written as a user writes it
  (``compose(image=image)["image"]``, ``compose(image)``), nothing else. harness / bare is the
  check that can fail: outside ``policy.PIPELINE_HARNESS_TOLERANCE`` the row is flagged;
- **steps** (the isolated per-step breakdown): each step timed alone on the previous steps'
  outputs, its own output materialized inside its timer (``Adapter.materialize``).

Every round of passes runs in a **fresh interpreter**, the job's engine started again for it
(``round_in_fresh_interpreter``; the first round's also prepares every pipeline: its build, its
preflight, its output), and every pass in a **fresh process** forked from that interpreter, which
itself only imports the library, decodes the images and builds the pipelines, and never runs one
(the preflight runs in a child too). The job's own process imports no library: it starts the
rounds' interpreters one at a time and keeps each pipeline's tally, so the job holds one
interpreter at its peak however many rounds it runs. A new interpreter gets an address-space layout
of its own from the kernel, as a user's process does, and under glibc as shipped that layout
decides how many pages a pipeline faults in again on every call (1.79x between fresh interpreters
for one shipped pipeline, docs/allocator.md); children forked from one process share most of its
draw, so the rounds of a row, not only its children, sample it. A child runs one kind of pass: an
untimed warm-up, then ``--values-per-process`` timed values (policy.BREAKDOWN_VALUES_PER_PROCESS by
default), seeded by round (``round_seeds``: the three children of a round make the same random
draws, so their ratios compare the same work, and each round draws new ones, so a row averages over
the draws a user's loop makes and its interval includes them), so no number depends on what ran
before it in a process: glibc's allocator adapts its thresholds to what a process freed before
(augbench.measuring.allocator), and a whole pass timed after the steps pass, in one process,
measured that history. Each child also places its inputs behind a pad of a seeded random size and
builds its own pipeline objects after them (``own_layout``). Children run in the order S W B, S B
W, ... (steps, whole, bare): over each pair of rounds every kind follows every other kind equally
often; a round's interpreter runs the round of every pipeline still measuring, in turn, so a row's
processes spread over the job's time. Rounds repeat until the whole pipeline's median and the
harness / bare ratio both reach a relative interval of ``policy.RELATIVE_CI_TARGET``
(``augbench.measuring.stopping``; the intervals are bootstraps over the children where there are
three or more, augbench.intervals), looked at once per round, between the configured minimum and
maximum number of values per kind. Each value is one or more passes over the images. A row records
its rounds' interpreters (``round_interpreters``), how many distinct address layouts they had
(``round_layouts``: 1 on a machine that does not randomize them) and each whole pass's faults
(``minor_faults_per_image_by_process``).

Rows (regime ``micro``, scope ``memory``): ``<pipeline>`` is the whole pipeline (variant
``pipeline``) with ``harness_vs_bare`` and ``composition_effect`` (whole / sum of the isolated
steps: information; beyond ``policy.COMPOSITION_EFFECT_NOTE`` the row says what differs), each
with the interval of the ratio, its
``compose_call`` and ``output_contract``; ``<pipeline> · <i> <step>`` is one step (variant
``pipeline-step``, ``step``, ``step_index``, ``share`` of the summed step time). A library lacking
a step gets one ``unsupported`` row naming it; a slow pipeline is ``early_stopped`` under the
shared slow-transform policy.
"""

from __future__ import annotations

from augbench.policy import MICRO_THREADS

MICRO_THREADS.apply_environment()  # before numpy, torch or cv2 is imported

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from augbench import decision  # noqa: E402
from augbench.intervals import Interval  # noqa: E402
from augbench.measuring import allocator, media, pipeline_builders  # noqa: E402
from augbench.measuring.engines import cli, preflight, skeleton  # noqa: E402
from augbench.measuring.engines.breakdown_passes import (  # noqa: E402
    Breakdown,
    Materialize,
    Measurement,
    Unit,
    reseed,
    whole_pass,
)
from augbench.measuring.stopping import (  # noqa: E402
    StoppingRule,
    breakdown_value_bounds,
    passes_per_value,
)
from augbench.policy import (  # noqa: E402
    BREAKDOWN_VALUES_PER_PROCESS,
    COMPOSITION_EFFECT_NOTE,
    PIPELINE_HARNESS_TOLERANCE,
    SlowTransformPolicy,
)
from augbench.results import json_default, non_ok_row, ok_row  # noqa: E402
from augbench.workload import adapters, pipelines  # noqa: E402


@dataclass(frozen=True, kw_only=True)
class BreakdownSettings(
    cli.CommonSettings, cli.LibraryFlag, cli.PolicyFlag, cli.WarmupsFlag, cli.PipelinesFlag
):
    """A pipeline breakdown job's settings: the shared flags it takes (``--pipelines`` here the
    resolved pipelines, given as JSON) and its own."""

    min_values: int
    max_values: int
    values_per_process: int
    # A round's fresh interpreter: its request and where it writes what it measured.
    round_request: Path | None
    round_output: Path | None
    # The command line each round's fresh interpreter is started with.
    argv: tuple[str, ...]


def parse_args(argv: list[str] | None = None) -> BreakdownSettings:
    p = cli.engine_parser(__doc__, transforms=False, shard=False, warmups=True)
    p.add_argument("--pipelines", required=True, help="resolved pipelines as JSON")
    p.add_argument("--min-values", type=int, default=3)
    p.add_argument("--max-values", type=int, default=10)
    p.add_argument(
        "--values-per-process",
        type=int,
        default=BREAKDOWN_VALUES_PER_PROCESS,
        help="timed values of each fresh process (a round runs one process of each kind)",
    )
    # The job starts itself again with these two for each round (round_in_fresh_interpreter).
    p.add_argument("--round-request", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--round-output", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    return cli.settings_from(
        BreakdownSettings,
        args,
        pipelines=pipelines.from_json(args.pipelines),
        argv=tuple(sys.argv[1:] if argv is None else argv),
    )


class WholeSamples:
    """The whole pipeline on input ``i``, indexable like a dataset: the shared preflight
    (``preflight.per_sample``: one untimed sample, then up to ``preflight_items`` timed)."""

    def __init__(
        self, whole: Callable[[Any], Any], inputs: Sequence[Any], materialize: Materialize
    ):
        self.whole, self.inputs, self.materialize = whole, inputs, materialize

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int) -> None:
        whole_pass(self.whole, [self.inputs[index]], self.materialize)


def copied_steps(units: Sequence[Unit], sample: Any, materialize: Materialize) -> list[bool]:
    """Per step, whether its isolated output had to be copied to own its memory (a view of its
    input, or not dense): work the steps pass does and the composition need not."""
    copied = []
    current = sample
    for _, fn in units:
        out = fn(current)
        owned = materialize(out, current)
        copied.append(owned is not out)
        current = owned
    return copied


def composition_note(
    effect: float, labels: Sequence[str], copied: Sequence[bool], compose_call: str
) -> str:
    """Why the composition and the summed isolated steps differ, where they differ by more than
    COMPOSITION_EFFECT_NOTE (empty otherwise)."""
    if not abs(effect - 1.0) > COMPOSITION_EFFECT_NOTE:
        return ""
    views = [label for label, c in zip(labels, copied, strict=True) if c]
    if effect < 1.0:
        copies = (
            f"; in isolation the outputs of {', '.join(views)} are views copied to own memory"
            if views
            else ""
        )
        return (
            f"the composition takes {effect:.2f}x the summed isolated steps: it hands each "
            f"output straight to the next step (no materialization, no per-step timer or "
            f"wrapper call){copies}"
        )
    return (
        f"the composition takes {effect:.2f}x the summed isolated steps: its own per-call work "
        f"({compose_call}: argument checks, parameter sampling, data-key handling) costs more "
        "than the steps it runs"
    )


def breakdown_rows(
    pipeline: pipelines.Pipeline,
    result: Breakdown,
    fields: dict[str, Any],
    copied: Sequence[bool],
) -> dict[str, dict[str, Any]]:
    """The whole-pipeline row and one row per step, keyed for the result file."""
    n = result.images
    faults_by_process = result.faults_per_image_by_process()
    harness = result.harness()
    effect = result.composition()
    medians, shares = result.step_medians(), result.shares()
    bare_per_image = result.per_image(result.bare_seconds)
    within = harness.overlaps(
        Interval(
            1.0, 1.0 - PIPELINE_HARNESS_TOLERANCE, 1.0 + PIPELINE_HARNESS_TOLERANCE, 1.0, "", 0
        )
    )
    # One value per whole-pass process (its values' median): the unit of the row's interval and
    # of the one-thread comparison's margin (augbench.decision).
    per_process = [statistics.median(g) for g in result.throughputs(result.whole_groups) if g]
    rows: dict[str, dict[str, Any]] = {
        pipeline.name: ok_row(
            [n / s for s in result.whole_seconds],
            result.whole_seconds,
            warmup_iterations=1,
            groups=result.throughputs(result.whole_groups),
            process_throughputs=per_process,
            **decision.median_interval(per_process).fields("process"),
            num_images=n // result.passes,
            passes_per_value=result.passes,
            process_order=result.order,
            round_interpreters=len(result.layouts),
            round_layouts=len(set(result.layouts)),
            harness_vs_bare=harness.estimate,
            **harness.fields("harness_vs_bare_"),
            # Flagged only when the whole interval of the ratio lies outside the tolerance.
            harness_vs_bare_within=within,
            harness_tolerance=PIPELINE_HARNESS_TOLERANCE,
            harness_ms_per_image=1000.0 * result.per_image(result.whole_seconds),
            bare_ms_per_image=1000.0 * bare_per_image,
            bare_throughputs=[n / s for s in result.bare_seconds],
            composition_effect=effect.estimate,
            **effect.fields("composition_effect_"),
            minor_faults_per_image=result.faults_per_image(),
            minor_faults_per_image_by_process=faults_by_process,
            most_minor_faults_per_image=max(faults_by_process, default=None),
            composition_note=composition_note(
                effect.estimate, result.labels, copied, fields["compose_call"]
            ),
            steps=result.labels,
            step_seconds_per_image=medians,
            step_shares=shares,
            step_output_copied=list(copied),
            timing="the library's own composition, one call per image through the harness, its "
            "final output materialized once and kept until the next call returns; each round in "
            "a fresh interpreter, each of its values in a process forked from it before any pass "
            "ran, whole, bare-loop and isolated-step processes in turn",
            **fields,
        )
    }
    for index, label in enumerate(result.labels):
        groups = [[value[index] for value in g] for g in result.step_groups]
        seconds = [v for g in groups for v in g]
        rows[f"{pipeline.name} · {index} {label}"] = ok_row(
            [n / s if s > 0 else float("inf") for s in seconds],
            seconds,
            warmup_iterations=1,
            groups=[[n / s if s > 0 else float("inf") for s in g] for g in groups],
            num_images=n // result.passes,
            passes_per_value=result.passes,
            step=label,
            step_index=index,
            share=shares[index],
            seconds_per_image=medians[index],
            output_copied=copied[index],
            timing="this step alone on the previous steps' materialized outputs, in fresh "
            "processes of their own",
            **{**fields, "variant": pipelines.STEP_VARIANT},
        )
    return rows


class ConvertedInput:
    """The library's dtype conversion of the decoded 8-bit image (``Adapter.input_conversion``)
    as a step: on the image, or on the image of a {"image", "mask"} sample."""

    def __init__(self, convert: Callable[[Any], Any], mask: bool) -> None:
        self.convert, self.mask = convert, mask

    def __call__(self, sample: Any) -> Any:
        if self.mask:
            return {**sample, "image": self.convert(sample["image"])}
        return self.convert(sample)


def with_input_conversion(
    adapter: adapters.Adapter, pipeline: pipelines.Pipeline, units: list[Unit], whole: Any
) -> tuple[list[Unit], Any]:
    """Where the library's decoder converts the pixels' dtype (Kornia), that conversion as the
    pipeline's first step and inside the whole pipeline's call, on 8-bit inputs
    (``Adapter.decode_8bit``): every library's row then starts from the same decoded 8-bit
    image and pays its own conversion inside the clock."""
    if adapter.input_conversion is None:
        return units, whole
    from augbench.workload.adapters.base import Composed

    label, convert = adapter.input_conversion
    step = ConvertedInput(convert, "mask" in pipeline.targets)
    inner = whole.call

    def call(obj: Any, sample: Any) -> Any:
        return inner(obj, step(sample))

    return [(label, step), *units], Composed(whole.obj, f"{label}, then {whole.description}", call)


def inspect_pipeline(
    units: Sequence[Unit],
    whole: Any,
    inputs: Sequence[Any],
    materialize: Materialize,
    policy: SlowTransformPolicy,
    pipeline: pipelines.Pipeline,
) -> dict[str, Any]:
    """What is known of a pipeline before it is timed (run in a fresh process, like the
    passes): the shared preflight, its output and which isolated steps had to copy."""
    samples = WholeSamples(whole, inputs, materialize)
    pre = preflight.per_sample(samples, pipelines.scaled_policy(policy, pipeline))
    reseed(units, 0, whole)
    sample_output = whole(inputs[0])
    output = {
        **pipelines.describe_output(sample_output),
        "output_pages": allocator.output_pages(sample_output),
    }
    return {"pre": pre, "output": output, "copied": copied_steps(units, inputs[0], materialize)}


def rule_for(settings: BreakdownSettings) -> StoppingRule:
    """The configured values per kind, in whole rounds (one process of each kind, of
    ``--values-per-process`` values); the rule looks once per round."""
    per = max(1, settings.values_per_process)
    least, most = breakdown_value_bounds(settings.min_values, settings.max_values, per)
    return StoppingRule(least, most, block=per)


Rows = dict[str, dict[str, Any]]


@dataclass
class Prepared:
    """A pipeline ready to be measured: its Measurement and what its rows will carry."""

    pipeline: pipelines.Pipeline
    measurement: Measurement
    fields: dict[str, Any]
    copied: Sequence[bool]


def built(adapter: adapters.Adapter, pipeline: pipelines.Pipeline, images: list[Any]) -> Built:
    """A pipeline's steps and whole composition, its inputs in the library's form, the builder
    a timed process calls for objects of its own, and the library's materialization."""

    def build() -> tuple[list[Unit], Any]:
        units = pipeline_builders.build_units(adapter, pipeline)
        whole = pipeline_builders.build_whole(adapter, pipeline, units)
        return with_input_conversion(adapter, pipeline, units, whole)

    def materialize(out: Any, src: Any) -> Any:
        return pipelines.materialize(adapter, out, src)

    units, whole = build()
    inputs = [pipelines.prepare(adapter, pipeline, image) for image in images]
    return units, whole, inputs, build, materialize


Built = tuple[list[Unit], Any, list[Any], Callable[[], tuple[list[Unit], Any]], Materialize]


def measurement_of(parts: Built, settings: BreakdownSettings, passes: int) -> Measurement:
    """A pipeline's Measurement (``built``'s parts) under the job's stopping rule, warm-ups and
    values per process, each value ``passes`` passes over its inputs."""
    units, whole, inputs, build, materialize = parts
    return Measurement(
        units,
        whole,
        inputs,
        materialize,
        rule_for(settings),
        settings.warmups,
        passes,
        values_per_process=max(1, settings.values_per_process),
        build=build,
    )


def prepare_pipeline(
    adapter: adapters.Adapter,
    pipeline: pipelines.Pipeline,
    images: list[Any],
    settings: BreakdownSettings,
) -> Prepared | Rows:
    """The pipeline built and inspected (its preflight in a process of its own): a Prepared
    measurement, or the rows that say why it is not measured."""
    fields = pipelines.row_fields(pipeline, adapter)
    problem = pipelines.support_problem(adapter, pipeline)
    if problem is not None:
        status, reason, extra = problem
        return {pipeline.name: non_ok_row(status, reason, **extra, **fields)}

    try:
        parts = built(adapter, pipeline, images)
    except pipelines.PipelineError as exc:  # a user's own pipeline the library refuses
        return {pipeline.name: non_ok_row("error", str(exc), **fields)}
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("setup", exc, **fields)}
    units, whole, inputs, _, materialize = parts
    fields["compose_call"] = whole.description  # what was built (Kornia may fall back to a chain)
    definition = adapter.compose_definition(whole.obj)
    if definition is not None:
        fields["compose_definition"] = definition
    inspected = skeleton.in_fresh_fork(
        lambda: inspect_pipeline(units, whole, inputs, materialize, settings.policy, pipeline),
        "preflight",
    )
    if "pre" not in inspected:  # the preflight raised: its error row, with the stage named
        row = dict(inspected)
        row["reason"] = f"preflight: {row.get('reason')}"
        return {pipeline.name: {**row, **fields}}
    pre, output, copied = inspected["pre"], inspected["output"], inspected["copied"]
    verdict = pre.pop("verdict")
    if verdict is not None:
        return {pipeline.name: non_ok_row("early_stopped", verdict, **pre, **output, **fields)}
    # A value of a few images of a fast pipeline lasts milliseconds: repeat the pass until it
    # lasts MICRO_MIN_VALUE_SECONDS, as micro does, so one interrupt cannot swing a value.
    rate = pre.get("preflight_throughput") or 0.0
    passes = passes_per_value(1.0 / rate, len(inputs)) if rate > 0 else 1
    measurement = measurement_of(parts, settings, passes)
    return Prepared(pipeline, measurement, {**fields, **pre, **output}, copied)


def finish_pipeline(prepared: Prepared) -> Rows:
    """A measured pipeline's rows."""
    result = prepared.measurement.result
    memory = {"peak_rss_mb": result.peak_rss_mb, "peak_rss_scope": "the whole pass's processes"}
    return breakdown_rows(prepared.pipeline, result, {**prepared.fields, **memory}, prepared.copied)


def round_in_fresh_interpreter(
    argv: Sequence[str], request: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """One round of every pipeline of ``request`` (name -> ``Measurement.next_round``) in a
    fresh interpreter: this job's engine started again with the job's ``argv`` and
    ``--round-request`` (``run_round_request``), in the job's environment. A process forked from
    the job would inherit where the job's memory lies and the state its allocator reached while
    importing and loading; a new interpreter gets a layout of its own from the kernel, as a user's
    process does, so the rounds of a row sample that draw (docs/allocator.md, "What decides a
    process's history"). Its output: ``{"layout": address_layout(),
    "pipelines": {name: {"measured": [[kind, process result], ...]} or {"error": reason}}}``, or
    ``{"error": reason}`` where the interpreter wrote none."""
    return skeleton.in_fresh_interpreter(
        "augbench.measuring.engines.pipeline_breakdown",
        argv,
        request,
        ("--round-request", "--round-output"),
        "the round",
    )


def run_round_request(settings: BreakdownSettings) -> int:
    """In a round's fresh interpreter: import the library, decode the images, build each
    requested pipeline and run its round (``Measurement.run_round``) in processes forked from
    here; the first round (``first_round``) prepares every pipeline before. What they measured
    goes to ``--round-output``."""
    assert settings.round_request is not None and settings.round_output is not None
    request = json.loads(settings.round_request.read_text())
    adapter = adapters.get(settings.library)
    threads: dict[str, Any] = {}
    decode_info: dict[str, Any] = {}
    try:
        skeleton.import_library(adapter)
        threads = MICRO_THREADS.apply_runtime()
        files = media.select_files(settings.manifest, settings.num_images)
        start = time.perf_counter()
        # 8-bit images for every library: a conversion its decoder would do is timed as the
        # pipeline's first step (with_input_conversion).
        images = [adapter.decode_8bit(f) for f in files]
        decode_info = {
            "decoder": adapter.decoder,
            "preload_seconds": time.perf_counter() - start,
            "input_conversion": adapter.input_conversion[0] if adapter.input_conversion else None,
        }
    except Exception as exc:  # the library is broken in this env: every row says so
        outcome: dict[str, Any] = {"setup_error": list(skeleton.setup_problem("setup failed", exc))}
    else:
        if request.get("first"):
            outcome = first_round(adapter, images, settings)
        else:
            chosen = settings.pipelines

            def measurement(name: str) -> Measurement:
                parts = built(adapter, chosen[name], images)
                return measurement_of(parts, settings, request["rounds"][name]["passes"])

            outcome = run_rounds(measurement, request["rounds"])
    outcome.update(threads=threads, decode=decode_info)
    settings.round_output.write_text(json.dumps(outcome, default=json_default))
    return 0


def first_round(
    adapter: adapters.Adapter, images: list[Any], settings: BreakdownSettings
) -> dict[str, Any]:
    """Every pipeline prepared (``prepare_pipeline``), then the first round of those to be
    measured: ``run_rounds``'s output, where each pipeline also carries what its rows and tally
    need (``prepared``: fields, copied steps, step labels, images, passes per value) or, not
    measured, its rows (``rows``)."""
    active: dict[str, Prepared] = {}
    done: dict[str, Any] = {}
    for pipeline in settings.pipelines.values():
        prepared = prepare_pipeline(adapter, pipeline, images, settings)
        if isinstance(prepared, Prepared):
            active[pipeline.name] = prepared
        else:
            done[pipeline.name] = {"rows": prepared}
    request = {name: prepared.measurement.next_round() for name, prepared in active.items()}
    outcome = run_rounds(lambda name: active[name].measurement, request)
    for name, prepared in active.items():
        result = prepared.measurement.result
        outcome["pipelines"][name]["prepared"] = {
            "fields": prepared.fields,
            "copied": list(prepared.copied),
            "labels": result.labels,
            "images": result.images // result.passes,
            "passes": result.passes,
        }
    outcome["pipelines"].update(done)
    return outcome


def address_layout() -> str:
    """Where this process's C library lies (its ``malloc``'s address): the same in every process
    forked from one interpreter, another in each new interpreter where the kernel randomizes
    layouts (``/proc/sys/kernel/randomize_va_space`` not 0). A row's ``round_layouts`` counts
    the distinct ones its rounds ran in."""
    import ctypes

    return hex(ctypes.cast(ctypes.CDLL(None).malloc, ctypes.c_void_p).value or 0)


def run_rounds(
    measurement: Callable[[str], Measurement], request: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """The round of each pipeline of ``request`` (``Measurement.next_round``), one after
    another, in processes forked from this one (``measurement(name)``: the pipeline's
    Measurement here): what ``round_in_fresh_interpreter`` returns."""
    out: dict[str, Any] = {}
    for name, spec in request.items():
        try:
            out[name] = {"measured": measurement(name).run_round(spec["round"], spec["seed"])}
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"layout": address_layout(), "pipelines": out}


def tally_of(prepared: dict[str, Any], settings: BreakdownSettings) -> Measurement:
    """The job's tally of a pipeline the first round prepared: its rounds' processes added up
    against the job's stopping rule (``Measurement.record``), without the pipeline itself."""
    return Measurement.tally(
        prepared["labels"],
        prepared["images"],
        rule_for(settings),
        settings.warmups,
        prepared["passes"],
        max(1, settings.values_per_process),
    )


def measure_all(
    adapter: adapters.Adapter,
    chosen: list[pipelines.Pipeline],
    settings: BreakdownSettings,
    bar: Any,
) -> tuple[dict[str, Rows], dict[str, Any]]:
    """Every pipeline's rows, and what the first round's interpreter recorded of its set-up
    (``threads``, ``decode``): round after round, each round of every pipeline still measuring
    in one fresh interpreter (``round_in_fresh_interpreter``; the first also prepares them),
    until each meets its rule (``Measurement``); a pipeline whose process fails gets an error row
    naming the stage and the others go on."""
    rows: dict[str, Rows] = {}
    bar.set_postfix_str(f"round 1: {len(chosen)} pipelines prepared, a fresh interpreter")
    first = round_in_fresh_interpreter(settings.argv, {"first": True})
    setup = {"threads": first.get("threads") or {}, "decode": first.get("decode") or {}}
    failed = first.get("setup_error") or (
        skeleton.setup_problem("setup", RuntimeError(first["error"])) if "error" in first else None
    )
    if failed is not None:  # the library or the interpreter is broken: every row says so
        for p in chosen:
            rows[p.name] = {p.name: non_ok_row(*failed, **pipelines.row_fields(p))}
        return rows, setup
    active: dict[str, Prepared] = {}
    outcome = first
    for pipeline in chosen:
        got = first["pipelines"].get(pipeline.name) or {"error": "the first round skipped it"}
        if "rows" in got:
            rows[pipeline.name] = got["rows"]
            bar.update()
        elif "prepared" in got:
            spec = got["prepared"]
            tally = tally_of(spec, settings)
            active[pipeline.name] = Prepared(pipeline, tally, spec["fields"], spec["copied"])
        else:
            fields = pipelines.row_fields(pipeline)
            error = RuntimeError(got.get("error"))
            rows[pipeline.name] = {
                pipeline.name: skeleton.stage_error_row("setup", error, **fields)
            }
            bar.update()
    number = 1
    while active:
        for name, prepared in list(active.items()):
            got = outcome.get("pipelines", {}).get(name) or {"error": outcome.get("error")}
            try:
                if "measured" not in got:
                    raise RuntimeError(got.get("error") or "the round wrote nothing for it")
                done = prepared.measurement.record(got["measured"], outcome.get("layout"))
            except Exception as exc:
                fields = prepared.fields
                rows[name] = {name: skeleton.stage_error_row("measurement", exc, **fields)}
                done = True
            else:
                if done:
                    rows[name] = finish_pipeline(prepared)
            if done:
                del active[name]
                bar.update()
        if not active:
            break
        number += 1
        request = {name: prepared.measurement.next_round() for name, prepared in active.items()}
        bar.set_postfix_str(f"round {number}: {len(active)} pipelines, a fresh interpreter")
        outcome = round_in_fresh_interpreter(settings.argv, {"rounds": request})
    return rows, setup


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    if settings.round_request is not None:
        return run_round_request(settings)
    from tqdm import tqdm

    adapter = adapters.get(settings.library)
    chosen = list(settings.pipelines.values())
    thread_settings = skeleton.thread_record(MICRO_THREADS)
    label = f"pipeline breakdown | {settings.library}"
    bar = tqdm(total=len(chosen), desc=label, unit="pipeline")
    job = skeleton.Job(settings, adapter, "micro", "memory", label)
    log = job.row_log(bar)
    measured, setup = measure_all(adapter, chosen, settings, bar)
    thread_settings.update(setup["threads"])  # the runtime policy of the rounds' interpreters
    bar.close()
    for pipeline in chosen:  # in the configured order
        rows = measured[pipeline.name]
        # The whole pipeline's row is reported; its step rows follow it in the file.
        log.add(pipeline.name, rows[pipeline.name], more=rows)

    return job.finish(
        log.rows,
        thread_settings,
        params={
            "min_values": settings.min_values,
            "max_values": settings.max_values,
            "warmups": settings.warmups,
            "timer_backend": "time.perf_counter",
            "values_per_process": max(1, settings.values_per_process),
            "stopping": "relative interval of the whole pipeline's median (a bootstrap over its "
            "fresh processes) and of the harness / bare ratio, looked at once per round "
            "(augbench.measuring.stopping)",
            "slow_transform_policy": settings.policy.to_dict(),
            "pipelines": [p.to_dict() for p in chosen],
            # The largest process of the job: its rounds' interpreters, their forks, itself.
            "peak_rss_mb": max(
                resource.getrusage(who).ru_maxrss / 1024
                for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
            ),
        },
        extra={"decode": setup["decode"], "layout": "native", "engine": "pipeline_breakdown"},
    )


if __name__ == "__main__":
    sys.exit(main())
