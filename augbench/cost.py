"""Time and cost of a sweep, estimated from a finished (smaller) local run before launching it.

Model, per regime and library, from the local run's result files and Snakemake benchmark files:

- a measured transform costs images x processes x (values + warmups) / median throughput of
  timed work, plus a per-process overhead (interpreter start, imports, the preflight) = its
  measuring wall time (``wall_seconds``) minus that timed work, divided by its processes;
- a transform stopped early or failing costs its wall time as measured;
- each job adds a fixed overhead = benchmark wall time minus the sum of its transforms' times
  (interpreter start, imports, decoding, provisioning on a warm node);
- a transform absent from the local run costs that library's median per-unit time; rows that were
  not measured (unsupported, skipped) cost nothing;
- every job also pays a VM start (boot, container pull, env provisioning), an assumption given on
  the command line.

Jobs x time x the regime's machine price (config cloud.prices_usd_per_hour) gives the cost.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench import matrix


@dataclass(frozen=True)
class TransformCost:
    per_image_s: float | None  # None: not measured (early stopped, error): a fixed cost
    per_process_s: float


@dataclass(frozen=True)
class LibraryModel:
    transforms: dict[str, TransformCost]
    job_overhead_s: float
    setup_s: float  # provisioning measured on the local node (env reuse, staging)

    def transform_seconds(self, transform: str, params: dict[str, Any]) -> float:
        cost = self.transforms.get(transform)
        if cost is None:  # not in the local run: this library's typical measured transform
            measured = [c for c in self.transforms.values() if c.per_image_s is not None]
            if not measured:
                return 0.0
            cost = TransformCost(
                statistics.median(c.per_image_s for c in measured if c.per_image_s is not None),
                statistics.median(c.per_process_s for c in measured),
            )
        if cost.per_image_s is None:
            return cost.per_process_s
        return params["processes"] * cost.per_process_s + work_units(params) * cost.per_image_s


def work_units(params: dict[str, Any]) -> float:
    return params["num_images"] * params["processes"] * (params["values"] + params["warmups"])


def _benchmark_seconds(tsv: Path) -> float | None:
    try:
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except OSError:
        return None
    return float(rows[0]["s"]) if rows else None


def learn(run_dir: Path) -> dict[tuple[str, str], LibraryModel]:
    """(regime, library) -> model, from results/raw/*/<regime>/<library>/*.json and the matching
    benchmarks/*/<regime>/<library>/*.tsv of a finished local run."""
    costs: dict[tuple[str, str], dict[str, list[TransformCost]]] = defaultdict(
        lambda: defaultdict(list)
    )
    overheads: dict[tuple[str, str], list[float]] = defaultdict(list)
    setups: dict[tuple[str, str], list[float]] = defaultdict(list)
    raw = run_dir / "results" / "raw"
    # results/raw/<machine>/<dataset key>/<regime>/<library>/ (and the older layout without the
    # dataset level); benchmarks/ mirrors it.
    for path in sorted([*raw.glob("*/*/*/*.json"), *raw.glob("*/*/*/*/*.json")]):
        regime, library = path.parts[-3:-1]
        payload = json.loads(path.read_text())
        meta = payload["metadata"]
        params = meta.get("benchmark_params", {})
        if not {"num_images", "processes", "values", "warmups"} <= params.keys():
            continue
        key = (regime, library)
        measured = 0.0
        for transform, row in payload["results"].items():
            wall = row.get("wall_seconds")
            if wall is None:  # unsupported: no process ran, no cost
                costs[key][transform].append(TransformCost(None, 0.0))
                continue
            measured += wall
            if row.get("status") == "ok" and row.get("median_throughput"):
                per_image = 1.0 / row["median_throughput"]
                fixed = max(wall - work_units(params) * per_image, 0.0) / params["processes"]
                costs[key][transform].append(TransformCost(per_image, fixed))
            else:
                costs[key][transform].append(TransformCost(None, wall))
        bench = (run_dir / "benchmarks" / path.relative_to(raw)).with_suffix(".tsv")
        seconds = _benchmark_seconds(bench)
        if seconds is not None:
            overheads[key].append(max(seconds - measured, 0.0))
        setup = meta.get("setup") or {}
        setups[key].append(setup.get("env_seconds", 0.0) + setup.get("dataset_seconds", 0.0))
    models = {}
    for key, per_transform in costs.items():
        merged = {}
        for transform, seen in per_transform.items():
            ok = [c for c in seen if c.per_image_s is not None]
            if ok:
                merged[transform] = TransformCost(
                    statistics.median(c.per_image_s for c in ok if c.per_image_s is not None),
                    statistics.median(c.per_process_s for c in ok),
                )
            else:
                merged[transform] = TransformCost(
                    None, statistics.median(c.per_process_s for c in seen)
                )
        models[key] = LibraryModel(
            transforms=merged,
            job_overhead_s=statistics.median(overheads[key]) if overheads[key] else 0.0,
            setup_s=statistics.median(setups[key]) if setups[key] else 0.0,
        )
    return models


@dataclass
class RegimeEstimate:
    regime: str
    machine_type: str
    usd_per_hour: float
    jobs: int
    job_seconds: list[float]

    @property
    def vm_hours(self) -> float:
        return sum(self.job_seconds) / 3600

    @property
    def usd(self) -> float:
        return self.vm_hours * self.usd_per_hour


def estimate(
    target: dict[str, Any],
    models: dict[tuple[str, str], LibraryModel],
    vm_start_s: float,
) -> tuple[list[RegimeEstimate], list[str]]:
    """Per-regime jobs, VM hours and cost of the ``target`` config; and what could not be
    estimated (a regime or library without a local measurement), never silently dropped."""
    cloud = target["cloud"]
    prices = cloud.get("prices_usd_per_hour", {})
    missing: list[str] = []
    out = []
    for regime in target["regimes"]:
        if regime != "micro":
            missing.append(f"{regime}: no job model yet (only micro shards are modelled)")
            continue
        placement = cloud["regimes"][regime]
        machine_type = placement["machine_type"]
        if machine_type not in prices:
            missing.append(f"{regime}: no price for {machine_type} in cloud.prices_usd_per_hour")
        params = {**target["micro"], "num_images": target["num_images"]}
        size = target["micro"]["shard_size"]
        shards = [
            target["transforms"][i : i + size] for i in range(0, len(target["transforms"]), size)
        ]
        job_seconds = []
        for library in matrix.libraries_for(regime, target["libraries"]):
            model = models.get((regime, library))
            if model is None:
                missing.append(f"{regime}/{library}: no result files in the local run")
                continue
            for shard in shards:
                body = sum(model.transform_seconds(t, params) for t in shard)
                job_seconds.append(vm_start_s + model.job_overhead_s + body)
        out.append(
            RegimeEstimate(
                regime, machine_type, prices.get(machine_type, math.nan), len(job_seconds),
                job_seconds,
            )
        )  # fmt: skip
    return out, missing


def report(estimates: list[RegimeEstimate], missing: list[str], jobs: int, source: str) -> str:
    lines = [
        f"{'regime':<16}{'machine':<16}{'jobs':>6}{'mean job min':>14}{'VM hours':>10}{'USD':>10}",
    ]
    for e in estimates:
        mean_min = statistics.fmean(e.job_seconds) / 60 if e.job_seconds else 0.0
        lines.append(
            f"{e.regime:<16}{e.machine_type:<16}{e.jobs:>6}{mean_min:>14.1f}"
            f"{e.vm_hours:>10.2f}{e.usd:>10.2f}"
        )
    all_jobs = [s for e in estimates for s in e.job_seconds]
    total_usd = sum(e.usd for e in estimates)
    # With `jobs` VMs at once, the sweep takes at least its longest job and its total / jobs.
    wall_h = max(max(all_jobs, default=0.0), sum(all_jobs) / max(jobs, 1)) / 3600
    lines.append(f"total: {len(all_jobs)} jobs, {sum(all_jobs) / 3600:.2f} VM hours, "
                 f"about {total_usd:.2f} USD on demand (Spot VMs cost less), "
                 f"about {wall_h:.2f} h of wall time with {jobs} jobs at once")  # fmt: skip
    lines.append(f"prices: {source}")
    lines.extend(f"not estimated: {m}" for m in missing)
    return "\n".join(lines)
