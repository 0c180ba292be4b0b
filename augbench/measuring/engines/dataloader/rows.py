"""The cpu_dataloader engine's rows: what every row of a setting carries, one recipe's row
(preflight, then its epochs interleaved with the baselines'), and the bare-loop and decode
composition fields computed from the paired rounds."""

from __future__ import annotations

import resource
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from augbench.intervals import median_interval
from augbench.measuring.engines import preflight, skeleton
from augbench.measuring.engines.dataloader.baselines import DecodeCompanions
from augbench.measuring.engines.dataloader.plumbing import (
    RecipeDataset,
    build_recipe,
    identity,
    usable_cores,
)
from augbench.measuring.engines.dataloader.settings import DataLoaderSettings
from augbench.measuring.engines.dataloader.timing import RecipeError, measure_loader
from augbench.measuring.stopping import window_batches
from augbench.paired import composition_expectation, paired_ratio
from augbench.results import non_ok_row, ok_row
from augbench.workload import adapters, decoders, loaders, pipelines, recipes


def recipe_row_fields(
    settings: DataLoaderSettings, adapter: adapters.Adapter, transform: str
) -> dict[str, Any]:
    """What every row of this job carries, whatever its status: the tidy table groups by them."""
    common = {
        "scope": settings.scope,
        "workers": settings.workers,
        # What made the samples in parallel (augbench.workload.loaders), and the implementation
        # measured.
        "loader": settings.loader,
        "loader_impl": loaders.impl_of(settings.loader),
        "batch_size": settings.batch_size,
        # What decoded the files (augbench.workload.decoders; the memory scope's, before the
        # clock): its declared name and the call it makes.
        "decoder": settings.decoder,
        "decoder_call": (
            adapter.decoder
            if settings.decoder == decoders.NATIVE
            else decoders.get(settings.decoder).call
        ),
        "decode_in_timed_window": settings.scope == "decode",
    }
    if transform in settings.pipelines:  # recipe, its calls, pipeline name, variant "pipeline"
        return {**common, **pipelines.row_fields(settings.pipelines[transform], adapter)}
    calls = [
        adapter.mappings[n].call if adapter.supports(n) else None for n in recipes.steps(transform)
    ]
    return {
        "recipe": recipes.recipe_name(transform),
        "recipe_calls": [*calls, adapter.recipe_tail_call],
        **common,
    }


def run_recipe(
    settings: DataLoaderSettings,
    adapter: adapters.Adapter,
    transform: str,
    items: list[Any],
    load: Callable[[Any], Any],
    record_dir: Path,
    bar: Any,
    companions: DecodeCompanions | None = None,
    known: int | None = None,
) -> dict[str, Any]:
    """One recipe's row: preflight, then the regime's epochs interleaved with the bare loop's
    (and, in decode jobs, with the memory-scope companion's and the decode floor's). ``known``:
    the batches per timed epoch a later process of a ``--processes`` job is handed
    (augbench.measuring.engines.dataloader.processes): the first process sized it after its
    preflight passed, and every process then times the same number of batches."""
    pipeline = settings.pipelines.get(transform)
    problem = pipelines.support_problem(adapter, pipeline) if pipeline else None
    if problem is not None:
        return non_ok_row(problem[0], problem[1], **problem[2])
    missing = [] if pipeline else [n for n in recipes.steps(transform) if not adapter.supports(n)]
    if missing:
        return non_ok_row("unsupported", adapter.unsupported_reason(missing[0]))
    try:
        recipe = build_recipe(adapter, transform, pipeline)
    except adapters.Unsupported as exc:
        return non_ok_row("unsupported", str(exc))
    except Exception as exc:
        return skeleton.stage_error_row("setup", exc)
    dataset = RecipeDataset(items, load, recipe, label=transform)
    policy = settings.policy
    if pipeline is not None:  # its limit is per step (augbench.workload.pipelines.scaled_policy)
        policy = pipelines.scaled_policy(policy, pipeline)
    pre: dict[str, Any] = {}
    if known is None:
        try:
            pre = preflight.per_sample(dataset, policy)
        except Exception as exc:
            return skeleton.stage_error_row("preflight", exc)
        verdict = pre.pop("verdict")
        if verdict is not None:
            return non_ok_row("early_stopped", verdict, **pre)
    bare = None
    if settings.baseline_runs > 0:
        from augbench.measuring.engines.bare_loop import UserDataset

        bare = UserDataset(
            items,
            [*recipe.steps, recipe.tail],
            length=len(items),
            load=None if load is identity else load,
        )
    memory = None
    if companions is not None:
        memory = RecipeDataset(companions.images, identity, recipe, label=transform)
    window = (
        int(known)
        if known is not None
        else window_batches(
            settings.window_seconds,
            pre.get("preflight_throughput") or 0.0,
            settings.batch_size,
            settings.batches_per_run,
            settings.workers,
            usable_cores(),
        )
    )
    if companions is not None:
        companions.size_epoch(window * settings.batch_size)
    try:
        measured = measure_loader(
            settings,
            dataset,
            record_dir,
            bar,
            bare,
            settings.baseline_runs,
            memory=memory,
            floor=companions.floor if companions is not None else None,
            window=window,
        )
    except RecipeError as err:
        return err.row(**pre)
    throughputs = measured.pop("throughputs")
    times = measured.pop("times")
    bare_runs = measured.pop("bare_throughputs")
    memory_runs = measured.pop("memory_throughputs")
    floor_runs = measured.pop("floor_throughputs")
    stream = measured["steady_throughputs"]
    steady = median_interval(stream) if stream else None
    return ok_row(
        throughputs,
        times,
        **bare_loop_fields(throughputs, bare_runs),
        **composition_fields(throughputs, memory_runs, floor_runs, companions),
        warmup_iterations=1,  # one untimed warm-up epoch
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        startup_in_timed_window=bool(settings.workers and not settings.persistent_workers),
        steady_throughput=steady.estimate if steady else None,
        **(steady.fields("steady_") if steady else {}),
        **measured,
        **pre,
    )


REGIME_VS_BARE_ESTIMATOR = (
    "median over rounds of regime epoch / bare-loop epoch of the same round (order alternating "
    "R B, B R, ...)"
)


def bare_loop_fields(throughputs: list[float], bare_runs: list[float]) -> dict[str, Any]:
    """The row's bare-loop columns: ``regime_vs_bare`` is the median of paired epoch ratios."""
    pairs = paired_ratio(throughputs, bare_runs)
    return {
        "bare_loop_throughput": statistics.median(bare_runs) if bare_runs else None,
        "bare_loop_throughputs": bare_runs,
        "regime_vs_bare": pairs.median,
        "regime_vs_bare_ratios": pairs.ratios,
        "regime_vs_bare_pairs": pairs.pairs,
        "regime_vs_bare_min": pairs.low,
        "regime_vs_bare_max": pairs.high,
        "regime_vs_bare_estimator": REGIME_VS_BARE_ESTIMATOR if pairs.ratios else None,
    }


def composition_fields(
    throughputs: list[float],
    memory_runs: list[float],
    floor_runs: list[float],
    companions: DecodeCompanions | None,
) -> dict[str, Any]:
    """Decode rows: the composition terms measured in this job, round by round.

    Per round i: expected_i = composition_expectation(floor_i, memory_i) and ratio_i =
    decode epoch i / expected_i; the row reports the medians and the ratios' range.
    ``decode_composition_source`` says where the terms came from (here: ``same_job``; the
    analysis falls back to joining another job's memory row for files without them)."""
    if companions is None or not memory_runs or not floor_runs:
        return {}
    expected = [
        composition_expectation(f, m) for f, m in zip(floor_runs, memory_runs, strict=False)
    ]
    pairs = paired_ratio(throughputs, expected)
    return {
        "decode_floor_throughput": statistics.median(floor_runs),
        "decode_floor_throughputs": floor_runs,
        "decode_floor_processes": companions.processes,
        "memory_row_throughput": statistics.median(memory_runs),
        "memory_row_throughputs": memory_runs,
        "decode_expected_throughput": statistics.median(expected),
        "decode_composition_ratio": pairs.median,
        "decode_composition_ratios": pairs.ratios,
        "decode_composition_pairs": pairs.pairs,
        "decode_composition_min": pairs.low,
        "decode_composition_max": pairs.high,
        "decode_composition_source": "same_job",
    }
