"""Pipeline breakdown job: one library, every configured pipeline, one thread -> one result file.

For each pipeline (``augbench.pipelines``) on the same decoded images (the library's own decoder,
native layout, decoded before any clock), three kinds of pass:

- **whole** (the row a user reads): the library's own composition object (``A.Compose``,
  ``v2.Compose``, ``K.AugmentationSequential``, a Pillow function chain; the user's own Compose
  for a pipeline written in the library's format), built once per job and called once per
  image through the harness, its final output materialized once and nothing in between;
- **bare**: a plain loop over the same object on the same images, written as a user writes it
  (``compose(image=image)["image"]``, ``compose(image)``), nothing else. harness / bare is the
  check that can fail: outside ``policy.PIPELINE_HARNESS_TOLERANCE`` the row is flagged;
- **steps** (the isolated per-step breakdown): each step timed alone on the previous steps'
  outputs, its own output materialized inside its timer (``Adapter.materialize``).

The three alternate (S W B, B W S, ...) with every value seeded alike, so all see the same
machine state and do the same crops, until the whole pipeline's throughputs and the paired
harness / bare ratios reach a relative 95 % CI of ``policy.RELATIVE_CI_TARGET``
(``augbench.stopping``), between the configured minimum and maximum number of values. Each value
is one or more passes over the images.

Rows (regime ``micro``, scope ``memory``): ``<pipeline>`` is the whole pipeline (variant
``pipeline``) with ``harness_vs_bare`` and ``composition_effect`` (whole / sum of the isolated
steps: information; beyond ``policy.COMPOSITION_EFFECT_NOTE`` the row says what differs), its
``compose_call`` and ``output_contract``; ``<pipeline> · <i> <step>`` is one step (variant
``pipeline-step``, ``step``, ``step_index``, ``share`` of the summed step time). A library lacking
a step gets one ``unsupported`` row naming it; a slow pipeline is ``early_stopped`` under the
shared slow-transform policy.
"""

from __future__ import annotations

from augbench.policy import MICRO_THREADS

MICRO_THREADS.apply_environment()  # before numpy, torch or cv2 is imported

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

from augbench import adapters, allocator, media, pipelines  # noqa: E402
from augbench.engines import cli, preflight, skeleton  # noqa: E402
from augbench.policy import (  # noqa: E402
    COMPOSITION_EFFECT_NOTE,
    PIPELINE_HARNESS_TOLERANCE,
    SlowTransformPolicy,
)
from augbench.results import non_ok_row, ok_row  # noqa: E402
from augbench.stopping import StoppingRule, passes_per_value  # noqa: E402

Unit = tuple[str, Callable[[Any], Any]]
Materialize = Callable[[Any, Any], Any]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = cli.engine_parser(__doc__, transforms=False, shard=False, warmups=True)
    p.add_argument("--pipelines", required=True, help="resolved pipelines as JSON")
    p.add_argument("--min-values", type=int, default=3)
    p.add_argument("--max-values", type=int, default=10)
    return p.parse_args(argv)


@dataclass
class Breakdown:
    """Seconds per value: one list per step (steps pass), the whole pipeline through the harness
    (whole pass) and the bare loop over the same object (bare pass)."""

    labels: list[str]
    images: int  # items per value: the distinct images times the passes over them
    passes: int = 1
    step_seconds: list[list[float]] = field(default_factory=list)
    whole_seconds: list[float] = field(default_factory=list)
    bare_seconds: list[float] = field(default_factory=list)
    whole_faults: int = 0  # minor page faults over every whole pass (augbench.allocator)

    def faults_per_image(self) -> float:
        return self.whole_faults / (len(self.whole_seconds) * self.images)

    def per_image(self, seconds: Sequence[float]) -> float:
        return statistics.median(seconds) / self.images

    def step_medians(self) -> list[float]:
        """Median seconds per image of each step over the values."""
        return [
            self.per_image([run[i] for run in self.step_seconds]) for i in range(len(self.labels))
        ]

    def shares(self) -> list[float]:
        medians = self.step_medians()
        total = sum(medians)
        return [m / total if total > 0 else float("nan") for m in medians]

    def harness_ratios(self) -> list[float]:
        """Whole (harness) over bare, value by value: the two ran next to each other on the
        same seeded work, so machine drift between values cancels."""
        return [w / b for w, b in zip(self.whole_seconds, self.bare_seconds, strict=True)]

    def composition_ratios(self) -> list[float]:
        """Whole over the summed isolated steps, value by value."""
        return [w / sum(s) for w, s in zip(self.whole_seconds, self.step_seconds, strict=True)]


def steps_pass(
    units: Sequence[Unit], inputs: Sequence[Any], materialize: Materialize, passes: int = 1
) -> list[float]:
    """Seconds of each step over all inputs (``passes`` times), each step on the previous step's
    materialized output; only the step call and its materialization are inside its timer."""
    clock = time.perf_counter
    totals = [0.0] * len(units)
    for sample in [x for _ in range(passes) for x in inputs]:
        current = sample
        for i, (_, fn) in enumerate(units):
            start = clock()
            out = materialize(fn(current), current)
            totals[i] += clock() - start
            current = out
    return totals


def whole_pass(
    whole: Callable[[Any], Any], inputs: Sequence[Any], materialize: Materialize, passes: int = 1
) -> float:
    """Seconds of the library's composition over all inputs (``passes`` times) through the
    harness: one call per sample, the final output materialized, no timer inside."""
    stream = [x for _ in range(passes) for x in inputs]
    start = time.perf_counter()
    for sample in stream:
        materialize(whole(sample), sample)
    return time.perf_counter() - start


def whole_value(
    result: Breakdown, whole: Any, inputs: Sequence[Any], materialize: Materialize, passes: int
) -> None:
    """One whole-pass value, its minor page faults counted outside its clock."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    result.whole_seconds.append(whole_pass(whole, inputs, materialize, passes))
    result.whole_faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def bare_pass(whole: Any, inputs: Sequence[Any], passes: int = 1) -> float:
    """Seconds of a plain loop over the same composition object: the call a user writes
    (``whole.call``: e.g. ``compose(image=image)["image"]``) and nothing else."""
    obj, call = whole.obj, whole.call
    start = time.perf_counter()
    for _ in range(passes):
        for sample in inputs:
            call(obj, sample)
    return time.perf_counter() - start


def reseed(units: Sequence[Unit], seed: int, whole: Any = None) -> None:
    """Seed every random source the steps and the composition draw from, so the passes of one
    round do the same work (same crops, same angles): their times are then comparable."""
    import random

    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    for _, fn in units:
        inner = getattr(fn, "fn", fn)  # a MaskUnit wraps the library callable
        library_transform = getattr(inner, "albumentations_transform", None)
        if library_transform is not None:
            library_transform.set_random_seed(seed)
    own_seed = getattr(getattr(whole, "obj", None), "set_random_seed", None)
    if own_seed is not None:  # an A.Compose draws from its own generators
        own_seed(seed)


def precise_enough(result: Breakdown, rule: StoppingRule) -> bool:
    """The whole pipeline's throughputs and the paired harness / bare ratios both meet ``rule``
    (or its maximum number of values is reached)."""
    if not rule.done([result.images / s for s in result.whole_seconds]):
        return False
    return rule.done(result.harness_ratios())


def measure(
    units: Sequence[Unit],
    whole: Any,
    inputs: Sequence[Any],
    materialize: Materialize,
    rule: StoppingRule,
    warmups: int = 1,
    progress: Callable[[str], None] | None = None,
    passes: int = 1,
) -> Breakdown:
    """Untimed warm-up (one pass of each kind), then rounds of two values of each kind, S W B
    then B W S, so each kind comes first and last equally often; rounds repeat until ``rule``
    is met (``precise_enough``). Each value is ``passes`` passes over the inputs (so that it
    lasts long enough to time, ``stopping.passes_per_value``); the values of a round are seeded
    alike (``reseed``)."""
    for _ in range(warmups):
        steps_pass(units, inputs, materialize)
        whole_pass(whole, inputs, materialize)
        bare_pass(whole, inputs)
    result = Breakdown([label for label, _ in units], len(inputs) * passes, passes)
    kinds = {
        "steps": lambda: result.step_seconds.append(steps_pass(units, inputs, materialize, passes)),
        "whole": lambda: whole_value(result, whole, inputs, materialize, passes),
        "bare": lambda: result.bare_seconds.append(bare_pass(whole, inputs, passes)),
    }
    while not precise_enough(result, rule):
        for order in (("steps", "whole", "bare"), ("bare", "whole", "steps")):
            value = len(result.whole_seconds)
            for which in order:
                reseed(units, value, whole)
                kinds[which]()
        if progress is not None:
            progress(f"value {len(result.whole_seconds)}")
    return result


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
    harness = statistics.median(result.harness_ratios())
    effect = statistics.median(result.composition_ratios())
    medians, shares = result.step_medians(), result.shares()
    bare_per_image = result.per_image(result.bare_seconds)
    rows: dict[str, dict[str, Any]] = {
        pipeline.name: ok_row(
            [n / s for s in result.whole_seconds],
            result.whole_seconds,
            warmup_iterations=1,
            num_images=n // result.passes,
            passes_per_value=result.passes,
            harness_vs_bare=harness,
            harness_vs_bare_within=abs(harness - 1.0) <= PIPELINE_HARNESS_TOLERANCE,
            harness_tolerance=PIPELINE_HARNESS_TOLERANCE,
            harness_ms_per_image=1000.0 * result.per_image(result.whole_seconds),
            bare_ms_per_image=1000.0 * bare_per_image,
            bare_throughputs=[n / s for s in result.bare_seconds],
            composition_effect=effect,
            minor_faults_per_image=result.faults_per_image(),
            composition_note=composition_note(
                effect, result.labels, copied, fields["compose_call"]
            ),
            steps=result.labels,
            step_seconds_per_image=medians,
            step_shares=shares,
            step_output_copied=list(copied),
            timing="the library's own composition, one call per image through the harness, its "
            "final output materialized once; interleaved with a bare loop over the same object "
            "and with the isolated steps",
            **fields,
        )
    }
    for index, label in enumerate(result.labels):
        seconds = [run[index] for run in result.step_seconds]
        rows[f"{pipeline.name} · {index} {label}"] = ok_row(
            [n / s if s > 0 else float("inf") for s in seconds],
            seconds,
            warmup_iterations=1,
            num_images=n // result.passes,
            passes_per_value=result.passes,
            step=label,
            step_index=index,
            share=shares[index],
            seconds_per_image=medians[index],
            output_copied=copied[index],
            timing="this step alone on the previous steps' materialized outputs",
            **{**fields, "variant": pipelines.STEP_VARIANT},
        )
    return rows


def run_pipeline(
    adapter: adapters.Adapter,
    pipeline: pipelines.Pipeline,
    images: list[Any],
    args: argparse.Namespace,
    policy: SlowTransformPolicy,
    bar: Any,
) -> dict[str, dict[str, Any]]:
    fields = pipelines.row_fields(pipeline, adapter)
    problem = pipelines.support_problem(adapter, pipeline)
    if problem is not None:
        status, reason, extra = problem
        return {pipeline.name: non_ok_row(status, reason, **extra, **fields)}
    try:
        units = pipelines.build_units(adapter, pipeline)
        whole = pipelines.build_whole(adapter, pipeline, units)
        inputs = [pipelines.prepare(adapter, pipeline, image) for image in images]
    except pipelines.PipelineError as exc:  # a user's own pipeline the library refuses
        return {pipeline.name: non_ok_row("error", str(exc), **fields)}
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("setup", exc, **fields)}
    fields["compose_call"] = whole.description  # what was built (Kornia may fall back to a chain)
    definition = adapter.compose_definition(whole.obj)
    if definition is not None:
        fields["compose_definition"] = definition

    def materialize(out: Any, src: Any) -> Any:
        return pipelines.materialize(adapter, out, src)

    try:
        samples = WholeSamples(whole, inputs, materialize)
        pre = preflight.per_sample(samples, pipelines.scaled_policy(policy, pipeline))
        reseed(units, 0, whole)
        sample_output = whole(inputs[0])
        output = {
            **pipelines.describe_output(sample_output),
            "output_pages": allocator.output_pages(sample_output),
        }
        copied = copied_steps(units, inputs[0], materialize)
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("preflight", exc, **fields)}
    verdict = pre.pop("verdict")
    if verdict is not None:
        return {pipeline.name: non_ok_row("early_stopped", verdict, **pre, **output, **fields)}
    rule = StoppingRule(args.min_values, args.max_values)
    # A value of a few images of a fast pipeline lasts milliseconds: repeat the pass until it
    # lasts MICRO_MIN_VALUE_SECONDS, as micro does, so one interrupt cannot swing a value.
    rate = pre.get("preflight_throughput") or 0.0
    passes = passes_per_value(1.0 / rate, len(inputs)) if rate > 0 else 1
    rss_scope = allocator.reset_peak_rss()  # this pipeline's peak, not an earlier one's
    try:
        result = measure(
            units,
            whole,
            inputs,
            materialize,
            rule,
            warmups=args.warmups,
            progress=lambda text: bar.set_postfix_str(f"{pipeline.name} {text}"),
            passes=passes,
        )
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("measurement", exc, **fields)}
    memory = {"peak_rss_mb": allocator.peak_rss_mb(), "peak_rss_scope": rss_scope}
    return breakdown_rows(pipeline, result, {**fields, **pre, **output, **memory}, copied)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tqdm import tqdm

    adapter = adapters.get(args.library)
    chosen = list(pipelines.from_json(args.pipelines).values())
    policy = cli.slow_policy(args)
    thread_settings = skeleton.thread_record(MICRO_THREADS)
    images: list[Any] = []
    setup_error: tuple[str, str] | None = None  # (status, reason) of every row
    decode_info: dict[str, Any] = {}
    try:
        skeleton.import_library(adapter)
        thread_settings.update(MICRO_THREADS.apply_runtime())
        files = media.select_files(args.manifest, args.num_images)
        start = time.perf_counter()
        images = [adapter.decode(f) for f in files]
        decode_info = {"decoder": adapter.decoder, "preload_seconds": time.perf_counter() - start}
    except Exception as exc:  # the library is broken in this env: every row says so
        setup_error = skeleton.setup_problem("setup failed", exc)

    label = f"pipeline breakdown | {args.library}"
    bar = tqdm(chosen, desc=label, unit="pipeline")
    job = skeleton.Job(args, adapter, "micro", "memory", label)
    log = job.row_log(bar)
    for pipeline in bar:
        bar.set_postfix_str(pipeline.name)
        if setup_error is not None:
            rows = {pipeline.name: non_ok_row(*setup_error, **pipelines.row_fields(pipeline))}
        else:
            rows = run_pipeline(adapter, pipeline, images, args, policy, bar)
        # The whole pipeline's row is reported; its step rows follow it in the file.
        log.add(pipeline.name, rows[pipeline.name], more=rows)

    return job.finish(
        log.rows,
        thread_settings,
        params={
            "min_values": args.min_values,
            "max_values": args.max_values,
            "warmups": args.warmups,
            "timer_backend": "time.perf_counter",
            "stopping": "relative 95% CI of the whole pipeline's throughput and of the paired "
            "harness / bare ratios (augbench.stopping)",
            "slow_transform_policy": policy.to_dict(),
            "pipelines": [p.to_dict() for p in chosen],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        },
        extra={"decode": decode_info, "layout": "native", "engine": "pipeline_breakdown"},
    )


if __name__ == "__main__":
    sys.exit(main())
