"""What a ``snakemake`` command line asks for, read with Snakemake's own argument parser: the
targets, the executor (from the command line or the profile it names) and whether it only plans.
The workflow reads these while it is parsed, before Snakemake hands them over."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from augbench.planning import profile


def parse(argv: list[str]) -> Any:
    """A ``snakemake`` command line as Snakemake's own argument parser reads it: Snakemake parses
    the Snakefile before it hands its targets and flags to the workflow, so what only a target or
    a flag decides at parse time (``cost`` prices the cloud sweep and checks memory against its
    machines; a dry run prints the plan when Snakemake is done) reads them here. None where the
    workflow was not started by that command. Parsed once per command line: building
    Snakemake's parser takes a fifth of a second, and the Snakefile asks more than once."""
    return _parsed_command_line(tuple(argv))


@functools.lru_cache(maxsize=4)
def _parsed_command_line(argv: tuple[str, ...]) -> Any:
    started = Path(argv[0]) if argv else Path()
    if "snakemake" not in (started.name, started.parent.name):  # `snakemake`, `python -m snakemake`
        return None
    from snakemake.cli import get_argument_parser

    try:
        parsed, _ = get_argument_parser().parse_known_args(argv[1:])
    except SystemExit:  # Snakemake reports its own usage errors
        return None
    return parsed


def targets(argv: list[str]) -> set[str]:
    """The targets named on a ``snakemake`` command line (empty where none, or not started by
    that command)."""
    parsed = parse(argv)
    return {str(t) for t in parsed.targets or ()} if parsed else set()


def executor(argv: list[str], workflow_dir: Path, started_in: Path) -> str:
    """The executor a ``snakemake`` command line runs its jobs with: ``--executor``, else the
    ``executor`` of the profile it names (``--workflow-profile``, else ``--profile``: a folder,
    relative to ``started_in``, the directory snakemake was started in, or a profile of the
    workflow's ``profiles/``), else "local". A profile's settings never reach the command line
    Snakemake hands the workflow, so they are read from its file."""
    parsed = parse(argv)
    if parsed is None:
        return "local"
    if parsed.executor:
        return str(parsed.executor)
    named = parsed.profile if isinstance(parsed.profile, list) else [parsed.profile]
    for chosen in (parsed.workflow_profile, *named):
        if not chosen or str(chosen) == "none":
            continue
        # Snakemake reads the profile before it changes to --directory: a relative path is
        # relative to where it started (started_in; the shell's PWD where the workflow was given
        # another directory), else to the workflow.
        candidates = (
            started_in / chosen,
            Path(os.environ.get("PWD", started_in)) / chosen,
            workflow_dir / chosen,
            workflow_dir / "profiles" / str(chosen),
        )
        for folder in candidates:
            if (folder / "profile.yaml").is_file():
                try:
                    return profile.read(folder).executor
                except profile.ProfileError:
                    return "local"
    return "local"


def dry_run(argv: list[str]) -> bool:
    """Whether a ``snakemake`` command line only plans (``-n``): no job runs, so no onstart."""
    parsed = parse(argv)
    return bool(parsed and parsed.dryrun)
