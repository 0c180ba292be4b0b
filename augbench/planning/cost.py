"""Time and cost of a sweep, from the per-job times of a finished (smaller) local run.

One per-job time model, used by the cloud estimate (rule ``cost``, docs/cloud.md), the plan's ETA
(augbench.planning.plan) and the validation run (tools/checks/cost_validation.py). The jobs it
prices come from the same place the rules do (``augbench.planning.sweep.Sweep.cost_jobs``): every
timed job with its engine flags, the mean megapixels of the images it holds and its predicted
memory; plus the setup jobs. How a job kind is priced is its declaration's ``pricing``, in its
regime's module (augbench/planning/regimes/): what its rows' work was, what they teach the model,
how a planned job is priced; a kind priced by its wall time (``whole_job``: the lazy-output
diagnostic) takes its measured wall time per library. This module learns from a run's timings
through those hooks (setup and analysis jobs: augbench.planning.fixed_costs), prices the plan's
jobs and reports the cloud estimate.

A transform's seconds per image scale with pixels: measured at the local dataset's mean
megapixels, priced at the job's (``Job.megapixels``: the resolution sweep's jobs). A transform
that the slow-transform policy would stop at the job's size costs its preflight only. A
transform without a local row is priced from the transform-cost prior
(augbench.planning.transform_prior); a library without any row has no model: reported, never
dropped. Target machines differ from the local one by a per-core ``speed
factor`` (config ``cloud.speed_factors``), and each VM job pays ``cloud.vm_start_s`` of start-up;
jobs that the profile groups (``groups`` / ``group-components``) share one VM and its start-up.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from augbench import paths, result_format
from augbench.planning import fixed_costs, regimes
from augbench.planning.fixed_costs import benchmark_seconds, learn_fixed_kinds
from augbench.planning.regimes import Job
from augbench.planning.regimes.gpu import stream_images
from augbench.planning.regimes.pricing import (
    MIN_PIXEL_RATIO,
    Estimate,
    JobTiming,
    KindModel,
    Learned,
    fit_line,
    median_of,
)
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters, matrix

# Rule names come from the declarations (augbench/planning/regimes/): a new job kind is priced, or
# reported as unpriced, without any change here.
SETUP_KINDS = fixed_costs.SETUP_KINDS
ANALYSIS_KINDS = fixed_costs.ANALYSIS_KINDS
# Without a local timing, a setup job is assumed to take this long (seconds; printed as assumed).
ASSUMED_SETUP_S = 60.0
# Tables, figures and report pieces after the benchmarks: the local ETA counts them (timed by their
# benchmark files benchmarks/analysis/.../<rule>.tsv; without one, assumed); the cloud estimate runs
# them on the driver and leaves them out.
ASSUMED_ANALYSIS_S = 15.0


def bench_kinds() -> tuple[str, ...]:
    """Rules priced per transform from their result rows."""
    return tuple(k.rule for k in regimes.kinds() if not k.pricing.wall_time_only)


# -- learning from a local run --------------------------------------------------------------
Key = tuple[str, str]  # (kind, library)


def result_files(run_dir: Path) -> list[tuple[Path, Path, str]]:
    """(result file, its job's benchmark file, rule) of every timed kind that writes rows, by
    the kinds' declared result and log patterns (a job_per: library job's one benchmark file
    is named after the job)."""
    out = []
    for root in paths.ROLE_ROOTS.values():
        for path in sorted((run_dir / root).glob("**/*.json")):
            found = regimes.kind_of_result(str(path.relative_to(run_dir)))
            if found is None:
                continue
            kind, wildcards = found
            bench = run_dir / kind.log_file("benchmarks", "tsv").format(**wildcards)
            out.append((path, bench, kind.rule))
    return out


def run_dataset_images(run_dir: Path) -> int | None:
    """Images of a finished run's dataset (the median over its manifests: the resolution
    sweep's datasets hold the same images resized), what dataset setup jobs scale from."""
    counts = []
    for manifest in run_dir.glob(paths.DATASET_MANIFEST.format(dataset="*")):
        try:
            counts.append(int(json.loads(manifest.read_text())["file_count"]))
        except (OSError, ValueError, KeyError):
            continue
    return int(statistics.median(counts)) if counts else None


def learn(run_dir: Path) -> dict[tuple[str, str], KindModel]:
    """(kind, library) -> model, from the result files of a finished local run and the matching
    Snakemake benchmark files (benchmarks/<machine>/<dataset>/[pipelines/]<regime>/<library>/
    <job>.tsv). What a kind's rows teach is its pricing's
    (augbench.planning.regimes.pricing.Pricing); what its jobs took beyond their rows' work is its
    fixed cost. Setup kinds are keyed (kind, "") (env builds per library too) and learned from
    benchmarks/setup/<kind>/*.tsv."""
    learned = Learned()
    # Per benchmark file (one job): (key, work, process rounds, megapixels held, the rounds'
    # recorded seconds) of each result file it wrote, and the files' own timings.
    jobs: dict[Path, list[tuple[Key, float, int, float, float]]] = defaultdict(list)
    timed: dict[Path, list[tuple[Key, JobTiming]]] = defaultdict(list)
    for path, bench, kind in result_files(run_dir):
        read = read_result(path, kind, learned)
        if read is None:
            continue
        key, work, timing, params, rounds, held, rounds_s = read
        if params.get("settings_in_job"):  # a job_per: library job: one benchmark file for all
            run = regimes.run_suffix(regimes.without_run(path.name)[1])
            bench = bench.with_name(f"{matrix.dataloader_library_job(params['shard'])}{run}.tsv")
        jobs[bench].append((key, work, rounds, held, rounds_s))
        if timing is not None:
            timed[bench].append((key, timing))
    overheads: dict[Key, list[tuple[float, float]]] = defaultdict(list)  # (MP held, s)
    processes: dict[Key, list[float]] = defaultdict(list)
    for bench, members in jobs.items():
        seconds = benchmark_seconds(bench)
        if seconds is None:
            continue
        # Beyond its files' work: start, imports, set-up (once for a job_per: library job's
        # settings; per pyperf round for micro, and once what its rounds' recorded time leaves).
        work, in_rounds = sum(m[1] for m in members), sum(m[4] for m in members)
        overhead = max((in_rounds or seconds) - work, 0.0)
        rounds = max(m[2] for m in members)
        held = max(m[3] for m in members)
        for key in {m[0] for m in members}:
            overheads[key].append((held, overhead / rounds))
            if in_rounds:
                processes[key].append(max(seconds - in_rounds, 0.0))
    settings: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    starts: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    handovers: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for bench, entries in timed.items():
        seconds = benchmark_seconds(bench)
        if seconds is None or len(entries) != len(jobs[bench]):
            continue
        # The process: everything outside its settings but their imports (paid once).
        process = seconds - sum(t.setting_s - t.import_s for _, t in entries)
        for key, t in entries:
            fixed = max(t.setting_s - t.import_s - t.work_s, 0.0)
            settings[key][t.setting].append(fixed)
            if t.loader_starts:
                own = max(fixed - t.handover_s - t.warmup_s, 0.0)
                starts[key][t.setting].append(own / t.loader_starts)
                handovers[key][t.setting].append(t.handover_fixed_s)
        processes[entries[0][0]].append(max(process, 0.0))
    # A process start is the engine's, whichever kind launched it (cpu_dataloader's settings and
    # the pipelines' DataLoader jobs start the same engine in the same env): one pool per engine
    # and library, so a reference's one job of a kind does not price that kind's starts alone.
    engine_starts: dict[tuple[str, str], list[float]] = defaultdict(list)
    for key in {entries[0][0] for entries in timed.values()}:
        engine_starts[engine_of(key)] += processes[key]
    models: dict[tuple[str, str], KindModel] = {}
    for key in set(learned.per_image) | set(overheads):
        stopped = learned.stopped[key]
        fits = {
            t: _fit_power(
                [*learned.pixels[key][t], *(m for m, _ in stopped[t])],
                [*v, *(x for _, x in stopped[t])],
            )
            for t, v in learned.per_image[key].items()
        }
        model = learned.model(key, fits)
        if regimes.KINDS[key[0]].pricing.overhead_grows_with_pixels:
            model.overhead_s, model.overhead_per_mp_s = fit_line(overheads[key])
        elif overheads[key]:
            model.overhead_s = statistics.median(o for _, o in overheads[key])
        pool = engine_starts.get(engine_of(key)) or processes[key]
        model.process_s = statistics.median(pool) if pool else 0.0
        model.setting_s = {s: statistics.median(v) for s, v in settings[key].items()}
        model.start_s = {s: statistics.median(v) for s, v in starts[key].items()}
        model.handover_fixed_s = {s: statistics.median(v) for s, v in handovers[key].items()}
        models[key] = model
    learn_fixed_kinds(run_dir, models)
    return models


def engine_of(key: Key) -> tuple[str, str]:
    """(engine, library) of a (kind, library) key: the process a job of the kind starts."""
    return regimes.KINDS[key[0]].engine, key[1]


def read_result(
    path: Path, kind: str, learned: Learned
) -> tuple[Key, float, JobTiming | None, Mapping[str, Any], int, float, float] | None:
    """What one result file of a timed ``kind`` teaches ``learned``, and (key, its rows' measured
    work in seconds, its timing, its parameters, its process rounds, the megapixels it held, its
    rounds' recorded seconds or 0); None where a file teaches nothing (wall-time kinds, others)."""
    pricing = regimes.KINDS[kind].pricing
    if pricing.wall_time_only:
        return None
    key = (kind, regimes.result_library(regimes.KINDS[kind], path))
    into, learned = learned, Learned()  # the file's own, added once all of it is read
    try:
        payload = result_format.read(path)
        params = pricing.params(payload["metadata"])
        dataset = payload["metadata"].get("dataset") or {}
        megapixels = float(dataset.get("mean_megapixels") or 0)
        work = 0.0
        for name, row in payload["results"].items():
            # A preflight is measured time outside the timed runs (a stopped row's only).
            work += row.get("preflight_seconds") or 0.0
            if row.get("status") == "early_stopped" and row.get("preflight_throughput"):
                # How its cost grows with pixels: the preflight's rate is a point too.
                point = (megapixels, 1.0 / row["preflight_throughput"])
                learned.stopped[key][name].append(point)
            if row.get("status") != "ok" or not row.get(MEDIAN_THROUGHPUT):
                continue
            if not pricing.counts_row(name, row):
                continue
            learned.per_image[key][name].append(1.0 / row[MEDIAN_THROUGHPUT])
            learned.pixels[key][name].append(megapixels)
            work += pricing.row_work(row, params)
            pricing.learn_row(learned, key, name, row, params)
        extra, timing = pricing.learn_file(learned, key, payload, params, work)
        rounds = pricing.rounds(payload["results"])
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as error:
        # Not a valid result file (result_format.ResultFormatError, a ValueError) or one of
        # another kind's rows: it teaches nothing, and says so.
        print(f"cost: {path}: not learned from ({type(error).__name__}: {error})", file=sys.stderr)
        return None
    into.absorb(learned)
    held = params.get("num_images", 0) * megapixels
    rounds_s = sum((payload["metadata"].get("job_timing") or {}).get("round_seconds") or [])
    return key, work + extra, timing, params, rounds, held, rounds_s


SLOPE_BOUNDS = (0.5, 2.0)


def _fit_power(megapixels: list[float], seconds: list[float]) -> tuple[float, float, float]:
    """(seconds, megapixels, exponent) of ``seconds = s0 x (mp / mp0) ** k`` fitted by least
    squares on logs over the sizes a transform was measured at (the resolution sweep's datasets
    of the local run); one size, or sizes closer than MIN_PIXEL_RATIO: the median, k = 1."""
    points = [(m, s) for m, s in zip(megapixels, seconds, strict=True) if m > 0 and s > 0]
    sizes = [m for m, _ in points]
    if not points or max(sizes) / min(sizes) < MIN_PIXEL_RATIO:
        return statistics.median(seconds), median_of(megapixels), 1.0
    xs = [math.log(m) for m, _ in points]
    ys = [math.log(s) for _, s in points]
    x0, y0 = statistics.fmean(xs), statistics.fmean(ys)
    k = sum((x - x0) * (y - y0) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - x0) ** 2 for x in xs
    )
    return math.exp(y0), math.exp(x0), min(max(k, SLOPE_BOUNDS[0]), SLOPE_BOUNDS[1])


def borrow_shares(models: dict[Key, KindModel], reference: Mapping[Key, KindModel]) -> list[str]:
    """Where the local rows could not stop early (e.g. the smoke preset's one pyperf process),
    take the share of their maximum that rows used from ``reference`` (the reference timings
    shipped in workflow/resources/time_model.json: a default run), where it observed them;
    returns the (kind, library) pairs borrowed for. Without either, a plan expects the maximum."""
    borrowed = []
    for key, model in sorted(models.items()):
        found = reference.get(key)
        if model.share_observed or found is None or not found.share_observed:
            continue
        model.process_share, model.run_share = found.process_share, found.run_share
        model.epoch_spread_s = list(found.epoch_spread_s)
        borrowed.append(f"{key[0]}/{key[1]}")
    return borrowed


# -- pricing one planned job ----------------------------------------------------------------
def supported(job: Job, gpu: bool = False) -> tuple[str, ...]:
    """The job's transforms and pipelines its library runs: a catalog transform the library's
    adapter does not support, or a pipeline with a step it lacks (in the GPU regimes, ``gpu``: a
    step it cannot run on CUDA tensors), is an `unsupported` row, written without timing
    anything, so it costs nothing. Other names (the GPU regimes' Identity baseline) are kept."""
    from augbench.workload import adapters, catalog, pipelines

    if not job.library or job.library not in adapters.names():
        return job.transforms
    adapter = adapters.get(job.library)
    known = set(catalog.names())
    defined = pipelines.from_json(job.params["pipelines"]) if "pipelines" in job.params else {}
    problem = pipelines.gpu_support_problem if gpu else pipelines.support_problem

    def runs(name: str) -> bool:
        if name in defined:
            return problem(adapter, defined[name]) is None
        return name not in known or adapter.supports(name)

    return tuple(t for t in job.transforms if runs(t))


def estimate_jobs(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: Mapping[str, Any],
    image_scale: float = 1.0,
    target_cores: Callable[[Job], int] | None = None,
    target_device: Callable[[Job], str] | None = None,
) -> tuple[dict[Job, Estimate | None], dict[Job, str]]:
    """Local seconds of every planned job (None: no model) and the basis of each estimate
    (measured / assumed / none: why). The reusable core: a cloud estimate divides by a machine's
    speed factor; a local ETA sums it as is. ``image_scale`` scales the dataset setup jobs;
    ``target_cores`` gives the cores of the machine a job runs on (DataLoader workers are
    priced for them; None: the measuring machine's), ``target_device`` its device for a model
    step (``cuda`` or ``cpu``; None: the measuring machine's)."""
    assumed = config.get("cloud", {}).get("assumed_img_per_s", {})
    out: dict[Job, Estimate | None] = {}
    basis: dict[Job, str] = {}
    for job in jobs:
        # A library's second name (A/A runs) does its base library's work, at its base's rates.
        library = adapters.base_of(job.library) if job.rule not in SETUP_KINDS else ""
        model = models.get((job.rule, library))
        if job.rule == "build_env":  # the library's own build where the run made one
            model = models.get((job.rule, job.library), model)
        if (
            job.rule in SETUP_KINDS
            and model is not None
            and model.per_megapixel_s
            and "num_images" in job.params
        ):
            params = job.params  # a resize job: the megapixels it reads and writes
            mp = params["num_images"] * (params["input_megapixels"] + job.megapixels)
            seconds = model.overhead_s + mp * model.per_megapixel_s
            seconds += params["num_images"] * model.per_file_s
            out[job], basis[job] = Estimate(seconds, seconds), "measured"
            continue
        if job.rule in SETUP_KINDS or job.rule in ANALYSIS_KINDS:
            if model is None:  # an assumption does not scale with the dataset
                fixed = ASSUMED_SETUP_S if job.rule in SETUP_KINDS else ASSUMED_ANALYSIS_S
                out[job], basis[job] = Estimate(fixed, fixed), "assumed"
            else:
                scale = image_scale if job.rule in SETUP_KINDS and job.rule != "build_env" else 1.0
                seconds = model.overhead_s * scale
                most = seconds + model.cache_fill_s
                out[job], basis[job] = Estimate(seconds, most), "measured"
            continue
        declared = regimes.KINDS.get(job.rule)
        if declared is None:
            out[job], basis[job] = None, f"none: {job.rule} is not a declared job kind"
            continue
        if declared.pricing.wall_time_only:  # a fixed amount of work: its measured wall time
            out[job] = None if model is None else Estimate(model.overhead_s, model.overhead_s)
            basis[job] = "measured" if model is not None else f"none: no local {job.rule} job"
            continue
        # The job's own flags over its kind's config block (older callers pass no flags).
        block = dict(config.get(declared.config_block) or {}) if declared.config_block else {}
        params = {"num_images": config.get("num_images"), **block, **job.params}
        params["target_cores"] = target_cores(job) if target_cores else 0
        params["target_device"] = target_device(job) if target_device else ""
        if declared.pricing.single_kind:
            params["single_model"] = models.get((declared.pricing.single_kind, library))
        if model is not None and (model.per_image_s or declared.pricing.prices_without_rows):
            priced = dataclasses.replace(job, transforms=supported(job, declared.gpu))
            out[job], basis[job] = declared.pricing.estimate(model, priced, params), "measured"
            continue
        rate = assumed.get(declared.placement, assumed.get(job.rule, {})).get(job.library)
        if rate and params.get("num_images"):
            overhead = model.overhead_s / job.share if model is not None else 0.0
            seconds = overhead + len(job.transforms) * stream_images(params) / rate
            out[job], basis[job] = Estimate(seconds, seconds), "assumed"
        else:
            out[job] = None
            basis[job] = (
                "none: no measured row in the local run and no cloud.assumed_img_per_s."
                f"{declared.placement}.{job.library}"
            )
    return out, basis


def seconds_per_job(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: Mapping[str, Any],
    image_scale: float = 1.0,
    cores: int = 0,
) -> tuple[dict[Job, float | None], dict[Job, str]]:
    """Expected local seconds of every job (the plan's ETA) on a machine of ``cores`` (0: the
    measuring machine's): :func:`estimate_jobs`."""
    found, basis = estimate_jobs(jobs, models, config, image_scale, lambda job: cores)
    return {j: (e.expected if e is not None else None) for j, e in found.items()}, basis


# -- the cloud estimate ---------------------------------------------------------------------
@dataclass(frozen=True)
class Grouping:
    """How the profile bundles jobs into VM jobs (Snakemake ``groups`` / ``group-components``):
    rule -> group name, group -> jobs per VM job."""

    groups: Mapping[str, str] = field(default_factory=dict)
    components: Mapping[str, int] = field(default_factory=dict)

    def vm_jobs(self, jobs_per_rule: Mapping[str, int]) -> dict[str, float]:
        """VM jobs per rule: a rule's share of its group's ceil(jobs / components)."""
        in_group: dict[str, int] = defaultdict(int)
        for rule, count in jobs_per_rule.items():
            if rule in self.groups:
                in_group[self.groups[rule]] += count
        out = {}
        for rule, count in jobs_per_rule.items():
            group = self.groups.get(rule)
            if group is None:
                out[rule] = float(count)
                continue
            size = max(int(self.components.get(group, 1)), 1)
            out[rule] = math.ceil(in_group[group] / size) * count / in_group[group]
        return out


@dataclass
class Row:
    """One line of the estimate: the jobs of one rule on one machine type."""

    kind: str
    machine_type: str
    jobs: int
    preemptible: bool
    speed_factor: float
    basis: str
    seconds_expected: float | None  # job seconds on the target machine (None: no model)
    seconds_max: float | None
    vm_jobs: float  # VM jobs after grouping (start-ups paid)
    vm_start_s: float
    on_demand_usd_h: float | None
    spot_usd_h: float | None
    # The longest VM job of the rule (expected): its start-up plus the longest members a group
    # VM could be handed (Snakemake fills a group job in plan order, so this is the worst case).
    longest_vm_job_s: float = 0.0

    @property
    def startup_vm_hours(self) -> float:
        return self.vm_jobs * self.vm_start_s / 3600

    def vm_hours(self, which: str = "expected") -> float | None:
        seconds = self.seconds_expected if which == "expected" else self.seconds_max
        return None if seconds is None else seconds / 3600 + self.startup_vm_hours

    def usd(self, spot: bool, which: str = "expected") -> float | None:
        price = self.spot_usd_h if spot and self.preemptible else self.on_demand_usd_h
        hours = self.vm_hours(which)
        return None if hours is None or price is None else hours * price


def placement_of(config: Mapping[str, Any], job: Job) -> Mapping[str, Any] | None:
    """The cloud machine class a job's kind is placed on (config cloud.regimes), None for jobs
    without a placement of their own (setup jobs: the profile's default machine)."""
    declared = regimes.KINDS.get(job.rule)
    placements = config.get("cloud", {}).get("regimes", {})
    return placements.get(declared.placement) if declared else None


def placement_device(config: Mapping[str, Any]) -> Callable[[Job], str]:
    """The device a model steps on in each job's cloud placement: ``cuda`` where it has a GPU,
    else ``cpu`` ("" where the job has no placement: as measured)."""

    def device(job: Job) -> str:
        spec = placement_of(config, job)
        return ("cuda" if spec.get("gpu") else "cpu") if spec else ""

    return device


def placement_cores(config: Mapping[str, Any]) -> Callable[[Job], int]:
    """The vCPUs of each job's machine in a cloud sweep (0 without a placement: as measured)."""

    def cores(job: Job) -> int:
        spec = placement_of(config, job)
        return int(spec.get("cpus", 0)) if spec else 0

    return cores


def estimate(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: Mapping[str, Any],
    default_machine: str,
    preemptible: set[str],
    vm_start_s: float,
    image_scale: float = 1.0,
    grouping: Grouping | None = None,
) -> list[Row]:
    cloud = config.get("cloud", {})
    factors = cloud.get("speed_factors", {})
    on_demand = cloud.get("prices_usd_per_hour", {})
    spot = cloud.get("spot_prices_usd_per_hour", {})
    found, basis = estimate_jobs(
        jobs, models, config, image_scale, placement_cores(config), placement_device(config)
    )
    by_rule: dict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        placement = placement_of(config, job)
        machine = placement["machine_type"] if placement else default_machine
        by_rule[(job.rule, machine)].append(job)
    # A job_per: library job is one VM job however many result files (model jobs) it writes.
    vm_counts = {
        kind: sum(1.0 / j.share for j in members) for (kind, _), members in by_rule.items()
    }
    grouping = grouping or Grouping()
    vm_jobs = grouping.vm_jobs({k: round(v) for k, v in vm_counts.items()})
    rows = []
    for (kind, machine), members in by_rule.items():
        factor = float(factors.get(machine, 1.0))
        estimates = [found[j] for j in members]
        known = [e for e in estimates if e is not None]
        complete = len(known) == len(estimates)
        group = grouping.groups.get(kind)
        per_vm = max(int(grouping.components.get(group, 1)), 1) if group else 1
        # Result files per VM job: a job_per: library job writes `share` of them.
        files = per_vm * max((j.share for j in members), default=1)
        longest = sorted((e.expected for e in known), reverse=True)[:files]
        rows.append(
            Row(kind, machine, round(vm_counts[kind]), kind in preemptible, factor,
                "; ".join(sorted({basis[j] for j in members})),
                sum(e.expected for e in known) / factor if complete else None,
                sum(e.most for e in known) / factor if complete else None,
                vm_jobs[kind], vm_start_s, on_demand.get(machine), spot.get(machine),
                vm_start_s + sum(longest) / factor)
        )  # fmt: skip
    order = {k: i for i, k in enumerate(SETUP_KINDS + regimes.timed_rules_in_order())}
    return sorted(rows, key=lambda r: (order.get(r.kind, 99), r.machine_type))


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


TSV_COLUMNS = (
    "rule", "jobs", "machine_type", "vm_jobs", "vm_hours_expected", "vm_hours_max",
    "usd_expected", "usd_max", "usd_spot_expected", "usd_spot_max", "startup_vm_hours",
    "preemptible", "speed_factor", "basis",
)  # fmt: skip


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def write_tsv(rows: list[Row], path: Path) -> None:
    """One row per rule and machine type, then ``total`` (n/a where a rule has no model)."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def cells(r: Row) -> list[Any]:
        return [r.kind, r.jobs, r.machine_type, _fmt(r.vm_jobs, 1),
                _fmt(r.vm_hours("expected"), 4), _fmt(r.vm_hours("max"), 4),
                _fmt(r.usd(False, "expected"), 4), _fmt(r.usd(False, "max"), 4),
                _fmt(r.usd(True, "expected"), 4), _fmt(r.usd(True, "max"), 4),
                _fmt(r.startup_vm_hours, 4), r.preemptible, r.speed_factor, r.basis]  # fmt: skip

    with path.open("w", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        out.writerow(TSV_COLUMNS)
        for r in rows:
            out.writerow(cells(r))
        out.writerow([
            "total", sum(r.jobs for r in rows), "", _fmt(sum(r.vm_jobs for r in rows), 1),
            _fmt(_sum([r.vm_hours("expected") for r in rows]), 4),
            _fmt(_sum([r.vm_hours("max") for r in rows]), 4),
            _fmt(_sum([r.usd(False, "expected") for r in rows]), 4),
            _fmt(_sum([r.usd(False, "max") for r in rows]), 4),
            _fmt(_sum([r.usd(True, "expected") for r in rows]), 4),
            _fmt(_sum([r.usd(True, "max") for r in rows]), 4),
            _fmt(sum(r.startup_vm_hours for r in rows), 4), "", "", "",
        ])  # fmt: skip


JOB_COLUMNS = (
    "rule", "library", "output", "benchmark", "transforms", "megapixels", "expected_s", "max_s",
    "mem_mb", "rss_mb", "forked", "basis",
)  # fmt: skip


def write_jobs_tsv(
    jobs: list[Job],
    models: dict[Key, KindModel],
    config: Mapping[str, Any],
    path: Path,
    cloud: bool = False,
) -> None:
    """Every planned job with its predicted seconds (expected, at most) on the machine the
    timings were measured on (``cloud``: on its cloud placement's cores) and, for timed jobs,
    its benchmark file and memory: what tools/checks/cost_validation.py compares with a measured
    run, job by job."""
    found, basis = estimate_jobs(
        jobs, models, config,
        target_cores=placement_cores(config) if cloud else None,
        target_device=placement_device(config) if cloud else None,
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        out.writerow(JOB_COLUMNS)
        for job, est in found.items():
            out.writerow([
                job.rule, job.library, job.output, job.benchmark, ",".join(job.transforms),
                f"{job.megapixels:.4f}", _fmt(est.expected if est else None, 3),
                _fmt(est.most if est else None, 3), job.mem_mb, job.rss_mb, job.forked,
                basis[job],
            ])  # fmt: skip


def startup_share(rows: list[Row]) -> float | None:
    """Start-up VM hours / all VM hours (expected), None without a total."""
    hours = _sum([r.vm_hours("expected") for r in rows])
    return None if not hours else sum(r.startup_vm_hours for r in rows) / hours


def wall_hours(rows: list[Row], concurrent: int) -> float:
    """Expected wall time with ``concurrent`` VM jobs at once: the VM hours spread over them, but
    never less than the longest VM job."""
    hours = sum(r.vm_hours("expected") or 0.0 for r in rows)
    longest = max((r.longest_vm_job_s for r in rows), default=0.0) / 3600
    return max(hours / max(concurrent, 1), longest)


def _totals(rows: list[Row]) -> tuple[float, float, Row, float]:
    """Machine hours expected and at most, the rule with the longest machine job, and the
    start-up share: what both totals say."""
    hours = sum(r.vm_hours("expected") or 0.0 for r in rows)
    most = sum(r.vm_hours("max") or 0.0 for r in rows)
    longest = max(rows, key=lambda r: r.longest_vm_job_s)
    return hours, most, longest, startup_share(rows) or 0.0


def total_line(rows: list[Row], concurrent: int) -> str:
    hours, most, longest, share = _totals(rows)
    return (
        f"total: {sum(r.jobs for r in rows)} jobs in {sum(r.vm_jobs for r in rows):.0f} VM "
        f"jobs, {hours:.2f} VM hours expected ({most:.2f} at most; VM start-up "
        f"{share:.0%} of them), {sum(r.usd(False) or 0 for r in rows):.2f} USD on demand "
        f"({sum(r.usd(False, 'max') or 0 for r in rows):.2f} at most), "
        f"{sum(r.usd(True) or 0 for r in rows):.2f} USD with preemptible benchmark jobs; "
        f"about {wall_hours(rows, concurrent):.2f} h of wall time with {concurrent} jobs at once "
        f"(longest VM job: {longest.kind}, {longest.longest_vm_job_s / 3600:.2f} h)"
    )


def node_total_line(rows: list[Row], concurrent: int) -> str:
    """The total of a SLURM cluster's estimate: node-hours, and USD only where every partition
    used has a configured price per node-hour."""
    hours, most, longest, share = _totals(rows)
    unpriced = sorted({r.machine_type for r in rows if r.on_demand_usd_h is None})
    usd = (
        f"{sum(r.usd(False) or 0 for r in rows):.2f} USD at the configured node-hour prices "
        f"({sum(r.usd(False, 'max') or 0 for r in rows):.2f} at most)"
        if not unpriced
        else "no USD (no price per node-hour for "
        + ", ".join(unpriced)
        + ": slurm.prices_usd_per_node_hour)"
    )
    return (
        f"total: {sum(r.jobs for r in rows)} jobs in {sum(r.vm_jobs for r in rows):.0f} SLURM "
        f"jobs, {hours:.2f} node-hours expected ({most:.2f} at most; job start-up "
        f"{share:.0%} of them), {usd}; about {wall_hours(rows, concurrent):.2f} h of wall time "
        f"with {concurrent} jobs at once (longest SLURM job: {longest.kind}, "
        f"{longest.longest_vm_job_s / 3600:.2f} h)"
    )


def report(
    rows: list[Row],
    planned: list[str],
    concurrent: int,
    sources: dict[str, str],
    unit: str = "VM",
) -> str:
    """The table, then a total only when every planned kind has a model (and, for cloud VMs, a
    price). ``unit``: "VM" (a cloud sweep) or "node" (the partitions of a SLURM cluster, USD
    only where configured)."""
    nodes = unit == "node"
    width = max([22, *(len(r.kind) + 2 for r in rows)])  # the longest rule name, then a gap
    place = "partition" if nodes else "machine"
    jobs_head = "SLURM jobs" if nodes else "VM jobs"
    jw, hw = (11, 12) if nodes else (8, 10)  # column widths: the longer node headings
    head = (f"{'rule':<{width}}{place:<16}{'jobs':>6}{jobs_head:>{jw}}{'speed x':>8}"
            f"{unit + ' h exp':>{hw}}{unit + ' h max':>{hw}}{'USD exp':>10}{'USD max':>10}"
            + ("" if nodes else f"{'USD Spot exp':>14}") + "  basis")  # fmt: skip
    lines = [head]
    for r in rows:
        spot = _fmt(r.usd(True)) if r.preemptible else "(on-demand)"
        lines.append(
            f"{r.kind:<{width}}{r.machine_type:<16}{r.jobs:>6}{r.vm_jobs:>{jw}.1f}"
            f"{r.speed_factor:>8.2f}{_fmt(r.vm_hours('expected')):>{hw}}"
            f"{_fmt(r.vm_hours('max')):>{hw}}{_fmt(r.usd(False)):>10}"
            f"{_fmt(r.usd(False, 'max')):>10}" + ("" if nodes else f"{spot:>14}") + f"  {r.basis}"
        )
    modelled = {r.kind for r in rows}
    gaps = [f"{k}: no planned jobs found" for k in planned if k not in modelled]
    gaps += [f"{r.kind} on {r.machine_type}: {r.basis}" for r in rows if r.seconds_expected is None]
    if not nodes:
        unpriced = {r.machine_type for r in rows if r.seconds_expected is not None}
        unpriced -= {r.machine_type for r in rows if r.usd(True) is not None}
        gaps += [
            f"{m}: no price; set cloud.prices_usd_per_hour.{m} (and "
            f"cloud.spot_prices_usd_per_hour.{m} for preemptible jobs)"
            for m in sorted(unpriced)
        ]
    if gaps:
        lines.append("NO TOTAL: the estimate does not cover every planned job:")
        lines.extend(f"  {g}" for g in gaps)
    else:
        lines.append(node_total_line(rows, concurrent) if nodes else total_line(rows, concurrent))
    lines.extend(f"{k}: {v}" for k, v in sources.items())
    return "\n".join(lines)
