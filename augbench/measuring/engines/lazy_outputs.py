"""Lazy-output diagnostic (not a benchmark): what each transform returns, and what materializing it
costs. One library per run, in that library's env, on its native inputs, one thread.

Per transform it records the output's type, dtype, shape, strides, contiguity and memory format
(augbench.workload.layout), whether it shares memory with the input or is a view, whether two calls
on one input return the same object, whether the materialization rule copies it, and the per-image
time of the call and of the materialization after it (together: the timed scope of the micro
regime), each timed per image inside the same passes. Its numbers are diagnostic: few repetitions,
never result rows.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.policy import MICRO_THREADS

MICRO_THREADS.apply_environment()  # before numpy/torch/cv2 load (also set by the rule's shell)

from augbench.measuring import media  # noqa: E402
from augbench.measuring.engines import cli, skeleton  # noqa: E402
from augbench.measuring.stopping import LAZY_WARMUP_PASSES  # noqa: E402
from augbench.results import system_info  # noqa: E402
from augbench.workload import adapters, catalog, layout  # noqa: E402

# A row is flagged when materialization is over this share of call + materialize.
MATERIALIZE_SHARE_FLAG = 0.5


@dataclass(frozen=True, kw_only=True)
class LazyOutputsSettings(cli.CommonSettings, cli.LibraryFlag, cli.TransformsFlag):
    """The diagnostic's settings: the shared flags it takes (its transforms unchecked: a name it
    cannot probe is a row's reason) and its timed passes."""

    repeats: int


def parse_args(argv: list[str] | None = None) -> LazyOutputsSettings:
    p = cli.engine_parser(__doc__, shard=False, policy=False, num_images=10)
    p.add_argument("--repeats", type=int, default=3, help="timed passes (after one warm-up)")
    return cli.settings_from(LazyOutputsSettings, p.parse_args(argv))


def _pass_seconds(transform: Any, images: list[Any], materialize: Any) -> tuple[float, float]:
    """Per-image seconds of the call and of the materialization after it, timed separately
    inside one pass (so machine noise between passes cannot move time from one to the other)."""
    call = finish = 0.0
    clock = time.perf_counter
    for image in images:
        t0 = clock()
        out = transform(image)
        t1 = clock()
        materialize(out, image)
        t2 = clock()
        call += t1 - t0
        finish += t2 - t1
    return call / len(images), finish / len(images)


def probe(adapter: adapters.Adapter, name: str, images: list[Any], repeats: int) -> dict[str, Any]:
    spec = catalog.get(name)
    transform = adapter.build(name, spec.params)
    first = transform(images[0])
    second = transform(images[0])
    done = adapter.materialize(first, images[0])
    row: dict[str, Any] = {
        "status": "ok",
        "output": layout.describe(first),
        "shares_input_memory": layout.shares_memory(first, images[0]),
        "returns_input": first is images[0],
        "same_object_twice": first is second,
        "materialize_copies": done is not first,
        "materialized": layout.describe(done),
        "input": layout.describe(images[0]),
    }

    for _ in range(LAZY_WARMUP_PASSES):
        _pass_seconds(transform, images, adapter.materialize)
    passes = [_pass_seconds(transform, images, adapter.materialize) for _ in range(repeats)]
    call_s = statistics.median(c for c, _ in passes)
    mat_s = statistics.median(m for _, m in passes)
    full_s = call_s + mat_s
    share = mat_s / full_s if full_s > 0 else 0.0
    row.update(
        call_us=call_s * 1e6,
        materialize_us=mat_s * 1e6,
        call_materialize_us=full_s * 1e6,
        call_img_s=1.0 / call_s if call_s > 0 else None,
        call_materialize_img_s=1.0 / full_s if full_s > 0 else None,
        materialize_share=share,
        materialize_dominates=share > MATERIALIZE_SHARE_FLAG,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    from tqdm import tqdm

    adapter = adapters.get(settings.library)
    transforms = list(settings.transforms)
    start = time.perf_counter()
    adapter.import_library()
    thread_settings = MICRO_THREADS.apply_runtime()
    with tempfile.TemporaryDirectory(prefix=f"lazy-{settings.library}-") as tmp:
        cache = Path(tmp) / "media.pkl"
        files = media.select_files(settings.manifest, settings.num_images)
        media.build_cache(adapter, files, cache)
        images = media.load_cache(adapter, cache)

    def row_of(name: str) -> dict[str, Any]:
        if not adapter.supports(name):
            return {"status": "unsupported", "reason": adapter.unsupported_reason(name)}
        try:
            return probe(adapter, name, images, settings.repeats)
        except Exception as exc:  # one failing transform never loses the other rows
            return {
                "status": "error",
                "reason": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-2000:],
            }

    # A diagnostic's rows carry no throughput: the bar names each one, no status lines.
    bar = tqdm(transforms, desc=f"lazy outputs | {settings.library}", unit="transform")
    rows = skeleton.each_row(bar, row_of, skeleton.RowLog(None, bar))
    metadata = {
        "kind": "lazy_outputs diagnostic (not a benchmark result)",
        "machine": settings.machine,
        "library": settings.library,
        "library_versions": adapter.versions(),
        "system_info": system_info(),
        "thread_settings": thread_settings,
        "input_layout": "native",
        "decoder": adapter.decoder,
        "num_images": len(images),
        "repeats": settings.repeats,
        "materialize_share_flag": MATERIALIZE_SHARE_FLAG,
        "seconds": time.perf_counter() - start,
    }
    return skeleton.write_result(settings.output, metadata, rows, versioned=False)


if __name__ == "__main__":
    sys.exit(main())
