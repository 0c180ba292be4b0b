"""Pieces every timing engine shares: job metadata and the environment marker."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from augbench.measuring import allocator, cloud, telemetry
from augbench.measuring.media import dataset_metadata
from augbench.policy import NETWORK_GUARD_ENV_VAR
from augbench.results import system_info
from augbench.workload.adapters.base import Adapter


def read_env_marker(path: Path | None) -> dict[str, Any]:
    if path is None or not Path(path).exists():
        return {}
    return json.loads(Path(path).read_text())


def job_metadata(
    *,
    adapter: Adapter,
    regime: str,
    scope: str,
    machine: str,
    manifest: Path,
    num_images: int,
    benchmark_params: dict[str, Any],
    thread_settings: dict[str, Any],
    env_marker: Path | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    marker = read_env_marker(env_marker)
    info = system_info()
    # On a cloud VM the configured label names the sweep; the machine actually used is read from
    # the VM itself (None elsewhere, without any network request).
    instance = cloud.gce_instance()
    if instance:
        info["cloud"] = instance
    meta: dict[str, Any] = {
        "system_info": info,
        "machine": machine,
        "machine_actual": cloud.machine_actual(machine, instance),
        "library": adapter.name,
        "library_versions": adapter.versions(),
        # Its licence, and for a library built here the facts that show which build ran.
        "library_provenance": adapter.provenance(),
        "thread_settings": thread_settings,
        "benchmark_params": benchmark_params,
        "regime": regime,
        "scope": scope,
        "dataset": dataset_metadata(manifest, num_images),
        "environment": {
            "python_executable": sys.executable,
            "argv": sys.argv,
            "cwd": os.getcwd(),
            "env_lock_sha256": marker.get("lock_sha256"),
            "env_manager": marker.get("manager"),
            # Library telemetry as the process saw it (augbench.measuring.telemetry), and the
            # network guard's log where one recorded the job's connections (tests, audits).
            "telemetry": telemetry.recorded(),
            "network_guard": os.environ.get(NETWORK_GUARD_ENV_VAR),
            "native_format": adapter.native_format,
            "decoder": adapter.decoder,
        },
    }
    # The allocator the timed process runs under (its mapped library, version and settings).
    meta["allocator"] = allocator.in_force()
    # The setting the workflow launched the job under (config allocators; None when run by hand).
    meta["allocator_setting"] = allocator.requested()
    setup = os.environ.get("AUGBENCH_SETUP")
    if setup:
        # What augbench.planning.provision did before this engine started (env build/reuse,
        # staging).
        meta["setup"] = json.loads(setup)
    if extra:
        meta.update(extra)
    return meta
