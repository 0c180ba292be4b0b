"""What a workflow profile says about where a sweep's jobs would run, read from its profile.yaml.

The cost estimate prices a profile without starting it: `snakemake cost` runs locally and reads
the profile named by config ``cloud.profile`` as a file, so no executor or storage plugin (and no
cloud credential) is needed to see what a cloud sweep would cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from augbench import yaml_files

# The machine type of jobs without a placement of their own when a profile names none.
DEFAULT_MACHINE = "e2-standard-2"


class ProfileError(ValueError):
    """A profile that cannot be read: one line naming the file and what is wrong."""


@dataclass(frozen=True)
class Profile:
    path: Path
    executor: str = "local"
    jobs_at_once: int = 1
    default_machine: str = DEFAULT_MACHINE
    preemptible_rules: tuple[str, ...] = ()
    groups: dict[str, str] = field(default_factory=dict)
    group_components: dict[str, int] = field(default_factory=dict)


def _pairs(value: Any, key: str, path: Path) -> dict[str, str]:
    """A profile mapping given as a YAML mapping or as Snakemake's ``name=value`` list."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, list) and all(isinstance(v, str) and "=" in v for v in value):
        return dict(v.split("=", 1) for v in value)
    raise ProfileError(f"{path}: `{key}` must be a mapping or a list of name=value, not {value!r}")


def read(folder: Path) -> Profile:
    """The facts the cost estimate needs from ``folder``/profile.yaml."""
    path = folder / "profile.yaml"
    try:
        raw = yaml_files.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ProfileError(f"cannot read the profile {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{path} must be a mapping of command-line options")
    executor = str(raw.get("executor", "local"))
    try:
        jobs = int(raw.get("jobs", 1))
        components = {
            k: int(v)
            for k, v in _pairs(raw.get("group-components"), "group-components", path).items()
        }
    except (TypeError, ValueError) as exc:
        raise ProfileError(
            f"{path}: `jobs` and `group-components` must be integers ({exc})"
        ) from None
    preemptible = raw.get("preemptible-rules") or []
    if isinstance(preemptible, str):
        preemptible = preemptible.split()
    return Profile(
        path=path,
        executor=executor,
        jobs_at_once=max(jobs, 1),
        default_machine=str(raw.get(f"{executor}-machine-type") or DEFAULT_MACHINE),
        preemptible_rules=tuple(str(r) for r in preemptible),
        groups=_pairs(raw.get("groups"), "groups", path),
        group_components=components,
    )
