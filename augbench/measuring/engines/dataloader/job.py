"""One cpu_dataloader job: each (scope, workers) setting's rows, baselines and result file,
the settings of a ``--settings`` job in turn."""

from __future__ import annotations

import dataclasses
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from augbench.measuring.engines import skeleton
from augbench.measuring.engines.dataloader import processes
from augbench.measuring.engines.dataloader.baselines import (
    BASELINE_FIELDS,
    HANDOVER_FIELDS,
    DecodeCompanions,
    measure_baselines,
)
from augbench.measuring.engines.dataloader.plumbing import (
    identity,
    load_items,
    start_method,
    usable_cores,
    worker_records,
)
from augbench.measuring.engines.dataloader.rows import (
    REGIME_VS_BARE_ESTIMATOR,
    recipe_row_fields,
    run_recipe,
)
from augbench.measuring.engines.dataloader.settings import REGIME, DataLoaderSettings, parse_args
from augbench.measuring.engines.dataloader.timing import TIMING_NOTE
from augbench.policy import DATALOADER_THREADS, RELATIVE_CI_TARGET
from augbench.results import non_ok_row
from augbench.workload import adapters, decoders, loaders, matrix, recipes


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    if settings.process_request is not None:
        return later_process_main(settings)
    if not settings.setting_list:
        return measure_setting(settings)
    failed = []
    for (scope, workers, decoder, loader), output in zip(
        settings.setting_list, settings.outputs, strict=True
    ):
        setting = dataclasses.replace(
            settings, scope=scope, workers=workers, decoder=decoder, loader=loader, output=output
        )
        try:
            measure_setting(setting)
        except Exception:  # a harness bug: report it, measure the other settings, fail the job
            traceback.print_exc()
            failed.append(setting_name(scope, workers, decoder, loader))
    return skeleton.exit_status(f"{REGIME} | {settings.library}", failed)


def setting_name(scope: str, workers: int, decoder: str, loader: str) -> str:
    """``decode-w2-simplejpeg-thread``: a setting's result-name part (augbench.workload.matrix)."""
    return matrix.dataloader_setting(
        scope, workers, loaders.suffix(loader), decoders.suffix(decoder)
    )


def default_feed(settings: DataLoaderSettings) -> bool:
    """The regime's own feed: the library's decode in worker processes (native, process)."""
    return (settings.decoder, settings.loader) == (decoders.NATIVE, loaders.DEFAULT)


def decoder_problem(decoder: str, library: str) -> tuple[str, str] | None:
    """Why a chosen decoder's rows cannot be measured here, as (status, one-line reason): its
    package or system library is missing (``skipped``), or the library takes no decoded image
    on the CPU (``unsupported``: DALI's pipeline decodes for itself); None where they can."""
    if decoder == decoders.NATIVE:
        return None
    problem = decoders.get(decoder).problem()
    if problem is not None:
        return ("skipped", problem)
    try:
        decoders.library_layout(library)
    except ValueError as exc:
        return ("unsupported", f"decoder {decoder}: {exc}")
    return None


def measure_setting(settings: DataLoaderSettings) -> int:
    """One (scope, workers) setting of the job: every recipe, its baselines, one result file."""
    started = time.perf_counter()
    from tqdm import tqdm

    if not default_feed(settings):  # its rows only: no baselines (docs/cpu_dataloader.md)
        settings = dataclasses.replace(settings, baseline_runs=0)

    adapter = adapters.get(settings.library)
    transforms = list(settings.transforms)
    cores = usable_cores()
    over_cap = settings.cap_workers_at_cores and settings.workers > cores

    thread_settings: dict[str, Any] = {
        **skeleton.thread_record(DATALOADER_THREADS),
        "applied_in": "main process before imports; every worker via worker_init_fn",
    }
    load_info: dict[str, Any] = {}
    setup_error: tuple[str, str] | None = None  # (status, reason) of every row
    import_seconds = 0.0
    if not over_cap:
        try:
            imported = time.perf_counter()
            skeleton.import_library(adapter)
            import torch  # noqa: F401  (the DataLoader; every library env has it)

            import_seconds = time.perf_counter() - imported
            thread_settings["main_process"] = DATALOADER_THREADS.apply_runtime()
        except Exception as exc:  # the library is broken in this env: every row says so
            setup_error = skeleton.setup_problem("import failed", exc)
        problem = loaders.get(settings.loader).problem()
        if problem is not None and setup_error is None:  # its package is missing here
            setup_error = ("skipped", problem)
        if setup_error is None:
            setup_error = decoder_problem(settings.decoder, settings.library)

    label = (
        f"{REGIME} | {settings.library} | {settings.scope} w{settings.workers}"
        f"{decoders.suffix(settings.decoder)}{loaders.suffix(settings.loader)} | {settings.shard}"
    )
    job = skeleton.Job(settings, adapter, REGIME, settings.scope, label)
    with tempfile.TemporaryDirectory(prefix=f"dl-{settings.library}-") as tmp:
        record_dir = Path(tmp)
        items: list[Any] = []
        load: Callable[[Any], Any] = identity
        if not over_cap and setup_error is None:
            try:
                items, load, load_info = load_items(
                    adapter,
                    settings.manifest,
                    settings.num_images,
                    settings.scope,
                    settings.decoder,
                )
            except Exception as exc:
                setup_error = skeleton.setup_problem(
                    f"loading the {settings.scope} dataset failed", exc
                )
        baselines: dict[str, Any] = dict.fromkeys((*BASELINE_FIELDS, *HANDOVER_FIELDS))
        baselines_meta: dict[str, Any] = {"runs": settings.baseline_runs}
        bar = tqdm(transforms, desc=label, unit="recipe")
        # A loader besides process or a decoder besides native: its rows only (no transport
        # baseline, no hand-over probe).
        if not over_cap and setup_error is None and default_feed(settings):
            bar.set_postfix_str("baselines")

            def job_baselines() -> dict[str, Any]:
                fields, meta = measure_baselines(
                    settings, adapter, items, load, cores, record_dir, bar
                )
                return {"fields": fields, "meta": meta}

            measured = skeleton.in_fresh_fork(job_baselines, "baselines")
            if "fields" in measured:
                baselines.update(measured["fields"])
                baselines_meta.update(measured["meta"])
            else:  # the baselines' process died: the rows are measured without them
                baselines_meta["error"] = measured.get("reason")

        def measure_row(name: str) -> dict[str, Any]:
            return measure_one(settings, adapter, items, load, cores, record_dir, name, bar)

        by_process: dict[str, dict[str, Any]] = {}  # rows merged over --processes
        later_seconds = 0.0
        if settings.processes > 1 and not over_cap and setup_error is None:
            by_process, later_seconds = in_processes(settings, transforms, measure_row, bar)

        def row_of(name: str) -> dict[str, Any]:
            if over_cap:
                row = non_ok_row(
                    "skipped",
                    f"{settings.workers} workers > {cores} usable cores on this machine "
                    "(cpu_dataloader.cap_workers_at_cores)",
                )
            elif setup_error is not None:
                row = non_ok_row(*setup_error)
            elif name in by_process:
                row = by_process[name]
            else:
                row = skeleton.in_fresh_fork(lambda: measure_row(name), f"{name} row")
            row.update(recipe_row_fields(settings, adapter, name))
            row.update(baselines)
            return row

        rows = skeleton.each_row(bar, row_of, job.row_log(bar))
        thread_settings["workers"] = worker_records(record_dir)

    return job.finish(
        rows,
        thread_settings,
        params=benchmark_params(settings, cores),
        extra={
            "decode": load_info,
            "recipe_tail": adapter.recipe_tail_call,
            "baselines": baselines_meta,
            # Where the setting's time went beyond its rows (the cost model's per-setting and
            # per-process overheads, augbench.planning.cost): the library and torch import (paid by
            # the first setting of a process) and the setting's wall time up to its result file.
            "job_timing": {
                "import_seconds": import_seconds,
                "setting_seconds": time.perf_counter() - started,
                # Of which the later processes of a --processes job (their imports, warm-ups
                # and windows), one after another.
                "later_processes_seconds": later_seconds,
                # Of which the hand-over probe (decode jobs with workers), whatever the
                # baselines' runs.
                "handover_seconds": (baselines_meta.get("handover") or {}).get("seconds", 0.0),
            },
        },
    )


def measure_one(
    settings: DataLoaderSettings,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    cores: int,
    record_dir: Path,
    name: str,
    bar: Any,
    window: int | None = None,
) -> dict[str, Any]:
    """One row, measured in the calling process (a fork of the job's): the decode companions'
    images and decode-floor processes belong to the row, and no row inherits another's
    allocator history. ``window``: the batches per timed epoch, in a later process of a
    ``--processes`` job (the first process sized it)."""
    companions = None
    if settings.scope == "decode" and settings.baseline_runs > 0:
        bar.set_postfix_str(f"{name}: decoding the composition's memory-scope images")
        companions = DecodeCompanions(settings, items, load, cores)
    try:
        row = run_recipe(settings, adapter, name, items, load, record_dir, bar, companions, window)
    finally:
        if companions is not None:
            companions.close()
    if companions is not None:
        row["companion_preload_seconds"] = companions.preload_seconds
    return row


def in_processes(
    settings: DataLoaderSettings,
    transforms: list[str],
    measure_row: Callable[[str], dict[str, Any]],
    bar: Any,
) -> tuple[dict[str, dict[str, Any]], float]:
    """Every row in ``settings.processes`` processes
    (augbench.measuring.engines.dataloader.processes): this one's (each row in a fork of it), then
    each later one a fresh interpreter measuring the rows that were ok here, one after another: one
    merged row per name, and the seconds the later processes took."""
    total = settings.processes
    first: dict[str, dict[str, Any]] = {}
    for name in transforms:
        bar.set_postfix_str(f"{name}: process 1 of {total}")
        first[name] = skeleton.in_fresh_fork(lambda name=name: measure_row(name), f"{name} row")
    windows = {
        name: int(row["window_batches"])
        for name, row in first.items()
        if row.get("status") == "ok" and row.get("window_batches")
    }
    later = []
    started = time.perf_counter()
    for index in range(2, total + 1):
        if not windows:
            break
        bar.set_postfix_str(f"process {index} of {total}: a fresh interpreter")
        later.append(processes.later_process(settings, windows, index))
    merged = {name: processes.merged(first[name], later, name) for name in transforms}
    return merged, time.perf_counter() - started


def later_process_main(settings: DataLoaderSettings) -> int:
    """A later process of a ``--processes`` job (augbench.measuring.engines.dataloader.processes):
    import the library and torch, load the items, measure each requested row in a fork."""
    adapter = adapters.get(settings.library)
    skeleton.import_library(adapter)
    import torch  # noqa: F401  (the DataLoader)

    DATALOADER_THREADS.apply_runtime()
    cores = usable_cores()

    loaded: dict[str, Any] = {}

    def measure(setting: DataLoaderSettings, name: str, window: int, bar: Any) -> dict[str, Any]:
        if "items" not in loaded:  # once per process, as the job's own process loads them
            loaded["items"], loaded["load"], _ = load_items(
                adapter, setting.manifest, setting.num_images, setting.scope, setting.decoder
            )
        items, load = loaded["items"], loaded["load"]
        return skeleton.in_fresh_fork(
            lambda: measure_one(setting, adapter, items, load, cores, record, name, bar, window),
            f"{name} row",
        )

    with tempfile.TemporaryDirectory(prefix=f"dl-{settings.library}-") as tmp:
        record = Path(tmp)
        return processes.run_process_request(settings, measure)


def benchmark_params(settings: DataLoaderSettings, cores: int) -> dict[str, Any]:
    """What a setting's file states about how it was measured (after ``num_images``)."""
    return {
        "workers": settings.workers,
        "usable_cores": cores,
        "cap_workers_at_cores": settings.cap_workers_at_cores,
        "batch_size": settings.batch_size,
        "batches_per_run": settings.batches_per_run,
        "images_per_run": settings.batches_per_run * settings.batch_size,
        "num_runs": settings.num_runs,
        # Fresh processes per row, one after another
        # (augbench.measuring.engines.dataloader.processes): each gives the row one value
        # (process_throughputs), the unit of its interval.
        "processes": settings.processes,
        "window_seconds": settings.window_seconds,
        "min_runs": min(settings.min_runs, settings.num_runs),
        "stopping_rule": "timed epochs stop between min_runs and num_runs once the relative "
        "95% CI of the row's throughputs, and of its paired regime/bare ratios while the bare "
        f"loop runs, is <= {RELATIVE_CI_TARGET} (augbench.measuring.stopping); baselines take "
        "part in at most baseline_runs rounds",
        "warmup_batches": max(1, settings.workers),
        "prefetch_factor": settings.prefetch_factor if settings.workers else None,
        "persistent_workers": bool(settings.persistent_workers and settings.workers),
        "pin_memory": False,
        "multiprocessing_start_method": start_method(),
        "batch_timeout_s": settings.batch_timeout if settings.workers else None,
        "collate": "torch.utils.data.default_collate (stack)",
        "sampler": "sequential, cycling over the selected images",
        "normalize": {"mean": recipes.IMAGENET_MEAN, "std": recipes.IMAGENET_STD},
        "timed_window": TIMING_NOTE,
        "baseline_runs": settings.baseline_runs,
        "bare_loop": "augbench.measuring.engines.bare_loop: user Dataset + stock DataLoader, same "
        "recipe objects, batch size, workers, prefetch, persistence and thread policy; its "
        "timed epochs alternate with the regime's",
        "regime_vs_bare": REGIME_VS_BARE_ESTIMATOR,
        "decode_composition": "decode jobs, per recipe and round: the same recipe on "
        "pre-decoded images (regime loader settings, same workers) and the decode floor, "
        "interleaved with the decode epochs (D B M F, F M B D, ...); expected = "
        "1/(1/floor + 1/memory), ratio = decode / expected, medians over rounds",
        "timer_backend": "time.perf_counter",
        "slow_transform_policy": settings.policy.to_dict(),
        "shard": settings.shard,
        # A --settings job (job_per: library): the settings its one process measured, in
        # order; its log and benchmark file are matrix.dataloader_library_job(shard). Empty
        # for a job of one setting, named after its result file.
        "settings_in_job": [setting_name(*setting) for setting in settings.setting_list],
        "loader": settings.loader,
        "decoder": settings.decoder,
        "loader_impl": loaders.impl_of(settings.loader),
        "transforms": list(settings.transforms),
        "recipes": {
            t: settings.pipelines[t].recipe if t in settings.pipelines else recipes.recipe_name(t)
            for t in settings.transforms
        },
    }
