"""Micro regime job: one library, one shard of transforms, one result file.

Decodes the selected images once with the library's own decoder into a job-local cache, then acts
as pyperf's manager: it starts rounds of pyperf worker processes (``micro_worker.py``), each
timing the shard's remaining transforms one at a time (only the measured transform is
constructed), merges their runs per transform, and starts another round only for rows whose
relative 95 % CI is still above the target (``augbench.measuring.stopping``), between
``--min-processes`` and ``--processes`` rounds. A crash or timeout costs only the transform being
measured.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.measuring import media
from augbench.measuring.engines import cli, skeleton
from augbench.measuring.stopping import StoppingRule, relative_ci
from augbench.policy import MICRO_THREADS, RELATIVE_CI_TARGET
from augbench.results import non_ok_row, ok_row
from augbench.workload import adapters, catalog

WORKER = Path(__file__).with_name("micro_worker.py")
# What a worker writes per transform into its round's folder: pyperf's run, and the rest of the row.
PYPERF_SUFFIX = ".pyperf.json"
INFO_SUFFIX = ".info.json"
DECODE_SUFFIX = ".decode.json"  # beside the media cache: what decoding it took (round 1)


@dataclass(frozen=True, kw_only=True)
class MicroSettings(cli.ShardSettings, cli.LibraryFlag, cli.ValuesFlag, cli.WarmupsFlag):
    """A micro job's settings: the shared flags (values and warm-ups per pyperf process) and
    micro's own."""

    channels: int
    layout: str
    processes: int
    min_processes: int
    transform_timeout: float
    max_megapixels: float


def parse_args(argv: list[str] | None = None) -> MicroSettings:
    # --values and --warmups are per pyperf worker process (one process per round).
    p = cli.engine_parser(__doc__, values=True, warmups=True)
    p.add_argument(
        "--channels", type=int, default=3, choices=catalog.CHANNEL_SCENARIOS,
        help="9 stacks each RGB image to 9 channels (the 9-channel scenario)",
    )  # fmt: skip
    p.add_argument(
        "--layout", default="native", choices=["native", "contiguous"],
        help="input memory layout: the decoder's own (native) or a row-major copy (contiguous)",
    )  # fmt: skip
    p.add_argument(
        "--processes", type=int, default=3,
        help="most pyperf worker processes per transform (rounds); fewer once the CI target holds",
    )  # fmt: skip
    p.add_argument("--min-processes", type=int, default=1)
    p.add_argument("--transform-timeout", type=float, default=1800.0)
    p.add_argument(
        "--max-megapixels", type=float, default=0.0,
        help="pixel budget of the images a job holds (0: none); fewer images where it binds",
    )  # fmt: skip
    args = p.parse_args(argv)
    return cli.settings_from(
        MicroSettings, args, transforms=cli.transform_names(args.transforms, catalog.get)
    )


def apply_pixel_budget(settings: MicroSettings) -> tuple[MicroSettings, dict[str, Any]]:
    """Hold at most ``--max-megapixels`` of decoded pixels: the first images of the manifest
    that fit (at least one). The settings with ``num_images`` lowered where the budget binds, so
    the workers, the row's dataset record and the cost model all see the images really
    measured, and the budget's record."""
    configured = settings.num_images
    held = media.images_within_pixel_budget(settings.manifest, configured, settings.max_megapixels)
    record = {
        "max_megapixels": settings.max_megapixels or None,
        "configured_images": configured,
        "images": held,
        "binding": held < configured,
    }
    return dataclasses.replace(settings, num_images=held), record


def worker_command(
    settings: MicroSettings,
    transforms: list[str],
    cache: Path,
    out: Path,
    progress: Path,
    policy_json: str | None,
    loops: dict[str, int],
) -> list[str]:
    """One pyperf worker process timing ``transforms`` in order (micro_worker.py). pyperf's
    ``--loops 1`` is replaced per transform by ``loops`` (later rounds) or the preflight."""
    cmd = [
        sys.executable, str(WORKER),
        "--worker", "--loops", "1",
        "--warmups", str(settings.warmups), "--values", str(settings.values), "--quiet",
        "--library", settings.library, "--transforms", ",".join(transforms), "--cache", str(cache),
        "--out-dir", str(out), "--progress", str(progress), "--layout", settings.layout,
        "--loops-by-transform", json.dumps(loops),
    ]  # fmt: skip
    if policy_json is not None:  # the first round: preflight, and decode into the cache
        cmd += ["--policy", policy_json, "--manifest", str(settings.manifest)]
        cmd += ["--num-images", str(settings.num_images), "--channels", str(settings.channels)]
    return cmd


def run_round(
    settings: MicroSettings,
    transforms: list[str],
    cache: Path,
    out: Path,
    policy_json: str | None,
    loops: dict[str, int],
) -> dict[str, dict[str, Any]]:
    """One round: every transform of ``transforms`` timed by pyperf in one worker process.

    Returns transform -> info (``status: timed`` with the run in ``<out>/<t>.pyperf.json``, or a
    non-ok row). A process that dies (a crash in native code, the transform timeout) costs only
    the transform it was measuring (named by the progress file): the rest get a new process."""
    out.mkdir(parents=True, exist_ok=True)
    progress = out / "progress"
    infos: dict[str, dict[str, Any]] = {}
    env = dict(os.environ)
    env.update(MICRO_THREADS.environment())
    pending = list(transforms)
    while pending:
        progress.write_text("")
        cmd = worker_command(settings, pending, cache, out, progress, policy_json, loops)
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        timed_out = _wait(proc, progress, settings.transform_timeout)
        output = proc.stdout.read() if proc.stdout else ""
        sys.stderr.write(output[-4000:])
        for name in pending:
            info_path = out / f"{name}{INFO_SUFFIX}"
            if info_path.exists():
                infos[name] = json.loads(info_path.read_text())
        pending = [t for t in pending if t not in infos]
        if not pending:
            break
        current = progress.read_text().strip()
        if timed_out:
            reason = (
                f"measurement exceeded the {settings.transform_timeout:.0f} s transform timeout"
            )
        else:
            reason = f"measuring process exited with code {proc.returncode} without a result"
        tail = output.strip().splitlines()[-15:]
        # Died before its first transform (set-up): every pending row shares the reason.
        for name in [current] if current else pending:
            infos[name] = non_ok_row("error", reason, stderr_tail="\n".join(tail))
        pending = [t for t in pending if t not in infos]
    return infos


def _wait(proc: subprocess.Popen[str], progress: Path, timeout: float) -> bool:
    """Wait for the worker; kill it when one transform (progress file unchanged) has run longer
    than ``timeout`` seconds. True when it was killed."""
    current, since = "", time.monotonic()
    while True:
        try:
            proc.wait(timeout=1.0)
            return False
        except subprocess.TimeoutExpired:
            pass
        try:
            name = progress.read_text()
        except OSError:
            name = current
        if name != current:
            current, since = name, time.monotonic()
        elif time.monotonic() - since > timeout:
            proc.kill()
            proc.wait()
            return True


def measure_transforms(
    settings: MicroSettings,
    transforms: list[str],
    cache: Path,
    workdir: Path,
    policy_json: str,
    on_row: Callable[[str, dict[str, Any]], None],
    round_seconds: list[float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Rounds of pyperf worker processes until every row is done: at least ``min_processes`` and
    at most ``processes`` rounds; a row leaves once its relative 95 % CI reaches the target
    (augbench.measuring.stopping, the same rule as every engine). Round 1 also preflights each
    transform: rows early-stopped, unsupported or in error there are final. ``on_row`` sees each
    final row; ``round_seconds`` (where given) gets each round's wall time, its worker processes'
    start to their end."""
    rule = StoppingRule(
        min_values=max(settings.min_processes, 1) * settings.values,
        max_values=max(settings.processes, settings.min_processes, 1) * settings.values,
        block=settings.values,  # looked at once per process, never within one
    )
    benches: dict[str, Any] = {}
    firsts: dict[str, dict[str, Any]] = {}
    totals: dict[str, dict[str, float]] = {}
    rows: dict[str, dict[str, Any]] = {}
    loops: dict[str, int] = {}
    pending = list(transforms)
    round_index = 0
    while pending:
        out = workdir / f"round{round_index}"
        first_round = round_index == 0
        started = time.monotonic()
        infos = run_round(
            settings, pending, cache, out, policy_json if first_round else None, loops
        )
        if round_seconds is not None:
            round_seconds.append(time.monotonic() - started)
        still = []
        for name in pending:
            info = infos[name]
            if info.get("status") == "timed":
                # Imported only here: a job whose library does not import (e.g. in the
                # driver's interpreter, which has no pyperf either) still writes its error rows.
                import pyperf

                bench = pyperf.Benchmark.load(str(out / f"{name}{PYPERF_SUFFIX}"))
                if name in benches:
                    benches[name].add_runs(bench)
                else:  # every later round times it with the loops the first one chose
                    benches[name], firsts[name], loops[name] = bench, info, info["loops"]
                total = totals.setdefault(name, dict.fromkeys(SUMMED, 0.0))
                total["peak_rss_mb"] = max(total["peak_rss_mb"], info["peak_rss_mb"])
                for key in SUMMED[1:]:  # every pyperf process's own count
                    total[key] += info.get(key, 0)
                values = [1.0 / v for v in benches[name].get_values()]
                if not rule.done(values, process_throughputs(benches[name])):
                    still.append(name)
                    continue
                rows[name] = _ok_row(benches[name], firsts[name], totals[name], rule)
            elif name in benches:  # a later process failed: the runs measured so far stand
                rows[name] = _ok_row(benches[name], firsts[name], totals[name], rule)
                rows[name]["later_process_failure"] = info.get("reason")
            else:
                rows[name] = info
            on_row(name, rows[name])
        pending = still
        round_index += 1
    return rows


# Per-row totals over the pyperf processes: the peak is the largest, the rest are summed.
SUMMED: tuple[str, ...] = (
    "peak_rss_mb", "process_seconds", "worker_seconds", "minor_faults", "faulted_images",
)  # fmt: skip


def process_throughputs(bench: Any) -> list[list[float]]:
    """The row's throughputs split by the pyperf process that measured them (its interval is a
    bootstrap over processes where there are enough, augbench.intervals)."""
    return [[1.0 / v for v in run.values] for run in bench.get_runs() if run.values]


def _ok_row(
    bench: Any, first: dict[str, Any], totals: dict[str, float], rule: StoppingRule
) -> dict[str, Any]:
    per_image = list(bench.get_values())
    runs = bench.get_runs()
    num_images = int(bench.get_metadata().get("inner_loops", 1))
    throughputs = [1.0 / v for v in per_image]
    groups = process_throughputs(bench)
    reached = relative_ci(throughputs, groups)
    kept = {k: v for k, v in first.items() if k not in ("status", *totals)}
    return ok_row(
        throughputs,
        [v * num_images for v in per_image],
        warmup_iterations=len(runs[-1].warmups) if runs and runs[-1].warmups else 0,
        groups=groups,
        num_images=num_images,
        pyperf_processes=sum(1 for r in runs if r.values),
        peak_rss_mb=totals["peak_rss_mb"],
        wall_seconds=totals["process_seconds"],
        # Its seconds in the worker processes, construction, preflight and clean-up included.
        worker_seconds=totals["worker_seconds"],
        # Minor page faults per image over every timed call of every process (warm-ups
        # included): above the output's own pages, the allocator gives memory back and faults
        # it in again (augbench.measuring.allocator).
        minor_faults_per_image=totals["minor_faults"] / totals["faulted_images"]
        if totals["faulted_images"]
        else None,
        # Why repetition stopped: the row's CI reached the target, or it ran out of processes.
        stopped_by="ci_target" if reached is not None and reached <= rule.target else "max_values",
        min_values=rule.min_values,
        max_values=rule.max_values,
        **kept,
    )


def micro_variant(settings: MicroSettings) -> str:
    """'' for RGB on native inputs (the default rows), else e.g. 'channels9', 'contiguous-input'."""
    parts = [f"channels{settings.channels}"] if settings.channels != 3 else []
    if settings.layout != "native":
        parts.append(f"{settings.layout}-input")
    return "-".join(parts)


def main(argv: list[str] | None = None) -> int:
    settings, pixel_budget = apply_pixel_budget(parse_args(argv))
    from tqdm import tqdm

    adapter = adapters.get(settings.library)
    transforms = list(settings.transforms)
    policy = settings.policy
    policy_json = json.dumps(policy.to_dict())

    decode_info: dict[str, Any] = {}
    # What every measuring process is started with; the worker adds what it then applied to
    # OpenCV/PyTorch after importing them.
    thread_settings: dict[str, Any] = skeleton.thread_record(MICRO_THREADS)
    bar = tqdm(
        total=len(transforms), desc=f"micro | {settings.library} | {settings.shard}", unit="row"
    )
    job = skeleton.Job(settings, adapter, "micro", "memory", f"micro | {settings.library}")
    log = job.row_log(bar)

    def channel_support(name: str) -> bool:
        mapping = adapter.mappings.get(name)
        return mapping is not None and (settings.channels == 3 or mapping.multichannel)

    def report(name: str, row: dict[str, Any]) -> None:
        row.setdefault("mapping", adapter.mapping_call(name))
        if "thread_settings" in row:
            thread_settings.update(row.pop("thread_settings"))
        bar.update(1)
        bar.set_postfix_str(name)
        log.add(name, row)

    measurable = []
    for name in transforms:
        if not adapter.supports(name):
            report(name, non_ok_row("unsupported", adapter.unsupported_reason(name)))
        elif not channel_support(name):
            report(name, non_ok_row(
                "unsupported",
                f"{settings.library} has no {settings.channels}-channel implementation of {name}",
            ))  # fmt: skip
        else:
            measurable.append(name)
    round_seconds: list[float] = []
    with tempfile.TemporaryDirectory(prefix=f"micro-{settings.library}-") as tmp:
        workdir = Path(tmp)
        cache = workdir / "media.pkl"
        if measurable:
            # The first worker imports the library and decodes (the job imports neither): a
            # library that does not import gives every row the error, from that worker.
            measure_transforms(
                settings, measurable, cache, workdir, policy_json, report, round_seconds
            )
        if cache.with_suffix(DECODE_SUFFIX).exists():
            decode_info = json.loads(cache.with_suffix(DECODE_SUFFIX).read_text())
    bar.close()
    return job.finish(
        {name: log.rows[name] for name in transforms},  # the configured order
        thread_settings,
        params={
            "processes": settings.processes,
            "min_processes": settings.min_processes,
            "relative_ci_target": RELATIVE_CI_TARGET,
            "values": settings.values,
            "warmups": settings.warmups,
            "loops": "per row: at least MICRO_MIN_VALUE_SECONDS per value",
            "timer_backend": "pyperf",
            "slow_transform_policy": policy.to_dict(),
            "shard": settings.shard,
            "channels": settings.channels,
            "layout": settings.layout,
            "transforms": transforms,
            "pixel_budget": pixel_budget,
        },
        extra={
            "decode": decode_info,
            # The job's time in its rounds of worker processes; the rest of it (this process's
            # start and imports, its launch, the result file) is paid once per job.
            "job_timing": {"round_seconds": [round(r, 4) for r in round_seconds]},
            "channels": settings.channels,
            "layout": settings.layout,
            # Separates 9-channel rows from RGB rows, and contiguous-input rows from native ones,
            # in the tidy table and the speedups.
            **({"variant": variant} if (variant := micro_variant(settings)) else {}),
        },
    )


if __name__ == "__main__":
    sys.exit(main())
