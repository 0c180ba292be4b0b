"""The plan printed before the first job: jobs per phase and regime, and an ETA.

The ETA uses the per-job time model of the cloud cost estimate (``augbench.planning.cost``:
``learn`` and ``seconds_per_job``), one piece of code for both. Its models come from the
reference timings shipped with the workflow (``workflow/resources/time_model.json``, a default
run on a named machine), replaced by whatever this working directory has measured itself (an
earlier run's results and benchmark files). The wall-clock arithmetic follows the workflow's
scheduling: setup jobs run in parallel on the given cores (a resize also takes the
``bench_slot``, never beside a measurement), and every timed job (micro, cpu_dataloader, GPU
regimes, the lazy-output diagnostic) takes the one ``bench_slot``, so they add up; aggregation and
figures run last.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.planning import cost, regimes, transform_prior
from augbench.results import usable_cores

# Rules that are neither benchmarks nor setup: tables, figures, report pieces.
ANALYSIS_RULES = regimes.ANALYSIS_RULES


def phase_names() -> tuple[str, ...]:
    """Setup, then every timed rule (one at a time, by the bench_slot resource: the ones that
    write result rows first), then analysis."""
    return ("setup", *regimes.timed_rules_in_order(), "analysis")


@dataclass(frozen=True)
class Planned:
    """One job Snakemake is about to run: its rule, wildcards and first output."""

    rule: str
    wildcards: dict[str, str]
    output: str
    # Every result file the job writes, where it writes several (a cpu_dataloader job with
    # job_per: library writes one per setting); empty: just ``output``.
    outputs: tuple[str, ...] = ()


def unprefixed(query: str, prefix: str | None) -> str:
    """A storage query as the workflow's rules name the file: without the default storage
    prefix (``gs://bucket/sweep/results/x.json`` under ``gs://bucket/sweep``: ``results/x.json``);
    a query outside the prefix (a file given with its own storage URL) as it is."""
    head = (prefix or "").rstrip("/") + "/"
    return query[len(head) :] if prefix and query.startswith(head) else query


def cost_parts(job: Planned, by_output: dict[str, regimes.Job]) -> list[regimes.Job]:
    """The cost model's jobs that make up one planned job: a timed job is one per result file
    it writes (augbench.planning.sweep.Sweep.cost_jobs, keyed by result file: its work plus its
    share of the job's overhead); any other job is itself; empty for rules without a model (targets
    like all)."""
    if job.rule in regimes.KINDS:
        outputs = job.outputs or (job.output,)
        found = [by_output[out] for out in outputs if out in by_output]
        return found or [regimes.Job(job.rule, job.wildcards.get("library", ""))]
    if job.output in by_output:  # a setup job the sweep prices with its own flags (a resize)
        return [by_output[job.output]]
    if job.rule == "build_env":
        return [regimes.Job(job.rule, job.wildcards.get("library", ""))]
    if job.rule in cost.SETUP_KINDS or job.rule in ANALYSIS_RULES:
        return [regimes.Job(job.rule)]
    return []


def phase_of(kind: str) -> str:
    if kind in cost.SETUP_KINDS:
        return "setup"
    return kind if kind in regimes.KINDS else "analysis"


@dataclass(frozen=True)
class Reference:
    """The reference timings shipped with the workflow: models, where and when they were
    measured, and how many images that run's dataset held (what setup jobs scale from)."""

    models: dict[Any, cost.KindModel]
    label: str
    dataset_images: int | None = None


def load_reference(path: Path | None) -> Reference:
    """The models of a JSON written by ``dump_models`` (none where there is no file)."""
    if path is None or not path.exists():
        return Reference({}, "no reference timings")
    payload = json.loads(path.read_text())
    models = {
        (entry["kind"], entry["library"]): cost.KindModel.from_dict(entry)
        for entry in payload["models"]
    }
    label = f"reference timings of {payload['machine']} ({payload['measured']})"
    return Reference(models, label, payload.get("dataset_images"))


def load_models(reference: Path | None, run_dir: Path) -> tuple[dict[Any, cost.KindModel], str]:
    """Reference models (a JSON written by ``dump_models``) updated with the models learned from
    ``run_dir``; returns them and a line saying where they come from."""
    shipped = load_reference(reference)
    models = dict(shipped.models)
    source = [shipped.label] if shipped.models else []
    local = cost.learn(run_dir)
    if local:
        models.update(local)
        source.append(f"{len(local)} job models measured in {run_dir.resolve()}")
    prior = transform_prior.load()
    if transform_prior.apply(models, prior):
        source.append(f"transform costs of {prior.measured}")
    return models, " updated with ".join(source) or "no timings"


def dump_models(
    models: dict[Any, cost.KindModel],
    path: Path,
    machine: str,
    measured: str,
    dataset_images: int | None = None,
) -> None:
    entries = [
        {"kind": kind, "library": library, **m.to_dict()}
        for (kind, library), m in sorted(models.items())
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "measured": measured, "dataset_images": dataset_images}
    path.write_text(json.dumps({**payload, "models": entries}, indent=1) + "\n")


@dataclass
class Phase:
    name: str
    jobs: int = 0
    seconds: float = 0.0  # wall seconds of the phase
    unknown: int = 0  # jobs without a model
    assumed: int = 0  # jobs costed at an assumed rate
    runs: int = 1  # the most runs of one job (a kind's runs_key)


def phases(
    planned: list[Planned],
    by_output: dict[str, regimes.Job],
    models: dict[Any, cost.KindModel],
    config: dict[str, Any],
    cores: int,
) -> list[Phase]:
    """Jobs and wall seconds per phase, in the order they run."""
    parts, seconds, basis = _priced(planned, by_output, models, config)
    out = {name: Phase(name) for name in phase_names()}
    # Rules the model does not know (added later, e.g. other engines): counted, never dropped.
    for p, job_parts in zip(planned, parts, strict=True):
        if p.output and not job_parts:
            other = out.setdefault(p.rule, Phase(p.rule))
            other.jobs += 1
            other.unknown += 1
    parallel: dict[str, list[float]] = {"setup": [], "analysis": []}
    for job_parts in (js for js in parts if js):
        phase = out[phase_of(job_parts[0].rule)]
        phase.jobs += 1
        run = regimes.run_number(dict(job_parts[0].wildcards).get("run", ""))
        phase.runs = max(phase.runs, run)
        value = _job_value(job_parts, seconds)
        if value is None:
            phase.unknown += 1
            continue
        phase.assumed += any(basis[j] == "assumed" for j in job_parts)
        if phase.name in parallel:
            parallel[phase.name].append(value)
        else:
            phase.seconds += value  # timed jobs never overlap (bench_slot)
    for name, values in parallel.items():
        # Untimed jobs share the cores: at least the longest one, at least the total / cores.
        out[name].seconds = max([max(values, default=0.0), sum(values) / max(cores, 1)])
    return [p for p in out.values() if p.jobs]


def plan_lines(found: list[Phase], source: str) -> list[str]:
    """The printed plan: one line per phase, then the ETA (or why there is none)."""
    total = sum(p.jobs for p in found)
    lines = [f"augbench plan: {total} jobs (timed jobs one at a time; setup in parallel)"]
    for p in found:
        note = [f"each job in {p.runs} runs"] if p.runs > 1 else []
        if p.assumed:
            note.append(f"{p.assumed} at an assumed rate")
        if p.unknown:
            note.append(f"{p.unknown} without a time model")
        lines.append(
            f"  {p.name:<20}{p.jobs:>4} jobs  ~{_minutes(p.seconds):>9}"
            + (f"  ({'; '.join(note)})" if note else "")
        )
    eta = sum(p.seconds for p in found)
    unknown = sum(p.unknown for p in found)
    lines.append(
        f"  ETA ~{_minutes(eta)}"
        + (f" plus {unknown} jobs without a time model" if unknown else "")
        + f"; time model: {source}"
    )
    return lines


def job_seconds(
    planned: list[Planned],
    by_output: dict[str, regimes.Job],
    models: dict[Any, cost.KindModel],
    config: dict[str, Any],
) -> list[float | None]:
    """Each planned job's expected seconds, as :func:`phases` prices it (None: no model)."""
    parts, seconds, _ = _priced(planned, by_output, models, config)
    return [_job_value(job_parts, seconds) for job_parts in parts]


def _priced(
    planned: list[Planned],
    by_output: dict[str, regimes.Job],
    models: dict[Any, cost.KindModel],
    config: dict[str, Any],
) -> tuple[list[list[regimes.Job]], dict[regimes.Job, float | None], dict[regimes.Job, str]]:
    """Each planned job's cost-model parts, and every part's seconds and basis."""
    parts = [cost_parts(p, by_output) for p in planned]
    # The machine the ETA is for: this one (DataLoader workers priced for its cores).
    seconds, basis = cost.seconds_per_job(
        [j for js in parts for j in js], models, config, cores=usable_cores()
    )
    return parts, seconds, basis


def _job_value(
    job_parts: list[regimes.Job], seconds: dict[regimes.Job, float | None]
) -> float | None:
    """A planned job's seconds: the sum of its parts', None where any part has no model (and
    where it has no part: a rule the model does not know)."""
    values = [seconds[j] for j in job_parts]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def machine_lines(
    found: list[Phase],
    source: str,
    executor: str,
    submissions: list[float],
    concurrent: int,
    start_s: float = 0.0,
) -> list[str]:
    """The printed plan where jobs run on machines of their own (a cloud or cluster executor):
    ``submissions``, the expected seconds of each job sent to a machine (a group's members
    together: one machine runs them one at a time), ``concurrent`` of them at once (--jobs),
    each also paying ``start_s`` for its machine or Snakemake to start. The phases' times are
    machine time; the ETA spreads it over the machines, never less than the longest submission.
    """
    lines = plan_lines(found, source)
    total = sum(p.jobs for p in found)
    lines[0] = (
        f"augbench plan: {total} jobs as {len(submissions)} {executor} jobs, up to "
        f"{concurrent} at once (timed jobs one at a time on each machine; times below are "
        "machine time)"
    )
    work = sum(p.seconds for p in found) + start_s * len(submissions)
    wall = max(work / max(concurrent, 1), max(submissions, default=0.0) + start_s)
    unknown = sum(p.unknown for p in found)
    lines[-1] = (
        f"  ETA ~{_minutes(wall)} with {concurrent} {executor} jobs at once, each starting in "
        f"{_minutes(start_s)}"
        + (f" plus {unknown} jobs without a time model" if unknown else "")
        + "; priced as on this machine (`snakemake cost` prices each placement); "
        + f"time model: {source}"
    )
    return lines


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"
