"""Time and cost of a sweep, estimated from a finished (smaller) local run before launching it.

Model, per regime and library, from the local run's result files and Snakemake benchmark files:

- each measured transform costs ``wall_seconds`` (its measuring process, from the result row)
  per unit of work, work = images x processes x (values + warmups);
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
class LibraryModel:
    seconds_per_unit: dict[str, float]  # transform -> seconds per unit of work
    unmeasured: set[str]  # transforms that ran but were not measured (no time)
    job_overhead_s: float
    setup_s: float  # provisioning measured on the local node (env reuse, staging)

    def transform_seconds(self, transform: str, units: float) -> float:
        if transform in self.unmeasured and transform not in self.seconds_per_unit:
            return 0.0
        per_unit = self.seconds_per_unit.get(transform)
        if per_unit is None:
            per_unit = statistics.median(self.seconds_per_unit.values())
        return per_unit * units


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
    per_unit: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    unmeasured: dict[tuple[str, str], set[str]] = defaultdict(set)
    overheads: dict[tuple[str, str], list[float]] = defaultdict(list)
    setups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in sorted((run_dir / "results" / "raw").glob("*/*/*/*.json")):
        machine, regime, library = path.parts[-4:-1]
        payload = json.loads(path.read_text())
        meta = payload["metadata"]
        params = meta.get("benchmark_params", {})
        if not {"num_images", "processes", "values", "warmups"} <= params.keys():
            continue
        key = (regime, library)
        units = work_units(params)
        measured = 0.0
        for transform, row in payload["results"].items():
            if row.get("wall_seconds"):
                per_unit[key][transform].append(row["wall_seconds"] / units)
                measured += row["wall_seconds"]
            else:
                unmeasured[key].add(transform)
        bench = run_dir / "benchmarks" / machine / regime / library / f"{path.stem}.tsv"
        seconds = _benchmark_seconds(bench)
        if seconds is not None:
            overheads[key].append(max(seconds - measured, 0.0))
        setup = meta.get("setup") or {}
        setups[key].append(setup.get("env_seconds", 0.0) + setup.get("dataset_seconds", 0.0))
    models = {}
    for key in set(per_unit) | set(unmeasured):
        if not per_unit[key]:
            continue  # nothing measured: no basis for an estimate
        models[key] = LibraryModel(
            seconds_per_unit={t: statistics.median(v) for t, v in per_unit[key].items()},
            unmeasured=unmeasured[key],
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
        units = work_units(params)
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
                body = sum(model.transform_seconds(t, units) for t in shard)
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
