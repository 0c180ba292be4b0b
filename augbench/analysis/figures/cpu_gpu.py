"""CPU vs GPU: per transform, a GPU row's median throughput over the best AlbumentationsX
cpu_dataloader median of the same recipe and the same scope on the same machine, with a
reference line at 1.0.

This is the one figure that puts two regimes side by side, so the ratio is its explicit subject;
each series names its scope (a memory-scope GPU row is only ever divided by a memory-scope CPU
row, a decode row by a decode row) and the caption says which rows form the denominator.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from augbench import regimes
from augbench.analysis.figures.style import (
    Drawn,
    caption,
    empty_figure,
    library_color,
    log_axis,
    use_log_scale,
)
from augbench.analysis.groups import library_order, normalized

TITLE = "GPU throughput relative to AlbumentationsX on CPU (DataLoader)"
# The regimes declared as GPU regimes (augbench/regimes.py).
GPU_REGIMES = regimes.gpu_regimes()
CPU_REGIME = "cpu_dataloader"
CPU_REFERENCE = "albumentationsx"


def ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per ok GPU row with an ok CPU reference: machine, series, transform, ratio."""
    if frame.empty:
        return pd.DataFrame(columns=["machine", "series", "library", "transform", "ratio"])
    data = normalized(frame)
    ok = data[(data["status"] == "ok") & data["median_throughput"].notna()]
    cpu = ok[(ok["regime"] == CPU_REGIME) & (ok["library"] == CPU_REFERENCE)]
    reference = cpu.groupby(["machine", "transform", "scope"])["median_throughput"].max()
    gpu = ok[ok["regime"].isin(GPU_REGIMES)]
    records = []
    for _, row in gpu.iterrows():
        key = (row["machine"], row["transform"], row["scope"])
        if key not in reference.index:
            continue
        series = f"{row['library']} {row['scope']}"
        extra = [str(row["variant"])] if row["variant"] else []
        if isinstance(row.get("randomness"), str) and row["randomness"]:
            extra.append(row["randomness"])
        if extra:
            series += f"\n({', '.join(extra)})"
        records.append(
            {
                "machine": row["machine"],
                "series": series,
                "library": row["library"],
                "transform": row["transform"],
                "ratio": float(row["median_throughput"]) / float(reference[key]),
            }
        )
    return pd.DataFrame.from_records(
        records, columns=["machine", "series", "library", "transform", "ratio"]
    )


def draw(frame: pd.DataFrame) -> Drawn:
    table = ratios(frame)
    if table.empty:
        have_gpu = not frame.empty and frame["regime"].isin(GPU_REGIMES).any()
        message = (
            "no GPU rows (gpu_dataloader, dali) in these results"
            if not have_gpu
            else "no transform has both an ok GPU row and an ok AlbumentationsX cpu_dataloader "
            "row of the same scope"
        )
        return empty_figure(TITLE, message, f"{TITLE}.")
    machines = sorted(table["machine"].unique())
    fig, axes = plt.subplots(
        1, len(machines), figsize=(3.2 + 2.0 * table["series"].nunique(), 4.2), squeeze=False
    )
    rng = np.random.default_rng(0)
    log = use_log_scale(table["ratio"])
    for ax, machine in zip(axes[0], machines, strict=True):
        part = table[table["machine"] == machine]
        lib_rank = {lib: i for i, lib in enumerate(library_order(part["library"]))}
        series = sorted(
            part["series"].unique(),
            key=lambda s: (lib_rank[part[part["series"] == s]["library"].iloc[0]], s),
        )
        for x, name in enumerate(series):
            rows = part[part["series"] == name]
            color = library_color(rows["library"].iloc[0])
            ax.boxplot(
                rows["ratio"],
                positions=[x],
                widths=0.5,
                showfliers=False,
                medianprops={"color": "black"},
            )
            ax.plot(
                x + rng.uniform(-0.15, 0.15, len(rows)),
                rows["ratio"],
                "o",
                color=color,
                ms=4,
                alpha=0.8,
            )
        ax.axhline(1.0, color="#444444", ls="--", lw=1)
        ax.text(len(series) - 0.5, 1.0, " 1.0 = same as CPU", va="bottom", ha="right", fontsize=7)
        ax.set_xticks(range(len(series)), series)
        if log:
            log_axis(ax, "y")
        ax.set_ylabel(
            "GPU / AlbumentationsX CPU median throughput" + (" (log scale)" if log else "")
        )
        ax.set_title(machine, loc="left", fontsize=9)
        ax.grid(axis="x", visible=False)
    fig.suptitle(TITLE, x=0.02, ha="left", fontsize=11)
    fig.tight_layout()
    used = normalized(frame)
    used = used[
        used["regime"].isin(GPU_REGIMES)
        | ((used["regime"] == CPU_REGIME) & (used["library"] == CPU_REFERENCE))
    ]
    used = used[used["transform"].isin(table["transform"])]
    rows = (
        "ok rows only; each dot is one transform; the denominator is the fastest AlbumentationsX "
        "cpu_dataloader worker count of the same recipe and the same scope (memory / memory, "
        "decode / decode) on the same machine; transforms without both rows are left out."
    )
    metric = "ratio of median throughputs, GPU row / AlbumentationsX cpu_dataloader"
    regimes = (
        "Regimes: GPU rows (gpu_dataloader, dali) divided by cpu_dataloader rows of the same "
        "machine, scope and recipe, an explicit cross-regime ratio; a series is library + scope."
    )
    return Drawn(fig, caption(TITLE, used, metric=metric, rows=rows, regimes=regimes))
