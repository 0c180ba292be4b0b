"""Effective workflow configuration: preset merged under the user's config, then validated.

Called by workflow/rules/common.smk. Errors name the offending key and value and list the
allowed values.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from augbench import catalog, matrix, regimes

PRESETS_DIR = Path("config") / "presets"
SCHEMA_PATH = Path("workflow") / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    pass


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def schema(basedir: Path) -> dict[str, Any]:
    doc = yaml.safe_load((Path(basedir) / SCHEMA_PATH).read_text())
    props = doc["properties"]
    props["libraries"]["items"]["enum"] = list(matrix.LIBRARIES)
    props["regimes"]["items"]["enum"] = list(regimes.NAMES)
    props["resolution_regimes"]["items"]["enum"] = list(regimes.NAMES)
    props["cpu_dataloader"]["properties"]["job_per"]["enum"] = list(matrix.DATALOADER_JOB_PER)
    props["transforms"]["oneOf"][1]["items"]["enum"] = catalog.names()
    return doc


def available_presets(basedir: Path) -> list[str]:
    return sorted(p.stem for p in (Path(basedir) / PRESETS_DIR).glob("*.yaml"))


def _apply_defaults(instance: dict[str, Any], node: dict[str, Any]) -> None:
    for key, sub in node.get("properties", {}).items():
        if "default" in sub and key not in instance:
            instance[key] = copy.deepcopy(sub["default"])
        if sub.get("type") == "object" and isinstance(instance.get(key), dict):
            _apply_defaults(instance[key], sub)


def _format_error(error: Any) -> str:
    where = "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
        for i, p in enumerate(error.absolute_path)
    )
    message = error.message
    if error.validator == "oneOf" and error.context:
        # Report the branch that matched the value's type (the list branch for lists).
        best = max(error.context, key=lambda e: len(list(e.absolute_path)))
        return _format_error(best)
    return f"config error at {where or '<root>'}: {message}"


def resolve(user_config: dict[str, Any], basedir: Path) -> dict[str, Any]:
    """Merge the preset under ``user_config``, validate, fill defaults and derived values."""
    import jsonschema

    basedir = Path(basedir)
    preset = user_config.get("preset", "default")
    presets = available_presets(basedir)
    if preset not in presets:
        raise ConfigError(f"config error at preset: unknown preset {preset!r}; allowed: {presets}")
    preset_values = yaml.safe_load((basedir / PRESETS_DIR / f"{preset}.yaml").read_text()) or {}
    merged = deep_merge(preset_values, user_config)
    merged["preset"] = preset
    # `--config resolutions=[224,512]` arrives as strings (Snakemake reads --config values with
    # YAML's BaseLoader); digits are the integers the user meant.
    if isinstance(merged.get("resolutions"), list):
        merged["resolutions"] = [
            int(r) if isinstance(r, str) and r.isdigit() else r for r in merged["resolutions"]
        ]

    validator = jsonschema.Draft202012Validator(schema(basedir))
    errors = sorted(validator.iter_errors(merged), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError("\n".join(_format_error(e) for e in errors))
    _apply_defaults(merged, schema(basedir))

    channels = merged["channels"]
    if merged["transforms"] == "all":
        merged["transforms"] = catalog.names(channels)
    outside = [t for t in merged["transforms"] if t not in catalog.names(channels)]
    if outside:
        raise ConfigError(
            f"config error at transforms: {outside} not in the {channels}-channel set; "
            f"allowed: {catalog.names(channels)}"
        )
    merged["pipeline_definitions"] = _pipeline_definitions(merged, basedir)
    if merged["machine"] == "auto":
        merged["machine"] = auto_machine_label()
    return merged


def _pipeline_definitions(cfg: dict[str, Any], basedir: Path) -> list[dict[str, Any]]:
    """The configured pipelines, parsed and checked against the catalog (augbench.pipelines);
    derived, like ``machine``: never part of the user's config."""
    from augbench import pipelines

    try:
        return [p.to_dict() for p in pipelines.from_config(cfg, basedir)]
    except pipelines.PipelineError as exc:
        raise ConfigError(f"config error at pipelines: {exc}") from None


def auto_machine_label() -> str:
    """Stable across reruns on one machine: CPU model and usable core count, slugged."""
    import os

    from augbench.results import cpu_model

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    model = re.sub(r"\(r\)|\(tm\)|cpu|processor|@.*$", "", cpu_model().lower())
    slug = re.sub(r"[^a-z0-9]+", "-", model).strip("-") or "cpu"
    return f"{slug}-{cores}c"
