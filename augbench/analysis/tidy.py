"""Read result JSONs (ours, or any file in the common augmentation-benchmark format) into one tidy
table with one row per (result file, transform or recipe); the runs of one job (files whose paths
differ only by the run) are one row, their values pooled (augbench.analysis.runs)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from augbench import result_format
from augbench.analysis.dataloader import add_baselines
from augbench.analysis.runs import pool_job_runs
from augbench.measuring import quietness
from augbench.measuring.allocator import DEFAULT_SETTING, setting_of
from augbench.measuring.allocator import label as allocator_label
from augbench.planning import regimes
from augbench.result_format import MEDIAN_THROUGHPUT, METADATA, RESULTS, STATUS
from augbench.workload import adapters, decoders, loaders

# Columns every tidy table has, in this order; extra keys found in rows are appended after them.
COLUMNS: tuple[str, ...] = (
    "machine",
    "machine_actual",
    "regime",
    "scope",
    "library",
    "transform",
    "status",
    "reason",
    MEDIAN_THROUGHPUT,
    "mean_throughput",
    "std_throughput",
    "cv_throughput",
    "relative_ci",
    "relative_ci_target",
    "num_successful_runs",
    "throughputs",
    "variance_stable",
    "warmup_iterations",
    "preflight_throughput",
    "peak_rss_mb",
    "gpu_peak_allocated_mb",
    "gpu_peak_reserved_mb",
    "workers",
    "batch_size",
    "variant",
    "layout",
    "randomness",
    "decoder",
    "decoder_call",
    "device",
    "telemetry",
    # The memory allocator in force in the timed process (augbench.measuring.allocator), with the
    # settings that change it, and the setting the job was launched under (config allocators: glibc,
    # glibc-steady, mimalloc, jemalloc); a setting other than glibc joins the row's variant, so
    # its rows are never ranked against glibc's.
    "allocator",
    "allocator_setting",
    "minor_faults_per_image",
    # The most-faulting process's count where a row has several (the pipeline breakdown's): under
    # glibc as shipped each process faults as its address layout makes it (docs/allocator.md).
    "most_minor_faults_per_image",
    "output_pages",
    # How quiet the machine was during the row's job (augbench.measuring.quietness): other
    # processes' load on its CPUs in cores, the hypervisor's steal share, and whether a threshold of
    # augbench.policy was crossed (None where the file records no quietness) and which.
    "other_load_cores",
    "steal_fraction",
    "under_load",
    "load_reason",
    "dataset",
    "dataset_name",
    "dataset_sha256",
    "dataset_images",
    "dataset_bytes",
    "dataset_note",
    "resolution",
    "megapixels",
    "num_images",
    "channels",
    "scenario",
    "mode",
    "slow_threshold_sec_per_item",
    "library_version",
    "library_versions",
    "library_license",
    "library_provenance",
    "hostname",
    "processor",
    "timestamp",
    "source_file",
    # User pipelines (augbench/workload/pipelines.py): the pipeline's name on each of its rows
    # (transform is the same name), and on per-step breakdown rows the step and its position.
    "pipeline",
    "step",
    "step_index",
    "loader",
)

# Columns that split measurements into comparable groups within a machine and regime. Rows of two
# datasets, or of two scenarios (folded into ``variant``), are never ranked together.
GROUP_COLUMNS: tuple[str, ...] = (
    "machine",
    "regime",
    "scope",
    "workers",
    "batch_size",
    "variant",
    "dataset",
    # What made a cpu_dataloader row's samples in parallel (augbench.workload.loaders) and what
    # decoded its files (augbench.workload.decoders); "" elsewhere.
    "loader",
    "decoder",
)


def _infer_library(meta: dict[str, Any], path: Path) -> str:
    if meta.get("library"):
        return str(meta["library"])
    stem = path.stem.lower()
    # Longest name first: a file of pillow_simd is not one of pillow.
    for lib in sorted(adapters.names(), key=len, reverse=True):
        if stem.startswith(lib) or f"_{lib}_" in stem:
            return lib
    versions = meta.get("library_versions") or {}
    for lib in adapters.names():
        if lib in versions:
            return lib
    return next(iter(versions), "unknown")


def _library_version(library: str, versions: dict[str, str]) -> str | None:
    """The version of the distribution the library's declaration names (a file of another tool
    keys it by the library's name)."""
    try:
        distribution = adapters.declared(library).distribution
    except KeyError:
        distribution = library
    return versions.get(distribution) or versions.get(library)


def _infer_regime(meta: dict[str, Any], path: Path) -> str:
    if meta.get("regime"):
        return str(meta["regime"])
    if meta.get("mode") in regimes.NAMES:  # other tools write the regime as "mode"
        return str(meta["mode"])
    # The file name, or a folder named exactly after the regime: a substring of the whole path
    # would take e.g. a checkout in ".../wt-dali/" for DALI results.
    name = path.name.lower()
    folders = {part.lower() for part in path.parts[:-1]}
    # Longest names first: one regime's name may contain another's.
    for regime in sorted(regimes.NAMES, key=len, reverse=True):
        if regime in name or regime in folders:
            return regime
    return "micro"


def _telemetry(meta: dict[str, Any]) -> str:
    """Library telemetry in the process that measured the row (augbench.measuring.telemetry):
    "off (VAR=1, ...)" where every policy variable was set, "not all off (VAR unset, ...)" where
    one was not, "" for files that do not record it (other tools, older runs)."""
    recorded = (meta.get("environment") or {}).get("telemetry")
    if not isinstance(recorded, dict):
        return ""
    state = "off" if all(recorded.values()) else "not all off"
    pairs = ", ".join(f"{k}={v}" if v else f"{k} unset" for k, v in sorted(recorded.items()))
    return f"{state} ({pairs})"


def _machine_label(meta: dict[str, Any]) -> str:
    if meta.get("machine"):
        return str(meta["machine"])
    info = meta.get("system_info") or {}
    parts = [info.get("system"), info.get("machine"), info.get("processor")]
    label = "-".join(str(p) for p in parts if p) or "unknown"
    cpus = info.get("cpu_count")
    label = f"{label}-{cpus}cpu" if cpus else label
    return "external-" + re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-").lower()


def _dataset_columns(dataset: dict[str, Any]) -> dict[str, Any]:
    """Dataset identity of a file: our key (name + short content hash) and the full sha256, or
    what another tool recorded (its name or folder, file count, bytes)."""
    name = dataset.get("name") or Path(str(dataset.get("path", "unknown"))).name
    return {
        "dataset": dataset.get("key") or name,
        "dataset_name": name,
        "dataset_sha256": dataset.get("archive_sha256") or dataset.get("sha256") or "",
        "dataset_images": dataset.get("file_count"),
        "dataset_bytes": dataset.get("total_bytes"),
        # "3 of 12 configured images (dataset.allow_fewer)" where the job had fewer images than
        # it asked for (augbench.measuring.media.dataset_metadata); empty otherwise.
        "dataset_note": _dataset_note(dataset),
        # Resolution sweep (augbench.planning.resize): the shorter side in px; blank = images as
        # staged.
        "resolution": dataset.get("resolution"),
        "megapixels": _megapixels(dataset),
    }


def _dataset_note(dataset: dict[str, Any]) -> str:
    fewer = dataset.get("fewer_than_configured")
    if not isinstance(fewer, dict) or fewer.get("configured") is None:
        return ""
    return f"{fewer.get('usable')} of {fewer['configured']} configured images (dataset.allow_fewer)"


def _megapixels(dataset: dict[str, Any]) -> float | None:
    """Mean megapixels per measured image: recorded by newer runs, else the product of the mean
    sides (exact where all images share one size)."""
    if dataset.get("mean_megapixels") is not None:
        return float(dataset["mean_megapixels"])
    width, height = dataset.get("mean_width"), dataset.get("mean_height")
    return float(width) * float(height) / 1e6 if width and height else None


def _scenario_columns(meta: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """Channels, scenario and mode of the run, and the ``variant`` label they give its rows: a
    9-channel or differently-scoped run is its own comparable group, never ranked with RGB."""
    channels = params.get("num_channels") or params.get("channels") or meta.get("channels") or 3
    scenario = str(meta.get("scenario") or "")
    mode = str(meta.get("mode") or "")
    variant = str(meta.get("variant") or "")
    if not variant:
        parts = [scenario] if scenario else []
        if mode and mode not in regimes.NAMES:
            parts.append(mode)
        if int(channels) != 3:
            parts.append(f"channels{int(channels)}")
        variant = " · ".join(parts)
    return {"channels": int(channels), "scenario": scenario, "mode": mode, "variant": variant}


DEFAULT_ALLOCATOR = DEFAULT_SETTING  # glibc as shipped (augbench.measuring.allocator)
ALLOCATOR_TAG = "allocator "  # how a setting other than glibc shows in a row's variant


def _allocator(meta: dict[str, Any]) -> dict[str, str]:
    """The row's allocator in force (augbench.measuring.allocator.label) and its setting: the one
    the job was launched under, else what the record amounts to (a job run by hand); "" where the
    file does not say."""
    record = meta.get("allocator")
    if not isinstance(record, dict):
        return {"allocator": "", "allocator_setting": meta.get("allocator_setting") or ""}
    setting = meta.get("allocator_setting") or setting_of(record)
    return {"allocator": allocator_label(record), "allocator_setting": setting}


def allocator_tag(setting: str) -> str:
    """The part of a row's variant that names its allocator setting ("" for glibc)."""
    return "" if setting in ("", DEFAULT_ALLOCATOR) else f"{ALLOCATOR_TAG}{setting}"


def variant_without_allocator(variant: str, setting: str) -> str:
    """A row's variant without its allocator tag: what rows of the same work under another
    allocator setting share (augbench.analysis.allocator_effect)."""
    tag = allocator_tag(setting)
    if not tag:
        return variant
    return " · ".join(part for part in str(variant).split(" · ") if part != tag)


def _quietness(meta: dict[str, Any]) -> dict[str, Any]:
    """The row's quietness columns from its file's ``quietness`` block
    (augbench.measuring.quietness); None and "" where the file has none (other tools, older
    runs)."""
    block = meta.get("quietness")
    under_load, reason = quietness.verdict(block)
    block = block if isinstance(block, dict) else {}
    return {
        "other_load_cores": block.get("other_load_cores"),
        "steal_fraction": block.get("steal_fraction"),
        "under_load": under_load,
        "load_reason": reason,
    }


def _slow_threshold(meta: dict[str, Any], params: dict[str, Any]) -> float | None:
    """The slow-transform threshold (s/item) the file's own run applied: another tool's recorded
    value, or our policy recorded in benchmark_params. None when the file does not say."""
    for source in (meta, params):
        if source.get("slow_threshold_sec_per_item") is not None:
            return float(source["slow_threshold_sec_per_item"])
    policy = params.get("slow_transform_policy") or {}
    if policy.get("max_seconds_per_item") is not None:
        return float(policy["max_seconds_per_item"])
    return None


def rows_from_file(path: Path) -> list[dict[str, Any]]:
    """The tidy records of one raw result file, read through augbench.result_format (validated
    against the schema, an older version converted: every row has its status, and a reason
    when not ok); ResultFormatError names the file and the first field at fault."""
    payload = result_format.read(path)
    meta = payload[METADATA]
    info = meta.get("system_info") or {}
    params = meta.get("benchmark_params") or {}
    dataset = meta.get("dataset") or {}
    library = _infer_library(meta, Path(path))
    versions = meta.get("library_versions") or {}
    base = {
        "machine": _machine_label(meta),
        # The VM a cloud job actually ran on (augbench.measuring.cloud); the label elsewhere.
        "machine_actual": meta.get("machine_actual") or _machine_label(meta),
        "regime": _infer_regime(meta, Path(path)),
        "scope": meta.get("scope") or "memory",
        "library": library,
        # The library a second name stands for (A/A runs, augbench.workload.adapters); else the
        # library.
        "library_base": adapters.base_of(library),
        **_dataset_columns(dataset),
        **_scenario_columns(meta, params),
        "slow_threshold_sec_per_item": _slow_threshold(meta, params),
        "num_images": dataset.get("num_images_used") or params.get("num_images"),
        "library_version": _library_version(library, versions),
        "library_license": (meta.get("library_provenance") or {}).get("license"),
        # What shows which build was imported (a SIMD build's flags and instruction count).
        "library_provenance": json.dumps(meta.get("library_provenance") or {}, sort_keys=True),
        "library_versions": json.dumps(versions, sort_keys=True),
        "hostname": info.get("hostname"),
        # Cores the job could use (its CPU affinity), the machine's core count where not recorded.
        "usable_cores": params.get("usable_cores")
        or info.get("cpu_affinity")
        or info.get("cpu_count"),
        "processor": info.get("processor"),
        "timestamp": info.get("timestamp"),
        "source_file": str(path),
        "workers": params.get("workers"),
        "batch_size": params.get("batch_size"),
        # Input memory layout (micro: native | contiguous); empty where a file does not say.
        "layout": meta.get("layout") or "",
        "device": meta.get("device") or "cpu",
        "telemetry": _telemetry(meta),
        **_allocator(meta),
        **_quietness(meta),
    }
    out = []
    for name, row in payload[RESULTS].items():
        record = dict(base)
        for key, value in row.items():
            if isinstance(value, dict | list):
                value = json.dumps(value)
            record[key] = value
        # A pipeline's rows (whole or one step of it) all name the pipeline as their transform.
        record["transform"] = row.get("pipeline") or name
        record["status"] = row[STATUS]
        if row.get("slow_threshold_sec_per_item") is not None:
            record["slow_threshold_sec_per_item"] = float(row["slow_threshold_sec_per_item"])
        if record["status"] == "early_stopped":
            # What the run measured before stopping is a preflight, drawn and listed as such.
            if pd.isna(pd.to_numeric(record.get("preflight_throughput"), errors="coerce")):
                record["preflight_throughput"] = row.get(MEDIAN_THROUGHPUT)
            threshold = record["slow_threshold_sec_per_item"]
            record["reason"] = (
                record.get("reason")
                or row.get("early_stop_reason")
                or "early-stopped by the run that wrote this file"
                + (f" (its threshold: {threshold} s/item)" if threshold is not None else "")
            )
        if record["status"] == "unsupported" and not record.get("reason"):
            record["reason"] = "not supported (supported: false in the file)"
        if record["status"] != "ok" and not record.get("reason"):
            record["reason"] = row.get("early_stop_reason") or row.get("error") or ""
        for key in ("workers", "batch_size", "variant", "scope", "randomness"):
            if key in row and row[key] is not None:
                record[key] = row[key]
        record.update(_decoder_fields(record["regime"], row))
        # A cpu_dataloader or training row's loader (rows written before loaders were declared,
        # and training's DataLoader: process).
        if record["regime"] in DECODER_REGIMES:
            record["loader"] = row.get("loader") or loaders.DEFAULT
        if tag := allocator_tag(record["allocator_setting"]):
            record["variant"] = f"{record['variant']} · {tag}" if record["variant"] else tag
        out.append(record)
    return out


# The regimes whose rows choose their decoder and loader (the training regime's cpu feed is the
# cpu_dataloader decode scope's loader; the GPU DataLoader's decoders are
# augbench.workload.decoders.DEVICE_DECODERS, its loader the DataLoader's processes).
DECODER_REGIMES = ("cpu_dataloader", "training", "gpu_dataloader")


def group_decoder(frame: pd.DataFrame) -> pd.Series:
    """The ``decoder`` group column: a row's declared decoder where its regime chooses one
    (DECODER_REGIMES; rows of one decoder are compared with each other), '' elsewhere (the
    decoders table's rows differ by decoder and are one group: augbench.analysis.decoders)."""
    if "decoder" not in frame.columns or "regime" not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    named = frame["decoder"].astype(object).where(frame["decoder"].notna(), "").astype(str)
    return named.where(frame["regime"].isin(DECODER_REGIMES), "")


def _decoder_fields(regime: str, row: dict[str, Any]) -> dict[str, Any]:
    """``decoder``: the declared decoder (augbench.workload.decoders) of a row that has one to
    choose, a group column (rows of one decoder are compared with each other): a cpu_dataloader,
    training or gpu_dataloader row's (native where the file names none, or names only its call:
    written before decoders were declared; a training row's GPU feed decodes with torchvision.io,
    its own) and a decoders-table row's; None elsewhere. ``decoder_call``: the call it made."""
    named = row.get("decoder")
    names = {
        "gpu_dataloader": decoders.DEVICE_NAMES,
        "training": (*decoders.NAMES, *decoders.DEVICE_NAMES),  # its GPU feed's too
    }.get(regime, decoders.NAMES)
    declared = named if named in names else None
    call = row.get("decoder_call") or (None if declared else named)
    if regime in DECODER_REGIMES:
        return {"decoder": declared or decoders.NATIVE, "decoder_call": call}
    if regime == decoders.REGIME:
        return {"decoder": named, "decoder_call": call}
    return {"decoder": None, "decoder_call": call}


def _why(exc: result_format.ResultFormatError, path: Path) -> str:
    """The error's line without the file's name, which it starts with."""
    return str(exc).removeprefix(f"{path}: ")


def find_result_files(roots: list[Path]) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files.extend(sorted(p for p in root.rglob("*.json") if not p.name.startswith(".")))
    return files


def load_results(paths: list[Path]) -> pd.DataFrame:
    """:func:`load` for a rule: a result file that cannot be read (not JSON, or not what the
    result schema says) is left out and named in one line, on the terminal and in the rule's log,
    and the other files are read; where none can be read, that is the user's to fix (one line,
    augbench.logs.UserError: no traceback). Any other failure stays a bug with its traceback."""
    from augbench.logs import UserError

    unreadable: list[tuple[Path, str]] = []
    frame = load(paths, unreadable=unreadable)
    for path, why in unreadable:
        line = f"augbench: skipped unreadable result file {path}: {why}"
        print(line, file=sys.stderr, flush=True)
        if sys.stderr is not sys.__stderr__ and sys.__stderr__ is not None:
            # A rule's log (augbench.logs.redirect_to_log): on the terminal as well.
            print(line, file=sys.__stderr__, flush=True)
    if unreadable and frame.empty:
        raise UserError(
            f"no readable result file: {len(unreadable)} unreadable; remove or replace them and "
            "run snakemake again"
        )
    return frame


def load(paths: list[Path], unreadable: list[tuple[Path, str]] | None = None) -> pd.DataFrame:
    """A tidy frame from result files or folders of them. A file that cannot be read raises
    naming it, or, given ``unreadable``, is left out and listed there as (path, one line why)."""
    rows: list[dict[str, Any]] = []
    for path in find_result_files(paths):
        try:
            rows.extend(rows_from_file(path))
        except result_format.ResultFormatError as exc:
            if unreadable is None:
                raise ValueError(f"cannot read result file {exc}") from exc
            unreadable.append((path, _why(exc, path)))
        except ValueError as exc:
            if unreadable is None:
                raise ValueError(f"cannot read result file {path}: {exc}") from exc
            unreadable.append((path, " ".join(str(exc).split())))
    if not rows and unreadable:
        return pd.DataFrame(columns=list(COLUMNS))
    frame = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    extra = [c for c in frame.columns if c not in COLUMNS]
    frame = frame[list(COLUMNS) + extra]
    for col in (MEDIAN_THROUGHPUT, "mean_throughput", "std_throughput", "cv_throughput"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    frame["workers"] = frame["workers"].fillna(-1).astype(int) if len(frame) else frame["workers"]
    frame["batch_size"] = (
        frame["batch_size"].fillna(-1).astype(int) if len(frame) else frame["batch_size"]
    )
    frame["variant"] = frame["variant"].fillna("")
    frame["dataset"] = frame["dataset"].fillna("unknown").astype(str)
    frame["scope"] = frame["scope"].fillna("memory")
    frame["loader"] = frame["loader"].fillna("").astype(str)
    # A job's runs (augbench.planning.regimes.run_suffix) are one row each setting: their values
    # pooled.
    frame = pool_job_runs(frame)
    order = ["machine", "dataset", "regime", "scope", "transform", "library"]
    frame = frame.sort_values(order).reset_index(drop=True)
    return add_baselines(frame)  # cpu_dataloader baseline columns, blank for other regimes
