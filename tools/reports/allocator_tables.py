"""Markdown tables of a run's allocator effect (docs/allocator.md "Measured here"), from the
workflow's own tables: results/tables/allocator_effect.csv and allocator_effect_pipelines.csv.

    uv run python tools/reports/allocator_tables.py RUN_DIR [--label "1280x720"]

Prints (1) per regime x library x setting: precise pairs, their median time vs glibc and range,
how many were allocator-bound under glibc and those rows' median; (2) every whole-pipeline pair,
with both rows' precision and glibc's page faults. Only precise pairs (policy.ALLOCATOR_EFFECT_
MAX_CI) enter a median; the others are counted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.analysis import allocator_effect  # noqa: E402


def _ratio(values: pd.Series) -> str:
    return f"{values.median():.2f} ({values.min():.2f}-{values.max():.2f})" if len(values) else "-"


def regime_table(effect: pd.DataFrame) -> list[str]:
    pairs = allocator_effect.compared(effect)
    lines = [
        "| regime | library | setting | pairs (precise) | time vs glibc: median (range) | "
        "glibc allocator-bound: pairs, median |",
        "|---|---|---|---|---|---|",
    ]
    for (regime, library, setting), rows in pairs.groupby(
        ["regime", "library", "setting"], sort=False
    ):
        sure = allocator_effect.precise(rows)
        ratio = pd.to_numeric(sure["time_vs_glibc"])
        bound = sure[sure["glibc_allocator_bound"].map(allocator_effect.is_true).astype(bool)]
        lines.append(
            f"| {regime} | {library} | {setting} | {len(rows)} ({len(sure)}) | {_ratio(ratio)} | "
            f"{len(bound)}, {_ratio(pd.to_numeric(bound['time_vs_glibc']))} |"
        )
    return lines


def pipeline_table(effect: pd.DataFrame) -> list[str]:
    pairs = allocator_effect.whole_rows(allocator_effect.compared(effect))
    lines = [
        "| regime | library | pipeline | setting | glibc ms/img (faults/img) | setting ms/img "
        "(faults) | time vs glibc | CIs glibc / setting |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in pairs.iterrows():
        regime = r["regime"] if r["regime"] == "micro" else f"{r['regime']} w{int(r['workers'])}"
        mark = "" if allocator_effect.is_true(r["precise"]) else " (imprecise)"
        lines.append(
            f"| {regime} | {r['library']} | {r['transform']} | {r['setting']} | "
            f"{r['glibc_ms_per_image']:.2f} ({r['glibc_minor_faults_per_image']:.0f}) | "
            f"{r['setting_ms_per_image']:.2f} ({r['setting_minor_faults_per_image']:.0f}) | "
            f"**{r['time_vs_glibc']:.2f}**{mark} | "
            f"{r['glibc_relative_ci']:.2f} / {r['setting_relative_ci']:.2f} |"
        )
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", type=Path)
    args = p.parse_args()
    tables = args.run / "results" / "tables"
    results = tables / "allocator_effect.csv"
    if results.exists():  # a run asked for its pipeline tables alone has none
        effect = pd.read_csv(results, dtype={"reason": str, "step": str})
        print("\n".join(regime_table(effect)), end="\n\n")
    pipelines = tables / "allocator_effect_pipelines.csv"
    if pipelines.exists():
        print("\n".join(pipeline_table(pd.read_csv(pipelines, dtype={"reason": str, "step": str}))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
