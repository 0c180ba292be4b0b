"""The lazy-output diagnostic's table and its flag list (rows where materialization, not the
transform, is most of the measured time). Input: the JSON files of
augbench/measuring/engines/lazy_outputs.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

COLUMNS = (
    "machine",
    "dataset",
    "library",
    "transform",
    "status",
    "input_type",
    "input_dtype",
    "input_strides",
    "input_memory_format",
    "output_type",
    "output_dtype",
    "output_shape",
    "output_strides",
    "output_contiguous",
    "output_memory_format",
    "output_is_view",
    "shares_input_memory",
    "returns_input",
    "same_object_twice",
    "materialize_copies",
    "materialized_memory_format",
    "call_us",
    "materialize_us",
    "call_materialize_us",
    "call_img_s",
    "call_materialize_img_s",
    "materialize_share",
    "materialize_dominates",
    "reason",
)


def _layout_cols(prefix: str, desc: dict[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    desc = desc or {}
    out: dict[str, Any] = {}
    for key in keys:
        value = desc.get(key)
        out[f"{prefix}_{key}"] = json.dumps(value) if isinstance(value, list) else value
    return out


def rows_from_file(path: Path) -> list[dict[str, Any]]:
    payload = json.loads(Path(path).read_text())
    meta = payload.get("metadata") or {}
    out = []
    for name, row in (payload.get("results") or {}).items():
        record: dict[str, Any] = {
            "machine": meta.get("machine"),
            "dataset": (meta.get("dataset") or {}).get("key"),
            "library": meta.get("library"),
            "transform": name,
            **{k: row.get(k) for k in COLUMNS if k in row},
        }
        record.update(_layout_cols("input", row.get("input"), ("type", "dtype", "strides")))
        record["input_memory_format"] = (row.get("input") or {}).get("memory_format")
        record.update(
            _layout_cols(
                "output",
                row.get("output"),
                ("type", "dtype", "shape", "strides", "contiguous", "memory_format"),
            )
        )
        record["output_is_view"] = (row.get("output") or {}).get("is_view")
        record["materialized_memory_format"] = (row.get("materialized") or {}).get("memory_format")
        out.append(record)
    return out


def table(paths: list[Path]) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for path in sorted(Path(p) for p in paths):
        try:
            rows.extend(rows_from_file(path))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read lazy-output diagnostic {path}: {exc}") from exc
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.sort_values(["machine", "dataset", "transform", "library"]).reset_index(drop=True)


def flagged(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows where materialization is over half of call + materialize."""
    if frame.empty or "materialize_dominates" not in frame:
        return frame.iloc[0:0]
    mask = frame["materialize_dominates"].astype("boolean").fillna(False).astype(bool)
    return frame[mask]


def _num(value: Any, digits: int = 0) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(number) else f"{number:,.{digits}f}"


def flag_lines(frame: pd.DataFrame) -> list[str]:
    """Markdown: every flagged row with its numbers (for the summary and docs/lazy_outputs.md)."""
    rows = flagged(frame)
    if rows.empty:
        return ["None: materialization is at most half of every measured call."]
    lines = [
        "| machine | dataset | library | transform | output | shares input | call img/s "
        "| call + materialize img/s | materialize share |",
        "|---|---|---|---|---|---|---:|---:|---:|",
    ]
    for _, r in rows.iterrows():
        lines.append(
            f"| {r['machine']} | {r['dataset']} | {r['library']} | {r['transform']} "
            f"| {r['output_memory_format']} {_text(r['output_strides'])} "
            f"| {'yes' if r['shares_input_memory'] else 'no'} | {_num(r['call_img_s'])} "
            f"| {_num(r['call_materialize_img_s'])} | {_num(100 * r['materialize_share'])} % |"
        )
    return lines


def markdown(frame: pd.DataFrame) -> str:
    """The page written from a run (results/analysis/lazy_outputs.md, copied to
    docs/lazy_outputs.md): the flag list, then every row."""
    lines = [
        "# Lazy outputs (diagnostic)",
        "",
        "Written by the workflow's `lazy_outputs` rules from a run on the machine(s) named "
        "below (not by tools/maintenance/render_transforms_doc.py: these are measurements). Native "
        "inputs, one thread; the call and its materialization timed separately per image over "
        "a few passes: diagnostic numbers, not result rows. "
        "`call` is the library call alone; `call + materialize` is the micro regime's timed scope "
        "(augbench.workload.layout: copy iff the output shares the input's memory or is not "
        "dense, in the output's own dimension order). Rerun: `snakemake --cores 2 "
        "results/analysis/lazy_outputs.md --forcerun lazy_outputs`.",
        "",
        "## Rows where materialization is over half of the measured time",
        "",
        *flag_lines(frame),
        "",
        "## Every row",
        "",
        "| machine | dataset | library | transform | output type | memory format | strides | view "
        "| shares input | same object twice | copied | call µs | materialize µs "
        "| call + materialize µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---:|---:|---:|",
    ]
    for _, r in frame.iterrows():
        if r["status"] != "ok":
            lines.append(
                f"| {r['machine']} | {r['dataset']} | {r['library']} | {r['transform']} "
                f"| {r['status']} "
                f"| | | | | | | | | {_text(r['reason'])} |"
            )
            continue
        lines.append(
            f"| {r['machine']} | {r['dataset']} | {r['library']} | {r['transform']} "
            f"| {r['output_type']} "
            f"{r['output_dtype']} | {r['output_memory_format']} | {_text(r['output_strides'])} "
            f"| {yes_no(r['output_is_view'])} | {yes_no(r['shares_input_memory'])} "
            f"| {yes_no(r['same_object_twice'])} | {yes_no(r['materialize_copies'])} "
            f"| {_num(r['call_us'], 1)} | {_num(r['materialize_us'], 1)} "
            f"| {_num(r['call_materialize_us'], 1)} |"
        )
    return "\n".join(lines) + "\n"


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def yes_no(value: Any) -> str:
    """'yes' / 'no' for a table cell; '' for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return "yes" if bool(value) else "no"
