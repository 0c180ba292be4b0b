"""The raw result file format, declared once: field names, the schema, its version, reading.

A raw result file is one JSON per benchmark job in the common augmentation-benchmark format,
``{"metadata": {...}, "results": {"<transform or recipe>": {row}}}``. Its JSON Schema is
``workflow/schemas/result.schema.yaml`` (:data:`SCHEMA_PATH`); the names of the fields the
analysis reads are the constants below, and nothing else spells them.

Versions (``metadata.schema_version``):

- ``1`` (:data:`SCHEMA_VERSION`): what this workflow writes. Every row has a ``status`` (one of
  :data:`STATUSES`), a ``reason`` when it is not ok, and an ok row its ``median_throughput``,
  ``throughputs`` and ``num_successful_runs``.
- absent (:data:`VERSION_ABSENT`, read as 0): the common format as other tools publish it (the
  peer AlbumentationsX benchmark records no version) and files this workflow wrote before it
  stamped one. A row may leave ``status`` out or contradict it with flags (``supported: false``,
  ``early_stopped: true`` next to ``status: "ok"``); :func:`from_common` is the declared
  converter to version 1 (:data:`CONVERTERS`), and :func:`read` applies it. A version this
  module does not know is refused, never guessed at.

Where validation happens. The engines run in the libraries' envs, which have neither jsonschema
nor PyYAML; this module imports only the standard library at module level, so they may import it.

- On write: :func:`augbench.results.write_result_file` (every versioned result file an engine or the
  launcher writes) runs :func:`check` before the file exists, a pure-Python check of what the
  schema requires of a version-1 file (:data:`ROW_TYPES`, :data:`METADATA_TYPES`, the required
  fields; tests/test_result_format.py holds it to the schema). A file that fails is never written:
  the job fails, naming the field.
- On read: :func:`read` (the driver's interpreter: the analysis, the tools) validates every file
  against the full schema with jsonschema (imported lazily in :func:`validate`), then converts an
  older version. A file that fails raises :class:`ResultFormatError`: one line naming the file
  and the first field at fault; the analysis skips that file, says so, and reads the others.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path("workflow") / "schemas" / "result.schema.yaml"  # in the checkout
SCHEMA_PATH = Path(__file__).resolve().parents[1] / SCHEMA_FILE
SCHEMA_VERSION = 1
VERSION_ABSENT = 0  # a file without metadata.schema_version: the common format (from_common)

# -- field names -------------------------------------------------------------------------------
METADATA = "metadata"
RESULTS = "results"
SCHEMA_VERSION_FIELD = "schema_version"  # in metadata
CONVERTED_FROM = "converted_from_version"  # in metadata, set by read() on a converted file
SLOW_THRESHOLD = "slow_threshold_sec_per_item"  # a row's, the metadata's or benchmark_params'

STATUS = "status"
REASON = "reason"
SUPPORTED = "supported"
EARLY_STOPPED = "early_stopped"
EARLY_STOP_REASON = "early_stop_reason"
ERROR = "error"
MEDIAN_THROUGHPUT = "median_throughput"
MEAN_THROUGHPUT = "mean_throughput"
STD_THROUGHPUT = "std_throughput"
CV_THROUGHPUT = "cv_throughput"
THROUGHPUTS = "throughputs"
TIMES = "times"
NUM_SUCCESSFUL_RUNS = "num_successful_runs"
PREFLIGHT_THROUGHPUT = "preflight_throughput"

# Row statuses. env_failed: the library's env could not be built on the machine
# (augbench.planning.provision), so the job ran nothing; its rows name why.
STATUSES: tuple[str, ...] = ("ok", "early_stopped", "unsupported", "skipped", "error", "env_failed")
OK = "ok"

# What a version-1 file must have, and the JSON types of the fields the analysis reads where a
# file has them (the schema's $defs, tests/test_result_format.py compares them). Other fields are
# allowed and kept.
REQUIRED_TOP: tuple[str, ...] = (METADATA, RESULTS)
REQUIRED_ROW: tuple[str, ...] = (STATUS,)
REQUIRED_OK_ROW: tuple[str, ...] = (MEDIAN_THROUGHPUT, THROUGHPUTS, NUM_SUCCESSFUL_RUNS)
REQUIRED_NOT_OK_ROW: tuple[str, ...] = (REASON,)
# Why a conditional field is missing (the schema's if/then descriptions say the same).
OK_ROW_NEEDS = "required in an ok row"
NOT_OK_ROW_NEEDS = "required when the row is not ok"
METADATA_TYPES: dict[str, tuple[str, ...]] = {
    SCHEMA_VERSION_FIELD: ("integer",),
    "machine": ("string",),
    "machine_actual": ("string", "null"),
    "regime": ("string",),
    "mode": ("string",),
    "scope": ("string",),
    "library": ("string",),
    "variant": ("string", "null"),
    "scenario": ("string", "null"),
    "layout": ("string", "null"),
    "device": ("string", "null"),
    "allocator_setting": ("string", "null"),
    "system_info": ("object",),
    "dataset": ("object",),
    "benchmark_params": ("object",),
    "library_versions": ("object",),
    "library_provenance": ("object",),
    "environment": ("object",),
    "allocator": ("object", "null"),
    "quietness": ("object", "null"),
    "job_memory": ("object", "null"),
    SLOW_THRESHOLD: ("number", "null"),
}
ROW_TYPES: dict[str, tuple[str, ...]] = {
    STATUS: ("string",),
    REASON: ("string",),
    SUPPORTED: ("boolean",),
    EARLY_STOPPED: ("boolean",),
    EARLY_STOP_REASON: ("string", "null"),
    MEDIAN_THROUGHPUT: ("number",),
    MEAN_THROUGHPUT: ("number",),
    STD_THROUGHPUT: ("number",),
    CV_THROUGHPUT: ("number",),
    "relative_ci": ("number", "null"),
    THROUGHPUTS: ("array",),
    TIMES: ("array",),
    NUM_SUCCESSFUL_RUNS: ("integer",),
    "variance_stable": ("boolean",),
    PREFLIGHT_THROUGHPUT: ("number", "null"),
    SLOW_THRESHOLD: ("number", "null"),
    "workers": ("integer", "null"),
    "batch_size": ("integer", "null"),
    "variant": ("string", "null"),
    "scope": ("string", "null"),
    "pipeline": ("string", "null"),
    "decoder": ("string", "null"),
    "loader": ("string", "null"),
}
NUMBER_LISTS: tuple[str, ...] = (THROUGHPUTS, TIMES)  # arrays of numbers


class ResultFormatError(ValueError):
    """A file that is not a result file of a known version; the message is one line naming the
    file and the first field at fault."""


# -- the pure-Python check (engines, no jsonschema) ---------------------------------------------
def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown JSON type {kind!r}")


def _json_type(value: Any) -> str:
    for kind in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _is(value, kind):
            return kind
    return type(value).__name__


def _type_fault(value: Any, kinds: Iterable[str]) -> str | None:
    kinds = tuple(kinds)
    if any(_is(value, k) for k in kinds):
        return None
    return f"is {_json_type(value)}, expected {' or '.join(kinds)}"


def _first_fault(payload: Any) -> tuple[str, str] | None:
    """(field, problem) of the first fault of a version-1 payload, None when it has none: an
    object's missing fields first, then its fields in the order the file writes them (as
    :func:`validate` orders the schema's errors)."""
    if not isinstance(payload, dict):
        return "(the file)", f"is {_json_type(payload)}, expected object"
    for key in REQUIRED_TOP:
        if key not in payload:
            return key, "missing"
    for key, value in payload.items():
        if key == METADATA and (fault := _metadata_fault(value)):
            return fault
        if key == RESULTS and (fault := _results_fault(value)):
            return fault
    return None


def _metadata_fault(meta: Any) -> tuple[str, str] | None:
    if not isinstance(meta, dict):
        return METADATA, f"is {_json_type(meta)}, expected object"
    if SCHEMA_VERSION_FIELD not in meta:  # a file without it is not one this workflow writes
        return f"{METADATA}.{SCHEMA_VERSION_FIELD}", "missing"
    for key, value in meta.items():
        kinds = METADATA_TYPES.get(key)
        if kinds and (problem := _type_fault(value, kinds)):
            return f"{METADATA}.{key}", problem
        if key == SCHEMA_VERSION_FIELD and value != SCHEMA_VERSION:
            return f"{METADATA}.{key}", f"{value!r} is not one of {SCHEMA_VERSION}"
    return None


def _results_fault(results: Any) -> tuple[str, str] | None:
    if not isinstance(results, dict):
        return RESULTS, f"is {_json_type(results)}, expected object"
    for name, row in results.items():
        if fault := _row_fault(f"{RESULTS}.{name}", row):
            return fault
    return None


def _row_fault(where: str, row: Any) -> tuple[str, str] | None:
    if not isinstance(row, dict):
        return where, f"is {_json_type(row)}, expected object"
    for key in REQUIRED_ROW:
        if key not in row:
            return f"{where}.{key}", "missing"
    status = row[STATUS]
    if status == OK:
        needs, why = REQUIRED_OK_ROW, OK_ROW_NEEDS
    elif isinstance(status, str) and status in STATUSES:
        needs, why = REQUIRED_NOT_OK_ROW, NOT_OK_ROW_NEEDS
    else:
        needs, why = (), ""
    for key in needs:
        if key not in row:
            return f"{where}.{key}", f"missing ({why})"
    for key, value in row.items():
        kinds = ROW_TYPES.get(key)
        if kinds and (problem := _type_fault(value, kinds)):
            return f"{where}.{key}", problem
        if key == STATUS and value not in STATUSES:
            return f"{where}.{key}", f"{value!r} is not one of {', '.join(STATUSES)}"
        if key in NUMBER_LISTS:
            for i, item in enumerate(value):
                if problem := _type_fault(item, ("number",)):
                    return f"{where}.{key}.{i}", problem
    return None


def check(payload: Any, source: str | Path) -> None:
    """What the schema requires of a version-1 file, in pure Python (the engines' side: their
    envs have no jsonschema); raises :class:`ResultFormatError` at the first fault."""
    if fault := _first_fault(payload):
        raise ResultFormatError(_line(source, *fault))


# -- the full schema (driver side) --------------------------------------------------------------
def _line(source: str | Path, field: str, problem: str) -> str:
    return " ".join(f"{source}: {field}: {problem}".split())


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    from augbench import yaml_files

    return yaml_files.safe_load(SCHEMA_PATH.read_text())


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def _order(payload: Any, path: Iterable[Any]) -> tuple[int, ...]:
    """Where ``path`` lies in the file, in the order its keys are written."""
    out = []
    node = payload
    for part in path:
        if isinstance(node, dict) and part in node:
            out.append(list(node).index(part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        else:
            out.append(math.inf)  # type: ignore[arg-type]
            break
    return tuple(out)


def _fault_of(payload: Any, error: Any) -> tuple[tuple[Any, ...], list[Any], str]:
    """(where it lies in the file, path of the field at fault, what is wrong) of one jsonschema
    error. An object's missing fields come before the faults of the fields it has."""
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        named = [k for k in missing if error.message.startswith(repr(k))] or missing
        # A conditional requirement (the schema's if/then) says when it applies.
        conditional = len(error.schema_path) > 1 and error.schema_path[-2] == "then"
        why = error.schema.get("description") if conditional else None
        where = (*_order(payload, path), -1)
        return where, path + named[:1], "missing" + (f" ({why})" if why else "")
    return (_order(payload, path), path, _problem(error))


def _problem(error: Any) -> str:
    """What is wrong, in one short phrase (the field is named by the caller)."""
    if error.validator == "type":
        kinds = error.validator_value
        kinds = [kinds] if isinstance(kinds, str) else kinds
        return f"is {_json_type(error.instance)}, expected {' or '.join(kinds)}"
    if error.validator in ("enum", "const"):
        allowed = error.validator_value
        allowed = allowed if isinstance(allowed, list) else [allowed]
        shown = repr(error.instance)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"{shown} is not one of {', '.join(str(a) for a in allowed)}"
    return error.message if len(error.message) <= 200 else error.message[:197] + "..."


def _name(path: list[Any]) -> str:
    return ".".join(str(p) for p in path) or "(the file)"


def validate(payload: Any, source: str | Path) -> None:
    """The full schema (jsonschema; the driver's interpreter): raises
    :class:`ResultFormatError` naming ``source`` and the first field at fault, in the order the
    file is written."""
    errors = list(_validator().iter_errors(payload))
    if not errors:
        return
    _, path, problem = min((_fault_of(payload, e) for e in errors), key=lambda f: f[0])
    raise ResultFormatError(_line(source, _name(path), problem))


# -- versions ----------------------------------------------------------------------------------
def version_of(payload: dict[str, Any]) -> int:
    """The file's schema version; :data:`VERSION_ABSENT` where its metadata records none."""
    meta = payload.get(METADATA)
    version = meta.get(SCHEMA_VERSION_FIELD) if isinstance(meta, dict) else None
    return VERSION_ABSENT if version is None else version


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def common_status(row: dict[str, Any]) -> str:
    """The status of a row in the common format, the flags keeping their meaning: other tools
    write ``status: "ok"`` next to ``early_stopped: true`` (a preflight, not a measurement) or
    ``supported: false``; such rows never compete as ok. An explicit non-ok status stays."""
    status = row.get(STATUS)
    if status in STATUSES and status != OK:
        return str(status)
    if row.get(SUPPORTED) is False:
        return "unsupported"
    if _truthy(row.get(EARLY_STOPPED)):
        return "early_stopped"
    if status == OK:
        return OK
    if row.get(ERROR):
        return "error"
    return OK if row.get(MEDIAN_THROUGHPUT) else "error"


def _threshold(meta: dict[str, Any], row: dict[str, Any]) -> float | None:
    """The slow-transform threshold (s/item) the file's own run applied, where it says."""
    params = meta.get("benchmark_params") or {}
    for source in (row, meta, params):
        if source.get(SLOW_THRESHOLD) is not None:
            return float(source[SLOW_THRESHOLD])
    policy = params.get("slow_transform_policy") or {}
    if policy.get("max_seconds_per_item") is not None:
        return float(policy["max_seconds_per_item"])
    return None


NO_REASON = "the file gives no reason"


def common_reason(row: dict[str, Any], status: str, threshold: float | None) -> str:
    """Why a row of the common format is not ok: what it says, else what its flags mean."""
    if row.get(REASON):
        return str(row[REASON])
    if status == "early_stopped":
        if row.get(EARLY_STOP_REASON):
            return str(row[EARLY_STOP_REASON])
        return "early-stopped by the run that wrote this file" + (
            f" (its threshold: {threshold} s/item)" if threshold is not None else ""
        )
    if status == "unsupported":
        return "not supported (supported: false in the file)"
    return str(row.get(EARLY_STOP_REASON) or row.get(ERROR) or NO_REASON)


def from_common(payload: dict[str, Any]) -> dict[str, Any]:
    """Version absent -> 1: each row's status from its flags (:func:`common_status`) and a
    reason where it is not ok (:func:`common_reason`); every other field as the file has it."""
    meta = dict(payload[METADATA])
    rows = {}
    for name, row in payload[RESULTS].items():
        status = common_status(row)
        rows[name] = {**row, STATUS: status}
        if status != OK:
            rows[name][REASON] = common_reason(row, status, _threshold(meta, row))
    meta[SCHEMA_VERSION_FIELD] = SCHEMA_VERSION
    meta[CONVERTED_FROM] = VERSION_ABSENT
    return {**payload, METADATA: meta, RESULTS: rows}


# Each older version's converter to the next one, declared; read() applies them in turn.
CONVERTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {VERSION_ABSENT: from_common}


def upgrade(payload: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """``payload`` at :data:`SCHEMA_VERSION` through the declared converters."""
    version = version_of(payload)
    while version != SCHEMA_VERSION:
        convert = CONVERTERS.get(version) if isinstance(version, int) else None
        if convert is None:
            known = ", ".join(str(v) for v in [*CONVERTERS, SCHEMA_VERSION])
            problem = f"version {version!r} is not one this reader knows ({known})"
            raise ResultFormatError(_line(source, f"{METADATA}.{SCHEMA_VERSION_FIELD}", problem))
        payload = convert(payload)
        version = version_of(payload)
    return payload


def load_json(path: str | Path) -> Any:
    """The file's JSON; :class:`ResultFormatError` naming it where it is not readable JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFormatError(_line(path, "(the file)", f"not readable JSON ({exc})")) from None


def read(path: str | Path) -> dict[str, Any]:
    """A raw result file, validated against the schema and converted to :data:`SCHEMA_VERSION`;
    :class:`ResultFormatError` (one line: the file, the first field at fault) where it fails."""
    payload = load_json(path)
    validate(payload, path)
    return upgrade(payload, path)
