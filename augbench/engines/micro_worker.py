"""Measure one transform of one library with pyperf (the micro regime's measuring process).

Run as a script, once per transform: only that transform is constructed. pyperf re-executes this
file for its worker processes; each applies the single-thread policy before numpy/torch/cv2 load.

Master process: decode nothing (media comes from the job's cache), preflight the transform under
the slow-transform policy, then let pyperf spawn workers and write one result row as JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Executed as a file (by the job, and again by pyperf for each worker).
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.policy import MICRO_THREADS

MICRO_THREADS.apply_environment()  # before any numeric library is imported

import json  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

import pyperf  # noqa: E402

from augbench import adapters, catalog, layout, media  # noqa: E402
from augbench.policy import SlowTransformPolicy  # noqa: E402
from augbench.results import non_ok_row, ok_row, write_json_atomic  # noqa: E402


def _add_worker_args(cmd: list[str], args: Any) -> None:
    cmd.extend(["--library", args.library, "--transform", args.transform, "--cache", args.cache])
    cmd.extend(["--row-out", args.row_out, "--policy", args.policy, "--layout", args.layout])


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


def main() -> int:
    runner = pyperf.Runner(add_cmdline_args=_add_worker_args)
    parser = runner.argparser
    parser.add_argument("--library", required=True)
    parser.add_argument("--transform", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--row-out", required=True)
    parser.add_argument("--policy", required=True, help="SlowTransformPolicy as JSON")
    parser.add_argument("--layout", default="native", choices=["native", "contiguous"])
    args = runner.parse_args()
    is_master = not args.worker
    row_out = Path(args.row_out)

    adapter = adapters.get(args.library)
    spec = catalog.get(args.transform)
    try:
        adapter.import_library()
        thread_settings = MICRO_THREADS.apply_runtime()
        images = media.load_cache(adapter, Path(args.cache), args.layout)
        transform = adapter.build(spec.name, spec.params)
        materialize = adapter.materialize
    except adapters.Unsupported as exc:
        if is_master:
            write_json_atomic(row_out, non_ok_row("unsupported", str(exc)))
        return 0
    except Exception as exc:
        if is_master:
            write_json_atomic(row_out, _error_row("setup", exc))
            return 0
        raise

    if is_master:
        policy = SlowTransformPolicy(**json.loads(args.policy))
        try:
            items, seconds, verdict, layouts = _preflight(transform, materialize, images, policy)
        except Exception as exc:
            write_json_atomic(row_out, _error_row("preflight", exc))
            return 0
        preflight = {
            "preflight_items": items,
            "preflight_seconds": seconds,
            "preflight_throughput": items / seconds if seconds > 0 else None,
            "layout": args.layout,
            **layouts,
        }
        if verdict is not None:
            row = non_ok_row("early_stopped", verdict, thread_settings=thread_settings)
            row.update(preflight)
            write_json_atomic(row_out, row)
            return 0

    def time_func(loops: int) -> float:
        # The timed scope: apply and materialize, nothing else.
        start = time.perf_counter()
        for _ in range(loops):
            for image in images:
                materialize(transform(image), image)
        return time.perf_counter() - start

    bench = runner.bench_time_func(
        f"{args.library}:{args.transform}", time_func, inner_loops=len(images)
    )
    if not is_master:
        return 0
    if bench is None:  # pragma: no cover - pyperf returns None only in worker mode
        raise RuntimeError("pyperf returned no benchmark in the master process")
    per_image = list(bench.get_values())
    runs = bench.get_runs()
    meta = bench.get_metadata()
    row = ok_row(
        [1.0 / v for v in per_image],
        [v * len(images) for v in per_image],
        warmup_iterations=len(runs[-1].warmups) if runs and runs[-1].warmups else 0,
        num_images=len(images),
        pyperf_processes=sum(1 for r in runs if r.values),
        peak_rss_mb=_peak_rss_mb(meta),
        thread_settings=thread_settings,
        **preflight,
    )
    write_json_atomic(row_out, row)
    return 0


def _peak_rss_mb(meta: dict[str, Any]) -> float | None:
    value = meta.get("mem_max_rss")
    if value is None:
        import resource

        # Children are pyperf workers; their max RSS is what the measurement used.
        value = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return float(value) / 2**20


def _error_row(stage: str, exc: BaseException) -> dict[str, Any]:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return non_ok_row(
        "error",
        f"{stage}: {type(exc).__name__}: {exc}",
        traceback="".join(tb)[-4000:],
    )


if __name__ == "__main__":
    sys.exit(main())
