"""cpu_dataloader regime job: one library x scope x worker count x shard of recipes -> one file;
or, with ``--settings``, several (scope, workers) settings of one library and shard in turn, one
file each, in one process (config ``cpu_dataloader.job_per: library``): the library is imported
once instead of once per setting. Each setting is measured exactly as its own job would be (its
own images, loaders, baselines and stopping rule); only the interpreter and imports are shared.

Each recipe (``augbench.recipes``) runs through a real ``torch.utils.data.DataLoader`` with the
configured number of worker processes, batch size, prefetch factor and persistence; PyTorch's
default collation stacks the float32 3x224x224 samples into batches.

Scopes:

- ``memory``: the selected images are decoded once with the library's own decoder, before any
  clock starts, and held in the dataset (workers inherit them by fork); a sample is the recipe.
- ``decode``: the dataset holds file paths; a sample is read + decode (the library's native
  decoder, recorded per row) + the recipe, inside the workers.

Timing (stated in every file's ``benchmark_params``):

1. Preflight: the first sample is built untimed, then ``preflight_items`` samples are timed in the
   main process under the shared ``SlowTransformPolicy``; a slow recipe becomes ``early_stopped``.
2. Warm-up epoch (untimed): ``max(1, workers)`` batches. Its first-batch latency, measured from
   ``iter(loader)`` and including worker start-up, is ``first_batch_s``.
3. Timed epochs of ``batches_per_run`` batches each, in rounds, until the stopping rule
   (``augbench.stopping``) ends them: at least ``--min-runs`` (policy.DATALOADER_MIN_RUNS), at
   most ``num_runs``. The window runs from ``iter(loader)`` to the arrival of the last batch in
   the main process, so every batch's work is inside it and nothing is prefetched before the
   clock starts. With ``persistent_workers`` the workers started by the warm-up epoch are reused,
   so start-up is outside the window; without it each epoch starts its workers and the row says
   ``startup_in_timed_window: true``.

Baselines, measured in the same job (at most ``--baseline-runs`` rounds or epochs; 0: none):

- bare loop, per recipe: a user-written ``Dataset`` + stock ``DataLoader``
  (``augbench.engines.bare_loop``) with the same recipe objects, batch size, workers, prefetch,
  persistence and thread policy, warmed up the same way, timed in the same rounds.
  ``regime_vs_bare`` = median over rounds of regime epoch / bare epoch (``augbench.paired``).
- decode jobs, per recipe, in the same rounds (order D B M F, then F M B D, ...): the memory-scope
  companion (the same recipe on the job's images decoded once before any clock, through a loader
  with the regime's settings and workers) and the decode floor (the epoch's files decoded by the
  same decoder in ``max(1, min(workers, cores))`` processes and nothing else). Per round the
  expectation is 1/(1/floor + 1/memory); ``decode_composition_ratio`` is the median of decode
  epoch / expectation, with ``decode_composition_source: same_job``.
- transport, once per job: a fixed 224x224 window of each image (copied, as a crop returns it;
  in ``memory`` scope cut before any clock) through the recipe's tail only, in the regime's
  loader: what moving a normalized float32 sample through this DataLoader costs, no augmentation.
"""

from __future__ import annotations

from augbench.policy import DATALOADER_THREADS

DATALOADER_THREADS.apply_environment()  # before numpy, torch or cv2 is imported

import argparse  # noqa: E402
import contextlib  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from augbench import adapters, catalog, matrix, media, pipelines, recipes  # noqa: E402
from augbench.engines.common import job_metadata  # noqa: E402
from augbench.paired import composition_expectation, paired_ratio  # noqa: E402
from augbench.policy import (  # noqa: E402
    DATALOADER_MIN_RUNS,
    RELATIVE_CI_TARGET,
    SlowTransformPolicy,
)
from augbench.results import (  # noqa: E402
    non_ok_row,
    ok_row,
    result_file,
    status_line,
    write_json_atomic,
)
from augbench.stopping import StoppingRule  # noqa: E402

REGIME = "cpu_dataloader"
SCOPES: tuple[str, ...] = ("memory", "decode")

TIMING_NOTE = (
    "throughput = images / seconds from iter(loader) to the last batch received in the main "
    "process, per timed epoch; an untimed warm-up epoch of max(1, workers) batches precedes them "
    "(persistent workers are started there, outside the window); first_batch_s = warm-up "
    "epoch's iter(loader) -> first batch, including worker start-up"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--library", required=True)
    p.add_argument("--scope", choices=SCOPES)
    p.add_argument("--workers", type=int)
    p.add_argument(
        "--settings",
        default="",
        help="comma-separated <scope>-w<workers> settings measured in turn (instead of --scope "
        "and --workers); --outputs gives one result file per setting, in the same order",
    )
    p.add_argument("--outputs", nargs="+", type=Path, default=[])
    p.add_argument("--transforms", required=True, help="comma-separated catalog names")
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--num-images", required=True, type=int)
    p.add_argument("--output", type=Path)
    p.add_argument("--machine", required=True)
    p.add_argument("--shard", default="")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--batches-per-run", type=int, default=20)
    p.add_argument(
        "--num-runs",
        type=int,
        default=3,
        help="most timed epochs per row; fewer once the row is precise enough (stopping rule)",
    )
    p.add_argument(
        "--min-runs",
        type=int,
        default=DATALOADER_MIN_RUNS,
        help="fewest timed epochs (and baseline pairs) before the stopping rule may end a row",
    )
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--persistent-workers", type=_bool, default=True)
    p.add_argument("--cap-workers-at-cores", type=_bool, default=True)
    p.add_argument("--batch-timeout", type=float, default=300.0)
    p.add_argument(
        "--baseline-runs",
        type=int,
        default=2,
        help="most timed epochs of the bare loop, the decode floor and the memory-scope companion "
        "(per recipe, interleaved) and of the transport baseline (per job); 0 measures none",
    )
    p.add_argument("--policy", default="{}", help="SlowTransformPolicy fields as JSON")
    p.add_argument("--env-marker", type=Path, default=None)
    p.add_argument(
        "--pipelines", type=pipelines.from_json, default={},
        help="user pipelines as JSON (augbench.pipelines); a name of --transforms that is one of "
        "them runs that pipeline as its recipe",
    )  # fmt: skip
    args = p.parse_args(argv)
    try:
        args.setting_list = parse_settings(args.settings) if args.settings else []
    except argparse.ArgumentTypeError as exc:
        p.error(f"--settings: {exc}")
    if args.setting_list:
        if len(args.outputs) != len(args.setting_list):
            p.error(
                f"--outputs needs one file per setting: {len(args.setting_list)} settings, "
                f"{len(args.outputs)} outputs"
            )
        if args.scope is not None or args.workers is not None or args.output is not None:
            p.error("--settings replaces --scope, --workers and --output")
        args.scope, args.workers = args.setting_list[0]
        args.output = args.outputs[0]
    elif args.scope is None or args.workers is None or args.output is None:
        p.error("give --scope, --workers and --output, or --settings and --outputs")
    for name in (
        "workers",
        "batch_size",
        "batches_per_run",
        "num_runs",
        "min_runs",
        "prefetch_factor",
        "baseline_runs",
    ):
        value = getattr(args, name)
        minimum = 0 if name in ("workers", "baseline_runs") else 1
        if value < minimum:
            p.error(f"--{name.replace('_', '-')} must be >= {minimum}")
    return args


def parse_settings(text: str) -> list[tuple[str, int]]:
    """``memory-w0,decode-w2`` -> [("memory", 0), ("decode", 2)]."""
    settings = []
    for item in (t.strip() for t in text.split(",")):
        scope, sep, workers = item.rpartition("-w")
        if not sep or scope not in SCOPES or not workers.isdigit():
            raise argparse.ArgumentTypeError(
                f"bad setting {item!r}: expected <scope>-w<workers> with scope in {SCOPES}"
            )
        settings.append((scope, int(workers)))
    return settings


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# -- dataset pieces (module level: picklable, usable by any multiprocessing start method) --------
class Recipe:
    """The recipe's steps then its tail, applied to one native image."""

    def __init__(self, steps: list[Callable[[Any], Any]], tail: Callable[[Any], Any]) -> None:
        self.steps = steps
        self.tail = tail

    def __call__(self, image: Any) -> Any:
        for step in self.steps:
            image = step(image)
        return self.tail(image)


class RecipeDataset:
    """Map-style dataset: ``load(items[i])`` (identity or decode) followed by the recipe."""

    def __init__(
        self, items: list[Any], load: Callable[[Any], Any], recipe: Recipe, label: str = ""
    ) -> None:
        self.items = items
        self.load = load
        self.recipe = recipe
        self.label = label

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        return self.recipe(self.load(self.items[index]))


def _identity(item: Any) -> Any:
    return item


class EpochSampler:
    """Indices ``0..n_items-1`` modulo the dataset size, in order.

    ``n_items`` is set before each epoch (short warm-up epoch, then timed epochs), as
    DistributedSampler.set_epoch is; the main process reads it when an epoch starts.
    """

    def __init__(self, dataset_size: int, n_items: int) -> None:
        self.dataset_size = dataset_size
        self.n_items = n_items

    def __iter__(self) -> Iterator[int]:
        return (i % self.dataset_size for i in range(self.n_items))

    def __len__(self) -> int:
        return self.n_items


def _worker_init(worker_id: int, record_dir: str) -> None:
    """Apply the thread policy inside a worker and record what is in force there."""
    applied = DATALOADER_THREADS.apply_runtime()
    record = {"worker_id": worker_id, "pid": os.getpid(), **applied}
    path = Path(record_dir) / f"worker-{os.getpid()}.json"
    path.write_text(json.dumps(record))


# -- measurement -----------------------------------------------------------------------------
class RecipeError(Exception):
    """A recipe failed at a named stage; the row keeps the stage and the library's message."""

    def __init__(self, stage: str, exc: BaseException) -> None:
        super().__init__(f"{stage}: {type(exc).__name__}: {exc}")
        self.stage = stage
        self.tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def preflight(dataset: RecipeDataset, policy: SlowTransformPolicy) -> dict[str, Any]:
    """One untimed sample (lazy initialisation), then up to ``preflight_items`` timed samples in
    the main process: the per-sample work of this scope (decode + recipe, or recipe)."""
    dataset[0]
    items = 0
    start = time.perf_counter()
    for i in range(policy.preflight_items):
        dataset[i % len(dataset)]
        items += 1
        if time.perf_counter() - start > policy.preflight_max_seconds:
            break
    seconds = time.perf_counter() - start
    return {
        "preflight_items": items,
        "preflight_seconds": seconds,
        "preflight_throughput": items / seconds if seconds > 0 else None,
        "verdict": policy.verdict(items, seconds),
    }


def _check_batch(batch: Any, batch_size: int) -> dict[str, Any]:
    import torch

    if not isinstance(batch, torch.Tensor) or batch.dtype != torch.float32 or batch.ndim != 4:
        raise TypeError(
            f"recipe output collated to {type(batch).__name__} "
            f"{getattr(batch, 'dtype', '')} {tuple(getattr(batch, 'shape', ()))}; expected a "
            "float32 Bx3xHxW tensor"
        )
    if batch.shape[0] > batch_size or batch.shape[1] != 3:
        raise ValueError(f"unexpected batch shape {tuple(batch.shape)}")
    return {"batch_shape": list(batch.shape), "batch_dtype": str(batch.dtype)}


def _process_tree_rss_mb() -> float | None:
    """Resident memory of this process plus its live children (workers), shared pages counted
    once per process."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a worker may exit meanwhile
            total += child.memory_info().rss
    return total / 2**20


def _regime_loader(
    args: argparse.Namespace, dataset: RecipeDataset, sampler: EpochSampler, record_dir: Path
) -> Any:
    from torch.utils.data import DataLoader

    workers = args.workers
    return DataLoader(
        dataset,
        batch_size=args.batch_size,
        sampler=sampler,
        num_workers=workers,
        prefetch_factor=args.prefetch_factor if workers else None,
        persistent_workers=args.persistent_workers if workers else False,
        worker_init_fn=functools.partial(_worker_init, record_dir=str(record_dir))
        if workers
        else None,
        timeout=args.batch_timeout if workers else 0,
        pin_memory=False,
    )


def _timed_epoch(loader: Any) -> tuple[int, float, float]:
    """Images, seconds from iter(loader) to the last batch, and the first batch's latency."""
    images = 0
    first: float | None = None
    start = time.perf_counter()
    for batch in loader:
        images += batch.shape[0]
        if first is None:
            first = time.perf_counter() - start
    return images, time.perf_counter() - start, first or 0.0


def _warm_up(loader: Any, batch_size: int, stage: str) -> tuple[float, dict[str, Any]]:
    """One untimed epoch: its first-batch latency (worker start-up included) and batch check."""
    try:
        start = time.perf_counter()
        iterator = iter(loader)
        first = next(iterator)
        first_batch_s = time.perf_counter() - start
        batch_info = _check_batch(first, batch_size)
        for _ in iterator:
            pass
        del iterator, first
    except Exception as exc:
        raise RecipeError(stage, exc) from exc
    return first_batch_s, batch_info


# What each interleaved arm of a recipe's measurement is called in its stage names and results.
ARM_LABELS: dict[str, str] = {
    "regime": "",
    "bare": "bare-loop ",
    "memory": "memory-scope companion ",
    "floor": "decode-floor ",
}


def measure_loader(
    args: argparse.Namespace,
    dataset: RecipeDataset,
    record_dir: Path,
    bar: Any,
    bare: Any = None,
    bare_runs: int = 0,
    memory: RecipeDataset | None = None,
    floor: DecodeFloor | None = None,
) -> dict[str, Any]:
    """Warm-up epoch, then timed epochs until the stopping rule ends them; every batch is
    consumed in the window.

    Companions, each warmed up like the regime's loader and timed in the same rounds, in the
    order regime, bare, memory, floor and reversed every other round (A B B A ...), so each
    pair of epochs of one round sees the same machine state:

    - ``bare`` (a ``bare_loop.UserDataset``): a stock DataLoader over the same recipe;
    - ``memory`` (decode jobs): the same recipe on pre-decoded images through a loader with the
      regime's own settings (the memory-scope term of the decode composition);
    - ``floor`` (decode jobs): the epoch's files decoded and nothing else.

    Companions take part in the first ``bare_runs`` rounds. Rounds stop at ``args.num_runs``,
    or earlier, after at least ``args.min_runs`` (policy.DATALOADER_MIN_RUNS), once the
    regime's throughputs and its paired ratios to the bare loop are both precise enough
    (augbench.stopping.StoppingRule).
    """
    workers = args.workers
    images_per_run = args.batches_per_run * args.batch_size
    warmup_batches = max(1, workers)
    sampler = EpochSampler(len(dataset), warmup_batches * args.batch_size)
    loader = _regime_loader(args, dataset, sampler, record_dir)
    bare_loader = memory_loader = None
    arms: dict[str, Callable[[], tuple[int, float, float]]] = {}
    try:
        first_batch_s, batch_info = _warm_up(loader, args.batch_size, "warm-up epoch")
        sampler.n_items = images_per_run
        arms["regime"] = functools.partial(_timed_epoch, loader)
        if bare is not None and bare_runs > 0:
            from augbench.engines.bare_loop import user_loader

            bare.length = warmup_batches * args.batch_size
            bare_loader = user_loader(
                bare,
                batch_size=args.batch_size,
                workers=workers,
                prefetch_factor=args.prefetch_factor,
                persistent=args.persistent_workers,
            )
            # Its workers start here, as the regime's did.
            _warm_up(bare_loader, args.batch_size, "bare-loop warm-up epoch")
            bare.length = images_per_run
            arms["bare"] = functools.partial(_timed_epoch, bare_loader)
        if memory is not None and bare_runs > 0:
            memory_sampler = EpochSampler(len(memory), warmup_batches * args.batch_size)
            memory_loader = _regime_loader(args, memory, memory_sampler, record_dir)
            _warm_up(memory_loader, args.batch_size, "memory-scope companion warm-up epoch")
            memory_sampler.n_items = images_per_run
            arms["memory"] = functools.partial(_timed_epoch, memory_loader)
        if floor is not None and bare_runs > 0:
            arms["floor"] = floor.epoch

        rule = StoppingRule(min(args.min_runs, args.num_runs), args.num_runs)
        values: dict[str, list[float]] = {name: [] for name in arms}
        times: list[float] = []
        first_batches: list[float] = []
        run = 0
        while True:
            order = list(arms) if run < bare_runs else ["regime"]
            if run % 2:
                order.reverse()
            for which in order:
                stage = f"{ARM_LABELS[which]}timed epoch {run + 1}"
                try:
                    images, elapsed, run_first = arms[which]()
                except Exception as exc:
                    raise RecipeError(stage, exc) from exc
                if images != images_per_run:
                    raise RecipeError(
                        stage,
                        RuntimeError(f"received {images} images, expected {images_per_run}"),
                    )
                values[which].append(images / elapsed)
                if which == "regime":
                    times.append(elapsed)
                    first_batches.append(run_first)
            run += 1
            bar.set_postfix_str(f"{dataset.label} run {run}: {values['regime'][-1]:.0f}/s")
            if _precise_enough(rule, values, companions_left=run < bare_runs):
                break
        total_rss = _process_tree_rss_mb()  # persistent workers are still alive here
    finally:
        arms.clear()  # the partials hold the loaders
        del loader, bare_loader, memory_loader  # shuts persistent workers down
        gc.collect()
    return {
        "throughputs": values["regime"],
        "times": times,
        "first_batch_s": first_batch_s,
        "first_batch_s_runs": first_batches,
        "warmup_batches": warmup_batches,
        "images_per_run": images_per_run,
        "total_rss_mb": total_rss,
        "bare_throughputs": values.get("bare", []),
        "memory_throughputs": values.get("memory", []),
        "floor_throughputs": values.get("floor", []),
        "timed_rounds": run,
        "stopped_by": "relative_ci" if run < args.num_runs else "num_runs",
        **batch_info,
    }


def _precise_enough(
    rule: StoppingRule, values: dict[str, list[float]], companions_left: bool
) -> bool:
    """The regime's throughputs meet the rule, and (while the bare loop still runs) so do the
    paired regime / bare ratios the row reports."""
    if not rule.done(values["regime"]):
        return False
    if not companions_left or "bare" not in values:
        return True
    return rule.done(paired_ratio(values["regime"], values["bare"]).ratios)


def build_recipe(
    adapter: adapters.Adapter, transform: str, pipeline: pipelines.Pipeline | None = None
) -> Recipe:
    if pipeline is not None:  # a user pipeline is the whole recipe, tail included
        return Recipe(*pipelines.recipe_parts(adapter, pipeline))
    steps = []
    for name in recipes.steps(transform):
        spec = catalog.get(name)
        steps.append(adapter.build(spec.name, spec.params))
    return Recipe(steps, adapter.recipe_tail(recipes.IMAGENET_MEAN, recipes.IMAGENET_STD))


def recipe_row_fields(
    args: argparse.Namespace, adapter: adapters.Adapter, transform: str
) -> dict[str, Any]:
    """What every row of this job carries, whatever its status: the tidy table groups by them."""
    common = {
        "scope": args.scope,
        "workers": args.workers,
        "batch_size": args.batch_size,
        "decoder": adapter.decoder,
        "decode_in_timed_window": args.scope == "decode",
    }
    if transform in args.pipelines:  # recipe, its calls, pipeline name, variant "pipeline"
        return {**common, **pipelines.row_fields(args.pipelines[transform], adapter)}
    calls = [
        adapter.mappings[n].call if adapter.supports(n) else None for n in recipes.steps(transform)
    ]
    return {
        "recipe": recipes.recipe_name(transform),
        "recipe_calls": [*calls, adapter.recipe_tail_call],
        "scope": args.scope,
        "workers": args.workers,
        "batch_size": args.batch_size,
        "decoder": adapter.decoder,
        "decode_in_timed_window": args.scope == "decode",
    }


def run_recipe(
    args: argparse.Namespace,
    adapter: adapters.Adapter,
    transform: str,
    items: list[Any],
    load: Callable[[Any], Any],
    policy: SlowTransformPolicy,
    record_dir: Path,
    bar: Any,
    companions: DecodeCompanions | None = None,
) -> dict[str, Any]:
    """One recipe's row: preflight, then the regime's epochs interleaved with the bare loop's
    (and, in decode jobs, with the memory-scope companion's and the decode floor's)."""
    pipeline = args.pipelines.get(transform)
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
        err = RecipeError("setup", exc)
        return non_ok_row("error", str(err), traceback=err.tb)
    dataset = RecipeDataset(items, load, recipe, label=transform)
    if pipeline is not None:  # its limit is per step (augbench.pipelines.scaled_policy)
        policy = pipelines.scaled_policy(policy, pipeline)
    try:
        pre = preflight(dataset, policy)
    except Exception as exc:
        err = RecipeError("preflight", exc)
        return non_ok_row("error", str(err), traceback=err.tb)
    verdict = pre.pop("verdict")
    if verdict is not None:
        return non_ok_row("early_stopped", verdict, **pre)
    bare = None
    if args.baseline_runs > 0:
        from augbench.engines.bare_loop import UserDataset

        bare = UserDataset(
            items,
            [*recipe.steps, recipe.tail],
            length=len(items),
            load=None if load is _identity else load,
        )
    memory = None
    if companions is not None:
        memory = RecipeDataset(companions.images, _identity, recipe, label=transform)
    try:
        measured = measure_loader(
            args,
            dataset,
            record_dir,
            bar,
            bare,
            args.baseline_runs,
            memory=memory,
            floor=companions.floor if companions is not None else None,
        )
    except RecipeError as err:
        return non_ok_row("error", str(err), traceback=err.tb, **pre)
    throughputs = measured.pop("throughputs")
    times = measured.pop("times")
    bare_runs = measured.pop("bare_throughputs")
    memory_runs = measured.pop("memory_throughputs")
    floor_runs = measured.pop("floor_throughputs")
    return ok_row(
        throughputs,
        times,
        **bare_loop_fields(throughputs, bare_runs),
        **composition_fields(throughputs, memory_runs, floor_runs, companions),
        warmup_iterations=1,  # one untimed warm-up epoch
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        startup_in_timed_window=bool(args.workers and not args.persistent_workers),
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


# -- baselines measured once per job ---------------------------------------------------------
TRANSPORT_SIZE = 224  # the recipes' output side: the transport sample has the recipes' shape


def fixed_crop(image: Any, size: int = TRANSPORT_SIZE) -> Any:
    """The top-left ``size`` x ``size`` window in the library's native format, copied into its
    own memory as a crop transform returns it (numpy HWC, torch ...xCxHxW, or a PIL image)."""
    if hasattr(image, "crop") and hasattr(image, "getbands"):  # PIL
        return image.crop((0, 0, size, size))
    if hasattr(image, "contiguous"):  # torch tensor, channels first
        return image[..., :size, :size].contiguous()
    return image[:size, :size].copy()  # numpy HWC


class CroppedLoad:
    """The scope's load step followed by ``fixed_crop`` (the transport baseline's decode path)."""

    def __init__(self, load: Callable[[Any], Any]) -> None:
        self.load = load

    def __call__(self, item: Any) -> Any:
        return fixed_crop(self.load(item))


def measure_transport(
    args: argparse.Namespace,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    record_dir: Path,
    bar: Any,
) -> dict[str, Any]:
    """The recipe's tail alone on a fixed 224 crop, through the regime's own loader."""
    tail = adapter.recipe_tail(recipes.IMAGENET_MEAN, recipes.IMAGENET_STD)
    if load is _identity:  # memory scope: crop before any clock, the sample is the tail only
        items, sample_load = [fixed_crop(image) for image in items], load
    else:
        sample_load = CroppedLoad(load)
    dataset = RecipeDataset(items, sample_load, Recipe([], tail), label="transport")
    runs = argparse.Namespace(**{**vars(args), "num_runs": args.baseline_runs})
    measured = measure_loader(runs, dataset, record_dir, bar)
    return {
        "transport_throughput": statistics.median(measured["throughputs"]),
        "transport_throughputs": measured["throughputs"],
    }


_FLOOR_DECODE: Callable[[Any], Any] | None = None  # inherited by the forked floor processes


def _decode_all(paths: list[Any]) -> int:
    assert _FLOOR_DECODE is not None
    for path in paths:
        _FLOOR_DECODE(path)
    return len(paths)


class DecodeFloor:
    """Pure decoding of one epoch's files in ``processes`` processes, nothing else.

    One process: a loop in this process. More: forked processes, started (untimed) when the
    floor is created, each decode 1/processes of the files; the clock spans the submission to the
    last one finishing. Create it before any DataLoader so the pool forks a process without
    loader threads; ``close()`` ends the pool.
    """

    def __init__(self, decode: Callable[[Any], Any], paths: list[Any], processes: int) -> None:
        global _FLOOR_DECODE
        _FLOOR_DECODE = decode
        self.paths = paths
        self.processes = processes
        self.chunks = [paths[i::processes] for i in range(processes)]
        self.pool: Any = None
        if processes > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(processes, mp_context=context)
            list(self.pool.map(_decode_all, [c[:1] for c in self.chunks]))  # start them all

    def epoch(self) -> tuple[int, float, float]:
        """Images decoded, seconds, and 0.0 (no batches: the shape of ``_timed_epoch``)."""
        start = time.perf_counter()
        if self.pool is None:
            done = _decode_all(self.paths)
        else:
            done = sum(self.pool.map(_decode_all, self.chunks))
        return done, time.perf_counter() - start, 0.0

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


def decode_floor(
    decode: Callable[[Any], Any], paths: list[Any], processes: int, runs: int
) -> list[float]:
    """``runs`` decode-floor throughputs (img/s) of ``paths`` in ``processes`` processes."""
    floor = DecodeFloor(decode, paths, processes)
    try:
        out = []
        for _ in range(runs):
            images, seconds, _ = floor.epoch()
            out.append(images / seconds)
        return out
    finally:
        floor.close()


BASELINE_FIELDS: tuple[str, ...] = ("transport_throughput", "transport_throughputs")


def measure_baselines(
    args: argparse.Namespace,
    adapter: adapters.Adapter,
    items: list[Any],
    load: Callable[[Any], Any],
    cores: int,
    record_dir: Path,
    bar: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Job-level baselines: (fields every row of the job carries, metadata with the details).

    The transport baseline is measured once per job; the decode floor and the memory-scope
    companion are measured per recipe, interleaved with its epochs (``DecodeCompanions``)."""
    fields: dict[str, Any] = dict.fromkeys(BASELINE_FIELDS)
    meta: dict[str, Any] = {"runs": args.baseline_runs}
    if args.baseline_runs < 1:
        meta["note"] = "baselines off (--baseline-runs 0)"
        return fields, meta
    try:
        fields.update(measure_transport(args, adapter, items, load, record_dir, bar))
        meta["transport"] = {
            "sample": f"fixed {TRANSPORT_SIZE}x{TRANSPORT_SIZE} window + "
            f"{adapter.recipe_tail_call}",
            "crop_in_timed_window": args.scope == "decode",
        }
    except Exception as exc:
        meta["transport"] = {"error": str(RecipeError("transport baseline", exc))}
    if args.scope == "decode":
        meta["decode_floor"] = {
            "decoder": adapter.decoder,
            "processes": max(1, min(args.workers, cores)),
            "measured": "per recipe, interleaved with its decode-scope epochs",
        }
    return fields, meta


class DecodeCompanions:
    """What a decode job times next to each recipe for the composition check: the job's images
    decoded once, untimed (the memory-scope companion's items), and the decode floor over one
    epoch's files."""

    def __init__(
        self, args: argparse.Namespace, paths: list[Any], decode: Callable[[Any], Any], cores: int
    ) -> None:
        start = time.perf_counter()
        self.images = [decode(p) for p in paths]
        self.preload_seconds = time.perf_counter() - start
        self.processes = max(1, min(args.workers, cores))
        epoch = [paths[i % len(paths)] for i in range(args.batches_per_run * args.batch_size)]
        self.floor = DecodeFloor(decode, epoch, self.processes)

    def close(self) -> None:
        self.floor.close()


def load_items(
    args: argparse.Namespace, adapter: adapters.Adapter
) -> tuple[list[Any], Callable[[Any], Any], dict[str, Any]]:
    """Dataset items and the per-sample load step for the scope; preloading is untimed."""
    files = media.select_files(args.manifest, args.num_images)
    if args.scope == "decode":
        return [str(f) for f in files], adapter.decode, {"decoder": adapter.decoder}
    start = time.perf_counter()
    images = [adapter.decode(f) for f in files]
    return (
        images,
        _identity,
        {
            "decoder": adapter.decoder,
            "preload_seconds": time.perf_counter() - start,
            "preloaded_images": len(images),
        },
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.setting_list:
        measure_setting(args)
        return 0
    failed = []
    for (scope, workers), output in zip(args.setting_list, args.outputs, strict=True):
        setting = argparse.Namespace(**{**vars(args), "scope": scope, "workers": workers})
        setting.output = output
        try:
            measure_setting(setting)
        except Exception:  # a harness bug: report it, measure the other settings, fail the job
            traceback.print_exc()
            failed.append(f"{scope}-w{workers}")
    if failed:
        print(f"{REGIME} | {args.library}: settings failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def measure_setting(args: argparse.Namespace) -> None:
    """One (scope, workers) setting of the job: every recipe, its baselines, one result file."""
    from tqdm import tqdm

    adapter = adapters.get(args.library)
    transforms = [t for t in args.transforms.split(",") if t]
    for name in transforms:
        if name not in args.pipelines:
            catalog.get(name)  # unknown names fail the job loudly, before any measuring
    policy = SlowTransformPolicy(**json.loads(args.policy))
    cores = usable_cores()
    over_cap = args.cap_workers_at_cores and args.workers > cores

    results: dict[str, dict[str, Any]] = {}
    thread_settings: dict[str, Any] = {
        "policy": DATALOADER_THREADS.to_dict(),
        "environment": DATALOADER_THREADS.environment(),
        "applied_in": "main process before imports; every worker via worker_init_fn",
    }
    load_info: dict[str, Any] = {}
    setup_error: str | None = None
    if not over_cap:
        try:
            adapter.import_library()
            import torch  # noqa: F401  (the DataLoader; every library env has it)

            thread_settings["main_process"] = DATALOADER_THREADS.apply_runtime()
        except Exception as exc:  # the library is broken in this env: every row says so
            setup_error = f"import failed: {type(exc).__name__}: {exc}"

    label = f"{REGIME} | {args.library} | {args.scope} w{args.workers} | {args.shard}"
    with tempfile.TemporaryDirectory(prefix=f"dl-{args.library}-") as tmp:
        record_dir = Path(tmp)
        items: list[Any] = []
        load: Callable[[Any], Any] = _identity
        if not over_cap and setup_error is None:
            try:
                items, load, load_info = load_items(args, adapter)
            except Exception as exc:
                setup_error = (
                    f"loading the {args.scope} dataset failed: {type(exc).__name__}: {exc}"
                )
        baselines: dict[str, Any] = dict.fromkeys(BASELINE_FIELDS)
        baselines_meta: dict[str, Any] = {"runs": args.baseline_runs}
        companions: DecodeCompanions | None = None
        bar = tqdm(transforms, desc=label, unit="recipe")
        if not over_cap and setup_error is None:
            if args.scope == "decode" and args.baseline_runs > 0:
                # Before any DataLoader: the floor's pool forks a process without loader threads.
                bar.set_postfix_str("decoding the composition's memory-scope images")
                try:
                    companions = DecodeCompanions(args, items, load, cores)
                    load_info["companion_preload_seconds"] = companions.preload_seconds
                except Exception as exc:
                    baselines_meta["decode_companions"] = {
                        "error": str(RecipeError("decode companions", exc))
                    }
            bar.set_postfix_str("baselines")
            baselines, meta = measure_baselines(args, adapter, items, load, cores, record_dir, bar)
            baselines_meta.update(meta)
        for name in bar:
            bar.set_postfix_str(name)
            if over_cap:
                row = non_ok_row(
                    "skipped",
                    f"{args.workers} workers > {cores} usable cores on this machine "
                    "(cpu_dataloader.cap_workers_at_cores)",
                )
            elif setup_error is not None:
                row = non_ok_row("error", setup_error)
            else:
                row = run_recipe(
                    args, adapter, name, items, load, policy, record_dir, bar, companions
                )
            row.update(recipe_row_fields(args, adapter, name))
            row.update(baselines)
            results[name] = row
            tqdm.write(status_line(label, name, row), file=sys.stderr)
        if companions is not None:
            companions.close()
        thread_settings["workers"] = _worker_records(record_dir)

    metadata = job_metadata(
        adapter=adapter,
        regime=REGIME,
        scope=args.scope,
        machine=args.machine,
        manifest=args.manifest,
        num_images=args.num_images,
        benchmark_params={
            "num_images": args.num_images,
            "workers": args.workers,
            "usable_cores": cores,
            "cap_workers_at_cores": args.cap_workers_at_cores,
            "batch_size": args.batch_size,
            "batches_per_run": args.batches_per_run,
            "images_per_run": args.batches_per_run * args.batch_size,
            "num_runs": args.num_runs,
            "min_runs": min(args.min_runs, args.num_runs),
            "stopping_rule": "timed epochs stop between min_runs and num_runs once the relative "
            "95% CI of the row's throughputs, and of its paired regime/bare ratios while the bare "
            f"loop runs, is <= {RELATIVE_CI_TARGET} (augbench.stopping); baselines take part in "
            "at most baseline_runs rounds",
            "warmup_batches": max(1, args.workers),
            "prefetch_factor": args.prefetch_factor if args.workers else None,
            "persistent_workers": bool(args.persistent_workers and args.workers),
            "pin_memory": False,
            "multiprocessing_start_method": _start_method(),
            "batch_timeout_s": args.batch_timeout if args.workers else None,
            "collate": "torch.utils.data.default_collate (stack)",
            "sampler": "sequential, cycling over the selected images",
            "normalize": {"mean": recipes.IMAGENET_MEAN, "std": recipes.IMAGENET_STD},
            "timed_window": TIMING_NOTE,
            "baseline_runs": args.baseline_runs,
            "bare_loop": "augbench.engines.bare_loop: user Dataset + stock DataLoader, same "
            "recipe objects, batch size, workers, prefetch, persistence and thread policy; its "
            "timed epochs alternate with the regime's",
            "regime_vs_bare": REGIME_VS_BARE_ESTIMATOR,
            "decode_composition": "decode jobs, per recipe and round: the same recipe on "
            "pre-decoded images (regime loader settings, same workers) and the decode floor, "
            "interleaved with the decode epochs (D B M F, F M B D, ...); expected = "
            "1/(1/floor + 1/memory), ratio = decode / expected, medians over rounds",
            "timer_backend": "time.perf_counter",
            "slow_transform_policy": policy.to_dict(),
            "shard": args.shard,
            # A --settings job (job_per: library): the settings its one process measured, in
            # order; its log and benchmark file are matrix.dataloader_library_job(shard). Empty
            # for a job of one setting, named after its result file.
            "settings_in_job": [matrix.dataloader_setting(s, w) for s, w in args.setting_list],
            "transforms": transforms,
            "recipes": {
                t: args.pipelines[t].recipe if t in args.pipelines else recipes.recipe_name(t)
                for t in transforms
            },
        },
        thread_settings=thread_settings,
        env_marker=args.env_marker,
        extra={
            "decode": load_info,
            "recipe_tail": adapter.recipe_tail_call,
            "baselines": baselines_meta,
        },
    )
    write_json_atomic(args.output, result_file(metadata, results))


def _worker_records(record_dir: Path) -> list[dict[str, Any]]:
    """Thread settings reported by each worker process (one file per worker pid)."""
    records = [json.loads(p.read_text()) for p in sorted(record_dir.glob("worker-*.json"))]
    # Identical settings across workers and recipes: keep one per distinct setting, with a count.
    distinct: dict[str, dict[str, Any]] = {}
    for rec in records:
        key = json.dumps({k: v for k, v in rec.items() if k not in ("worker_id", "pid")})
        entry = distinct.setdefault(key, {**json.loads(key), "worker_processes": 0})
        entry["worker_processes"] += 1
    return list(distinct.values())


def _start_method() -> str | None:
    import multiprocessing

    return multiprocessing.get_start_method(allow_none=True) or "fork (platform default)"


if __name__ == "__main__":
    sys.exit(main())
