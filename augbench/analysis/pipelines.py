"""Tables of user pipelines (augbench/workload/pipelines.py) from a tidy table.

- ``breakdown``: one row per library, pipeline and step of the per-step breakdown (micro regime,
  one thread), with the step's median seconds per image, its share of the summed step time, and
  the whole pipeline's time (the library's own composition), its harness / bare check and its
  composition effect (whole / sum of the isolated steps); libraries that cannot run a pipeline
  appear with their status and reason (the step named).
- ``speedups``: per pipeline, every library in every regime and setting, with the speedup against
  the fastest other library of the same regime setting (``speedups.compute``) and the same
  contract: rows whose output (container, dtype, shape) or work (e.g. antialiasing) differ are
  never ranked against each other (``contract``).

Pipeline rows carry ``variant: pipeline`` (per-step rows ``pipeline-step``), so they never share
a comparison group with single transforms. Under an allocator setting other than glibc the
variant also carries its tag (``pipeline · allocator mimalloc``): rows are selected by the variant
without it, and the breakdown keeps every setting apart (``allocator_setting``).
"""

from __future__ import annotations

import math

import pandas as pd

from augbench.analysis import speedups
from augbench.analysis.allocator_effect import base_variant
from augbench.analysis.cells import decoded, number
from augbench.analysis.groups import group_label
from augbench.analysis.tidy import (
    DEFAULT_ALLOCATOR,
    GROUP_COLUMNS,
    allocator_tag,
)
from augbench.policy import COMPOSITION_EFFECT_NOTE, PIPELINE_HARNESS_TOLERANCE
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload.pipelines import STEP_VARIANT, VARIANT

BREAKDOWN_COLUMNS: tuple[str, ...] = (
    "machine",
    "dataset",
    "allocator_setting",
    "library",
    "pipeline",
    "step_index",
    "step",
    "status",
    "reason",
    "ms_per_image",
    "share",
    "pipeline_ms_per_image",
    "pipeline_throughput",
    "bare_ms_per_image",
    "harness_vs_bare",
    "harness_vs_bare_ci_low",
    "harness_vs_bare_ci_high",
    "harness_vs_bare_within",
    "composition_effect",
    "composition_effect_ci_low",
    "composition_effect_ci_high",
    "composition_note",
    "output_copied",
    "compose_call",
    "output_contract",
    "work_contract",
    "relative_ci",
    "num_images",
    "values",
)


def _has(frame: pd.DataFrame, col: str) -> pd.Series:
    return frame[col].notna() if col in frame.columns else pd.Series(False, index=frame.index)


def step_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-step breakdown rows (they are never ranked: only the breakdown table shows them)."""
    return frame[_has(frame, "step") | (base_variant(frame) == STEP_VARIANT)]


def pipeline_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Whole-pipeline rows of every regime."""
    return frame[_has(frame, "pipeline") & ~frame.index.isin(step_rows(frame).index)]


def breakdown(frame: pd.DataFrame) -> pd.DataFrame:
    steps = step_rows(frame)
    whole = pipeline_rows(frame)
    whole = whole[(whole["regime"] == "micro") & (base_variant(whole) == VARIANT)]
    steps = steps.assign(_setting=_settings(steps))
    records = []
    for (_, row), setting in zip(whole.iterrows(), _settings(whole), strict=True):
        base = {
            "machine": row["machine"],
            "dataset": row["dataset"],
            "allocator_setting": setting,
            "library": row["library"],
            "pipeline": row["pipeline"],
            "status": row["status"],
            "reason": row["reason"] if row["status"] != "ok" else "",
            "num_images": row.get("num_images"),
        }
        if row["status"] != "ok":
            records.append({**base, "step_index": math.nan, "step": row.get("unsupported_step")})
            continue
        median = number(row[MEDIAN_THROUGHPUT])
        harness = number(row.get("harness_vs_bare"))
        mine = steps[
            (steps["machine"] == row["machine"])
            & (steps["dataset"] == row["dataset"])
            & (steps["library"] == row["library"])
            & (steps["pipeline"] == row["pipeline"])
            & (steps["_setting"] == setting)
        ]
        mine = mine.assign(_i=pd.to_numeric(mine["step_index"])).sort_values("_i")
        for _, step in mine.iterrows():
            records.append(
                {
                    **base,
                    "step_index": int(step["_i"]),
                    "step": step["step"],
                    "ms_per_image": 1000.0 * number(step.get("seconds_per_image")),
                    "share": number(step.get("share")),
                    "pipeline_ms_per_image": 1000.0 / median if median > 0 else math.nan,
                    "pipeline_throughput": median,
                    "bare_ms_per_image": number(row.get("bare_ms_per_image")),
                    "harness_vs_bare": harness,
                    "harness_vs_bare_ci_low": number(row.get("harness_vs_bare_ci_low")),
                    "harness_vs_bare_ci_high": number(row.get("harness_vs_bare_ci_high")),
                    "harness_vs_bare_within": harness_within(row),
                    "composition_effect": number(row.get("composition_effect")),
                    "composition_effect_ci_low": number(row.get("composition_effect_ci_low")),
                    "composition_effect_ci_high": number(row.get("composition_effect_ci_high")),
                    "composition_note": row.get("composition_note") or "",
                    "output_copied": step.get("output_copied"),
                    "compose_call": row.get("compose_call"),
                    "output_contract": row.get("output_contract"),
                    "work_contract": row.get("work_contract") or "",
                    "relative_ci": number(row.get("relative_ci")),
                    "values": number(row.get("num_successful_runs")),
                }
            )
    out = pd.DataFrame.from_records(records, columns=list(BREAKDOWN_COLUMNS))
    order = ["machine", "dataset", "pipeline", "library", "allocator_setting", "step_index"]
    return out.sort_values(order).reset_index(drop=True)


def _settings(frame: pd.DataFrame) -> pd.Series:
    """Each row's allocator setting as recorded ("" where the row does not say)."""
    if "allocator_setting" not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    values = frame["allocator_setting"].astype(object)
    return values.where(values.notna(), "").astype(str)


def names(frame: pd.DataFrame) -> list[str]:
    return sorted({str(p) for p in pipeline_rows(frame)["pipeline"].dropna()})


def output_contract(row: pd.Series) -> str:
    """What one output image is: the breakdown's ``output_contract``, or a DataLoader row's
    batch (dtype and per-sample shape) in the same words; "" where the row measured nothing."""
    given = row.get("output_contract")
    if isinstance(given, str) and given:
        return given
    dtype, shape = row.get("batch_dtype"), decoded(row.get("batch_shape"))
    if isinstance(dtype, str) and isinstance(shape, list | tuple) and len(shape) > 1:
        return f"torch.Tensor {dtype.removeprefix('torch.')} {'x'.join(str(d) for d in shape[1:])}"
    return ""


def contract(row: pd.Series) -> str:
    """The comparison contract of a pipeline row: output contract and work contract. A row
    that measured nothing (unsupported, error) joins the contract its pipeline declares."""
    work = row.get("work_contract")
    work = work if isinstance(work, str) else ""
    return " | ".join(part for part in (output_contract(row), work) if part)


CONTRACT_SEPARATOR = " · contract "


def speedup_table(frame: pd.DataFrame, pipeline: str) -> pd.DataFrame:
    """Every library x regime setting of one pipeline, speedups within each regime setting and
    contract: rows of different output or work contracts are never ranked together (the
    contract joins the variant for the comparison, then gets its own column)."""
    rows = pipeline_rows(frame)
    rows = rows[rows["pipeline"] == pipeline]
    declared = [contract(r) for _, r in rows.iterrows()]
    measured = {c for c, status in zip(declared, rows["status"], strict=True) if status == "ok"}
    placed = [c if c in measured else _closest(c, measured) for c in declared]
    variants = [f"{v}{CONTRACT_SEPARATOR}{c}" for v, c in zip(rows["variant"], placed, strict=True)]
    table = speedups.compute(rows.assign(variant=variants))
    split = [str(v).split(CONTRACT_SEPARATOR, 1) for v in table["variant"]]
    table["variant"] = [parts[0] for parts in split]
    table["contract"] = [parts[1] if len(parts) > 1 else "" for parts in split]
    labels = [
        group_label({c: r[c] for c in GROUP_COLUMNS}, with_machine=False, with_dataset=False)
        for _, r in table.iterrows()
    ]
    table.insert(0, "regime_label", labels)
    table.insert(0, "pipeline", pipeline)
    return table


def _closest(given: str, measured: set[str]) -> str:
    """The measured contract a non-measured row belongs with: the one ending in its work
    contract (it declares that much), else its own."""
    matches = sorted(c for c in measured if given and c.endswith(given))
    return matches[0] if len(matches) == 1 else given


def harness_within(row: pd.Series) -> bool:
    """The harness / bare check: the ratio's interval reaches the tolerance around 1 (a file
    without the interval: the ratio itself within the tolerance)."""
    ratio = number(row.get("harness_vs_bare"))
    low, high = (
        number(row.get("harness_vs_bare_ci_low")),
        number(row.get("harness_vs_bare_ci_high")),
    )
    if math.isnan(low) or math.isnan(high):
        return abs(ratio - 1.0) <= PIPELINE_HARNESS_TOLERANCE
    return low <= 1.0 + PIPELINE_HARNESS_TOLERANCE and high >= 1.0 - PIPELINE_HARNESS_TOLERANCE


def _span(row: pd.Series, prefix: str, digits: int) -> str:
    low, high = number(row.get(f"{prefix}ci_low")), number(row.get(f"{prefix}ci_high"))
    if math.isnan(low) or math.isnan(high):
        return ""
    return f" [{low:.{digits}f}, {high:.{digits}f}]"


def harness_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """Whole-pipeline breakdown rows whose harness / bare check is outside the tolerance."""
    table = breakdown(frame)
    keys = ["machine", "dataset", "library", "pipeline", "allocator_setting"]
    table = table[table["status"] == "ok"].drop_duplicates(keys)
    return table[~table["harness_vs_bare_within"].astype(bool)]


def _native(value: object) -> dict[str, object]:
    value = decoded(value)
    return value if isinstance(value, dict) else {}


def native_lines(frame: pd.DataFrame) -> list[str]:
    """Summary section for pipelines written in a library's own format: per library, whether
    it ran the user's own object, the catalog mapping, or nothing (the step that has no
    mapping named): no step is ever dropped silently."""
    whole = pipeline_rows(frame)
    if "pipeline_native" not in whole.columns:
        return []
    whole = whole[whole["pipeline_native"].map(lambda v: bool(_native(v)))]
    if whole.empty:
        return []
    lines = ["## Pipelines written in a library's own format", ""]
    for name, rows in whole.groupby("pipeline", sort=True):
        native = _native(rows["pipeline_native"].iloc[0])
        written = native.get("ref") or rows["pipeline_source"].iloc[0]
        lines.append(f"**{name}** ({native.get('format')} of {native.get('library')}: {written})")
        lines.append("")
        for library, mine in rows.groupby("library", sort=True):
            # The default allocator's rows say whether it ran (another setting may be skipped).
            default = mine[_settings(mine).isin(["", DEFAULT_ALLOCATOR])]
            first = (default if len(default) else mine).sort_values("regime").iloc[0]
            if first["status"] != "ok":
                lines.append(f"- {library}: not run: {first['reason']}")
            elif library == native.get("library"):
                lines.append(f"- {library}: the user's own object, as written")
            else:
                lines.append(f"- {library}: the catalog mapping of every step")
        lines.append("")
    return lines


def summary_lines(frame: pd.DataFrame) -> list[str]:
    """Summary section: per breakdown, the whole pipeline (the library's own composition)
    through the harness and in a bare loop, flagged outside the tolerance, and the
    composition effect with its explanation where it is large."""
    if "harness_vs_bare" not in frame.columns:
        return []
    whole = pipeline_rows(frame)
    whole = whole[(whole["regime"] == "micro") & (whole["status"] == "ok")]
    if whole.empty:
        return []
    lines = [
        "## Pipelines: the library's own composition, checked against a bare loop",
        "",
        "Each whole-pipeline row times the library's own composition object (compose_call) "
        "through the harness; a bare loop over the same object on the same images runs in "
        "fresh processes beside it (goal: harness / bare within "
        f"{PIPELINE_HARNESS_TOLERANCE:.0%}; flagged where the whole interval of the ratio, in "
        "brackets, lies outside). The composition effect is the whole pipeline over the sum of "
        "its steps timed in isolation (information; explained beyond "
        f"{COMPOSITION_EFFECT_NOTE:.0%}). The steps are in results/tables/pipeline_breakdown.csv "
        "and the pipeline_breakdown figure.",
        "",
        "| machine | library | pipeline | harness ms/img | bare ms/img | harness / bare | "
        "composition effect | output |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    whole = whole.assign(_setting=_settings(whole))
    for _, row in whole.sort_values(["machine", "pipeline", "library", "_setting"]).iterrows():
        ratio = number(row.get("harness_vs_bare"))
        ok = harness_within(row)
        harness_ms = 1000.0 / number(row[MEDIAN_THROUGHPUT])
        effect = number(row.get("composition_effect"))
        lines.append(
            f"| {row['machine']} | {row['library']} | {_named(row)} | {harness_ms:.3f} | "
            f"{number(row.get('bare_ms_per_image')):.3f} | "
            f"{ratio:.3f}{_span(row, 'harness_vs_bare_', 3)}{'' if ok else ' **(flagged)**'} | "
            f"{effect:.2f}{_span(row, 'composition_effect_', 2)} | "
            f"{row.get('output_contract') or ''} |"
        )
        note = row.get("composition_note")
        if isinstance(note, str) and note:
            notes.append(f"- {row['library']} {_named(row)}: {note}.")
    return [*lines, "", *notes, *([""] if notes else [])]


def _named(row: pd.Series) -> str:
    """A pipeline row's name in the summary, with its allocator setting where not glibc."""
    tag = allocator_tag(str(row.get("_setting") or ""))
    return f"{row['pipeline']} ({tag})" if tag else str(row["pipeline"])
