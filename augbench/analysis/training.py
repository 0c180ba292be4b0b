"""The training regime's tables (augbench/engines/training.py, docs/training.md).

- ``predicted_vs_measured``: per machine, accelerator (``variant``), library, recipe and worker
  count: the measured training throughput and data-wait fraction beside the starvation model's
  prediction from the loader and model rates measured in the same job, their ratio, whether they
  differ by more than ``policy.TRAINING_PREDICTION_TOLERANCE``, the step-time and batch-wait
  p95, and, per series, the fewest workers whose measured data wait stays under
  ``policy.TRAINING_FED_WAIT`` (the answer to "how many workers does my accelerator need").
- ``summary_lines``: that table in the summary, with the disagreements said in words.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis.tidy import decoded, number
from augbench.policy import TRAINING_FED_WAIT, TRAINING_PREDICTION_TOLERANCE

SERIES: tuple[str, ...] = ("machine", "dataset", "variant", "library", "transform")
COLUMNS: tuple[str, ...] = (
    *SERIES,
    "workers",
    "batch_size",
    "status",
    "reason",
    "images_per_second",
    "relative_ci",
    "predicted_img_per_s",
    "measured_vs_predicted",
    "prediction_within_tolerance",
    "data_wait_fraction",
    "predicted_data_wait_fraction",
    "loader_img_per_s",
    "model_img_per_s",
    "step_ms_p95",
    "batch_wait_ms_p95",
    "fewest_workers_fed",
)


def _value(cell: Any, key: str) -> float:
    """``key`` of a dict cell (percentiles), NaN where the row has none."""
    cell = decoded(cell)
    return float(cell[key]) if isinstance(cell, dict) and key in cell else math.nan


def predicted_vs_measured(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["regime"] == "training"] if "regime" in frame.columns else frame.iloc[:0]
    records = []
    for _, row in rows.iterrows():
        ratio = number(row.get("measured_vs_predicted"))
        records.append(
            {
                **{k: row.get(k) for k in SERIES},
                "workers": int(row["workers"]),
                "batch_size": row.get("batch_size"),
                "status": row["status"],
                "reason": row.get("reason") if row["status"] != "ok" else "",
                "images_per_second": number(row.get("images_per_second")),
                "relative_ci": number(row.get("relative_ci")),
                "predicted_img_per_s": number(row.get("predicted_img_per_s")),
                "measured_vs_predicted": ratio,
                "prediction_within_tolerance": abs(ratio - 1.0) <= TRAINING_PREDICTION_TOLERANCE
                if not math.isnan(ratio)
                else None,
                "data_wait_fraction": number(row.get("data_wait_fraction")),
                "predicted_data_wait_fraction": number(row.get("predicted_data_wait_fraction")),
                "loader_img_per_s": number(row.get("loader_img_per_s")),
                "model_img_per_s": number(row.get("model_img_per_s")),
                "step_ms_p95": _value(row.get("step_ms"), "p95"),
                "batch_wait_ms_p95": _value(row.get("batch_wait_ms"), "p95"),
            }
        )
    table = pd.DataFrame.from_records(records, columns=list(COLUMNS[:-1]))
    table["fewest_workers_fed"] = pd.Series(dtype=object)
    for _, series in table.groupby(list(SERIES), dropna=False):
        fed = series[
            (series["status"] == "ok") & (series["data_wait_fraction"] < TRAINING_FED_WAIT)
        ]
        fewest = int(fed["workers"].min()) if not fed.empty else None
        table.loc[series.index, "fewest_workers_fed"] = fewest
    return table.sort_values([*SERIES, "workers"]).reset_index(drop=True)


def summary_lines(frame: pd.DataFrame) -> list[str]:
    table = predicted_vs_measured(frame)
    if table.empty:
        return []
    lines = [
        "## Training: measured vs the starvation model",
        "",
        "Each row is a real training loop (or the sleep stand-in) fed by the library's "
        "DataLoader; the prediction comes from the loader and model rates measured in the same "
        f"job (augbench.starvation_model). Beyond {TRAINING_PREDICTION_TOLERANCE:.0%} the row "
        f"is flagged; 'fed' is a data wait under {TRAINING_FED_WAIT:.0%}.",
        "",
        "| accelerator | library | recipe | workers | img/s | predicted | measured / predicted | "
        "data wait | step p95 ms | batch wait p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for _, r in table.iterrows():
        if r["status"] != "ok":
            lines.append(
                f"| {r['variant']} | {r['library']} | {r['transform']} | {r['workers']} | "
                f"{r['status']}: {r['reason']} | | | | | |"
            )
            continue
        flag = "" if r["prediction_within_tolerance"] else " **(differs)**"
        lines.append(
            f"| {r['variant']} | {r['library']} | {r['transform']} | {r['workers']} | "
            f"{r['images_per_second']:.1f} | {r['predicted_img_per_s']:.1f} | "
            f"{r['measured_vs_predicted']:.2f}{flag} | {r['data_wait_fraction']:.0%} | "
            f"{r['step_ms_p95']:.1f} | {r['batch_wait_ms_p95']:.1f} |"
        )
        if not r["prediction_within_tolerance"]:
            notes.append(
                f"- {r['library']} {r['transform']} with {r['workers']} worker(s) "
                f"({r['variant']}): measured {r['images_per_second']:.1f} img/s is "
                f"{r['measured_vs_predicted']:.2f}x the prediction (loader alone "
                f"{r['loader_img_per_s']:.1f} img/s, model alone {r['model_img_per_s']:.1f} "
                "img/s): the loader and the step do not overlap as the model assumes (they "
                "share the machine's cores, or the loader's rate moves during the window)."
            )
    lines.append("")
    fewest = table.drop_duplicates(list(SERIES))
    for _, r in fewest.iterrows():
        value = r["fewest_workers_fed"]
        if value is not None and not pd.isna(value):
            said = f"{int(value)} worker(s) keep the data wait under {TRAINING_FED_WAIT:.0%}"
        else:
            said = f"no measured worker count keeps the data wait under {TRAINING_FED_WAIT:.0%}"
        lines.append(f"- {r['library']} {r['transform']} ({r['variant']}): {said}.")
    return [*lines, "", *notes, *([""] if notes else [])]
