"""Micro regime job: one library, one shard of transforms, one result file.

Decodes the selected images once with the library's own decoder into a job-local cache, then
measures each transform in its own process (``micro_worker.py``, pyperf) so that only the measured
transform is ever constructed and one crash cannot take the other rows with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from augbench import adapters, catalog, media
from augbench.engines.common import job_metadata
from augbench.policy import INHERITED_ENV_VARS, MICRO_THREADS, SlowTransformPolicy
from augbench.results import non_ok_row, result_file, status_line, write_json_atomic

WORKER = Path(__file__).with_name("micro_worker.py")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--library", required=True)
    p.add_argument("--transforms", required=True, help="comma-separated catalog names")
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--num-images", required=True, type=int)
    p.add_argument(
        "--channels", type=int, default=3, choices=catalog.CHANNEL_SCENARIOS,
        help="9 stacks each RGB image to 9 channels (the 9-channel scenario)",
    )  # fmt: skip
    p.add_argument(
        "--layout", default="native", choices=["native", "contiguous"],
        help="input memory layout: the decoder's own (native) or a row-major copy (contiguous)",
    )  # fmt: skip
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--machine", required=True)
    p.add_argument("--shard", default="")
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--values", type=int, default=3)
    p.add_argument("--warmups", type=int, default=1)
    p.add_argument("--policy", default="{}", help="SlowTransformPolicy fields as JSON")
    p.add_argument("--transform-timeout", type=float, default=1800.0)
    p.add_argument("--env-marker", type=Path, default=None)
    return p.parse_args(argv)


def measure_transform(
    args: argparse.Namespace, transform: str, cache: Path, workdir: Path, policy_json: str
) -> dict[str, Any]:
    row_out = workdir / f"{transform}.row.json"
    cmd = [
        sys.executable,
        str(WORKER),
        "--library", args.library,
        "--transform", transform,
        "--cache", str(cache),
        "--row-out", str(row_out),
        "--policy", policy_json,
        "--layout", args.layout,
        "--processes", str(args.processes),
        "--values", str(args.values),
        "--warmups", str(args.warmups),
        "--loops", "1",
        "--inherit-environ", ",".join(INHERITED_ENV_VARS),
        "--quiet",
    ]  # fmt: skip
    env = dict(os.environ)
    env.update(MICRO_THREADS.environment())
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=args.transform_timeout
        )
    except subprocess.TimeoutExpired:
        return non_ok_row(
            "error", f"measurement exceeded the {args.transform_timeout:.0f} s transform timeout"
        )
    wall = time.perf_counter() - start
    sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-4000:])
    if row_out.exists():
        row = json.loads(row_out.read_text())
        row["wall_seconds"] = wall
        return row
    tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-15:]
    return non_ok_row(
        "error",
        f"measuring process exited with code {proc.returncode} without a result",
        stderr_tail="\n".join(tail),
    )


def micro_variant(args: argparse.Namespace) -> str:
    """'' for RGB on native inputs (the default rows), else e.g. 'channels9', 'contiguous-input'."""
    parts = [f"channels{args.channels}"] if args.channels != 3 else []
    if args.layout != "native":
        parts.append(f"{args.layout}-input")
    return "-".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tqdm import tqdm

    adapter = adapters.get(args.library)
    transforms = [t for t in args.transforms.split(",") if t]
    for name in transforms:
        catalog.get(name)  # unknown names fail the job loudly, before any measuring
    policy = SlowTransformPolicy(**json.loads(args.policy))
    policy_json = json.dumps(policy.to_dict())

    results: dict[str, dict[str, Any]] = {}
    decode_info: dict[str, Any] = {}
    # What every measuring process is started with; the worker adds what it then applied to
    # OpenCV/PyTorch after importing them.
    thread_settings: dict[str, Any] = {
        "policy": MICRO_THREADS.to_dict(),
        "environment": MICRO_THREADS.environment(),
    }
    import_error: str | None = None
    try:
        adapter.import_library()
    except Exception as exc:  # the library is broken in this env: every row says so
        import_error = f"import failed: {type(exc).__name__}: {exc}"

    def channel_support(name: str) -> bool:
        mapping = adapter.mappings.get(name)
        return mapping is not None and (args.channels == 3 or mapping.multichannel)

    with tempfile.TemporaryDirectory(prefix=f"micro-{args.library}-") as tmp:
        workdir = Path(tmp)
        cache = workdir / "media.pkl"
        if import_error is None and any(channel_support(t) for t in transforms):
            files = media.select_files(args.manifest, args.num_images)
            decode_info = media.build_cache(adapter, files, cache, channels=args.channels)
        bar = tqdm(transforms, desc=f"micro | {args.library} | {args.shard}", unit="transform")
        for name in bar:
            bar.set_postfix_str(name)
            if import_error is not None:
                results[name] = non_ok_row("error", import_error)
            elif not adapter.supports(name):
                results[name] = non_ok_row("unsupported", adapter.unsupported_reason(name))
            elif not channel_support(name):
                results[name] = non_ok_row(
                    "unsupported",
                    f"{args.library} has no {args.channels}-channel implementation of {name}",
                )
            else:
                results[name] = measure_transform(args, name, cache, workdir, policy_json)
            row = results[name]
            row.setdefault("mapping", adapter.mapping_call(name))
            if "thread_settings" in row:
                thread_settings.update(row.pop("thread_settings"))
            tqdm.write(status_line(f"micro | {args.library}", name, row), file=sys.stderr)

    metadata = job_metadata(
        adapter=adapter,
        regime="micro",
        scope="memory",
        machine=args.machine,
        manifest=args.manifest,
        num_images=args.num_images,
        benchmark_params={
            "num_images": args.num_images,
            "processes": args.processes,
            "values": args.values,
            "warmups": args.warmups,
            "loops": 1,
            "timer_backend": "pyperf",
            "slow_transform_policy": policy.to_dict(),
            "shard": args.shard,
            "channels": args.channels,
            "layout": args.layout,
            "transforms": transforms,
        },
        thread_settings=thread_settings,
        env_marker=args.env_marker,
        extra={
            "decode": decode_info,
            "channels": args.channels,
            "layout": args.layout,
            # Separates 9-channel rows from RGB rows, and contiguous-input rows from native ones,
            # in the tidy table and the speedups.
            **({"variant": variant} if (variant := micro_variant(args)) else {}),
        },
    )
    write_json_atomic(args.output, result_file(metadata, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
