"""Tables of user pipelines (augbench/pipelines.py) from a tidy table.

- ``breakdown``: one row per library, pipeline and step of the per-step breakdown (micro regime,
  one thread), with the step's median seconds per image, its share of the summed step time and
  the pipeline's sum-of-steps / whole ratio; libraries that cannot run a pipeline appear with
  their status and reason (the step named).
- ``speedups``: per pipeline, every library in every regime and setting, with the speedup against
  the fastest other library of the same regime setting (``speedups.compute``), labelled by regime.

Pipeline rows carry ``variant: pipeline`` (per-step rows ``pipeline-step``), so they never share
a comparison group with single transforms.
"""

from __future__ import annotations

import math

import pandas as pd

from augbench.analysis import speedups
from augbench.analysis.groups import group_label
from augbench.analysis.tidy import GROUP_COLUMNS
from augbench.pipelines import STEP_VARIANT, VARIANT
from augbench.policy import PIPELINE_STEP_SUM_TOLERANCE

BREAKDOWN_COLUMNS: tuple[str, ...] = (
    "machine",
    "dataset",
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
    "step_sum_ratio",
    "step_sum_within_tolerance",
    "relative_ci",
    "num_images",
    "values",
)


def _has(frame: pd.DataFrame, col: str) -> pd.Series:
    return frame[col].notna() if col in frame.columns else pd.Series(False, index=frame.index)


def step_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-step breakdown rows (they are never ranked: only the breakdown table shows them)."""
    return frame[_has(frame, "step") | (frame.get("variant", "") == STEP_VARIANT)]


def pipeline_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Whole-pipeline rows of every regime."""
    return frame[_has(frame, "pipeline") & ~frame.index.isin(step_rows(frame).index)]


def _num(value: object) -> float:
    out = pd.to_numeric(value, errors="coerce")
    return float(out) if not pd.isna(out) else math.nan


def breakdown(frame: pd.DataFrame) -> pd.DataFrame:
    steps = step_rows(frame)
    whole = pipeline_rows(frame)
    whole = whole[(whole["regime"] == "micro") & (whole["variant"] == VARIANT)]
    records = []
    for _, row in whole.iterrows():
        base = {
            "machine": row["machine"],
            "dataset": row["dataset"],
            "library": row["library"],
            "pipeline": row["pipeline"],
            "status": row["status"],
            "reason": row["reason"] if row["status"] != "ok" else "",
            "num_images": row.get("num_images"),
        }
        if row["status"] != "ok":
            records.append({**base, "step_index": math.nan, "step": row.get("unsupported_step")})
            continue
        median = _num(row["median_throughput"])
        ratio = _num(row.get("step_sum_ratio"))
        mine = steps[
            (steps["machine"] == row["machine"])
            & (steps["dataset"] == row["dataset"])
            & (steps["library"] == row["library"])
            & (steps["pipeline"] == row["pipeline"])
        ]
        mine = mine.assign(_i=pd.to_numeric(mine["step_index"])).sort_values("_i")
        for _, step in mine.iterrows():
            records.append(
                {
                    **base,
                    "step_index": int(step["_i"]),
                    "step": step["step"],
                    "ms_per_image": 1000.0 * _num(step.get("seconds_per_image")),
                    "share": _num(step.get("share")),
                    "pipeline_ms_per_image": 1000.0 / median if median > 0 else math.nan,
                    "pipeline_throughput": median,
                    "step_sum_ratio": ratio,
                    "step_sum_within_tolerance": abs(ratio - 1.0) <= PIPELINE_STEP_SUM_TOLERANCE,
                    "relative_ci": _num(row.get("relative_ci")),
                    "values": _num(row.get("num_successful_runs")),
                }
            )
    out = pd.DataFrame.from_records(records, columns=list(BREAKDOWN_COLUMNS))
    return out.sort_values(["machine", "dataset", "pipeline", "library", "step_index"]).reset_index(
        drop=True
    )


def names(frame: pd.DataFrame) -> list[str]:
    return sorted({str(p) for p in pipeline_rows(frame)["pipeline"].dropna()})


def speedup_table(frame: pd.DataFrame, pipeline: str) -> pd.DataFrame:
    """Every library x regime setting of one pipeline, speedups within each regime setting."""
    rows = pipeline_rows(frame)
    rows = rows[rows["pipeline"] == pipeline]
    table = speedups.compute(rows)
    labels = [
        group_label({c: r[c] for c in GROUP_COLUMNS}, with_machine=False, with_dataset=False)
        for _, r in table.iterrows()
    ]
    table.insert(0, "regime_label", labels)
    table.insert(0, "pipeline", pipeline)
    return table


def sum_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """Breakdown rows whose steps do not sum to the whole pipeline within the tolerance."""
    table = breakdown(frame)
    table = table[table["status"] == "ok"].drop_duplicates(["machine", "library", "pipeline"])
    return table[~table["step_sum_within_tolerance"].astype(bool)]


def summary_lines(frame: pd.DataFrame) -> list[str]:
    """Summary section: each breakdown's sum-of-steps / whole ratio, flagged outside the goal
    (the whole-pipeline micro rows carry it; the per-step rows are in pipeline_breakdown.csv)."""
    if "step_sum_ratio" not in frame.columns:
        return []
    whole = pipeline_rows(frame)
    whole = whole[(whole["regime"] == "micro") & (whole["status"] == "ok")]
    if whole.empty:
        return []
    lines = [
        "## Pipeline breakdowns: do the steps sum to the pipeline?",
        "",
        "Sum of the per-step times over the whole pipeline timed without per-step timers "
        f"(goal: within {PIPELINE_STEP_SUM_TOLERANCE:.0%}); the steps are in "
        "results/tables/pipeline_breakdown.csv and the pipeline_breakdown figure.",
        "",
        "| machine | library | pipeline | steps / whole | within goal |",
        "|---|---|---|---|---|",
    ]
    for _, row in whole.sort_values(["machine", "pipeline", "library"]).iterrows():
        ratio = _num(row.get("step_sum_ratio"))
        ok = abs(ratio - 1.0) <= PIPELINE_STEP_SUM_TOLERANCE
        lines.append(
            f"| {row['machine']} | {row['library']} | {row['pipeline']} | {ratio:.3f} | "
            f"{'yes' if ok else '**no (flagged)**'} |"
        )
    return [*lines, ""]
