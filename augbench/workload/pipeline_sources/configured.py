"""The configured pipelines, read on the driver: each entry of ``pipeline`` / ``pipelines`` is a
file (the benchmark's own format, or an AlbumentationsX ``A.save`` file), a
``package.module:attribute`` torchvision v2 Compose, or an inline mapping. The model they become
is ``augbench.workload.pipelines``; each library's own format is its module in this package."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from augbench import yaml_files
from augbench.workload.pipeline_sources import albumentations_file, torchvision_module
from augbench.workload.pipelines import RESOLVED, Pipeline, PipelineError, entry_path, parse


def load_file(path: Path, *, allow_diagnostic: bool = False, source: str | None = None) -> Pipeline:
    """One pipeline file; ``source`` is how rows name it (default: the path). A file written by
    AlbumentationsX (``A.save``, YAML or JSON) is read as the user's own Compose
    (``augbench.workload.pipeline_sources.albumentations_file``), named after the file's stem."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"pipeline file {path} does not exist")
    try:
        data = yaml_files.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise PipelineError(f"pipeline file {path}: not valid YAML: {exc}") from None
    if albumentations_file.is_albumentations_data(data):
        return albumentations_file.parse(data, source=source or str(path), name=path.stem)
    return parse(data, source=source or str(path), allow_diagnostic=allow_diagnostic)


def from_config(cfg: dict[str, Any], basedir: Path) -> list[Pipeline]:
    """The configured pipelines: ``pipeline`` (one entry, e.g. from ``--config pipeline=...``)
    replaces the ``pipelines`` list. An entry is a file (relative paths are looked up in the
    working directory, then in the workflow's directory: the benchmark's own format, or an
    AlbumentationsX ``A.save`` file), ``package.module:attribute`` of a torchvision v2 Compose
    (resolved in the torchvision env by the workflow), or an inline mapping."""
    allow = bool((cfg.get("pipeline_runs") or {}).get("allow_diagnostic_steps", False))
    entries = [cfg["pipeline"]] if cfg.get("pipeline") else list(cfg.get("pipelines") or [])
    out: list[Pipeline] = []
    for entry in entries:
        if isinstance(entry, str):
            path = entry_path(entry, basedir)
            if not path.exists() and torchvision_module.is_module_ref(entry):
                pipeline = torchvision_module.placeholder(entry, source=entry)
                resolved = RESOLVED.format(pipeline=pipeline.name)
                out.append(replace(pipeline, native={**pipeline.native, "resolved": resolved}))
                continue
            # Rows record the path as configured: the same on every machine and checkout.
            out.append(load_file(path, allow_diagnostic=allow, source=entry))
        else:
            out.append(parse(entry, allow_diagnostic=allow))
    names = [p.name for p in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PipelineError(f"pipelines: names {repeated} are used more than once")
    return out
