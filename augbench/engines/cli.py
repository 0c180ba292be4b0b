"""The command line every engine shares: one definition of each flag two engines have in common.

The Snakemake rules (workflow/rules/*.smk) and augbench.provision build the engines' argv, and
provision appends ``--manifest`` and ``--env-marker`` to every one of them: each engine starts
from :func:`engine_parser` (those two, ``--num-images``, ``--machine``, ``--output`` and the
shared flags it takes) and adds only the flags that are its own. A flag's name, meaning and
default are decided here once, so the engines cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from augbench import cuda_env, pipelines
from augbench.policy import SlowTransformPolicy


def engine_parser(
    description: str | None,
    *,
    library: bool | Sequence[str] = True,
    transforms: bool = True,
    shard: bool = True,
    policy: bool = True,
    values: bool = False,
    warmups: bool = False,
    pipelines_run: str | None = None,
    gpu: str | None = None,
    output_required: bool = True,
    num_images: int | None = None,
) -> argparse.ArgumentParser:
    """An engine's parser with the shared flags it takes.

    ``library``: ``--library`` (a sequence: its allowed values; False: none, dali names its
    ``--variant`` instead). ``values`` / ``warmups``: measured and untimed repetitions (micro:
    per pyperf process). ``pipelines_run``: ``--pipelines`` as JSON user pipelines, a name of
    ``--transforms`` that is one of them runs ``pipelines_run``. ``gpu``: ``--gpu`` with this
    help. ``output_required``: False where ``--outputs`` may stand instead (cpu_dataloader's
    ``--settings``). ``num_images``: a default makes ``--num-images`` optional.
    """
    p = argparse.ArgumentParser(description=description)
    if library is True:
        p.add_argument("--library", required=True)
    elif library:
        p.add_argument("--library", required=True, choices=list(library))
    if transforms:
        p.add_argument("--transforms", required=True, help="comma-separated catalog names")
    p.add_argument("--manifest", required=True, type=Path)
    if num_images is None:
        p.add_argument("--num-images", required=True, type=int)
    else:
        p.add_argument("--num-images", type=int, default=num_images)
    p.add_argument("--machine", required=True)
    if shard:
        p.add_argument("--shard", default="")
    if values:
        p.add_argument("--values", type=int, default=3, help="measured repetitions")
    if warmups:
        p.add_argument("--warmups", type=int, default=1, help="untimed repetitions before them")
    if policy:
        p.add_argument("--policy", default="{}", help="SlowTransformPolicy fields as JSON")
    if pipelines_run is not None:
        p.add_argument(
            "--pipelines", type=pipelines.from_json, default={},
            help="user pipelines as JSON (augbench.pipelines); a name of --transforms that is "
            f"one of them runs {pipelines_run}",
        )  # fmt: skip
    if gpu is not None:
        p.add_argument("--gpu", choices=cuda_env.GPU_MODES, default="optional", help=gpu)
    p.add_argument("--output", required=output_required, type=Path, default=None)
    # Passed by augbench.provision: the env this job runs in (its lock hash, its manager).
    p.add_argument("--env-marker", type=Path, default=None)
    return p


def transform_names(
    args: argparse.Namespace, check: Callable[[str], Any] | None = None
) -> list[str]:
    """The names of ``--transforms`` in order, each passed to ``check`` (where given), so an
    unknown name fails the job before anything is measured."""
    names = [t for t in args.transforms.split(",") if t]
    for name in names:
        if check is not None:
            check(name)
    return names


def slow_policy(args: argparse.Namespace) -> SlowTransformPolicy:
    """The slow-transform policy of ``--policy``."""
    return SlowTransformPolicy(**json.loads(args.policy))


def as_bool(text: str) -> bool:
    """An argparse type for true/false flags (``--persistent-workers false``)."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")
