"""CPU vs GPU: per transform, a GPU row's median throughput over the best AlbumentationsX
cpu_dataloader median of the same recipe and the same scope under the same machine label, with a
reference line at 1.0.

This is the one figure that puts two regimes side by side, so the ratio is its explicit subject;
each series names its scope (a memory-scope GPU row is only ever divided by a memory-scope CPU
row, a decode row by a decode row) and the caption says which rows form the denominator. The
pairs are those of ``augbench.analysis.gpu.gpu_vs_cpu_ratio``: one panel per machine label and
pairing of actual machines (a cloud sweep's CPU rows come from a CPU VM, its GPU rows from a GPU
VM under the same label), named in the panel title and the caption.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from augbench.analysis import gpu
from augbench.analysis.figures.style import (
    Drawn,
    caption,
    empty_figure,
    library_color,
    log_axis,
    use_log_scale,
)
from augbench.analysis.groups import library_order, normalized
from augbench.planning import regimes
from augbench.workload import adapters

# The regimes declared as GPU regimes (augbench/planning/regimes/).
GPU_REGIMES = regimes.gpu_regimes()
CPU_REGIME = "cpu_dataloader"
# The CPU library the GPU rows are divided by: the GPU tables' (augbench.analysis.gpu).
CPU_REFERENCE = gpu.CPU_REFERENCE_LIBRARY
TITLE = f"GPU throughput relative to {adapters.declared(CPU_REFERENCE).title} on CPU (DataLoader)"


RATIO_COLUMNS = [
    "machine",
    "cpu_machine_actual",
    "gpu_machine_actual",
    "series",
    "library",
    "transform",
    "ratio",
]


def ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per ok GPU row and ok CPU reference (gpu.gpu_vs_cpu_ratio): machine label, the
    actual machine of each side, series, transform, ratio."""
    if frame.empty:
        return pd.DataFrame(columns=RATIO_COLUMNS)
    table = gpu.gpu_vs_cpu_ratio(normalized(frame), keep=("randomness",))
    table = table[(table["ratio_status"] == "ok") & table["ratio"].notna()]
    records = []
    for _, row in table.iterrows():
        series = f"{row['library']} {row['scope']}"
        extra = [str(row["variant"])] if row["variant"] else []
        if isinstance(row.get("randomness"), str) and row["randomness"]:
            extra.append(row["randomness"])
        if extra:
            series += f"\n({', '.join(extra)})"
        records.append(
            {
                "machine": row["machine"],
                "cpu_machine_actual": row["cpu_machine_actual"],
                "gpu_machine_actual": row["gpu_machine_actual"],
                "series": series,
                "library": row["library"],
                "transform": row["transform"],
                "ratio": float(row["ratio"]),
            }
        )
    return pd.DataFrame.from_records(records, columns=RATIO_COLUMNS)


def pairings(table: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(label, actual CPU machine, actual GPU machine) of every panel, in order."""
    keys = table[["machine", "cpu_machine_actual", "gpu_machine_actual"]].drop_duplicates()
    return [tuple(k) for k in keys.sort_values(list(keys.columns)).itertuples(index=False)]


def machines_caption(table: pd.DataFrame) -> str:
    """Which actual machines each panel's two sides ran on, in words."""
    parts = []
    for label, cpu, gpu_actual in pairings(table):
        where = gpu.machines_text(cpu, gpu_actual)
        parts.append(f"{label}: {where}" if where else f"{label}: CPU and GPU rows from {cpu}")
    labels = table["machine"].unique()
    several = [
        m for m in labels if table.loc[table["machine"] == m, "cpu_machine_actual"].nunique() > 1
    ]
    text = "Machines (one panel each): " + "; ".join(parts) + "."
    if several:
        text += (
            f" Under {', '.join(sorted(several))} the CPU reference rows come from more than one "
            "machine: each is its own panel, never mixed."
        )
    return text


def _series_counts(table: pd.DataFrame, panels: list[tuple[str, str, str]]) -> list[int]:
    keys = ["machine", "cpu_machine_actual", "gpu_machine_actual"]
    counts = table.groupby(keys)["series"].nunique()
    return [int(counts.loc[panel]) for panel in panels]


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
    panels = pairings(table)
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(3.2 + 2.0 * sum(_series_counts(table, panels)), 4.2),
        squeeze=False,
    )
    rng = np.random.default_rng(0)
    log = use_log_scale(table["ratio"])
    for ax, (machine, cpu_actual, gpu_actual) in zip(axes[0], panels, strict=True):
        part = table[
            (table["machine"] == machine)
            & (table["cpu_machine_actual"] == cpu_actual)
            & (table["gpu_machine_actual"] == gpu_actual)
        ]
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
        where = gpu.machines_text(cpu_actual, gpu_actual)
        ax.set_title(machine + (f"\n{where}" if where else ""), loc="left", fontsize=9)
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
        "decode / decode) under the same machine label and dataset; transforms without both "
        "rows are left out. " + machines_caption(table)
    )
    metric = "ratio of median throughputs, GPU row / AlbumentationsX cpu_dataloader"
    regimes = (
        "Regimes: GPU rows (gpu_dataloader, dali) divided by cpu_dataloader rows of the same "
        "machine label, scope and recipe, an explicit cross-regime ratio; a series is library + "
        "scope."
    )
    return Drawn(fig, caption(TITLE, used, metric=metric, rows=rows, regimes=regimes))
