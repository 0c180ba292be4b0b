"""``snakemake --executor googlebatch`` without a profile: the googlebatch profile's sweep.

A cloud sweep's settings live in one place, ``profiles/googlebatch/profile.yaml``: its groups (short
jobs share a VM), preemptible rules, Snakemake's retries, keep-going and rerun-incomplete, the VM
image, the boot disk and the per-job run limit. Snakemake reads a profile while it parses its
command line, before it reads the workflow, and otherwise loads ``profiles/default`` (a local run's
settings). So where the command line names the executor but no profile, the workflow starts
Snakemake again in the same process (exec) with ``--workflow-profile <that folder>`` in front of
the command line as typed: the run is the profile's run, and every flag typed still overrides the
profile's value, exactly as with the profile named by hand.
"""

from __future__ import annotations

from pathlib import Path

from augbench.planning import command_line

EXECUTOR = "googlebatch"
PROFILE = Path("profiles") / EXECUTOR


class LaunchError(ValueError):
    """A command line this module cannot complete: one line saying what to add."""


def with_profile(argv: list[str], workflow_dir: Path, python: str) -> list[str] | None:
    """The command to run instead of ``argv``: ``python -m snakemake --workflow-profile
    <workflow_dir>/profiles/googlebatch <argv[1:]>`` where ``argv`` is a ``snakemake`` command
    line (as typed by a user: not a job Snakemake spawned) with ``--executor googlebatch`` and no
    profile (``--workflow-profile``, ``--profile`` or ``$SNAKEMAKE_PROFILE``; ``none`` counts as
    one); else None. Raises LaunchError where the command changes directory (``--directory``):
    its relative paths were relative to a directory this process has left."""
    parsed = command_line.parse(argv)
    if parsed is None or str(parsed.executor) != EXECUTOR:
        return None
    if getattr(parsed.mode, "name", str(parsed.mode)).upper() != "DEFAULT":
        return None  # a job Snakemake spawned: its settings come with its command line
    if parsed.workflow_profile or parsed.profile:
        return None
    profile = workflow_dir / PROFILE
    if parsed.directory:
        raise LaunchError(
            f"--executor {EXECUTOR} with --directory needs its profile named: add "
            f"--workflow-profile {profile} (its groups, preemptible rules, retries and VM "
            "settings; a flag you give overrides the profile's value)"
        )
    return [python, "-m", "snakemake", "--workflow-profile", str(profile), *argv[1:]]


def note(command: list[str]) -> str:
    """The line printed before ``command`` (from :func:`with_profile`) replaces the run."""
    profile = command[command.index("--workflow-profile") + 1]
    return (
        f"augbench: --executor {EXECUTOR} without a profile: running with --workflow-profile "
        f"{profile} (its groups, preemptible rules, retries and VM settings; the flags you gave "
        "override its values)"
    )
