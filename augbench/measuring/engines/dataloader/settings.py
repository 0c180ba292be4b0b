"""The cpu_dataloader engine's command line: one setting (``--scope``, ``--workers``,
``--output``) or several measured in turn (``--settings``, ``--outputs``), parsed into its
settings record (:class:`DataLoaderSettings`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import augbench.measuring.engines.dataloader as package
from augbench.measuring.engines import cli
from augbench.measuring.engines.dataloader.timing import EpochSettings
from augbench.policy import DATALOADER_MIN_RUNS
from augbench.workload import catalog, decoders, loaders

REGIME = "cpu_dataloader"
SCOPES: tuple[str, ...] = ("memory", "decode")


@dataclass(frozen=True, kw_only=True)
class DataLoaderSettings(cli.ShardSettings, cli.LibraryFlag, cli.PipelinesFlag, EpochSettings):
    """One cpu_dataloader setting and how it is measured. With ``--settings``, ``scope``,
    ``workers`` and ``output`` are those of the first (scope, workers) of ``setting_list``; each
    setting is measured with a copy holding its own."""

    scope: str
    # What makes the samples in parallel (augbench.workload.loaders): worker processes or threads.
    loader: str
    # What decodes the decode scope's files (augbench.workload.decoders): native, the library's own.
    decoder: str
    # The (scope, workers, decoder, loader) of each setting of a --settings job.
    setting_list: tuple[tuple[str, int, str, str], ...]
    outputs: tuple[Path, ...] = field(metadata={cli.FROM_FLAG: tuple})
    processes: int
    window_seconds: float
    # A later process of a --processes job: its request (the setting, each row's window) and
    # where it writes its rows.
    process_request: Path | None
    process_output: Path | None
    cap_workers_at_cores: bool
    baseline_runs: int
    # The command line a later process is started with.
    argv: tuple[str, ...]


def parse_args(argv: list[str] | None = None) -> DataLoaderSettings:
    # The regime's description (augbench.measuring.engines.dataloader) is the --help text.
    p = cli.engine_parser(
        package.__doc__,
        pipelines_run="that pipeline as its recipe",
        output_required=False,  # --outputs stands instead with --settings
    )
    p.add_argument("--scope", choices=SCOPES)
    p.add_argument("--workers", type=int)
    p.add_argument(
        "--loader",
        choices=loaders.NAMES,
        default=None,
        help="what makes the samples in parallel (augbench.workload.loaders; default process): "
        "worker processes of a torch DataLoader, or threads of this process (thread, spdl; decode "
        "scope only)",
    )
    p.add_argument(
        "--decoder",
        choices=decoders.NAMES,
        default=None,
        help="what decodes the files (augbench.workload.decoders; default native: the library's "
        "own decode), its output converted to the library's input inside the clock; decode scope "
        "only",
    )
    p.add_argument(
        "--settings",
        default="",
        help="comma-separated <scope>-w<workers>[-<decoder>][-<loader>] settings measured in turn "
        "(instead of --scope, --workers, --decoder and --loader); --outputs gives one result file "
        "per setting, in the same order",
    )
    p.add_argument("--outputs", nargs="+", type=Path, default=[])
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
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="fresh processes that measure every row, one after another (the first is the job's "
        "own); each gives the row one value, the unit of its interval",
    )
    p.add_argument(
        "--window-seconds",
        type=float,
        default=0.0,
        help="size each timed epoch to last about this long at the preflight's rate (at least "
        "--batches-per-run batches); 0: --batches-per-run batches",
    )
    # A job with --processes starts itself again with these two for each later process.
    p.add_argument("--process-request", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--process-output", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--persistent-workers", type=cli.as_bool, default=True)
    p.add_argument("--cap-workers-at-cores", type=cli.as_bool, default=True)
    p.add_argument("--batch-timeout", type=float, default=300.0)
    p.add_argument(
        "--baseline-runs",
        type=int,
        default=2,
        help="most timed epochs of the bare loop, the decode floor and the memory-scope companion "
        "(per recipe, interleaved) and of the transport baseline (per job); 0 measures none",
    )
    args = p.parse_args(argv)
    try:
        setting_list = parse_settings(args.settings) if args.settings else []
    except argparse.ArgumentTypeError as exc:
        p.error(f"--settings: {exc}")
    if setting_list:
        if len(args.outputs) != len(setting_list):
            p.error(
                f"--outputs needs one file per setting: {len(setting_list)} settings, "
                f"{len(args.outputs)} outputs"
            )
        if (args.scope, args.workers, args.output, args.loader, args.decoder) != (None,) * 5:
            p.error("--settings replaces --scope, --workers, --decoder, --loader and --output")
        args.scope, args.workers, args.decoder, args.loader = setting_list[0]
        args.output = args.outputs[0]
    elif args.scope is None or args.workers is None or args.output is None:
        p.error("give --scope, --workers and --output, or --settings and --outputs")
    args.loader = args.loader or loaders.DEFAULT
    args.decoder = args.decoder or decoders.NATIVE
    if args.loader != loaders.DEFAULT and args.scope != "decode":
        p.error(f"--loader {args.loader} measures the decode scope only")
    if args.decoder != decoders.NATIVE and args.scope != "decode":
        p.error(f"--decoder {args.decoder} measures the decode scope only")
    for name in (
        "workers",
        "batch_size",
        "batches_per_run",
        "num_runs",
        "min_runs",
        "prefetch_factor",
        "baseline_runs",
        "processes",
    ):
        value = getattr(args, name)
        minimum = 0 if name in ("workers", "baseline_runs") else 1
        if value < minimum:
            p.error(f"--{name.replace('_', '-')} must be >= {minimum}")
    if args.window_seconds < 0:
        p.error("--window-seconds must be >= 0")
    return cli.settings_from(
        DataLoaderSettings,
        args,
        consumed=("settings",),
        setting_list=tuple(setting_list),
        # Unknown names fail the job loudly, before any measuring.
        transforms=cli.recipe_names(args.transforms, args.pipelines, catalog.get),
        argv=tuple(sys.argv[1:] if argv is None else argv),
    )


def parse_settings(text: str) -> list[tuple[str, int, str, str]]:
    """``memory-w0,decode-w2,decode-w2-simplejpeg-thread`` -> [("memory", 0, "native",
    "process"), ("decode", 2, "native", "process"), ("decode", 2, "simplejpeg", "thread")]: a
    decoder besides native, then a loader besides process, are a setting's last parts
    (augbench.workload.decoders.suffix, augbench.workload.loaders.suffix), the decode scope's
    only."""
    settings = []
    for item in (t.strip() for t in text.split(",")):
        scope, sep, rest = item.rpartition("-w")
        workers, _, named = rest.partition(loaders.SEPARATOR)
        parts = named.split(loaders.SEPARATOR) if named else []
        decoder = parts.pop(0) if parts and parts[0] in decoders.non_native(decoders.NAMES) else ""
        loader = parts.pop(0) if parts else ""
        decoder, loader = decoder or decoders.NATIVE, loader or loaders.DEFAULT
        if (
            not sep
            or parts
            or scope not in SCOPES
            or not workers.isdigit()
            or loader not in loaders.NAMES
            or ((loader, decoder) != (loaders.DEFAULT, decoders.NATIVE) and scope != "decode")
        ):
            raise argparse.ArgumentTypeError(
                f"bad setting {item!r}: expected <scope>-w<workers>[-<decoder>][-<loader>] with "
                f"scope in {SCOPES}, decoder in {decoders.NAMES} and loader in {loaders.NAMES} "
                "(those two: decode only)"
            )
        settings.append((scope, int(workers), decoder, loader))
    return settings
