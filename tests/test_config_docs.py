"""config/README.md documents the configuration the schema accepts, key for key.

A *key* is a dotted path of workflow/schemas/config.schema.yaml: every property whose parent is an
object with ``properties`` (``cpu_dataloader.workers``, ``gpu_dataloader.worker_crop``); a map
(``additionalProperties``: ``plot_from``, ``cloud.prices_usd_per_hour``) is one key, and the
properties of its values are keys below a ``<placeholder>`` segment
(``cloud.regimes.<regime>.machine_type``). Lists of objects (``pipelines``,
``cpu_dataloader.required_throughput``) are one key. The README documents a key by naming it in
backticks in the ``key`` column of one of its tables.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CONFIG_README = REPO / "config" / "README.md"
MAP = "*"  # a placeholder segment: any key of a map


def schema_keys(node: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every key of the schema below ``node`` (module docstring), with its schema."""
    out: dict[str, dict[str, Any]] = {}
    for name, sub in (node.get("properties") or {}).items():
        path = f"{prefix}{name}"
        if "properties" in sub:
            out |= schema_keys(sub, f"{path}.")
            continue
        out[path] = sub
        values = sub.get("additionalProperties")
        if isinstance(values, dict) and "properties" in values:
            out |= schema_keys(values, f"{path}.{MAP}.")
    return out


def _resolves(path: str, schema: dict[str, Any]) -> bool:
    """Whether a documented dotted path names something the schema accepts."""
    node: dict[str, Any] = schema
    for part in path.split("."):
        values = node.get("additionalProperties")
        if part == MAP and isinstance(values, dict):
            node = values
        elif part in (node.get("properties") or {}):
            node = node["properties"][part]
        else:
            return False
    return True


def key_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """The markdown tables of ``text`` whose header has a ``key`` column: (header, rows)."""
    tables = []
    pattern = r"^\|(.+)\|\n\|[-| :]+\|\n((?:\|.*\|(?:\n|$))+)"
    for match in re.finditer(pattern, text, re.M):
        header = [cell.strip() for cell in match.group(1).split("|")]
        if "key" not in header:
            continue
        rows = [
            [cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in match.group(2).splitlines()
        ]
        tables.append((header, rows))
    return tables


def _normalized(token: str) -> str:
    """``cloud.regimes.<regime>.cpus`` -> ``cloud.regimes.*.cpus``."""
    return re.sub(r"<[^>]*>", MAP, token)


def documented_rows() -> list[tuple[list[str], str]]:
    """(keys named in the key column, default column or "") of every row of the key tables."""
    out = []
    for header, rows in key_tables(CONFIG_README.read_text()):
        key_col = header.index("key")
        default_col = header.index("default") if "default" in header else None
        for row in rows:
            keys = [_normalized(t) for t in re.findall(r"`([^`]+)`", row[key_col])]
            out.append((keys, row[default_col] if default_col is not None else ""))
    return out


def documented_keys() -> set[str]:
    return {key for keys, _ in documented_rows() for key in keys}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return yaml.safe_load(SCHEMA.read_text())


def test_the_key_tables_are_found(schema: dict[str, Any]) -> None:
    keys = schema_keys(schema)
    assert {"preset", "cpu_dataloader.workers", "plot_from", "cloud.regimes.*.gpu"} <= set(keys)
    assert {"cpu_dataloader.workers", "cloud.vm_start_s"} <= documented_keys()


def test_every_schema_key_is_documented(schema: dict[str, Any]) -> None:
    documented = documented_keys()
    missing = [
        key
        for key, sub in schema_keys(schema).items()
        if key not in documented
        # a map is documented by its key or by a row for its entries (`cloud.speed_factors.<t>`)
        and not (
            isinstance(sub.get("additionalProperties"), dict)
            and any(d.startswith(f"{key}.{MAP}") for d in documented)
        )
    ]
    assert not missing, (
        f"schema keys config/README.md does not document (add a row naming each in backticks in "
        f"a key table): {missing}"
    )


def test_every_documented_key_is_in_the_schema(schema: dict[str, Any]) -> None:
    unknown = sorted(key for key in documented_keys() if not _resolves(key, schema))
    assert not unknown, f"config/README.md documents keys the schema does not have: {unknown}"


def _shipped_default(key: str, schema: dict[str, Any]) -> tuple[bool, Any]:
    """What a key is when neither a preset nor the user sets it: config/config.yaml's value where
    it sets one, else the schema's default. (False, None) where there is neither."""
    node: Any = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
    else:
        return True, node
    sub = schema_keys(schema).get(key, {})
    return ("default" in sub), sub.get("default")


_LITERAL = re.compile(r"`([^`]*)`|(-?[0-9]+(?:\.[0-9]+)?)")


def test_documented_defaults_are_the_shipped_ones(schema: dict[str, Any]) -> None:
    """Where a row gives a key's default as a bare literal (`` `[0, 2]` ``, `` `null` ``, 300), in
    the same position as the key (``a` / `b`` -> ``x` / `y``, presets after a ``;``), it is what
    config/config.yaml or, where that sets nothing, the schema gives the key."""
    wrong = []
    for keys, default in documented_rows():
        parts = [part.strip() for part in default.split(";", 1)[0].split(" / ")]
        if not default or len(parts) != len(keys):
            continue
        for key, part in zip(keys, parts, strict=True):
            literal = _LITERAL.fullmatch(part)
            known, expected = _shipped_default(key, schema)
            if MAP in key or literal is None or not known:
                continue
            shown = yaml.safe_load(literal.group(1) if literal.group(1) is not None else part)
            if shown != expected and str(shown) != str(expected):
                wrong.append(f"{key}: documented {part}, shipped {expected!r}")
    assert not wrong, "config/README.md defaults that are not the shipped ones:\n" + "\n".join(
        wrong
    )
