"""Decode-only job (the decoders table): ``python -m augbench.measuring.engines.decoders``.

Each configured JPEG decoder (augbench.workload.decoders) decodes the job's images (the first
``--num-images`` of the staged dataset, each read from its file) in one thread, nothing else, in a
child forked from the job's process after every decoder was imported, so no decoder's row depends
on which ran before it. Per decoder: one untimed pass over the images (a file it cannot decode
makes the row an ``error`` with the decoder's own message), ``--warmups`` untimed passes more, then
timed values of whole passes (as many passes per value as make it last
policy.MICRO_MIN_VALUE_SECONDS) until the interval of the median is within
policy.RELATIVE_CI_TARGET (augbench.measuring.stopping), between ``--min-values`` and
``--max-values``. Every image's output is touched (its last value read) before the next file is
read, so the clock stops after each output exists. One thread (augbench.policy.MICRO_THREADS, set
before any numeric import): a row's images per second are per core. A decoder whose package or
system library this env lacks is a ``skipped`` row naming what is missing.
"""

from __future__ import annotations

from augbench.policy import MICRO_THREADS

MICRO_THREADS.apply_environment()  # before numpy/torch/cv2 load (also set by the rule's shell)

import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from augbench.measuring import media, quietness  # noqa: E402
from augbench.measuring.engines import cli, skeleton  # noqa: E402
from augbench.measuring.engines.common import job_metadata  # noqa: E402
from augbench.measuring.stopping import StoppingRule, passes_per_value  # noqa: E402
from augbench.results import non_ok_row, ok_row  # noqa: E402
from augbench.workload import adapters, decoders  # noqa: E402

Row = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Settings(cli.CommonSettings, cli.LibraryFlag, cli.WarmupsFlag):
    """The job's settings: the shared flags and the decoders, each name checked declared."""

    decoders: tuple[str, ...]
    min_values: int
    max_values: int


def parse_args(argv: list[str] | None = None) -> Settings:
    p = cli.engine_parser(__doc__, transforms=False, shard=False, policy=False, warmups=True)
    p.add_argument(
        "--decoders", required=True,
        help="comma-separated decoder names (augbench.workload.decoders): "
        + ", ".join(decoders.NAMES),
    )  # fmt: skip
    p.add_argument("--min-values", type=int, default=decoders.MIN_VALUES)
    p.add_argument("--max-values", type=int, default=decoders.MAX_VALUES)
    args = p.parse_args(argv)
    names = cli.comma_list(args.decoders)
    try:
        for name in names:
            decoders.get(name)
    except decoders.UnknownDecoder as exc:
        p.error(str(exc))
    if not names:
        p.error("--decoders names no decoder")
    if args.min_values < 1 or args.max_values < args.min_values or args.warmups < 0:
        p.error("need 1 <= --min-values <= --max-values and --warmups >= 0")
    return cli.settings_from(Settings, args, decoders=names)


def decode_pass(function: Callable[[Path], Any], files: list[Path], layout: str) -> float:
    """Seconds to decode every file once, each output touched before the next file is read."""
    touch = decoders.touch
    start = time.perf_counter()
    for path in files:
        touch(function(path), layout)
    return time.perf_counter() - start


def measure(
    decoder: decoders.Decoder, function: Callable[[Path], Any], files: list[Path],
    settings: Settings,
) -> Row:  # fmt: skip
    """One decoder's row: untimed passes, then timed values until the stopping rule ends them."""
    layout = decoders.layout_of(decoder, settings.library)
    start = time.perf_counter()
    try:  # every file once, untimed: a file it cannot decode ends the row here
        for path in files:
            decoders.touch(decoders.decode_file(function, decoder, path), layout)
    except decoders.DecodeError as exc:
        return non_ok_row("error", str(exc))
    seconds = time.perf_counter() - start
    for _ in range(settings.warmups):  # the last warm pass sizes the values
        seconds = decode_pass(function, files, layout)
    passes = passes_per_value(seconds / len(files), len(files))
    rule = StoppingRule(settings.min_values, settings.max_values)
    throughputs: list[float] = []
    times: list[float] = []
    while not throughputs or not rule.done(throughputs):
        seconds = sum(decode_pass(function, files, layout) for _ in range(passes))
        throughputs.append(passes * len(files) / seconds)
        times.append(seconds)
    return ok_row(
        throughputs,
        times,
        warmup_iterations=1 + settings.warmups,
        num_images=len(files),
        passes_per_value=passes,
        stopped_by="num_runs" if len(throughputs) >= settings.max_values else "relative_ci",
        output_layout=decoders.DECODED_LAYOUTS[layout],
    )


def row_of(
    decoder: decoders.Decoder, function: Callable[[Path], Any] | Row, files: list[Path],
    settings: Settings,
) -> Row:  # fmt: skip
    """The row of a loaded decoder (measured in a fresh fork), or its not-ok row as loaded."""
    if isinstance(function, dict):
        return function
    return skeleton.in_fresh_fork(lambda: measure(decoder, function, files, settings), "decoder")


def load_all(settings: Settings, adapter: adapters.Adapter) -> dict[str, Callable[..., Any] | Row]:
    """Every configured decoder's decode function, or the row that says why it cannot run: the
    library's set-up failed (every row), or the decoder is unavailable here (``skipped``)."""
    failure = skeleton.import_failure(adapter)
    loaded: dict[str, Callable[..., Any] | Row] = {}
    for name in settings.decoders:
        decoder = decoders.get(name)
        if failure is not None:
            loaded[name] = non_ok_row(*failure)
            continue
        try:
            loaded[name] = decoder.load(settings.library)
        except decoders.Unavailable as exc:
            loaded[name] = non_ok_row("skipped", str(exc))
    return loaded


def fields(decoder: decoders.Decoder, library: str) -> dict[str, Any]:
    """What every row of a decoder records: its name, call, package version and threads."""
    call = adapters.get(library).decoder if decoder.name == decoders.NATIVE else decoder.call
    return {
        "decoder": decoder.name,
        "decoder_call": call,
        "decoder_version": decoder.version(),
        "scope": decoders.SCOPE,
        "threads": 1,
    }


def main(argv: list[str] | None = None) -> int:
    started = quietness.job_start()
    settings = parse_args(argv)
    adapter = adapters.get(settings.library)
    files = media.select_files(settings.manifest, settings.num_images)
    loaded = load_all(settings, adapter)
    thread_settings = MICRO_THREADS.apply_runtime()  # the decoders' libraries are imported now
    log = skeleton.RowLog(f"decoders | {settings.library}")
    for name, function in loaded.items():
        decoder = decoders.get(name)
        row = row_of(decoder, function, files, settings)
        row.update(fields(decoder, settings.library))
        log.add(name, row)
    metadata = job_metadata(
        adapter=adapter,
        regime=decoders.REGIME,
        scope=decoders.SCOPE,
        machine=settings.machine,
        manifest=settings.manifest,
        num_images=settings.num_images,
        benchmark_params={
            "num_images": settings.num_images,
            "decoders": list(settings.decoders),
            "min_values": settings.min_values,
            "max_values": settings.max_values,
            "warmups": settings.warmups,
            "timing": "one thread; per value whole passes over the images, each file read and "
            "decoded, its output touched; each decoder in a fresh fork",
        },
        thread_settings=skeleton.thread_record(MICRO_THREADS) | {"applied": thread_settings},
        env_marker=settings.env_marker,
    )
    return skeleton.write_result(settings.output, metadata, log.rows, started=started)


if __name__ == "__main__":
    sys.exit(main())
