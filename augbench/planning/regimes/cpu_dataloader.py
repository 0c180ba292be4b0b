"""The ``cpu_dataloader`` regime: recipes and the user pipelines through a torch DataLoader with
CPU workers, in the memory and decode scopes. Its declaration, how its jobs are planned, what they
hold in memory and how they are priced."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from augbench.measuring.stopping import (
    StoppingRule,
    epoch_batches,
    expected_values,
    handover_probe_seconds,
    relative_ci,
)
from augbench.paths import (
    DECODERS_TABLE,
    LOADERS_TABLE,
    PIPELINE_RAW,
    RAW,
)
from augbench.planning.regimes.pricing import (
    Estimate,
    JobTiming,
    Key,
    KindModel,
    Learned,
    PricedJob,
    Pricing,
    WallTime,
    median_of,
)
from augbench.planning.regimes.records import (
    SCOPES,
    WORKERS,
    Job,
    JobKind,
    Planner,
    Regime,
    Table,
    Wildcards,
    job_kind,
    one_thread,
    temporaries_mb,
    value_bytes,
    workers_threads,
)
from augbench.policy import (
    BATCHES_HELD_PER_WORKER,
    DATALOADER_MIN_RUNS,
    MAIN_PROCESS_CORES,
    WORKER_PRIVATE_MB,
)
from augbench.workload import catalog, decoders, loaders, recipes
from augbench.workload.adapters.base import CPU_TRANSFORMS

if TYPE_CHECKING:
    from augbench.planning.memory import Footprint

NAME = "cpu_dataloader"


# -- planning --------------------------------------------------------------------------------
def settings_at(
    dl: Mapping[str, Any], workers: list[int], feeds: bool = True
) -> list[dict[str, str]]:
    """The cpu_dataloader settings at ``workers`` (:func:`feed_settings` of the regime's scopes;
    ``feeds`` False: each library's own decode in worker processes only, as the recipes outside
    the worker sweep are measured)."""
    return feed_settings(dl if feeds else {}, dl["scopes"], workers)


def feed_settings(
    dl: Mapping[str, Any], scopes: list[str], workers: list[int]
) -> list[dict[str, str]]:
    """Each scope's settings at ``workers``, then the decode scope's under every other
    configured (decoder, loader) pair of ``dl`` (the cpu_dataloader block): the decoders
    (augbench.workload.decoders) crossed with the loaders (augbench.workload.loaders), so the
    fastest pair is one measured row, at the worker counts ``feed_workers`` lists (all where it is
    empty). ``decoder`` and ``loader`` are their result-name parts, empty for native and
    process."""
    out = [
        {"scope": scope, "workers": str(w), "decoder": "", "loader": ""}
        for scope in scopes
        for w in workers
    ]
    if "decode" in scopes:
        chosen_decoders = dl.get("decoders") or [decoders.NATIVE]
        chosen_workers = set(dl.get("feed_workers") or workers)
        out += [
            {
                "scope": "decode",
                "workers": str(w),
                "decoder": decoders.suffix(decoder),
                "loader": loaders.suffix(loader),
            }
            for decoder in [decoders.NATIVE, *decoders.non_native(chosen_decoders)]
            for loader in dl.get("loaders") or [loaders.DEFAULT]
            if (decoder, loader) != (decoders.NATIVE, loaders.DEFAULT)
            for w in workers
            if w in chosen_workers
        ]
    return out


def feed_flags(w: Wildcards) -> dict[str, str]:
    """A setting's ``--decoder`` and ``--loader`` from its wildcards: none for the default feed."""
    return {
        **({"decoder": decoders.from_suffix(w["decoder"])} if w.get("decoder") else {}),
        **({"loader": loaders.from_suffix(w["loader"])} if w.get("loader") else {}),
    }


def default_feed(w: Wildcards) -> bool:
    """A setting of the regime's own feed (native decode, worker processes): it has baselines;
    another decoder or loader measures its rows only (docs/cpu_dataloader.md)."""
    return not (w.get("decoder") or w.get("loader"))


def dataloader_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x setting x shard (job_per: setting), or per library x shard writing
    every setting's file (job_per: library)."""
    out = []
    for lib in s.libraries_of(kind.regime):
        for shard, transforms in s.dataloader_shards.items():
            if s.dataloader_job_per_library:
                outputs = [
                    kind.result_path(s.machine, dataset, lib, **setting, shard=shard)
                    for setting in s.dataloader_settings_of(shard)
                ]
                out.append(s.job(kind, lib, dataset, {"shard": shard}, transforms, outputs))
            else:
                out += [
                    s.job(kind, lib, dataset, {**setting, "shard": shard}, transforms)
                    for setting in s.dataloader_settings_of(shard)
                ]
    return out


def _dataloader_common(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    dl = s.config["cpu_dataloader"]
    return {
        "library": w["library"],
        "machine": w["machine"],
        "num-images": s.num_images_for(kind),
        "batch-size": dl["batch_size"],
        "prefetch-factor": dl["prefetch_factor"],
        "persistent-workers": dl["persistent_workers"],
        "cap-workers-at-cores": dl["cap_workers_at_cores"],
        "batch-timeout": dl["batch_timeout_s"],
        "policy": s.policy_json,
    }


def dataloader_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    from augbench.workload import matrix

    dl = s.config["cpu_dataloader"]
    which: dict[str, Any] = (
        {"settings": [matrix.dataloader_setting(**x) for x in s.dataloader_settings]}
        if s.dataloader_job_per_library
        else {
            "scope": w["scope"],
            "workers": w["workers"],
            **feed_flags(w),
        }
    )
    baselines = dl["baseline_runs"] if default_feed(w) else 0
    return {
        **which,
        **_dataloader_common(s, kind, w),
        "shard": w["shard"],
        "transforms": s.dataloader_shards[w["shard"]],
        "batches-per-run": dl["batches_per_run"],
        "num-runs": dl["num_runs"],
        "baseline-runs": baselines,
        "processes": int(dl.get("processes", 1)),
        "window-seconds": float(dl.get("window_s", 0.0)),
    }


def dataloader_threads(s: Planner, w: Wildcards) -> int:
    """The main process plus its workers (Snakemake lowers it to --cores where it is larger);
    a job_per: library job, the most workers any of its settings starts."""
    if "workers" in w:
        return int(w["workers"]) + 1
    return max(int(x["workers"]) for x in s.dataloader_settings) + 1


def pipeline_dataloader_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """One job per library x setting runs every pipeline as its recipe: each scope x workers,
    and the decode scope's under the configured decoders x loaders (:func:`feed_settings`)."""
    if not s.pipelines or dataset != s.dataset:
        return []
    runs = s.config["pipeline_runs"]
    settings = feed_settings(
        s.config["cpu_dataloader"], runs["dataloader_scopes"], runs["dataloader_workers"]
    )
    return [
        s.job(kind, lib, dataset, setting, s.pipeline_names)
        for lib in s.libraries_of(kind.regime)
        for setting in settings
    ]


def pipeline_processes(runs: Mapping[str, Any]) -> int:
    """Fresh processes per pipeline DataLoader row (config
    ``pipeline_runs.dataloader_processes``; one where the key is absent): each gives the row one
    value (augbench.measuring.engines.dataloader.processes)."""
    return int(runs.get("dataloader_processes", 1))


def pipeline_dataloader_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    runs = s.config["pipeline_runs"]
    return {
        "scope": w["scope"],
        "workers": w["workers"],
        **feed_flags(w),
        **_dataloader_common(s, kind, w),
        "shard": "pipelines",
        "transforms": s.pipeline_names,
        "pipelines": s.pipelines_json,
        "batches-per-run": runs["dataloader_batches_per_run"],
        "num-runs": runs["dataloader_num_runs"],
        "baseline-runs": runs["dataloader_baseline_runs"] if default_feed(w) else 0,
        "processes": pipeline_processes(runs),
        "window-seconds": float(runs.get("dataloader_window_s", 0.0)),
    }


def decoders_jobs(s: Planner, kind: JobKind, dataset: str) -> list[Job]:
    """The decoders table's job (augbench.measuring.engines.decoders): one, in one library's env
    (augbench.workload.decoders.ENV_LIBRARY where configured, else the first configured library),
    where ``cpu_dataloader.decoders`` names a decoder besides ``native``; none otherwise."""
    configured = list(s.config["cpu_dataloader"].get("decoders") or [decoders.NATIVE])
    libraries = s.libraries_of(kind.regime)
    if not decoders.non_native(configured) or not libraries:
        return []
    host = decoders.ENV_LIBRARY if decoders.ENV_LIBRARY in libraries else libraries[0]
    return [s.job(kind, host, dataset, {}, configured)]


def decoders_args(s: Planner, kind: JobKind, w: Wildcards) -> dict[str, Any]:
    return {
        "library": w["library"],
        "decoders": list(s.config["cpu_dataloader"].get("decoders") or [decoders.NATIVE]),
        "num-images": min(s.num_images_for(kind), decoders.MAX_IMAGES),
        "machine": w["machine"],
        "min-values": decoders.MIN_VALUES,
        "max-values": decoders.MAX_VALUES,
        "warmups": 1,
    }


# -- memory (augbench.planning.memory) -------------------------------------------------------------
def output_pixels(steps: list[Any], pixels: float) -> float:
    """Pixels of a pipeline's output image (its steps: augbench.workload.pipelines.Step): the last
    size a step sets (``size``: an int or (h, w); ``max_size``: its square, an upper bound), else
    the input's."""
    for step in steps:
        params = step.params or {}
        if "size" in params:
            size = params["size"]
            pixels = size * size if isinstance(size, int) else size[0] * size[1]
        elif "max_size" in params:
            pixels = params["max_size"] ** 2
    return float(pixels)


def dataloader_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """The main process (torch and the library) holds the memory scope's decoded images (in the
    decode scope too, for its memory-scope companion); every live DataLoader (the regime's, the bare
    loop's, the companion's) has its own forked workers (memory.loader_worker_mb each), and a decode
    row with baselines a decode floor, a process per worker up to the cores (memory.floor_process_mb
    each); the loader measured at a time has up to policy.BATCHES_HELD_PER_WORKER batches per worker
    in flight (at most its prefetch_factor), the main process one more (float32 CHW outputs, masks
    included). A job_per: library job runs its settings one after another: its largest."""
    from augbench.planning.memory import Footprint, floor_process_mb, loader_worker_mb
    from augbench.workload import adapters, recipes

    dl = s.config["cpu_dataloader"]
    pipelines = kind.role == "pipelines"
    runs = s.config["pipeline_runs"]
    baselines = runs["dataloader_baseline_runs"] if pipelines else dl["baseline_runs"]
    batch, channels = dl["batch_size"], s.config["channels"]
    settings = (
        [{"scope": w["scope"], "workers": w["workers"]}] if "scope" in w
        else s.dataloader_settings
    )  # fmt: skip
    images = min(s.num_images_for(kind), s.dataset_images(w["dataset"]))
    pixels = s.mean_pixels(w["dataset"], images)
    workers = max(int(x["workers"]) for x in settings)
    largest = max(s.sizes[w["dataset"]].first(images) or [0])
    known = set(catalog.names())
    adapter = adapters.get(w["library"])
    if pipelines:  # the largest output of the pipelines the library runs, masks included
        from augbench.workload import pipelines as user_pipelines

        mask = value_bytes(w["library"])
        runnable = [
            p for p in user_pipelines.from_json(s.pipelines_json).values()
            if user_pipelines.support_problem(adapter, p) is None
        ]  # fmt: skip
        per_image = max(
            [
                output_pixels(p.steps, largest) * (12 + (mask if "mask" in p.targets else 0))
                for p in runnable
            ],
            default=0.0,
        )
        # Each step on the image it gets: the one the steps before it left.
        seen = [(st.name, output_pixels(p.steps[:i], largest))
                for p in runnable for i, st in enumerate(p.steps)]  # fmt: skip
    else:
        per_image = recipes.OUTPUT_SIZE**2 * 12.0  # every recipe ends in a 224 px float32 crop
        # A recipe's transform runs on the base crop's output, a crop on the whole image.
        mapped = [t for t in s.dataloader_shards[w["shard"]] if t in known and adapter.supports(t)]
        seen = [(t, largest if catalog.get(t).is_crop else recipes.OUTPUT_SIZE**2) for t in mapped]
    # A job whose library runs none of its recipes measures its baselines alone: one live loader.
    rows = bool(seen)
    # Each worker transforms one image at a time: its most demanding step's temporaries are its own.
    working_mb = max((temporaries_mb(w["library"], [name], px, channels) for name, px in seen
                      if name in known), default=0.0)  # fmt: skip
    in_flight = (workers * min(dl["prefetch_factor"], BATCHES_HELD_PER_WORKER) + 1) * batch
    # A library working in float frees a float image per step, which its allocator keeps: about a
    # batch of float outputs per worker beyond those in flight (docs/cloud.md#memory).
    floats = adapters.declared(w["library"]).working_value_bytes > 1
    kept = batch * per_image / 2**20 if floats else 0.0
    # Each row (and the baselines) runs in a fresh fork of the job process, which forks the
    # loaders' workers: all of them share the job process's pages. With several processes per
    # row, each later one is a fresh interpreter started while the job's process waits.
    later = (pipeline_processes(runs) if pipelines else int(dl.get("processes", 1))) > 1
    scopes = {x["scope"] for x in settings}
    live_loaders = rows + (baselines > 0) + bool("decode" in scopes and baselines and rows)
    if not default_feed(w):
        # Another decoder or loader measures its rows only, no baselines
        # (augbench.measuring.engines.dataloader.job); a loader of threads (thread, spdl) runs
        # its workers in the row's own process, whose batches in flight are all they add.
        baselines, live_loaders = 0, int(rows)
        if loaders.from_suffix(w.get("loader", "")) != loaders.PROCESS:
            workers = 0
    floor = workers if rows and baselines and workers > 1 and "decode" in scopes else 0
    loader_workers = workers * live_loaders
    return Footprint(
        w["library"], torch=True, forked=1 + loader_workers + floor, processes=1 + later,
        images=images if (rows and baselines) or "memory" in scopes else 0,
        pixels=pixels, value_bytes=value_bytes(w["library"]),
        batches_mb=in_flight * per_image / 2**20, loader_workers=loader_workers,
        worker_private_mb=WORKER_PRIVATE_MB + working_mb + kept,  # the row's own fork
        loader_worker_mb=loader_worker_mb(w["library"], largest, channels, working_mb) + kept,
        floor_processes=floor, floor_mb=floor_process_mb(w["library"], largest, channels),
    )  # fmt: skip


def decoders_memory(s: Planner, kind: JobKind, w: Wildcards) -> Footprint:
    """The decoders job imports the library with torch and every decoder; a child forked from it
    holds one file's bytes and its decoded image at a time (the largest of the job's images)."""
    from augbench.planning.memory import Footprint

    images = min(s.num_images_for(kind), decoders.MAX_IMAGES, s.dataset_images(w["dataset"]))
    largest = max(s.sizes[w["dataset"]].first(images) or [0])
    return Footprint(
        w["library"], torch=True, forked=1, images=1, pixels=largest, copies=2,
        value_bytes=value_bytes(w["library"]),
    )  # fmt: skip


# -- pricing (augbench.planning.cost)
# -------------------------------------------------------------------- The arms of a DataLoader job
# and the row fields holding each arm's per-epoch rates.
DATALOADER_ARMS = {
    "regime": "throughputs",
    "bare": "bare_loop_throughputs",
    "memory": "memory_row_throughputs",
    "floor": "decode_floor_throughputs",
}


def setting_of(row: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The loader setting a row was measured at (``memory-w2``), '' where the kind has none."""
    scope = row.get("scope") or params.get("scope")
    workers = row.get("workers", params.get("workers"))
    return f"{scope}-w{workers}" if scope and workers is not None else ""


# Arms with a loader of their own, each warming up an untimed epoch before its timed ones (the
# decode floor decodes files without a loader).
WARMED_ARMS = ("regime", "bare", "memory")


def warmup_images(batch_size: int, workers: int) -> int:
    """Images of a loader's untimed warm-up epoch: a batch per worker, at least one
    (augbench.measuring.engines.dataloader.timing)."""
    return batch_size * max(1, workers)


def warmup_seconds(
    row: Mapping[str, Any], params: Mapping[str, Any], arms: tuple[str, ...] = WARMED_ARMS
) -> float:
    """Seconds of the warm-up epochs an ok row's loaders ran in one process, each at its arm's
    measured rate: work that grows with the batch and the recipe, not a loader's fixed start."""
    if row.get("status") != "ok":
        return 0.0
    workers = int(row.get("workers", params.get("workers")) or 0)
    batch = row.get("batch_size") or params["batch_size"]
    recorded = row.get("warmup_batches")
    images = batch * recorded if recorded else warmup_images(batch, workers)
    rates = ([r for r in row.get(DATALOADER_ARMS[arm]) or [] if r] for arm in arms)
    return sum(images / statistics.median(found) for found in rates if found)


def dataloader_row_work(row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of the epochs a DataLoader row timed, every arm (its rates' lists; a row measured
    in several processes lists every process's epochs, each of its own ``images_per_run``)."""
    per_epoch = row.get("images_per_run") or params["images_per_run"]
    rates = [r for name in DATALOADER_ARMS.values() for r in row.get(name) or [] if r]
    return sum(per_epoch / rate for rate in rates)


def arm_epochs(arm: str, runs: int | float, baseline_runs: int, scope: str) -> int | float:
    """Timed epochs of ``arm`` in a row of ``runs`` rounds: the regime's every round, the
    baselines' while they run (``baseline_runs``), the memory companion's and the decode floor's
    only in the decode scope (augbench.measuring.engines.dataloader.timing)."""
    if arm == "regime":
        return runs
    if arm in ("memory", "floor") and scope != "decode":
        return 0
    return min(baseline_runs, runs)


def loader_starts(row: Mapping[str, Any]) -> int:
    """Loaders an ok row started: one per arm it timed (the regime's; while baselines run, the bare
    loop's, and in the decode scope the memory companion's and the decode floor's)."""
    if row.get("status") != "ok":
        return 0
    return sum(1 for field in DATALOADER_ARMS.values() if row.get(field))


def _transport_rates(results: Mapping[str, Any]) -> list[float]:
    """A DataLoader job's transport baseline rates (rows repeat the job's one baseline); none
    where no row has them."""
    for row in results.values():
        rates = [r for r in row.get("transport_throughputs") or [] if r]
        if rates:
            return rates
    return []


def _baseline_work(results: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of a DataLoader job's transport baseline."""
    return sum(params["images_per_run"] / r for r in _transport_rates(results))


def _handover_periods_s(results: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds a job's hand-over probe spent in batch periods (stopping.handover_probe_seconds)
    at its transport baseline's rate (the probe reads the same sample through the same loader);
    0 where no row has that rate or the job has no workers (it runs no probe)."""
    workers = int(params.get("workers") or 0)
    rates = _transport_rates(results)
    if not rates or not workers:
        return 0.0
    period = params["batch_size"] / statistics.median(rates)
    return handover_probe_seconds(period, workers, int(params["prefetch_factor"]))


class DataLoader(Pricing):
    """Per recipe, the epochs of each arm the job interleaves (the regime's loader; while
    baselines run, the bare loop, and in the decode scope the memory companion and the decode
    floor) x images per epoch / that arm's measured rate at the same setting (scope, workers);
    epochs *expected* from the local rows' early stopping, *max* = num_runs."""

    name = "dataloader"
    single_kind = "micro"  # a catalog recipe the run did not measure: its transform's micro cost

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        return dataloader_row_work(row, params)

    def learn_row(
        self, learned: Learned, key: Key, name: str, row: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> None:  # fmt: skip
        if (row.get("loader") or loaders.DEFAULT) != loaders.DEFAULT or (
            row.get("decoder") or decoders.NATIVE
        ) in decoders.non_native(decoders.NAMES):
            # A thread loader's or a chosen decoder's job is priced as the native process rows
            # of its setting: its rates stay out of theirs.
            return
        setting = setting_of(row, params)
        for arm, field in DATALOADER_ARMS.items():
            rates = [r for r in row.get(field) or [] if r]
            if rates:
                learned.arms[key][f"{name}|{setting}|{arm}"].append(1.0 / statistics.median(rates))
        rounds = row.get("timed_rounds") or len(row.get("throughputs") or [])
        # Each fresh process (--processes) times up to num_runs rounds of its own.
        processes = max(1, int(row.get("processes") or 1))
        learned.run_shares[key].append(rounds / processes / max(params["num_runs"], 1))
        least = params.get("min_runs", DATALOADER_MIN_RUNS)
        first = (row.get("throughputs") or [])[:least]
        seconds = (row.get("times") or [])[:least]
        if processes == 1 and len(first) == least and len(seconds) == least:
            spread = relative_ci(first)
            if spread is not None:
                learned.spreads[key].append(spread * statistics.median(seconds))
        if row.get("window_batches") and params.get("window_seconds"):
            batch = row.get("batch_size") or params["batch_size"]
            learned.epochs[key][f"{name}|{setting}"].append(row["window_batches"] * batch)
        if params["num_runs"] > params.get("min_runs", DATALOADER_MIN_RUNS):
            learned.observed.add(key)
        transport = [r for r in row.get("transport_throughputs") or [] if r]
        if transport:
            learned.baselines[key][setting].append(1.0 / statistics.median(transport))

    def learn_file(
        self, learned: Learned, key: Key, payload: Mapping[str, Any],
        params: Mapping[str, Any], work: float,
    ) -> tuple[float, JobTiming | None]:  # fmt: skip
        # The job's transport baseline: once per result file.
        baseline = _baseline_work(payload["results"], params)
        work += baseline
        if params.get("usable_cores"):
            learned.cores[key].append(int(params["usable_cores"]))
        timing = payload["metadata"].get("job_timing")
        if not timing:
            return baseline, None
        first = next(iter(payload["results"].values()), {})
        setting = setting_of({"scope": payload["metadata"].get("scope"), **first}, params)
        # Later processes (--processes): their time, windows included, is what the estimate
        # charges them, not the setting's fixed cost; ``work`` holds every process's windows:
        # the later ones' regime epochs (each row's rates by process), the first's all the rest
        # (its baselines' epochs too). Files without rates by process: 1/processes of it.
        later = timing.get("later_processes_seconds") or 0.0
        count = max(1, int(params.get("processes") or 1))
        later_work = sum(
            (row.get("images_per_run") or params["images_per_run"]) / rate
            for row in payload["results"].values()
            if row.get("status") == "ok"
            for rates in (row.get("throughputs_by_process") or [])[1:]
            for rate in rates
            if rate
        )
        first_work = work - later_work if later_work else work / count
        rows = payload["results"].values()
        if later and count > 1:
            # A later process warms each row's regime loader up again (priced per recipe).
            warm = sum(warmup_seconds(row, params, ("regime",)) for row in rows)
            own = (later - (work - first_work)) / (count - 1) - warm
            learned.laters[key].append(max(own, 0.0))
        # Files that predate the hand-over probe's seconds give no split of the fixed time.
        starts = 0
        if "handover_seconds" in timing:
            starts = sum(loader_starts(row) for row in payload["results"].values())
            starts += 1 if baseline else 0  # the transport baseline's loader
        handover = timing.get("handover_seconds") or 0.0
        return baseline, JobTiming(
            setting, first_work + later, timing["setting_seconds"], timing["import_seconds"],
            loader_starts=starts, handover_s=handover,
            handover_fixed_s=max(handover - _handover_periods_s(payload["results"], params), 0.0),
            warmup_s=sum(warmup_seconds(row, params) for row in rows),
        )  # fmt: skip

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        return dataloader_estimate(model, job, params)


def dataloader_estimate(model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
    """Epochs of every arm at the job's setting, plus its baselines and fixed costs; the arms'
    rates are the measured ones at the setting, scaled to the cores of the machine the job will
    run on (``params['target_cores']``; 0 or absent: the measuring machine's)."""
    # The engine's epoch: batches_per_run rounded up to a whole number of batches per worker.
    per_epoch = params["batch_size"] * epoch_batches(
        params["batches_per_run"], int(params.get("workers") or 0)
    )
    most_runs = params["num_runs"]
    least_runs = min(params.get("min_runs", DATALOADER_MIN_RUNS), most_runs)
    shared_runs = min(max(model.run_share * most_runs, DATALOADER_MIN_RUNS), most_runs)
    baseline_runs = params.get("baseline_runs", 0)
    # Fresh processes per row (augbench.measuring.engines.dataloader.processes), each its own
    # epochs.
    processes = max(1, int(params.get("processes") or 1))
    window_s = float(params.get("window_seconds") or 0.0)
    scope = params.get("scope") or ""
    setting = f"{scope}-w{params.get('workers')}" if scope else ""
    totals = {"expected": 0.0, "most": 0.0}
    warm = warmup_images(params["batch_size"], int(params.get("workers") or 0))
    warmups = 0.0  # a later process's untimed warm-up epochs, one per row
    first_warmups = 0.0  # the first process's: one per loader of each row

    def epoch_seconds(s_img: float, sized: float) -> float:
        """A timed epoch; a sized one (--window-seconds) lasts at least that long, and as long as
        the ``sized`` images the measured rows' epochs held where the model has them."""
        return max(per_epoch * s_img, window_s, sized * s_img)

    for transform in job.transforms:
        cores = int(params.get("target_cores") or 0)
        single = params.get("single_model")
        # Seconds per image of each arm the job times (the regime's always).
        timed = {
            arm: arm_seconds(model, transform, setting, arm, job.megapixels, cores, single)
            for arm in DATALOADER_ARMS
            if arm == "regime" or arm_epochs(arm, most_runs, baseline_runs, scope)
        }
        s_warm = timed["regime"]
        warmups += warm * s_warm
        first_warmups += warm * sum(timed[arm] for arm in WARMED_ARMS if arm in timed)
        sized = (model.epoch_images.get(f"{transform}|{setting}") if window_s else None) or 0.0
        expected_runs = shared_runs
        if model.epoch_spread_s and processes == 1:  # the engine's stopping rule on its epochs
            rule = StoppingRule(least_runs, most_runs)
            expected_runs = expected_values(
                rule, model.epoch_spread_s, epoch_seconds(s_warm, sized), baseline_runs
            )
        for label, runs in (("expected", expected_runs), ("most", most_runs)):
            seconds = 0.0
            for arm in DATALOADER_ARMS:
                if epochs := arm_epochs(arm, runs, baseline_runs, scope):
                    # The regime's epochs run in every process, the baselines in the first.
                    epoch_s = epoch_seconds(timed[arm], sized)
                    seconds += epochs * epoch_s * (processes if arm == "regime" else 1)
            totals[label] += seconds
    transport = model.baseline_s.get(setting) or median_of(model.baseline_s.values())
    baseline = baseline_runs * per_epoch * transport
    if model.start_s:  # the process's fixed cost, shared by its settings, + this setting's
        # Each row starts a loader per arm it times (loader_starts), the transport baseline one.
        arms = sum(1 for arm in DATALOADER_ARMS if arm_epochs(arm, most_runs, baseline_runs, scope))
        starts = len(job.transforms) * arms + (baseline_runs > 0)
        # A start is the loader's own fixed cost; its warm-up epoch is priced per recipe.
        own = starts * model.start_s.get(setting, median_of(model.start_s.values()))
        own += first_warmups if model.warmups_apart else 0.0
        if scope == "decode" and int(params.get("workers") or 0) > 0:
            fixed = [h for s, h in model.handover_fixed_s.items() if s.startswith("decode-")]
            own += model.handover_fixed_s.get(setting, median_of(fixed))
            # Its batch periods: the job's batch at the setting's transport rate.
            period = params["batch_size"] * transport
            own += handover_probe_seconds(period, int(params["workers"]), params["prefetch_factor"])
        overhead = model.process_s / job.share + own + baseline
        start = model.process_s
    elif model.setting_s:
        own = model.setting_s.get(setting, median_of(model.setting_s.values()))
        overhead = model.process_s / job.share + own + baseline
        start = model.process_s
    else:
        overhead = model.overhead_s / job.share + baseline
        start = model.overhead_s
    # A later process imports the library again and warms each row up; the setting's own fixed
    # cost (the hand-over probe, the rows' preflights) is the first process's.
    if model.later_process_s:
        later = model.later_process_s + (warmups if model.warmups_apart else 0.0)
    else:
        later = start + warmups
    overhead += (processes - 1) * later
    return Estimate(overhead + totals["expected"], overhead + totals["most"])


def parallelism(workers: int, cores: int) -> float:
    """How many images a DataLoader setting transforms at once: its workers, at most the cores
    the main process leaves them, at least one (0 workers: the main process itself)."""
    if not cores:
        return float(max(1, workers))
    return max(1.0, min(float(workers), cores - MAIN_PROCESS_CORES))


def arm_seconds(
    model: KindModel,
    transform: str,
    setting: str,
    arm: str,
    mp: float,
    target_cores: int = 0,
    single: KindModel | None = None,
) -> float:
    """An arm's seconds per image at a setting on a machine of ``target_cores`` (0: the measuring
    machine's): measured at that setting, else at the nearest measured one of the same scope
    (fewest workers above, or the most below), scaled by how many images each transforms at once
    (:func:`parallelism`, with the measuring machine's cores and the target's).

    A catalog recipe the run did not measure costs the base recipe (``RandomCrop224 + Normalize
    + ToTensor``, measured at the setting) plus what its transform adds in the library's micro
    rows (``single``: one thread, scaled to the pixels it sees in the recipe, spread over the
    setting's parallelism); without those, the median of the library's measured recipes at that
    setting; without any, the regime's per-image time."""
    scope, _, workers = setting.partition("-w")
    target = target_cores or model.cores

    def nearest(name: str) -> tuple[int, float] | None:
        exact = model.arm_s.get(f"{name}|{setting}|{arm}")
        if exact is not None or not workers.isdigit():
            return None if exact is None else (int(workers or 0), exact)
        same = sorted(
            (int(k.split("|")[1].partition("-w")[2]), v)
            for k, v in model.arm_s.items()
            if k.startswith(f"{name}|{scope}-w") and k.endswith(f"|{arm}")
        )
        above = [(w, v) for w, v in same if w >= int(workers)]
        return above[0] if above else (same[-1] if same else None)

    def scaled(found: tuple[int, float]) -> float:
        measured_workers, seconds = found
        if workers.isdigit() and model.cores:
            seconds *= parallelism(measured_workers, model.cores) / parallelism(
                int(workers), target
            )
        return seconds

    found = nearest(transform)
    base = nearest(recipes.BASE_CROP) if found is None and single is not None else None
    if found is not None:
        seconds, measured = scaled(found), model.megapixels.get(transform)
    elif base is not None and transform in catalog.names():
        measured = model.megapixels.get(recipes.BASE_CROP) or median_of(model.megapixels.values())
        seconds = scaled(base) * (mp / measured if mp and measured else 1.0)
        if arm == "floor":  # the decode floor runs no recipe
            return seconds
        added = transform_seconds(single, transform, mp)
        spread = parallelism(int(workers), target) if workers.isdigit() else 1.0
        return seconds + added / spread
    else:
        names = {k.split("|")[0] for k in model.arm_s}
        others = [scaled(f) for f in (nearest(n) for n in sorted(names)) if f is not None]
        if not others:
            return model.seconds_per_image(transform, mp)
        seconds, measured = statistics.median(others), None
    measured = measured or median_of(model.megapixels.values())
    return seconds * (mp / measured) if mp and measured else seconds


def transform_seconds(single: KindModel, transform: str, mp: float) -> float:
    """One thread's seconds per image that ``transform`` adds to the base recipe, from the
    library's micro rows: a crop replaces the base crop on the whole image, any other transform
    runs on the base crop's output."""
    if catalog.get(transform).is_crop:
        whole = single.seconds_per_image(transform, mp)
        return max(whole - single.seconds_per_image(recipes.BASE_CROP, mp), 0.0)
    return single.seconds_per_image(transform, (recipes.OUTPUT_SIZE**2) / 1e6)


# -- the declaration ---------------------------------------------------------------------------
_kind = partial(job_kind, NAME)

CPU_DATALOADER = Regime(
    NAME,
    CPU_TRANSFORMS,
    (
        _kind(
            "cpu_dataloader", "results",
            f"{RAW}/cpu_dataloader/{{library}}/{{scope}}-w{{workers}}{{decoder}}{{loader}}-{{shard}}.json",
            "{machine}/{dataset}/cpu_dataloader/{library}/{scope}-w{workers}{decoder}{loader}-{shard}",
            placement="cpu_dataloader", engine="augbench.measuring.engines.cpu_dataloader",
            pricing=DataLoader(), jobs=dataloader_jobs, args=dataloader_args,
            threads=dataloader_threads, thread_policy="dataloader", memory=dataloader_memory,
            constraints={
                "scope": SCOPES, "workers": WORKERS, "decoder": decoders.PATTERN,
                "loader": loaders.PATTERN,
            },
            config_block="cpu_dataloader",
            images_key="cpu_dataloader.num_images",
            memory_fix="lower cpu_dataloader.num_images or the largest cpu_dataloader.workers",
            caps_workers="cpu_dataloader.cap_workers_at_cores", runs_key="cpu_dataloader.runs",
        ),
        _kind(
            "pipeline_dataloader", "pipelines",
            f"{PIPELINE_RAW}/cpu_dataloader/{{library}}/{{scope}}-w{{workers}}{{decoder}}{{loader}}.json",
            "{machine}/{dataset}/pipelines/cpu_dataloader/{library}/{scope}-w{workers}{decoder}{loader}",
            placement="cpu_dataloader", engine="augbench.measuring.engines.cpu_dataloader",
            pricing=DataLoader(), jobs=pipeline_dataloader_jobs, args=pipeline_dataloader_args,
            threads=workers_threads, thread_policy="dataloader", memory=dataloader_memory,
            constraints={
                "scope": SCOPES, "workers": WORKERS, "decoder": decoders.PATTERN,
                "loader": loaders.PATTERN,
            },
            images_key="cpu_dataloader.num_images",
            memory_fix="lower cpu_dataloader.num_images or pipeline_runs.dataloader_workers",
            caps_workers="cpu_dataloader.cap_workers_at_cores", runs_key="cpu_dataloader.runs",
        ),
        _kind(
            "decoders", "results",
            f"{RAW}/cpu_dataloader/{{library}}/decoders.json",
            "{machine}/{dataset}/cpu_dataloader/{library}/decoders",
            placement="micro", engine="augbench.measuring.engines.decoders", pricing=WallTime(),
            jobs=decoders_jobs, args=decoders_args, threads=one_thread, thread_policy="micro",
            memory=decoders_memory, config_block="cpu_dataloader",
            images_key="cpu_dataloader.num_images", memory_fix="lower cpu_dataloader.num_images",
        ),
    ),
    tables={
        "worker_scaling_cpu_dataloader": Table(
            "results/tables/worker_scaling_cpu_dataloader.csv",
            "augbench.analysis.dataloader:worker_scaling",
        ),
        "starvation_cpu_dataloader": Table(
            "results/tables/starvation_cpu_dataloader.csv",
            "augbench.analysis.dataloader:starvation",
            ("cpu_dataloader.required_throughput",),
        ),
        "decoders": Table(DECODERS_TABLE, "augbench.analysis.decoders:table"),
        "loaders": Table(LOADERS_TABLE, "augbench.analysis.loaders:table"),
    },
)  # fmt: skip
