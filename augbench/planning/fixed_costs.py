"""What setup, analysis and whole-job kinds cost: learned from a finished run's Snakemake benchmark
files (their wall time), where the timed kinds are learned from their rows
(augbench.planning.cost). Env builds per library, dataset resizes per image and megapixel,
analysis jobs at their median, the lazy-output diagnostic per library."""

from __future__ import annotations

import csv
import dataclasses
import statistics
from collections import defaultdict
from pathlib import Path

from augbench import paths
from augbench.planning import provision, regimes
from augbench.planning.regimes.pricing import MIN_PIXEL_RATIO, KindModel, fit_line
from augbench.planning.resize import resized_work

# Rule names come from the declarations (augbench/planning/regimes/).
SETUP_KINDS = regimes.SETUP_RULES
ANALYSIS_KINDS = regimes.ANALYSIS_RULES


def whole_job_kinds() -> tuple[str, ...]:
    """Rules priced by their measured wall time per library (the decoders job)."""
    return tuple(k.rule for k in regimes.kinds() if k.pricing.wall_time_only)


def benchmark_seconds(tsv: Path) -> float | None:
    """The wall seconds of a Snakemake benchmark file, None if absent."""
    row = benchmark_row(tsv)
    return float(row["s"]) if row else None


def benchmark_row(tsv: Path) -> dict[str, str] | None:
    """The row of a Snakemake benchmark file (s, max_rss, max_pss, ...), None if absent."""
    try:
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except OSError:
        return None
    return rows[0] if rows else None


def learn_fixed_kinds(run_dir: Path, models: dict[tuple[str, str], KindModel]) -> None:
    """Setup, analysis and whole-job kinds: their measured wall time. A setup kind's jobs are
    priced at their mean: an estimate sums them. Env builds: see ``_learn_env_builds``."""
    for kind in SETUP_KINDS:
        timed = {
            tsv.stem: row
            for tsv in sorted((run_dir / "benchmarks" / "setup" / kind).glob("*.tsv"))
            if (row := benchmark_row(tsv)) is not None
            and benchmark_number(row.get("s")) is not None
        }
        if not timed:
            continue
        if kind == "build_env":
            _learn_env_builds(run_dir, timed, models)
        else:
            models[(kind, "")] = KindModel(
                {}, statistics.fmean(float(r["s"]) for r in timed.values())
            )
    resized = [
        (work, s)
        for tsv in sorted((run_dir / "benchmarks" / "setup" / "resize_dataset").glob("*.tsv"))
        if (s := benchmark_seconds(tsv)) is not None
        and (work := resized_work(run_dir / "results" / "data", tsv.stem))
    ]
    if resized:
        models[("resize_dataset", "")] = _resize_model(resized, models.get(("stage_dataset", "")))
    for kind in ANALYSIS_KINDS:  # benchmarks/analysis/[<root>/]<kind>.tsv
        times = [
            s
            for tsv in sorted((run_dir / "benchmarks" / "analysis").glob(f"**/{kind}.tsv"))
            if (s := benchmark_seconds(tsv)) is not None
        ]
        if times:
            models[(kind, "")] = KindModel({}, statistics.median(times))
    for kind in whole_job_kinds():
        pattern, library_from = regimes.benchmark_glob(regimes.KINDS[kind])
        whole: dict[str, list[float]] = defaultdict(list)
        for tsv in sorted(run_dir.glob(f"benchmarks/{pattern}")):
            if (s := benchmark_seconds(tsv)) is not None:
                name = tsv.stem if library_from == "stem" else tsv.parent.name
                whole[regimes.split_allocator(name)[0]].append(s)
        for library, times in whole.items():
            models[(kind, library)] = KindModel({}, statistics.median(times))


def _learn_env_builds(
    run_dir: Path, timed: dict[str, dict[str, str]], models: dict[tuple[str, str], KindModel]
) -> None:
    """Each library's env build, priced at its CPU seconds times the least wall-to-CPU ratio among
    the run's builds. A build is CPU work (uv linking the cached packages, the first imports
    compiling the env's bytecode) plus waiting; what one build waited for beyond the least any
    build of the run waited (package files read cold from disk by the first builds of a run) is
    not work every build does, and it moved a library's builds 1.55-2.29x between fourteen runs of
    one lock on one machine. Where the benchmark file has no CPU time, the build's wall time.

    An env build that compiled a package its uv cache had no wheel of (its log says so) fills that
    cache once: it is priced less the seconds its log shows uv preparing what it compiled (none
    shown: the library takes the others' price), the kind's expected build is the mean of those
    that compiled nothing, and the compiling builds' extra time is in the maximum."""
    logs = {name: _env_log(run_dir, name) for name in timed}
    filled = {name for name, log in logs.items() if provision.source_builds(log)}
    prepared = {
        name: provision.prepare_seconds(logs[name]) if name in filled else 0.0 for name in timed
    }
    wall = {name: float(row["s"]) - prepared[name] for name, row in timed.items()}
    cpu = {
        name: (benchmark_number(row.get("cpu_time")) or 0.0) - prepared[name]
        for name, row in timed.items()
    }
    ratios = [wall[name] / cpu[name] for name in timed if cpu[name] > 0 and wall[name] > 0]
    least = min(ratios, default=None)
    priced = {
        name: max(cpu[name] * least if least and cpu[name] > 0 else wall[name], 0.0)
        for name in timed
    }
    warm = [priced[name] for name in timed if name not in filled] or list(priced.values())
    model = models[("build_env", "")] = KindModel({}, statistics.fmean(warm))
    if filled and len(filled) < len(timed):
        extra = statistics.fmean(wall[name] + prepared[name] for name in filled)
        extra -= model.overhead_s
        model.cache_fill_s = max(extra, 0.0)
    for name in timed:  # each library's own build (its imports differ: DALI's without torch)
        if name in filled and not prepared[name]:  # what its compile took unknown: the mean
            continue
        models[("build_env", name)] = dataclasses.replace(model, overhead_s=priced[name])


def benchmark_number(text: str | None) -> float | None:
    """A number of a benchmark (or checks) table: None for a missing, NA or n/a field."""
    try:
        return float(text) if text not in (None, "", "NA", "n/a") else None
    except ValueError:
        return None


def _resize_model(
    resized: list[tuple[tuple[int, float], float]], staged: KindModel | None
) -> KindModel:
    """A resize job's time from the run's ((images, megapixels read and written), seconds). Jobs
    of two sizes or more: per image, a time of its own (each archive member read, written and
    hashed; the process's start spread over them) plus seconds per megapixel, fitted by least
    squares on seconds per image against megapixels per image, so a job of fewer images pays
    less of both. One size: the staging job's fixed time (a process that imports Pillow and
    writes an archive) plus the rest per megapixel."""
    points = [(mp / images, seconds / images) for (images, mp), seconds in resized]
    xs = [x for x, _ in points]
    if max(xs) / min(xs) >= MIN_PIXEL_RATIO:
        per_file, slope = fit_line(points)
        return KindModel({}, 0.0, per_megapixel_s=slope, per_file_s=per_file)
    fixed = staged.overhead_s if staged is not None else 0.0
    rates = [max(seconds - fixed, 0.0) / mp for (_, mp), seconds in resized]
    return KindModel({}, fixed, per_megapixel_s=statistics.fmean(rates))


def _env_log(run_dir: Path, library: str) -> str:
    """``library``'s env build log in ``run_dir`` ('' without one)."""
    try:
        return (run_dir / paths.ENV_LOG.format(library=library)).read_text(errors="replace")
    except OSError:
        return ""
