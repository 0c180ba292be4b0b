"""Markdown tables of a run's allocator effect (docs/allocator.md "Measured here"), from the
workflow's own tables: results/tables/allocator_effect.csv and allocator_effect_pipelines.csv.

    uv run python tools/reports/allocator_tables.py RUN_DIR [--label "1280x720"]

Prints (1) per regime x library x setting: the pairs, the setting's null spread (how far the
ratio strays where glibc does not fault, as a factor), and how many pairs were faster or slower
beyond it (their ratios), within it, or unknown; (2) every whole-pipeline pair with its ratio's
95 % interval, glibc's page faults and the effect called (augbench.analysis.allocator_effect).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.analysis import allocator_effect  # noqa: E402


def _ratio(row: pd.Series) -> str:
    return f"{row['time_vs_glibc']:.2f} [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}]"


def _ratios(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "-"
    ratio = pd.to_numeric(rows["time_vs_glibc"])
    return f"{len(rows)}: {ratio.min():.2f}-{ratio.max():.2f}"


def regime_table(effect: pd.DataFrame) -> list[str]:
    pairs = allocator_effect.compared(effect)
    lines = [
        "| regime | library | setting | pairs | null spread | faster: n, ratios | "
        "slower: n, ratios | within noise | unknown |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (regime, library, setting), rows in pairs.groupby(
        ["regime", "library", "setting"], sort=False
    ):
        calls = rows["effect"].astype(str)
        spread = float(rows["null_spread"].iloc[0])
        lines.append(
            f"| {regime} | {library} | {setting} | {len(rows)} | x{math.exp(spread):.2f} | "
            f"{_ratios(rows[calls == 'faster'])} | {_ratios(rows[calls == 'slower'])} | "
            f"{int((calls == 'none').sum())} | {int((calls == 'unknown').sum())} |"
        )
    return lines


def pipeline_table(effect: pd.DataFrame) -> list[str]:
    pairs = allocator_effect.whole_rows(allocator_effect.compared(effect))
    lines = [
        "| regime | library | pipeline | setting | glibc ms/img (faults/img) | setting ms/img "
        "(faults) | time vs glibc [95 % interval] | effect |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in pairs.iterrows():
        regime = r["regime"] if r["regime"] == "micro" else f"{r['regime']} w{int(r['workers'])}"
        lines.append(
            f"| {regime} | {r['library']} | {r['transform']} | {r['setting']} | "
            f"{r['glibc_ms_per_image']:.2f} ({r['glibc_minor_faults_per_image']:.0f}) | "
            f"{r['setting_ms_per_image']:.2f} ({r['setting_minor_faults_per_image']:.0f}) | "
            f"{_ratio(r)} | {r['effect']} |"
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
