"""The ``micro`` regime: single transforms, one thread, in pyperf processes; with the lazy-output
diagnostic and the pipelines' one-thread breakdown, which run on the same placement. Its
declaration, how its jobs are planned, what they hold in memory and how they are priced."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from augbench import policy
from augbench.measuring.stopping import (
    BREAKDOWN_KINDS,
    breakdown_passes,
    breakdown_value_bounds,
    lazy_probe_calls,
    passes_per_value,
)
from augbench.paths import LAZY_RAW, PIPELINE_RAW, RAW
from augbench.planning.regimes.pricing import (
    Estimate,
    JobTiming,
    Key,
    KindModel,
    Learned,
    PricedJob,
    Pricing,
    policy_of,
    preflight_items,
    stop_probability,
)
from augbench.planning.regimes.records import (
    Job,
    JobKind,
    Planner,
    Regime,
    Wildcards,
    job_kind,
    one_thread,
    temporaries_mb,
    value_bytes,
)
from augbench.policy import BREAKDOWN_VALUES_PER_PROCESS
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload.adapters.base import CPU_TRANSFORMS

if TYPE_CHECKING:
    from augbench.planning.memory import Footprint

NAME = "micro"


# -- planning --------------------------------------------------------------------------------
def _layout_prefix(layout: str) -> str:
    return "" if layout == "native" else f"{layout}-"


def micro_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    from augbench.workload import matrix

    return [
        s.job(kind, lib, dataset, {"shard": f"{_layout_prefix(layout)}{shard}"}, transforms)
        for lib in s.libraries_of(kind.regime)
        for layout in matrix.layouts_for(lib, s.micro_layouts)
        for shard, transforms in s.micro_shards.items()
    ]


def micro_layout(shard: str) -> str:
    from augbench.workload import matrix

    for layout in matrix.LAYOUTS:
        if layout != "native" and shard.startswith(_layout_prefix(layout)):
            return layout
    return "native"


def micro_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    layout = micro_layout(w["shard"])
    micro = s.config["micro"]
    return {
        "library": w["library"],
        "shard": w["shard"],
        "transforms": s.micro_shards[w["shard"].removeprefix(_layout_prefix(layout))],
        "channels": s.config["channels"],
        "layout": layout,
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
        "processes": micro["processes"],
        "min-processes": micro["min_processes"],
        "values": micro["values"],
        "warmups": micro["warmups"],
        "transform-timeout": micro["transform_timeout_s"],
        "max-megapixels": micro["max_megapixels"],
        "policy": s.policy_json,
    }


def lazy_outputs_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """The lazy-output diagnostic runs on the staged dataset only."""
    if not s.lazy_enabled or dataset != s.dataset:
        return []
    return [s.job(kind, lib, dataset, {}, s.transforms) for lib in s.libraries_of(kind.regime)]


def lazy_outputs_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    return {
        "library": w["library"],
        "transforms": s.transforms,
        "num-images": s.num_images_for(kind),
        "repeats": s.config["lazy_outputs"]["repeats"],
        "machine": w["machine"],
    }


def breakdown_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One breakdown job per library runs every pipeline (staged dataset only), unless
    ``pipeline_runs.breakdown`` is off."""
    if not s.pipelines or dataset != s.dataset or not s.config["pipeline_runs"]["breakdown"]:
        return []
    return [s.job(kind, lib, dataset, {}, s.pipeline_names) for lib in s.libraries_of(kind.regime)]


def breakdown_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    runs = s.config["pipeline_runs"]
    return {
        "library": w["library"],
        "pipelines": s.pipelines_json,
        "num-images": s.num_images_for(kind),
        "machine": w["machine"],
        "min-values": runs["breakdown_min_values"],
        "max-values": max(runs["breakdown_min_values"], runs["breakdown_max_values"]),
        "warmups": runs["breakdown_warmups"],
        "values-per-process": int(
            runs.get("breakdown_values_per_process", policy.BREAKDOWN_VALUES_PER_PROCESS)
        ),
        "policy": s.policy_json,
    }


# -- memory (augbench.planning.memory) -------------------------------------------------------------
def _working_mb(
    s: Planner, library: str, dataset: str, images: int, transforms: list[str] | None = None
) -> float:
    """The temporaries of the job's most demanding transform (None: any the library has) on the
    largest of its images."""
    pixels = max(s.sizes[dataset].first(max(images, 1)) or [0])
    return temporaries_mb(library, transforms, pixels, s.config["channels"])


def micro_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """One pyperf worker at a time holds the job's images (within micro.max_megapixels) twice at
    its peak: the decoded cache and the library's own form of them (float32 for Kornia; and its
    row-major copy for the contiguous layout); a light manager process runs beside it."""
    from augbench.planning.memory import Footprint

    images = s.micro_images(w["dataset"])
    # The contiguous layout's row-major copy replaces a view (torchvision: a uint8 copy more) or
    # a float32 copy (Kornia: one image at a time): one more byte per value.
    layout = micro_layout(w["shard"])
    contiguous = layout != "native"
    transforms = s.micro_shards[w["shard"].removeprefix(_layout_prefix(layout))]
    return Footprint(
        w["library"], images=images, pixels=s.mean_pixels(w["dataset"], images),
        channels=s.config["channels"], copies=1 + value_bytes(w["library"]) + contiguous,
        extra_mb=policy.MANAGER_RSS_MB,
        working_mb=_working_mb(s, w["library"], w["dataset"], images, transforms),
    )  # fmt: skip


def held_images_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """A job holding its images in the library's form and one output per image (the lazy-output
    check; the pipeline breakdown, whose float32 tensor tails need torch). The breakdown runs
    every round of passes in a fresh interpreter of its own, one at a time, started by a job
    process that imports no library (augbench.measuring.engines.pipeline_breakdown): the
    interpreter holds the images, and times every pass in a child forked from it, one at a time,
    which shares its pages and copies the inputs into a layout of its own: one forked process
    with one more copy, beside a light manager process."""
    from augbench.planning.memory import Footprint

    images = min(s.num_images_for(kind), s.dataset_images(w["dataset"]))
    value = value_bytes(w["library"])
    pixels = s.mean_pixels(w["dataset"], images)
    breakdown = kind.role == "pipelines"
    image_mb = images * pixels * s.config["channels"] / 2**20
    # The job's own process, and the fork's copy of the inputs.
    round_mb = policy.MANAGER_RSS_MB + image_mb * value if breakdown else 0.0
    return Footprint(
        w["library"], torch=breakdown, images=images, pixels=pixels,
        copies=1 + value + (4 if breakdown else value),
        working_mb=_working_mb(s, w["library"], w["dataset"], images),
        forked=1 if breakdown else 0, extra_mb=round_mb,
    )  # fmt: skip


# -- pricing (augbench.planning.cost) --------------------------------------------------------------
def micro_row_images(row: Mapping[str, Any], params: Mapping[str, Any]) -> float | None:
    """Images a micro row actually processed, where it records how (pyperf processes and loops:
    rows stop early and fast transforms repeat passes); None for older result files."""
    if "pyperf_processes" not in row or "loops" not in row:
        return None
    passes = (params["values"] + params["warmups"]) * row["pyperf_processes"] * row["loops"]
    return params["num_images"] * passes


class Pyperf(Pricing):
    """Per transform, the passes it makes (warm-up + values, per pyperf process; each value at
    least ``policy.MICRO_MIN_VALUE_SECONDS``) x the job's images x seconds per image; processes
    *expected* = the share of its maximum the local rows used (rows stop once precise), *max* =
    every process allowed. Each process imports the library again: the job's fixed overhead is
    paid per process round, and grows with the megapixels the job holds (its decoded cache);
    where the reference recorded its rounds' seconds (``job_timing.round_seconds``), what the
    job took beyond them (its manager's start, its launch) is paid once per job. Where its rows
    recorded their seconds in the worker processes (``worker_seconds``), what each transform
    adds to a round beyond its passes (its construction, clean-up) is priced per transform and
    process, apart from the round's own start."""

    name = "pyperf"
    overhead_grows_with_pixels = True

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        # Older result files without processes and loops per row: every process allowed.
        most = params["num_images"] * params["processes"] * (params["values"] + params["warmups"])
        return (micro_row_images(row, params) or most) / row[MEDIAN_THROUGHPUT]

    def learn_row(
        self, learned: Learned, key: Key, name: str, row: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> None:  # fmt: skip
        if "pyperf_processes" in row:
            learned.shares[key].append(row["pyperf_processes"] / max(params["processes"], 1))
            if params["processes"] > params.get("min_processes", 1):
                learned.observed.add(key)

    def learn_file(
        self, learned: Learned, key: Key, payload: Mapping[str, Any],
        params: Mapping[str, Any], work: float,
    ) -> tuple[float, JobTiming | None]:  # fmt: skip
        # What each row took of its worker processes beyond its passes and preflight (its
        # construction, clean-up) is the transform's, not the round's: learned per process of
        # an ok or early-stopped row (the rows an estimate prices), out of every row's rounds.
        extra = 0.0
        for row in payload["results"].values():
            if row.get("worker_seconds") is None:
                continue
            ok = row.get("status") == "ok" and row.get(MEDIAN_THROUGHPUT)
            passes = self.row_work(row, params) if ok else 0.0
            fixed = max(row["worker_seconds"] - passes - (row.get("preflight_seconds") or 0.0), 0)
            extra += fixed
            if ok or row.get("status") == "early_stopped":
                processes = (row.get("pyperf_processes") or 1) if ok else 1
                learned.transform_rounds[key].append(fixed / processes)
        return extra, None

    def rounds(self, results: Mapping[str, Any]) -> int:
        return max((r.get("pyperf_processes", 1) for r in results.values()
                    if r.get("status") == "ok"), default=1)  # fmt: skip

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        images = params["num_images"]
        most = params["processes"]
        # Expectations over rows: fractional processes, runs and values.
        expected = min(max(model.process_share * most, params.get("min_processes", 1)), most)
        cap = policy_of(params).get("preflight_max_seconds", math.inf)
        fixed = model.transform_round_s  # per process of each transform, beyond its passes
        work = {"expected": 0.0, "most": 0.0}
        for transform in job.transforms:
            s_img = model.seconds_per_image(transform, job.megapixels)
            preflight = (preflight_items(params) + 1) * s_img
            per_process = (
                (params["values"] + params["warmups"]) * passes_per_value(s_img, images) * images
            )
            per_process *= s_img
            # Near the slow-transform threshold a preflight goes either way: expect each outcome
            # with its probability; at most, the full measurement unless a stop is certain.
            stop = stop_probability(s_img, params)
            stopped = min(preflight, cap) + fixed
            timed = preflight + expected * (per_process + fixed)
            work["expected"] += stop * stopped + (1 - stop) * timed
            work["most"] += stopped if stop >= 1 else preflight + most * (per_process + fixed)
        round_s = model.overhead_s + model.overhead_per_mp_s * images * job.megapixels
        once = model.process_s  # what a reference that timed its rounds saw paid once per job
        return Estimate(
            (once + round_s * expected) / job.share + work["expected"],
            (once + round_s * most) / job.share + work["most"],
        )


class LazyCalls(Pricing):
    """The lazy-output diagnostic: its process (start, imports, the images decoded into the
    library's form) plus, per transform, its calls (``lazy_probe_calls``, the engine's count) x
    seconds per call and materialization. A transform its own rows did not measure costs the
    same library's micro seconds per image (the same timed scope); a model learned without rows
    (every row unsupported, or reference timings that kept the job's wall time only) is that
    wall time."""

    name = "lazy_calls"
    prices_without_rows = True
    single_kind = "micro"

    def params(self, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"num_images": metadata["num_images"], "repeats": metadata["repeats"]}

    @staticmethod
    def call_seconds(row: Mapping[str, Any]) -> float:
        """Seconds of one call and its materialization, as the row timed them."""
        return (row["call_us"] + row["materialize_us"]) * 1e-6

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        return lazy_probe_calls(params["num_images"], params["repeats"]) * self.call_seconds(row)

    def learn_file(
        self, learned: Learned, key: Key, payload: Mapping[str, Any],
        params: Mapping[str, Any], work: float,
    ) -> tuple[float, JobTiming | None]:  # fmt: skip
        # Its rows carry no throughput (a diagnostic's): their seconds per call are learned here.
        extra = 0.0
        for name, row in payload["results"].items():
            if row.get("status") == "ok" and row.get("call_us") is not None:
                learned.per_image[key][name].append(self.call_seconds(row))
                learned.pixels[key][name].append(0.0)  # the staged images: not recorded
                extra += self.row_work(row, params)
        return extra, None

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        if not model.per_image_s:
            return Estimate(model.overhead_s, model.overhead_s)
        micro: KindModel | None = params.get("single_model")
        calls = lazy_probe_calls(params["num_images"], params["repeats"])
        work = 0.0
        for transform in job.transforms:
            own = transform in model.per_image_s or micro is None or not micro.per_image_s
            source = model if own else micro
            work += calls * source.seconds_per_image(transform, job.megapixels)
        return Estimate(model.overhead_s + work, model.overhead_s + work)


class Breakdown(Pricing):
    """Per pipeline, warm-up pairs plus values in pairs (steps pass and whole pass) of ``passes x
    images`` each; values expected from the local rows. Each round runs in an interpreter of its
    own: the fixed overhead is paid per round."""

    name = "breakdown"

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        """Seconds of a breakdown row's passes: every kind's processes, warm-ups included
        (augbench.measuring.stopping.breakdown_passes, the engine's own count)."""
        images = row.get("num_images", params["num_images"]) * row.get("passes_per_value", 1)
        per = params.get("values_per_process", BREAKDOWN_VALUES_PER_PROCESS)
        passes = breakdown_passes(len(row.get("throughputs") or []), params.get("warmups", 1), per)
        return len(BREAKDOWN_KINDS) * passes * images / row[MEDIAN_THROUGHPUT]

    def counts_row(self, name: str, row: Mapping[str, Any]) -> bool:
        return row.get("pipeline", name) == name  # a step row: part of its pipeline's passes

    def learn_row(
        self, learned: Learned, key: Key, name: str, row: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> None:  # fmt: skip
        values = len(row.get("throughputs") or [])
        least, most = breakdown_value_bounds(
            params["min_values"],
            params["max_values"],
            params.get("values_per_process", BREAKDOWN_VALUES_PER_PROCESS),
        )
        learned.run_shares[key].append(values / max(most, 1))
        if most > least:
            learned.observed.add(key)

    def rounds(self, results: Mapping[str, Any]) -> int:
        # An interpreter per round.
        return max((r.get("round_interpreters") or 1 for r in results.values()), default=1)

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        images = params["num_images"]
        per = max(1, int(params.get("values_per_process") or BREAKDOWN_VALUES_PER_PROCESS))
        least, most = breakdown_value_bounds(params["min_values"], params["max_values"], per)
        expected = min(max(model.run_share * most, least), most)
        totals = {"expected": 0.0, "most": 0.0}
        for pipeline in job.transforms:
            s_img = model.seconds_per_image(pipeline, job.megapixels)
            per_pass = passes_per_value(s_img, images) * images * s_img
            for label, values in (("expected", expected), ("most", most)):
                passes = breakdown_passes(math.ceil(values), params["warmups"], per)
                totals[label] += len(BREAKDOWN_KINDS) * passes * per_pass
        # One interpreter per round: its imports and decoding.
        overhead = {label: model.overhead_s * math.ceil(values / per)
                    for label, values in (("expected", expected), ("most", most))}  # fmt: skip
        return Estimate(
            overhead["expected"] + totals["expected"], overhead["most"] + totals["most"]
        )


# -- the declaration ---------------------------------------------------------------------------
_kind = partial(job_kind, NAME)

MICRO = Regime(
    NAME,
    CPU_TRANSFORMS,
    (
        _kind(
            "micro", "results",
            f"{RAW}/micro/{{library}}/{{shard}}.json",
            "{machine}/{dataset}/micro/{library}/{shard}",
            placement="micro", engine="augbench.measuring.engines.micro", pricing=Pyperf(),
            jobs=micro_jobs, args=micro_args, threads=one_thread, thread_policy="micro",
            memory=micro_memory,
            config_block="micro", images_key="micro.num_images",
            memory_fix="lower micro.max_megapixels or micro.num_images",
        ),
        _kind(
            "lazy_outputs", "diagnostic",
            f"{LAZY_RAW}/{{library}}.json",
            "{machine}/{dataset}/lazy_outputs/{library}",
            placement="micro", engine="augbench.measuring.engines.lazy_outputs",
            pricing=LazyCalls(),
            jobs=lazy_outputs_jobs, args=lazy_outputs_args, threads=one_thread,
            memory=held_images_memory,
            thread_policy="micro", images_key="lazy_outputs.num_images", images_cap=True,
            memory_fix="lower lazy_outputs.num_images",
        ),
        _kind(
            "pipeline_breakdown", "pipelines",
            f"{PIPELINE_RAW}/micro/{{library}}/breakdown.json",
            "{machine}/{dataset}/pipelines/micro/{library}/breakdown",
            placement="micro", engine="augbench.measuring.engines.pipeline_breakdown",
            pricing=Breakdown(),
            jobs=breakdown_jobs, args=breakdown_args, threads=one_thread, thread_policy="micro",
            memory=held_images_memory,
            images_key="pipeline_runs.breakdown_images", images_cap=True,
            memory_fix="lower pipeline_runs.breakdown_images",
        ),
    ),
)  # fmt: skip
