"""Effective workflow configuration: preset merged under the user's config, then validated.

Called by workflow/rules/common.smk. Values given with ``snakemake --config`` arrive as strings
when nested (Snakemake reads them with YAML's BaseLoader): they are coerced to the types the
schema allows before validation (``coerce``). Errors name the offending key and value, list the
allowed values and suggest the nearest valid key or value; each is one line (augbench.logs).
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from pathlib import Path
from typing import Any

from augbench import policy, yaml_files
from augbench.logs import UserError
from augbench.planning import regimes, starvation_model
from augbench.workload import adapters, catalog, decoders, gpu_recipes, loaders, matrix

PRESETS_DIR = Path("config") / "presets"
SCHEMA_PATH = Path("workflow") / "schemas" / "config.schema.yaml"


class ConfigError(UserError, ValueError):
    """One or more config problems (``problems``), each one line: ``config error at <key>: ...``."""


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def schema(basedir: Path) -> dict[str, Any]:
    doc = yaml_files.safe_load((Path(basedir) / SCHEMA_PATH).read_text())
    props = doc["properties"]
    props["libraries"]["items"]["enum"] = adapters.names()
    props["regimes"]["items"]["enum"] = list(regimes.NAMES)
    props["resolution_regimes"]["items"]["enum"] = list(regimes.NAMES)
    props["allocators"]["items"]["enum"] = list(policy.ALLOCATOR_SETTINGS)
    props["allocator_jobs"]["properties"]["rules"]["items"]["enum"] = list(regimes.timed_rules())
    props["cpu_dataloader"]["properties"]["job_per"]["enum"] = list(matrix.DATALOADER_JOB_PER)
    props["cpu_dataloader"]["properties"]["decoders"]["items"]["enum"] = list(decoders.NAMES)
    props["cpu_dataloader"]["properties"]["loaders"]["items"]["enum"] = list(loaders.NAMES)
    gpu = props["gpu_dataloader"]["properties"]
    gpu["decoders"]["items"]["enum"] = list(decoders.DEVICE_NAMES)
    gpu["decoder_transforms"]["items"]["enum"] = [gpu_recipes.IDENTITY, *catalog.names()]
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


# -- coercion of --config strings -----------------------------------------------------------------
# Scalars as YAML reads them in a config file; only strings are coerced, and only where the schema
# does not accept them as strings (a transform name or machine label is never turned into a number).
_INTEGER = re.compile(r"[-+]?[0-9]+")
_NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_BOOLEANS = {
    **dict.fromkeys(("true", "yes", "on"), True),
    **dict.fromkeys(("false", "no", "off"), False),
}
_NULLS = ("null", "Null", "NULL", "~")
_SCALAR_TYPES = ("integer", "number", "boolean", "null")
_NOT_PARSED = object()


def _inline_refs(node: Any, root: dict[str, Any]) -> Any:
    """``node`` with every local ``$ref`` replaced by what it points to (the schema has no
    recursive references), so any part of it validates on its own."""
    if isinstance(node, list):
        return [_inline_refs(item, root) for item in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        target: Any = root
        for part in node["$ref"][2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline_refs({**target, **rest}, root)
    return {key: _inline_refs(value, root) for key, value in node.items()}


def _valid(value: Any, node: dict[str, Any]) -> bool:
    import jsonschema

    return jsonschema.Draft202012Validator(node).is_valid(value)


def _branches(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The node and the branches of its oneOf/anyOf (flattened): the shapes a value may take."""
    out = [node]
    for key in ("oneOf", "anyOf"):
        for branch in node.get(key) or []:
            if isinstance(branch, dict):
                out.extend(_branches(branch))
    return out


def _types(node: dict[str, Any]) -> set[str]:
    """JSON types this node itself allows (from type, const, enum); empty: not constrained here."""
    declared = node.get("type")
    found = set([declared] if isinstance(declared, str) else declared or [])
    values = [node["const"]] if "const" in node else list(node.get("enum") or [])
    for value in values:
        if value is None:
            found.add("null")
        elif isinstance(value, bool):
            found.add("boolean")
        elif isinstance(value, int):
            found.add("integer")
        elif isinstance(value, float):
            found.add("number")
        elif isinstance(value, str):
            found.add("string")
    return found


def _shapes(node: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The branches of ``node`` that take a value of JSON type ``kind`` (object or array)."""
    shaped = ("properties", "additionalProperties") if kind == "object" else ("items",)
    return [
        branch
        for branch in _branches(node)
        if kind in _types(branch) or (not _types(branch) and any(k in branch for k in shaped))
    ]


def _parse(text: str, kind: str) -> Any:
    stripped = text.strip()
    if kind == "integer" and _INTEGER.fullmatch(stripped):
        return int(stripped)
    if kind == "number" and _NUMBER.fullmatch(stripped):
        number = float(stripped)
        if math.isfinite(number):
            return int(stripped) if _INTEGER.fullmatch(stripped) else number
    if kind == "boolean" and stripped.lower() in _BOOLEANS:
        return _BOOLEANS[stripped.lower()]
    if kind == "null" and stripped in _NULLS:
        return None
    return _NOT_PARSED


def _coerce_string(text: str, node: dict[str, Any]) -> Any:
    allowed = set().union(*(_types(branch) for branch in _branches(node)))
    # A YAML null literal where the schema allows null means null, as in a config file (a value
    # literally named "null" is never meant).
    if "null" in allowed and text.strip() in _NULLS:
        return None
    if _valid(text, node):
        return text
    candidates = [
        parsed
        for kind in _SCALAR_TYPES
        if kind in allowed and (parsed := _parse(text, kind)) is not _NOT_PARSED
    ]
    for candidate in candidates:
        if _valid(candidate, node):
            return candidate
    # None valid: the first reading keeps the schema's own message (e.g. "0 is less than ...").
    return candidates[0] if candidates else text


def _child_schema(node: dict[str, Any], key: str) -> dict[str, Any] | None:
    properties = node.get("properties") or {}
    if key in properties:
        return properties[key]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def coerce(value: Any, node: dict[str, Any]) -> Any:
    """``value`` with strings turned into the integers, numbers, booleans and nulls that
    ``node`` (a schema with local $refs inlined) expects there, at any depth; a string the
    schema accepts as a string stays one. Containers are copied, never changed in place."""
    if isinstance(value, str):
        return _coerce_string(value, node)
    kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
    shapes = _shapes(node, kind) if kind else []
    if not shapes:
        return value
    tried = [_coerce_container(value, shape) for shape in shapes]
    if len(tried) == 1:
        return tried[0]
    # Several shapes of this type (oneOf/anyOf): the first reading the schema accepts.
    return next((out for out in tried if _valid(out, node)), tried[0])


def _coerce_container(value: dict[str, Any] | list[Any], shape: dict[str, Any]) -> Any:
    if isinstance(value, list):
        items = shape.get("items")
        return [coerce(item, items) if isinstance(items, dict) else item for item in value]
    out = {}
    for key, item in value.items():
        child = _child_schema(shape, key)
        out[key] = coerce(item, child) if child is not None else item
    return out


# -- unknown keys ------------------------------------------------------------------------------
def _where(path: list[Any]) -> str:
    return "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(path)
    )


def _did_you_mean(value: str, choices: list[str]) -> str:
    match = difflib.get_close_matches(value, choices, n=1)
    return f"; did you mean {match[0]!r}?" if match else ""


def unknown_keys(value: Any, node: dict[str, Any]) -> list[str]:
    """One error per key of ``value`` (at any depth) that the schema does not define where it
    lists the keys (``properties``) and takes no others, naming the nearest valid key."""
    return [message for _, message in _unknown(value, node, [])]


def _unknown(value: Any, node: dict[str, Any], path: list[Any]) -> list[tuple[list[Any], str]]:
    """(path, message) of each unknown key below ``path``."""
    found: list[tuple[list[Any], str]] = []
    if isinstance(value, list):
        shapes = [b for b in _shapes(node, "array") if isinstance(b.get("items"), dict)]
        if len(shapes) == 1:
            for i, item in enumerate(value):
                found += _unknown(item, shapes[0]["items"], [*path, i])
        return found
    shapes = _shapes(node, "object") if isinstance(value, dict) else []
    if len(shapes) != 1:
        return found  # not an object, or several object shapes: the schema's message decides
    shape = shapes[0]
    properties = shape.get("properties")
    closed = properties is not None and not isinstance(shape.get("additionalProperties"), dict)
    for key, item in value.items():
        where = _where([*path, key])
        if closed and key not in properties:
            valid = list(properties)
            found.append(
                (
                    [*path, key],
                    f"config error at {where}: unknown key{_did_you_mean(str(key), valid)} "
                    f"(valid: {', '.join(valid)})",
                )
            )
            continue
        child = _child_schema(shape, key)
        if child is not None:
            found += _unknown(item, child, [*path, key])
    return found


# -- schema errors -----------------------------------------------------------------------------
def _best(error: Any) -> Any:
    """For a oneOf error, an error of the branch that matches the value's type (the list branch
    for lists, the object branch for objects): the deepest one."""
    while error.validator == "oneOf" and error.context:
        depth = len(list(error.absolute_path))
        wrong_type = [
            e for e in error.context if e.validator == "type" and len(e.absolute_path) == depth
        ]
        shaped = [e for e in error.context if e not in wrong_type] or error.context
        error = max(shaped, key=lambda e: len(list(e.absolute_path)))
    return error


def _format_error(error: Any) -> str:
    forms = [b.get("type") for b in error.schema.get("oneOf") or [] if "type" in b]
    error = _best(error)
    message = error.message
    if error.validator == "enum" and isinstance(error.instance, str):
        message += _did_you_mean(error.instance, [str(v) for v in error.validator_value])
    if error.validator == "const":
        others = "".join(f" nor {_article(str(t))}" for t in forms)
        verb = "is neither" if others else "is not"
        message = f"{error.instance!r} {verb} {error.validator_value!r}{others}"
        if isinstance(error.instance, str) and isinstance(error.validator_value, str):
            message += _did_you_mean(error.instance, [error.validator_value])
    return f"config error at {_where(list(error.absolute_path)) or '<root>'}: {message}"


def _article(kind: str) -> str:
    return {"array": "a list", "object": "a mapping", "integer": "an integer"}.get(
        kind, f"a {kind}"
    )


def _reported_as_unknown(error: Any, unknown: set[str]) -> bool:
    """An additionalProperties error whose every extra key is already an unknown-key error."""
    error = _best(error)
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return False
    properties = error.schema.get("properties") or {}
    path = list(error.absolute_path)
    extra = [key for key in error.instance if key not in properties]
    return bool(extra) and all(_where([*path, key]) in unknown for key in extra)


def gpu_mode(configured: str, provisioned_machines: bool) -> str:
    """What a GPU job does without usable CUDA, as the engines take it (optional or required).
    ``auto`` fails such a job where the sweep provisions its machine (a cloud GPU VM is billed
    whether or not its rows are empty) and writes ``skipped`` rows elsewhere (a laptop, a CPU
    test machine). Decided here, not in a profile's config file, so that a user's own
    ``--configfile`` cannot drop it."""
    if configured != "auto":
        return configured
    return "required" if provisioned_machines else "optional"


def resolve(
    user_config: dict[str, Any], basedir: Path, provisioned_machines: bool = False
) -> dict[str, Any]:
    """Merge the preset under ``user_config``, coerce command-line strings, validate, fill
    defaults and derived values. Raises ConfigError naming every problem (one line each).
    ``provisioned_machines``: the jobs run on machines the sweep provisions and pays for (a
    default storage provider): ``gpu: auto`` is then ``required`` (:func:`gpu_mode`)."""
    import jsonschema

    basedir = Path(basedir)
    preset = user_config.get("preset", "default")
    presets = available_presets(basedir)
    if preset not in presets:
        raise ConfigError(
            f"config error at preset: unknown preset {preset!r}; allowed: {presets} (the "
            f"files in {PRESETS_DIR}){_did_you_mean(str(preset), presets)}"
        )
    preset_file = basedir / PRESETS_DIR / f"{preset}.yaml"
    preset_values = yaml_files.safe_load(preset_file.read_text()) or {}
    merged = deep_merge(preset_values, user_config)
    merged["preset"] = preset
    # A library's second name (``albumentationsx~b``: A/A runs, docs/calibration.md) is a library
    # of its own from here on: a config name, planned like its base (augbench.workload.adapters).
    if isinstance(merged.get("libraries"), list):
        adapters.register_aliases(str(name) for name in merged["libraries"])

    doc = schema(basedir)
    merged = coerce(merged, _inline_refs(doc, doc))
    unknown = _unknown(merged, doc, [])
    named = {_where(path) for path, _ in unknown}
    validator = jsonschema.Draft202012Validator(doc)
    found = [
        *unknown,
        *(
            (list(e.absolute_path), _format_error(e))
            for e in validator.iter_errors(merged)
            if not _reported_as_unknown(e, named)
        ),
    ]
    if found:
        # In the config's own order of keys: every problem, once, one line each.
        order = sorted(found, key=lambda item: [(isinstance(p, str), p) for p in item[0]])
        raise ConfigError(*dict.fromkeys(message for _, message in order))
    _apply_defaults(merged, doc)
    merged["gpu"] = gpu_mode(merged["gpu"], provisioned_machines)

    channels = merged["channels"]
    if merged["transforms"] == "all":
        merged["transforms"] = catalog.names(channels)
    outside = [t for t in merged["transforms"] if t not in catalog.names(channels)]
    if outside:
        raise ConfigError(
            f"config error at transforms: {outside} not in the {channels}-channel set; "
            f"allowed: {catalog.names(channels)}"
        )
    if problems := calibration_problems(merged):
        raise ConfigError(*problems)
    conflicts = env_conflicts(merged["libraries"], basedir / "envs")
    if conflicts:
        raise ConfigError(*conflicts)
    merged["pipeline_definitions"] = _pipeline_definitions(merged, basedir)
    training = merged["training"]
    # The out-of-sample prediction of a training row needs a cpu_dataloader row of the same
    # workers and batch size: by default the training regime takes the loader's settings.
    for key in ("workers", "batch_size"):
        if training.get(key) is None:
            training[key] = merged["cpu_dataloader"][key]
    if training.pop("pipelines", False):  # every configured pipeline, after the named recipes
        names = [p["name"] for p in merged["pipeline_definitions"]]
        training["transforms"] = list(dict.fromkeys([*training["transforms"], *names]))
    known = {p["name"] for p in merged["pipeline_definitions"]} | set(catalog.CANDIDATES)
    unknown_recipes = [t for t in merged["training"]["transforms"] if t not in known]
    if unknown_recipes:
        raise ConfigError(
            f"config error at training.transforms: {unknown_recipes} are neither catalog "
            f"recipes nor configured pipelines; pipelines: "
            f"{sorted(p['name'] for p in merged['pipeline_definitions'])}"
        )
    target_problem = starvation_model.target_problem(
        merged["starvation"], merged["cpu_dataloader"]["required_throughput"]
    )
    if target_problem:
        raise ConfigError(target_problem)
    if merged["machine"] == "auto":
        merged["machine"] = auto_machine_label()
    return merged


def calibration_problems(cfg: dict[str, Any]) -> list[str]:
    """A/A pairs (``calibration.pairs``) that name a library the run does not measure, or a name
    twice: one line each."""
    problems = []
    seen: set[str] = set()
    for index, pair in enumerate(cfg.get("calibration", {}).get("pairs", [])):
        where = f"config error at calibration.pairs[{index}]"
        missing = [name for name in pair if name not in cfg["libraries"]]
        if missing:
            problems.append(
                f"{where}: {', '.join(missing)} not in libraries {cfg['libraries']}; each pair "
                "names two configured libraries (docs/calibration.md)"
            )
        elif len(set(pair)) < 2 or seen & set(pair):
            problems.append(
                f"{where}: {pair} repeats a name; each name is in one pair, so that pairs are "
                "independent"
            )
        seen |= set(pair)
    return problems


def env_conflicts(libraries: list[str], envs_dir: Path) -> list[str]:
    """A configured library whose env lock also installs a distribution it replaces (the same
    module: Pillow in Pillow-SIMD's env) cannot be measured: one line each, before anything runs."""
    from augbench.planning.provision import lock_pins
    from augbench.workload import adapters

    problems = []
    for library in libraries:
        replaced = adapters.declared(library).replaces_distributions
        lock = Path(envs_dir) / f"{adapters.base_of(library)}.txt"
        both = sorted(set(replaced) & set(lock_pins(lock))) if replaced and lock.exists() else []
        if both:
            problems.append(
                f"config error at libraries: {library}'s env ({lock.name}) also installs "
                f"{', '.join(both)}, the module {library} is; one env cannot hold both: re-lock it "
                f"with `uv run python tools/maintenance/lock_envs.py --only {library}`"
            )
    return problems


def _pipeline_definitions(cfg: dict[str, Any], basedir: Path) -> list[dict[str, Any]]:
    """The configured pipelines, parsed and checked against the catalog
    (augbench.workload.pipelines); derived, like ``machine``: never part of the user's config."""
    from augbench.workload import pipelines
    from augbench.workload.pipeline_sources import configured

    try:
        return [p.to_dict() for p in configured.from_config(cfg, basedir)]
    except pipelines.PipelineError as exc:
        raise ConfigError(f"config error at pipelines: {exc}") from None


def auto_machine_label() -> str:
    """Stable across reruns on one machine: CPU model and usable core count, slugged."""
    from augbench.results import cpu_model, usable_cores

    cores = usable_cores()
    model = re.sub(r"\(r\)|\(tm\)|cpu|processor|@.*$", "", cpu_model().lower())
    slug = re.sub(r"[^a-z0-9]+", "-", model).strip("-") or "cpu"
    return f"{slug}-{cores}c"
