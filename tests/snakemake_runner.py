"""Snakemake's command line, run in a process forked from one that has already imported it.

Importing ``snakemake.cli`` costs about a second on a 2-core VM (it imports every installed
executor plugin, and with them pandas and the Google Cloud clients), more than planning the smoke
workflow; the tests run Snakemake some hundreds of times. A forkserver process imports it once
per pytest worker and forks a child per run: each child is the real command line
(``snakemake.cli.main`` with the run's arguments, working directory and environment, its output
in files), exactly as ``python -m snakemake`` runs it, without paying the import again.

This module is imported by the forkserver itself: it imports only the standard library.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

# What a run imports after the command line, found with ``python -X importtime``: the modules
# Snakemake loads while it plans (its report and storage plugins, the config schema's validator,
# the notebook support it registers) and those the workflow's own modules import, third-party and
# standard library. A dry run of the default preset imports them in about half a second on a
# 2-core VM. The workflow's own modules (augbench) are not preloaded: a test may run a changed
# copy of them.
RUN_IMPORTS = [
    "snakemake.report", "snakemake.report.html_reporter", "snakemake.storage",
    "snakemake.profiles", "jsonschema", "nbformat", "smart_open", "google.cloud.storage",
    "google.cloud.storage.transfer_manager", "packaging.specifiers", "platformdirs", "tomllib",
    "sysrsync", "argparse_dataclass", "graphlib", "yaml", "PIL.Image",
]  # fmt: skip
PRELOAD = ["snakemake.cli", *RUN_IMPORTS, __name__]
_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _child(args: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = ["snakemake", *args]
    from snakemake.cli import main

    try:
        main(args)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def run(
    args: Sequence[str],
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m snakemake *args`` in ``cwd`` with ``env`` (default: this process's), its
    output captured as text, like ``subprocess.run(..., capture_output=True, text=True)``
    (past ``timeout`` seconds the run is killed and ``subprocess.TimeoutExpired`` raised)."""
    command = [sys.executable, "-m", "snakemake", *args]
    environment = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="smk-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        process = _context.Process(
            target=_child, args=(list(args), str(cwd), environment, str(out), str(err))
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(command, timeout or 0.0, _read(out), _read(err))
        return subprocess.CompletedProcess(command, process.exitcode, _read(out), _read(err))


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
