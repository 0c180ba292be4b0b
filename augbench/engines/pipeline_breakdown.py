"""Pipeline breakdown job: one library, every configured pipeline, one thread -> one result file.

For each pipeline (``augbench.pipelines``) on the same decoded images (the library's own decoder,
native layout, decoded before any clock):

- **steps pass**: the image goes through the pipeline; each step is timed alone on the previous
  steps' outputs, its own output materialized inside its timer (``Adapter.materialize``);
- **whole pass**: the same, with one timer around the whole pipeline per image and none inside
  (the micro regime's number for the pipeline as one timed unit).

The two passes alternate (S W, W S, ...) so both see the same machine state, until the whole
pipeline's throughputs and the paired steps / whole ratios both reach a relative 95 % CI of
``policy.RELATIVE_CI_TARGET`` (``augbench.stopping``), between the configured minimum and maximum
number of values. Each value is one pass over the images.

Rows (regime ``micro``, scope ``memory``): ``<pipeline>`` is the whole pipeline (variant
``pipeline``), with ``step_sum_ratio`` = sum of the step medians / whole median (s/image) and
whether it is within ``policy.PIPELINE_STEP_SUM_TOLERANCE``; ``<pipeline> · <i> <step>`` is one
step (variant ``pipeline-step``, ``step``, ``step_index``, ``share`` of the summed step time).
A library lacking a step gets one ``unsupported`` row naming it; a slow pipeline is
``early_stopped`` under the shared slow-transform policy.
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

from augbench import adapters, media, pipelines  # noqa: E402
from augbench.engines import cli, preflight, skeleton  # noqa: E402
from augbench.policy import PIPELINE_STEP_SUM_TOLERANCE, SlowTransformPolicy  # noqa: E402
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
    """Seconds per pass: one list per step (steps pass) and the whole pipeline (whole pass)."""

    labels: list[str]
    images: int  # items per value: the distinct images times the passes over them
    passes: int = 1
    step_seconds: list[list[float]] = field(default_factory=list)
    whole_seconds: list[float] = field(default_factory=list)

    def per_image(self, seconds: Sequence[float]) -> float:
        return statistics.median(seconds) / self.images

    def step_medians(self) -> list[float]:
        """Median seconds per image of each step over the passes."""
        return [
            self.per_image([run[i] for run in self.step_seconds]) for i in range(len(self.labels))
        ]

    def shares(self) -> list[float]:
        medians = self.step_medians()
        total = sum(medians)
        return [m / total if total > 0 else float("nan") for m in medians]

    def sum_ratio(self) -> float:
        """Summed step time over whole-pipeline time, paired pass by pass (a steps pass and the
        whole pass next to it did the same seeded work), median over the pairs: machine drift
        between pairs cancels."""
        pairs = zip(self.step_seconds, self.whole_seconds, strict=True)
        return statistics.median(sum(steps) / whole for steps, whole in pairs)


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
    units: Sequence[Unit], inputs: Sequence[Any], materialize: Materialize, passes: int = 1
) -> float:
    """Seconds of the whole pipeline over all inputs (``passes`` times), no timer inside it."""
    fns = [fn for _, fn in units]
    stream = [x for _ in range(passes) for x in inputs]
    start = time.perf_counter()
    for sample in stream:
        current = sample
        for fn in fns:
            current = materialize(fn(current), current)
    return time.perf_counter() - start


def reseed(units: Sequence[Unit], seed: int) -> None:
    """Seed every random source the steps draw from, so a steps pass and the whole pass after it
    do the same work (same crops, same angles): their times are then comparable pass by pass."""
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


def precise_enough(result: Breakdown, rule: StoppingRule) -> bool:
    """The whole pipeline's throughputs and the paired steps / whole ratios both meet ``rule``
    (or its maximum number of values is reached)."""
    if not rule.done([result.images / s for s in result.whole_seconds]):
        return False
    ratios = [
        sum(steps) / whole
        for steps, whole in zip(result.step_seconds, result.whole_seconds, strict=True)
    ]
    return rule.done(ratios)


def measure(
    units: Sequence[Unit],
    inputs: Sequence[Any],
    materialize: Materialize,
    rule: StoppingRule,
    warmups: int = 1,
    progress: Callable[[str], None] | None = None,
    passes: int = 1,
) -> Breakdown:
    """Untimed warm-up (a steps pass and a whole pass each), then rounds of two values, S W then
    W S, so each kind of pass comes first equally often; rounds repeat until ``rule`` is met on
    the whole pipeline's throughputs and on the paired steps / whole ratios
    (``precise_enough``). Each value is ``passes`` passes over the inputs (so that it lasts long
    enough to time, ``stopping.passes_per_value``), and both values of a pair are seeded alike
    (``reseed``)."""
    for _ in range(warmups):
        steps_pass(units, inputs, materialize)
        whole_pass(units, inputs, materialize)
    result = Breakdown([label for label, _ in units], len(inputs) * passes, passes)
    while not precise_enough(result, rule):
        for order in (("steps", "whole"), ("whole", "steps")):
            value = len(result.whole_seconds)
            for which in order:
                reseed(units, value)
                if which == "steps":
                    result.step_seconds.append(steps_pass(units, inputs, materialize, passes))
                else:
                    result.whole_seconds.append(whole_pass(units, inputs, materialize, passes))
        if progress is not None:
            progress(f"value {len(result.whole_seconds)}")
    return result


class WholeSamples:
    """The whole pipeline on input ``i``, indexable like a dataset: the shared preflight
    (``preflight.per_sample``: one untimed sample, then up to ``preflight_items`` timed)."""

    def __init__(self, units: Sequence[Unit], inputs: Sequence[Any], materialize: Materialize):
        self.units, self.inputs, self.materialize = units, inputs, materialize

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int) -> None:
        whole_pass(self.units, [self.inputs[index]], self.materialize)


def breakdown_rows(
    pipeline: pipelines.Pipeline, result: Breakdown, fields: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The whole-pipeline row and one row per step, keyed for the result file."""
    n = result.images
    ratio = result.sum_ratio()
    medians, shares = result.step_medians(), result.shares()
    rows: dict[str, dict[str, Any]] = {
        pipeline.name: ok_row(
            [n / s for s in result.whole_seconds],
            result.whole_seconds,
            warmup_iterations=1,
            num_images=n // result.passes,
            passes_per_value=result.passes,
            step_sum_ratio=ratio,
            step_sum_within_tolerance=abs(ratio - 1.0) <= PIPELINE_STEP_SUM_TOLERANCE,
            step_sum_tolerance=PIPELINE_STEP_SUM_TOLERANCE,
            steps=result.labels,
            step_seconds_per_image=medians,
            step_shares=shares,
            timing="whole pipeline per image, no timer inside; alternates with the steps pass",
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
        inputs = [pipelines.prepare(adapter, pipeline, image) for image in images]
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("setup", exc, **fields)}

    def materialize(out: Any, src: Any) -> Any:
        return pipelines.materialize(adapter, out, src)

    try:
        samples = WholeSamples(units, inputs, materialize)
        pre = preflight.per_sample(samples, pipelines.scaled_policy(policy, pipeline))
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("preflight", exc, **fields)}
    verdict = pre.pop("verdict")
    if verdict is not None:
        return {pipeline.name: non_ok_row("early_stopped", verdict, **pre, **fields)}
    rule = StoppingRule(args.min_values, args.max_values)
    # A value of a few images of a fast pipeline lasts milliseconds: repeat the pass until it
    # lasts MICRO_MIN_VALUE_SECONDS, as micro does, so one interrupt cannot swing a value.
    rate = pre.get("preflight_throughput") or 0.0
    passes = passes_per_value(1.0 / rate, len(inputs)) if rate > 0 else 1
    try:
        result = measure(
            units,
            inputs,
            materialize,
            rule,
            warmups=args.warmups,
            progress=lambda text: bar.set_postfix_str(f"{pipeline.name} {text}"),
            passes=passes,
        )
    except Exception as exc:
        return {pipeline.name: skeleton.stage_error_row("measurement", exc, **fields)}
    return breakdown_rows(pipeline, result, {**fields, **pre})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tqdm import tqdm

    adapter = adapters.get(args.library)
    chosen = list(pipelines.from_json(args.pipelines).values())
    policy = cli.slow_policy(args)
    thread_settings = skeleton.thread_record(MICRO_THREADS)
    images: list[Any] = []
    setup_error: str | None = None
    decode_info: dict[str, Any] = {}
    try:
        adapter.import_library()
        thread_settings.update(MICRO_THREADS.apply_runtime())
        files = media.select_files(args.manifest, args.num_images)
        start = time.perf_counter()
        images = [adapter.decode(f) for f in files]
        decode_info = {"decoder": adapter.decoder, "preload_seconds": time.perf_counter() - start}
    except Exception as exc:  # the library is broken in this env: every row says so
        setup_error = f"setup failed: {type(exc).__name__}: {exc}"

    label = f"pipeline breakdown | {args.library}"
    bar = tqdm(chosen, desc=label, unit="pipeline")
    job = skeleton.Job(args, adapter, "micro", "memory", label)
    log = job.row_log(bar)
    for pipeline in bar:
        bar.set_postfix_str(pipeline.name)
        if setup_error is not None:
            rows = {
                pipeline.name: non_ok_row("error", setup_error, **pipelines.row_fields(pipeline))
            }
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
            "stopping": "relative 95% CI of the whole pipeline throughput (augbench.stopping)",
            "slow_transform_policy": policy.to_dict(),
            "pipelines": [p.to_dict() for p in chosen],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        },
        extra={"decode": decode_info, "layout": "native", "engine": "pipeline_breakdown"},
    )


if __name__ == "__main__":
    sys.exit(main())
