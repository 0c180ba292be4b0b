"""Time and cost of a sweep, from the per-job times of a finished (smaller) local run.

One per-job time model, reused for the cloud estimate (rule `cost`, docs/cloud.md) and meant for a
local ETA before a run: ``seconds = jobs per kind x seconds per job``, where a job *kind* is a rule:
a timed job kind declared in augbench/regimes.py (its ``cost`` says how it is priced), a setup
rule (``regimes.SETUP_RULES``) or an analysis rule (``regimes.ANALYSIS_RULES``).

Per benchmark job, learned per (kind, library) from the local run's result files and the matching
Snakemake benchmark files (``benchmarks/<machine>/<regime>/<library>/<job>.tsv``, the job's wall
seconds):

- a measured transform costs ``images it processes x 1 / median throughput`` (``images`` from the
  job's own parameters: ``images_per_transform``), so a larger preset scales the work;
- the rest of the job's wall time (interpreter start, imports, decoding, preflights, transforms
  stopped early) is a fixed per-job overhead;
- a transform not measured locally costs the library's median per-image time in that kind; a
  library without any measured row (a GPU regime on a machine without CUDA) uses an *assumed*
  throughput from config ``cloud.assumed_img_per_s``, or has no model: reported, never dropped.

Setup jobs cost their local benchmark time (scaled by image count for the dataset jobs), or an
assumed time when the local run has none. Target machines differ from the local one by a per-core
``speed factor`` (config ``cloud.speed_factors``), printed with its source next to every row.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from augbench import matrix, regimes
from augbench.policy import MICRO_MIN_VALUE_SECONDS

# Rule names come from the declarations (augbench/regimes.py): a new job kind is priced, or
# reported as unpriced, without any change here.
SETUP_KINDS = regimes.SETUP_RULES
ANALYSIS_KINDS = regimes.ANALYSIS_RULES
# Without a local timing, a setup job is assumed to take this long (seconds; printed as assumed).
ASSUMED_SETUP_S = 60.0
# Tables, figures and report pieces after the benchmarks: the local ETA counts them (timed by their
# benchmark files benchmarks/analysis/.../<rule>.tsv; without one, assumed); the cloud estimate runs
# them on the driver and leaves them out.
ASSUMED_ANALYSIS_S = 15.0


def bench_kinds() -> tuple[str, ...]:
    """Rules priced per transform from their result rows (they write benchmark rows)."""
    return tuple(k.rule for k in regimes.kinds() if k.cost != "whole_job")


def whole_job_kinds() -> tuple[str, ...]:
    """Rules priced by their measured wall time per library (a fixed amount of work each: the
    lazy-output diagnostic, the user pipelines' jobs)."""
    return tuple(k.rule for k in regimes.kinds() if k.cost == "whole_job")


def kind_of(regime: str, stem: str) -> str:
    """The rule behind a result file (e.g. DALI's CPU-backend variant is its own rule)."""
    kind = regimes.result_kind(regime, stem)
    return kind.rule if kind is not None else regime


def images_per_transform(kind: str, params: dict[str, Any]) -> float:
    """Images one transform processes in one job (timed runs, warm-ups, baselines); for a pyperf
    kind, at most (every pyperf process the block allows, one pass over the images per value)."""
    model = regimes.KINDS[kind].cost
    if model == "pyperf":
        return params["num_images"] * params["processes"] * (params["values"] + params["warmups"])
    if model == "dataloader":
        runs = params["num_runs"] + params.get("baseline_runs", 1) + 1  # + the warm-up epoch
        return params["images_per_run"] * runs
    return params["num_images"] * (params["values"] + params["warmups"])  # GPU and DALI streams


def target_params(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """The parameters a job of ``kind`` runs with under ``config`` (same keys as the results)."""
    declared = regimes.KINDS[kind]
    block = config[declared.config_block]
    if declared.cost == "pyperf":
        return {**block, "num_images": block.get("num_images") or config["num_images"]}
    if declared.cost == "dataloader":
        return {**block, "images_per_run": block["batch_size"] * block["batches_per_run"]}
    return {**block, "num_images": config["num_images"]}


@dataclass
class KindModel:
    """Per-job model of one (kind, library)."""

    per_image_s: dict[str, float] = field(default_factory=dict)  # transform -> s/image
    overhead_s: float = 0.0
    basis: str = "measured"
    # micro: pyperf processes a row used / the most it was allowed (rows stop once their CI
    # reaches the target), so a plan expects that share of its own maximum.
    process_share: float = 1.0

    def job_seconds(self, transforms: list[str], images: float, share: int = 1) -> float:
        typical = statistics.median(self.per_image_s.values())
        work = sum(images * self.per_image_s.get(t, typical) for t in transforms)
        return self.overhead_s / share + work


def _benchmark_seconds(tsv: Path) -> float | None:
    try:
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except OSError:
        return None
    return float(rows[0]["s"]) if rows else None


def learn(run_dir: Path) -> dict[tuple[str, str], KindModel]:
    """(kind, library) -> model, from results/raw/*/<regime>/<library>/*.json and
    benchmarks/*/<regime>/<library>/*.tsv of a finished local run. Setup kinds are keyed
    (kind, "") and learned from benchmarks/setup/<kind>/*.tsv."""
    per_image: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    overheads: dict[tuple[str, str], list[float]] = defaultdict(list)
    shares: dict[tuple[str, str], list[float]] = defaultdict(list)
    jobs: dict[Path, list[tuple[tuple[str, str], float]]] = defaultdict(list)
    raw = run_dir / "results" / "raw"
    # Any depth (<machine>[/<dataset>]/<regime>/<library>/<job>.json); benchmarks/ mirrors it.
    for path in sorted(raw.glob("**/*.json")):
        regime, library = path.parts[-3:-1]
        try:
            payload = json.loads(path.read_text())
            params = payload["metadata"]["benchmark_params"]
            kind = kind_of(regime, path.stem)
            if kind not in bench_kinds():
                continue  # not a result of this workflow's regimes
            images = images_per_transform(kind, params)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a result of this workflow's regimes
        key = (kind, library)
        work = 0.0
        for transform, row in payload["results"].items():
            if row.get("status") == "ok" and row.get("median_throughput"):
                per_image[key][transform].append(1.0 / row["median_throughput"])
                pyperf = regimes.KINDS[kind].cost == "pyperf"
                row_images = micro_row_images(row, params) if pyperf else None
                work += (row_images or images) / row["median_throughput"]
                if row_images is not None:
                    shares[key].append(row["pyperf_processes"] / max(params["processes"], 1))
        bench = run_dir / "benchmarks" / path.relative_to(raw).with_suffix(".tsv")
        if params.get("settings_in_job"):  # a job_per: library job: one benchmark file for all
            bench = bench.with_name(f"{matrix.dataloader_library_job(params['shard'])}.tsv")
        jobs[bench].append((key, work))
    for bench, members in jobs.items():
        seconds = _benchmark_seconds(bench)
        if seconds is None:
            continue
        # A job's time beyond the measured work of every result file it wrote: one process's
        # start, imports and set-up (a job_per: library job pays them once for its settings).
        overhead = max(seconds - sum(work for _, work in members), 0.0)
        for key in {key for key, _ in members}:
            overheads[key].append(overhead)
    models: dict[tuple[str, str], KindModel] = {}
    for key in set(per_image) | set(overheads):
        models[key] = KindModel(
            {t: statistics.median(v) for t, v in per_image[key].items()},
            statistics.median(overheads[key]) if overheads[key] else 0.0,
            process_share=statistics.fmean(shares[key]) if shares[key] else 1.0,
        )
    for kind in SETUP_KINDS:
        times = [
            s
            for tsv in sorted((run_dir / "benchmarks" / "setup" / kind).glob("*.tsv"))
            if (s := _benchmark_seconds(tsv)) is not None
        ]
        if times:
            models[(kind, "")] = KindModel({}, statistics.median(times))
    for kind in ANALYSIS_KINDS:  # benchmarks/analysis/[<root>/]<kind>.tsv
        times = [
            s
            for tsv in sorted((run_dir / "benchmarks" / "analysis").glob(f"**/{kind}.tsv"))
            if (s := _benchmark_seconds(tsv)) is not None
        ]
        if times:
            models[(kind, "")] = KindModel({}, statistics.median(times))
    for kind in whole_job_kinds():
        pattern, library_from = regimes.benchmark_glob(regimes.KINDS[kind])
        whole: dict[str, list[float]] = defaultdict(list)
        for tsv in sorted(run_dir.glob(f"benchmarks/{pattern}")):
            if (s := _benchmark_seconds(tsv)) is not None:
                whole[tsv.stem if library_from == "stem" else tsv.parent.name].append(s)
        for library, times in whole.items():
            models[(kind, library)] = KindModel({}, statistics.median(times))
    return models


def micro_row_images(row: dict[str, Any], params: dict[str, Any]) -> float | None:
    """Images a micro row actually processed, where it records how (pyperf processes and loops:
    rows stop early and fast transforms repeat passes); None for older result files."""
    if "pyperf_processes" not in row or "loops" not in row:
        return None
    passes = (params["values"] + params["warmups"]) * row["pyperf_processes"] * row["loops"]
    return params["num_images"] * passes


def micro_transform_seconds(model: KindModel, transform: str, params: dict[str, Any]) -> float:
    """Seconds one micro transform costs in a planned job: passes (warm-up + values per
    process, times the expected processes) of at least one timed value's minimum duration each
    (fast transforms repeat passes: policy.MICRO_MIN_VALUE_SECONDS)."""
    typical = statistics.median(model.per_image_s.values())
    per_pass = params["num_images"] * model.per_image_s.get(transform, typical)
    most = params["processes"]
    expected = min(max(model.process_share * most, params.get("min_processes", 1)), most)
    passes = (params["values"] + params["warmups"]) * expected
    return passes * max(per_pass, MICRO_MIN_VALUE_SECONDS)


@dataclass(frozen=True)
class Job:
    """One planned job: its kind, library ("" for setup jobs) and transforms (benchmark jobs)."""

    kind: str
    library: str = ""
    transforms: tuple[str, ...] = ()
    # One result file of a job that writes ``share`` of them in one process (cpu_dataloader with
    # job_per: library): it carries its own work and 1/share of the job's per-process overhead.
    share: int = 1


def job_from_result_path(path: str, transforms_by_shard: dict[str, dict[str, list[str]]]) -> Job:
    """The planned job behind one result path of the workflow (augbench.sweep), its transforms
    from the shard wildcard."""
    found = regimes.kind_of_result(path)
    if found is None:
        raise ValueError(f"not a result path of any declared job kind: {path}")
    kind, wildcards = found
    transforms = transforms_by_shard.get(kind.regime, {}).get(wildcards.get("shard", ""), [])
    return Job(kind.rule, wildcards["library"], tuple(transforms))


def seconds_per_job(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: dict[str, Any],
    image_scale: float = 1.0,
) -> tuple[dict[Job, float | None], dict[Job, str]]:
    """Local seconds of every planned job (None: no model) and the basis of each estimate
    (measured / assumed / none: why). The reusable core: a cloud estimate divides by a machine's
    speed factor; a local ETA sums it as is. ``image_scale`` scales the dataset setup jobs."""
    assumed = config.get("cloud", {}).get("assumed_img_per_s", {})
    seconds: dict[Job, float | None] = {}
    basis: dict[Job, str] = {}
    for job in jobs:
        if job.kind in SETUP_KINDS:
            model = models.get((job.kind, ""))
            if model is None:  # an assumption does not scale with the dataset
                seconds[job], basis[job] = ASSUMED_SETUP_S, "assumed"
            else:
                scale = image_scale if job.kind != "build_env" else 1.0
                seconds[job], basis[job] = model.overhead_s * scale, "measured"
            continue
        if job.kind in ANALYSIS_KINDS:
            model = models.get((job.kind, ""))
            if model is None:
                seconds[job], basis[job] = ASSUMED_ANALYSIS_S, "assumed"
            else:
                seconds[job], basis[job] = model.overhead_s, "measured"
            continue
        if job.kind in whole_job_kinds():  # a fixed amount of work: its measured wall time
            model = models.get((job.kind, job.library))
            seconds[job] = model.overhead_s if model is not None else None
            basis[job] = "measured" if model is not None else f"none: no local {job.kind} job"
            continue
        if job.kind not in regimes.KINDS:
            seconds[job], basis[job] = None, f"none: {job.kind} is not a declared job kind"
            continue
        params = target_params(job.kind, config)
        images = images_per_transform(job.kind, params)
        model = models.get((job.kind, job.library))
        pyperf = regimes.KINDS[job.kind].cost == "pyperf"
        if model is not None and model.per_image_s and pyperf:
            work = sum(micro_transform_seconds(model, t, params) for t in job.transforms)
            seconds[job], basis[job] = model.overhead_s + work, "measured"
            continue
        if model is not None and model.per_image_s:
            seconds[job] = model.job_seconds(list(job.transforms), images, job.share)
            basis[job] = "measured"
            continue
        rate = assumed.get(job.kind, {}).get(job.library)
        if rate:
            overhead = model.overhead_s / job.share if model is not None else 0.0
            seconds[job] = overhead + len(job.transforms) * images / rate
            basis[job] = "assumed"
        else:
            seconds[job] = None
            basis[job] = (
                "none: no measured row in the local run and no cloud.assumed_img_per_s."
                f"{job.kind}.{job.library}"
            )
    return seconds, basis


@dataclass
class Row:
    """One line of the estimate: the jobs of one kind on one machine type."""

    kind: str
    machine_type: str
    jobs: int
    preemptible: bool
    speed_factor: float
    basis: str
    vm_seconds: float | None  # None: at least one job has no model
    on_demand_usd_h: float | None
    spot_usd_h: float | None

    @property
    def vm_hours(self) -> float | None:
        return None if self.vm_seconds is None else self.vm_seconds / 3600

    def usd(self, spot: bool) -> float | None:
        price = self.spot_usd_h if spot and self.preemptible else self.on_demand_usd_h
        if self.vm_hours is None or price is None:
            return None
        return self.vm_hours * price


def estimate(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: dict[str, Any],
    default_machine: str,
    preemptible: set[str],
    vm_start_s: float,
    image_scale: float = 1.0,
) -> list[Row]:
    cloud = config.get("cloud", {})
    factors = cloud.get("speed_factors", {})
    on_demand = cloud.get("prices_usd_per_hour", {})
    spot = cloud.get("spot_prices_usd_per_hour", {})
    seconds, basis = seconds_per_job(jobs, models, config, image_scale)
    groups: dict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        declared = regimes.KINDS.get(job.kind)
        placement = cloud.get("regimes", {}).get(declared.placement) if declared else None
        groups[(job.kind, placement["machine_type"] if placement else default_machine)].append(job)
    rows = []
    for (kind, machine), members in groups.items():
        factor = float(factors.get(machine, 1.0))
        local = [seconds[j] for j in members]
        bases = sorted({basis[j] for j in members})
        vm = None if any(s is None for s in local) else sum(
            vm_start_s + s / factor for s in local if s is not None
        )  # fmt: skip
        rows.append(
            Row(kind, machine, len(members), kind in preemptible, factor, "; ".join(bases), vm,
                on_demand.get(machine), spot.get(machine))
        )  # fmt: skip
    order = {k: i for i, k in enumerate(SETUP_KINDS + bench_kinds() + whole_job_kinds())}
    return sorted(rows, key=lambda r: (order.get(r.kind, 99), r.machine_type))


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


TSV_COLUMNS = (
    "kind", "machine_type", "jobs", "preemptible", "speed_factor", "vm_hours", "usd_on_demand",
    "usd_spot", "basis",
)  # fmt: skip


def write_tsv(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        out.writerow(TSV_COLUMNS)
        for r in rows:
            out.writerow([r.kind, r.machine_type, r.jobs, r.preemptible, r.speed_factor,
                          _fmt(r.vm_hours, 4), _fmt(r.usd(False), 4), _fmt(r.usd(True), 4),
                          r.basis])  # fmt: skip


def report(rows: list[Row], planned: list[str], concurrent: int, sources: dict[str, str]) -> str:
    """The table, then a total only when every planned kind has a model and a price."""
    width = max([22, *(len(r.kind) + 2 for r in rows)])  # the longest rule name, then a gap
    head = (f"{'kind':<{width}}{'machine':<16}{'jobs':>6}{'speed x':>8}{'VM h':>9}"
            f"{'USD on-demand':>15}{'USD Spot':>13}  basis")  # fmt: skip
    lines = [head]
    for r in rows:
        spot = _fmt(r.usd(True)) if r.preemptible else "(on-demand)"
        lines.append(
            f"{r.kind:<{width}}{r.machine_type:<16}{r.jobs:>6}{r.speed_factor:>8.2f}"
            f"{_fmt(r.vm_hours):>9}{_fmt(r.usd(False)):>15}{spot:>13}  {r.basis}"
        )
    modelled = {r.kind for r in rows}
    gaps = [f"{k}: no planned jobs found" for k in planned if k not in modelled]
    gaps += [f"{r.kind} on {r.machine_type}: {r.basis}" for r in rows if r.vm_seconds is None]
    gaps += [f"{r.kind} on {r.machine_type}: no price for {r.machine_type}"
             for r in rows if r.vm_seconds is not None and r.usd(True) is None]  # fmt: skip
    if gaps:
        lines.append("NO TOTAL: the estimate does not cover every planned job:")
        lines.extend(f"  {g}" for g in gaps)
    else:
        hours = sum(r.vm_hours or 0.0 for r in rows)
        longest = max((r.vm_seconds or 0.0) / max(r.jobs, 1) for r in rows) / 3600
        lines.append(
            f"total: {sum(r.jobs for r in rows)} jobs, {hours:.2f} VM hours, "
            f"{sum(r.usd(False) or 0 for r in rows):.2f} USD on demand, "
            f"{sum(r.usd(True) or 0 for r in rows):.2f} USD with preemptible benchmark jobs; "
            f"at least {max(longest, hours / max(concurrent, 1)):.2f} h of wall time "
            f"with {concurrent} jobs at once"
        )
    lines.extend(f"{k}: {v}" for k, v in sources.items())
    return "\n".join(lines)
