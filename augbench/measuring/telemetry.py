"""Library telemetry and update checks off in every benchmark process, set before any library is
imported (docs/methodology.md, "Telemetry"). Each library's declaration names its own variables
(augbench.workload.adapters.base.Adapter.telemetry_off): AlbumentationsX starts a thread on each
A.Compose(...) that posts environment information to an analytics endpoint unless one of its two
variables is set; albumentations 2.0.8 asks PyPI for a newer release on import unless
NO_ALBUMENTATIONS_UPDATE is set. The others make no network request on import or on a transform
call (their only network code downloads weights or datasets on request)."""

from __future__ import annotations

import os

from augbench.workload import adapters


def off_environment() -> dict[str, str]:
    """Every library's variables and the values that switch its telemetry off."""
    found: dict[str, str] = {}
    for name in adapters.names():
        found.update(adapters.declared(name).telemetry_off)
    return found


def recorded() -> dict[str, str | None]:
    """What this process's environment says about telemetry (recorded in every result file's
    ``environment``): each variable and its value, None where it is not set."""
    return {var: os.environ.get(var) for var in off_environment()}


def apply_off() -> None:
    """Switch library telemetry off in this process and the ones it starts (keeps a value that is
    already set); call before any benchmarked library is imported."""
    for var, value in off_environment().items():
        os.environ.setdefault(var, value)
