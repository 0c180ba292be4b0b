"""One pyperf worker process of the micro regime: times a job's transforms one after another.

Started by the job (``augbench/measuring/engines/micro.py``) once per round, as pyperf's own worker
(``--worker --loops 1 --warmups W --values V``): pyperf runs the warm-ups and timed values and
collects its metadata; the job plays pyperf's manager (it starts the processes, merges their runs
and decides whether another process is needed). One process per round instead of one per
transform and round saves the interpreter start, library import and media load per transform
(importing torchvision alone takes seconds). The first round also decodes the job's images with
the library's own decoder into the cache the later rounds load.

Per transform, in order: write its name to ``--progress`` (so a hard crash names the transform),
construct only that transform, preflight it under the slow-transform policy (first round only),
reset the peak-RSS counter, let pyperf time it, write the run (``<transform>.pyperf.json``) and
what else the row needs (``<transform>.info.json``), then drop it before the next one. A Python
exception in one transform becomes that transform's error row; the next transform still runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Executed as a file (by the job, and by harness_overhead.py).
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from augbench.policy import MICRO_THREADS

MICRO_THREADS.apply_environment()  # before any numeric library is imported

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

from augbench.measuring import allocator, media  # noqa: E402
from augbench.measuring.engines import cli, preflight, skeleton  # noqa: E402
from augbench.measuring.engines.micro import DECODE_SUFFIX, INFO_SUFFIX, PYPERF_SUFFIX  # noqa: E402
from augbench.measuring.stopping import passes_per_value  # noqa: E402
from augbench.policy import SlowTransformPolicy  # noqa: E402
from augbench.results import non_ok_row, write_json_atomic  # noqa: E402
from augbench.workload import adapters, catalog, layout  # noqa: E402


def _preflight(
    transform: Any, materialize: Any, images: list[Any], policy: SlowTransformPolicy
) -> tuple[int, float, str | None, dict[str, Any]]:
    """One untimed call (lazy initialisation; its layouts are recorded), then up to
    ``preflight_items`` timed items."""
    raw = transform(images[0])
    done = materialize(raw, images[0])
    layouts = {
        "input_layout": layout.describe(images[0]),
        "output_layout": layout.describe(raw),
        "output_shares_input_memory": layout.shares_memory(raw, images[0]),
        "materialize_copies": done is not raw,
        "materialized_layout": layout.describe(done),
    }
    items = 0
    start = time.perf_counter()
    for i in range(policy.preflight_items):
        image = images[i % len(images)]
        materialize(transform(image), image)
        items += 1
        if time.perf_counter() - start > policy.preflight_max_seconds:
            break
    elapsed = time.perf_counter() - start
    return items, elapsed, policy.verdict(items, elapsed), layouts


def measure(
    runner: Any,
    name: str,
    images: list[Any],
    adapter: Any,
    policy: SlowTransformPolicy | None,
    out: Path,
    loops: int | None = None,
) -> dict[str, Any]:
    """Preflight (when ``policy``) and time one transform; returns its info (a non-ok row when it
    was not timed). The pyperf run is written to ``<out>/<name>.pyperf.json``. ``loops`` (passes
    over the images per value) comes from the first round; that round derives it from the
    preflight (``stopping.passes_per_value``)."""
    spec = catalog.get(name)
    try:
        transform = adapter.build(spec.name, spec.params)
    except adapters.Unsupported as exc:
        return non_ok_row("unsupported", str(exc))
    except Exception as exc:
        return skeleton.stage_error_row("setup", exc)
    materialize = adapter.materialize
    info: dict[str, Any] = {}
    if policy is not None:
        try:
            items, seconds, verdict, layouts = _preflight(transform, materialize, images, policy)
        except Exception as exc:
            return skeleton.stage_error_row("preflight", exc)
        info = {**preflight.fields(items, seconds), **layouts}
        if verdict is not None:
            return {**non_ok_row("early_stopped", verdict), **info}
        loops = passes_per_value(seconds / max(items, 1), len(images))
    runner.args.loops = loops or 1  # pyperf reads it when the benchmark starts

    counted = {"minor_faults": 0, "faulted_images": 0}

    def time_func(loops: int) -> float:
        # The timed scope: apply and materialize, nothing else. The page-fault counter is read
        # outside it (one getrusage call each side).
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        for _ in range(loops):
            for image in images:
                materialize(transform(image), image)
        elapsed = time.perf_counter() - start
        counted["minor_faults"] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        counted["faulted_images"] += loops * len(images)
        return elapsed

    rss_scope = allocator.reset_peak_rss()
    start = time.perf_counter()
    try:
        bench = runner.bench_time_func(f"{adapter.name}:{name}", time_func, inner_loops=len(images))
    except Exception as exc:
        return skeleton.stage_error_row("measurement", exc)
    if bench is None:  # pragma: no cover - worker mode always returns the benchmark
        raise RuntimeError("pyperf returned no benchmark in worker mode")
    bench.dump(str(out / f"{name}{PYPERF_SUFFIX}"), replace=True)
    return {
        "status": "timed",
        **counted,
        "output_pages": allocator.output_pages(materialize(transform(images[0]), images[0])),
        # The allocator this pyperf process ran under (it inherits the job's environment; set-up
        # checked it against the job's setting): the row's proof, beside the manager's metadata.
        "process_allocator": allocator.label(allocator.in_force()),
        "loops": runner.args.loops,
        "peak_rss_mb": allocator.peak_rss_mb(),
        "peak_rss_scope": rss_scope,
        "process_seconds": time.perf_counter() - start,
        **info,
    }


def _optional_policy(text: str | None) -> SlowTransformPolicy | None:
    return cli.slow_policy(text) if text else None


@dataclass(frozen=True, kw_only=True)
class WorkerSettings(cli.LibraryFlag, cli.TransformsFlag):
    """One worker's own options (pyperf's are parsed by its Runner)."""

    cache: Path
    out_dir: Path
    progress: Path
    # The first round only: preflight each transform under it.
    policy: SlowTransformPolicy | None = field(metadata={cli.FROM_FLAG: _optional_policy})
    layout: str
    loops_by_transform: dict[str, int] = field(metadata={cli.FROM_FLAG: json.loads})
    manifest: Path | None
    num_images: int
    channels: int


def parse_own_args(argv: list[str] | None = None) -> tuple[WorkerSettings, list[str]]:
    """This worker's own options; the rest (--worker --loops --warmups --values ...) are
    pyperf's, parsed by its Runner only once the library has imported."""
    p = argparse.ArgumentParser(description=__doc__, add_help=False, allow_abbrev=False)
    p.add_argument("--library", required=True)
    p.add_argument("--transforms", required=True, help="comma-separated catalog names")
    p.add_argument("--cache", required=True, type=Path)
    p.add_argument("--out-dir", required=True, type=Path, help="per-transform run and info files")
    p.add_argument("--progress", required=True, type=Path, help="the transform being measured")
    p.add_argument("--policy", default=None, help="SlowTransformPolicy as JSON: preflight first")
    p.add_argument("--layout", default="native", choices=["native", "contiguous"])
    p.add_argument(
        "--loops-by-transform", default="{}", help="JSON transform -> loops (after round 1)"
    )
    # Round 1 decodes the images (no cache yet) with the library it imports anyway.
    p.add_argument("--manifest", type=Path, default=None)
    p.add_argument("--num-images", type=int, default=0)
    p.add_argument("--channels", type=int, default=3)
    args, pyperf_args = p.parse_known_args(argv)
    return cli.settings_from(WorkerSettings, args), pyperf_args


def main(argv: list[str] | None = None) -> int:
    settings, pyperf_args = parse_own_args(argv)
    loops = settings.loops_by_transform
    out, progress, cache = settings.out_dir, settings.progress, settings.cache
    names = settings.transforms

    adapter = adapters.get(settings.library)
    try:
        skeleton.import_library(adapter)
        thread_settings = MICRO_THREADS.apply_runtime()
        if not cache.exists():
            if settings.manifest is None:
                raise FileNotFoundError(f"no media cache {cache} and no --manifest")
            files = media.select_files(settings.manifest, settings.num_images)
            decode = media.build_cache(adapter, files, cache, channels=settings.channels)
            write_json_atomic(cache.with_suffix(DECODE_SUFFIX), decode)
        images = media.load_cache(adapter, cache, settings.layout)
    except Exception as exc:  # e.g. the library does not import: every row says why
        for name in names:
            write_json_atomic(out / f"{name}{INFO_SUFFIX}", skeleton.stage_error_row("setup", exc))
        return 0

    import pyperf

    runner = pyperf.Runner()
    runner.parse_args(pyperf_args)
    if not runner.args.worker:
        raise SystemExit("run as a pyperf worker (--worker --loops N --warmups N --values N): "
                         "the micro job is the manager")  # fmt: skip
    for name in names:
        progress.write_text(name)
        began = time.perf_counter()
        info = measure(runner, name, images, adapter, settings.policy, out, loops.get(name))
        info["thread_settings"] = thread_settings
        gc.collect()  # the transform is gone before the next one is constructed
        # Its whole share of this process (construction, preflight, timed passes, clean-up):
        # what a round costs per transform beyond its passes, which the cost model prices.
        info["worker_seconds"] = time.perf_counter() - began
        write_json_atomic(out / f"{name}{INFO_SUFFIX}", info)
    progress.write_text("")
    return 0


if __name__ == "__main__":
    sys.exit(main())
