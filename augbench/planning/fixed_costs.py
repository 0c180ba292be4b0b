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
    priced at their mean: an estimate sums them. An env build that compiled a package its uv
    cache had no wheel of (its log says so) fills that cache once: the expected build is the mean
    of those that compiled nothing, and the compiling builds' extra time is in the maximum. A
    library whose build compiled nothing is priced at its own build (its imports, which the build
    makes once, differ: DALI's without torch); one that compiled is priced at its own build less
    the seconds its log shows uv preparing what it compiled, where the log says."""
    for kind in SETUP_KINDS:
        timed = {
            tsv.stem: s
            for tsv in sorted((run_dir / "benchmarks" / "setup" / kind).glob("*.tsv"))
            if (s := benchmark_seconds(tsv)) is not None
        }
        if not timed:
            continue
        logs = {name: _env_log(run_dir, name) for name in timed} if kind == "build_env" else {}
        filled = {name for name, log in logs.items() if provision.source_builds(log)}
        warm = [s for name, s in timed.items() if name not in filled] or list(timed.values())
        model = models[(kind, "")] = KindModel({}, statistics.fmean(warm))
        if filled and len(filled) < len(timed):
            extra = statistics.fmean(timed[name] for name in filled) - model.overhead_s
            model.cache_fill_s = max(extra, 0.0)
        for name, log in logs.items():  # each library's own build (its imports differ)
            prepared = provision.prepare_seconds(log) if name in filled else 0.0
            if name in filled and not prepared:  # what its compile took unknown: the mean
                continue
            models[(kind, name)] = dataclasses.replace(
                model, overhead_s=max(timed[name] - prepared, 0.0)
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
