"""The command line every engine shares: one definition of each flag two engines have in common.

The Snakemake rules (workflow/rules/*.smk) and augbench.planning.provision build the engines' argv,
and provision appends ``--manifest`` and ``--env-marker`` to every one of them: each engine starts
from :func:`engine_parser` (those two, ``--num-images``, ``--machine``, ``--output`` and the
shared flags it takes) and adds only the flags that are its own. A flag's name, meaning and
default are decided here once, so the engines cannot drift apart.

What an engine measures with is its settings record: a frozen dataclass with every field typed,
built from the parsed command line at one place (the engine's ``parse_args``, through
:func:`settings_from`) and passed on from there. The fields of the shared flags are declared
here once, in :class:`CommonSettings` (the flags every engine has) and one small group per
optional flag (:class:`LibraryFlag`, :class:`TransformsFlag`, ...); an engine's record derives
from the groups of the flags it takes, as its :func:`engine_parser` call adds them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from augbench import cuda_env
from augbench.policy import SlowTransformPolicy
from augbench.workload import pipelines


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
            help="user pipelines as JSON (augbench.workload.pipelines); a name of --transforms "
            f"that is one of them runs {pipelines_run}",
        )  # fmt: skip
    if gpu is not None:
        p.add_argument("--gpu", choices=cuda_env.GPU_MODES, default="optional", help=gpu)
    p.add_argument("--output", required=output_required, type=Path, default=None)
    # Passed by augbench.planning.provision: the env this job runs in (its lock hash, its manager).
    p.add_argument("--env-marker", type=Path, default=None)
    return p


def comma_list(text: str) -> tuple[str, ...]:
    """The items of a comma-separated flag, in order (empty items dropped)."""
    return tuple(t for t in text.split(",") if t)


def transform_names(text: str, check: Callable[[str], Any] | None = None) -> tuple[str, ...]:
    """The names of ``--transforms`` in order, each passed to ``check`` (where given), so an
    unknown name fails the job before anything is measured."""
    names = comma_list(text)
    for name in names:
        if check is not None:
            check(name)
    return names


def recipe_names(
    text: str, user_pipelines: dict[str, pipelines.Pipeline], check: Callable[[str], Any]
) -> tuple[str, ...]:
    """The names of ``--transforms`` in order, each that is not one of ``user_pipelines``
    passed to ``check`` (a catalog or recipe lookup)."""
    return transform_names(text, lambda name: name in user_pipelines or check(name))


def slow_policy(text: str) -> SlowTransformPolicy:
    """The slow-transform policy of ``--policy`` (its fields as JSON)."""
    return SlowTransformPolicy(**json.loads(text))


def as_bool(text: str) -> bool:
    """An argparse type for true/false flags (``--persistent-workers false``)."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


# -- settings records -----------------------------------------------------------------------------
# A field's metadata key: how its flag's parsed value becomes the field's type (text into a
# policy, a list into a tuple), applied by settings_from.
FROM_FLAG = "from_flag"


@dataclass(frozen=True, kw_only=True)
class CommonSettings:
    """The flags every engine takes (:func:`engine_parser`): the staged manifest and how many of
    its images, the machine label, the result file and the env marker provision appends."""

    manifest: Path
    num_images: int
    machine: str
    output: Path
    env_marker: Path | None


@dataclass(frozen=True, kw_only=True)
class LibraryFlag:
    """``--library``: the library measured, or its second name (``<library>~<tag>``)."""

    library: str


@dataclass(frozen=True, kw_only=True)
class TransformsFlag:
    """``--transforms``: catalog names or user pipelines, in order; an engine that checks them
    passes them checked (:func:`transform_names`) to :func:`settings_from`."""

    transforms: tuple[str, ...] = field(metadata={FROM_FLAG: transform_names})


@dataclass(frozen=True, kw_only=True)
class ShardFlag:
    """``--shard``: the shard's label, recorded in the result file."""

    shard: str


@dataclass(frozen=True, kw_only=True)
class PolicyFlag:
    """``--policy``: the slow-transform policy, parsed once."""

    policy: SlowTransformPolicy = field(metadata={FROM_FLAG: slow_policy})


@dataclass(frozen=True, kw_only=True)
class ValuesFlag:
    """``--values``: measured repetitions."""

    values: int


@dataclass(frozen=True, kw_only=True)
class WarmupsFlag:
    """``--warmups``: untimed repetitions before the measured ones."""

    warmups: int


@dataclass(frozen=True, kw_only=True)
class PipelinesFlag:
    """``--pipelines``: the user pipelines by name."""

    pipelines: dict[str, pipelines.Pipeline]


@dataclass(frozen=True, kw_only=True)
class GpuFlag:
    """``--gpu``: optional or required (``cuda_env.GPU_MODES``)."""

    gpu: str


@dataclass(frozen=True, kw_only=True)
class ShardSettings(CommonSettings, TransformsFlag, ShardFlag, PolicyFlag):
    """What every job that measures a shard of transforms takes: the common flags, the
    transforms, the shard's label and the slow-transform policy."""


Settings = TypeVar("Settings")


def settings_from(
    record: type[Settings],
    namespace: argparse.Namespace,
    *,
    consumed: Iterable[str] = (),
    **derived: Any,
) -> Settings:
    """The engine's settings ``record`` from its parsed command line: each field from the flag of
    its name (through the field's ``FROM_FLAG`` converter, where it has one), or from
    ``derived``, what the engine worked out from its flags (checked names, the argv it starts
    itself again with); ``consumed`` names the flags a derived field stands for. A field nothing
    gives, a flag no field takes or a derived value no field holds is a TypeError, so the record
    and the parser cannot drift apart."""
    flags = dict(vars(namespace))
    for name in consumed:
        del flags[name]
    fields = {f.name: f for f in dataclasses.fields(record)}  # type: ignore[arg-type]
    given = flags.keys() | derived.keys()
    problems = [f"no flag or derived value for field {n!r}" for n in fields if n not in given]
    problems += [f"flag {n!r} has no field" for n in flags if n not in fields]
    problems += [f"derived value {n!r} has no field" for n in derived if n not in fields]
    if problems:
        raise TypeError(f"{record.__name__}: " + "; ".join(problems))
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name in derived:
            values[name] = derived[name]
        else:
            convert = f.metadata.get(FROM_FLAG)
            values[name] = convert(flags[name]) if convert else flags[name]
    return record(**values)
