"""Cost: median throughput versus peak memory, one panel per comparable group."""

from __future__ import annotations

import pandas as pd

from augbench.analysis.figures.style import (
    Drawn,
    LibraryPanelGrid,
    caption,
    empty_figure,
    library_color,
)
from augbench.analysis.groups import iter_groups
from augbench.result_format import MEDIAN_THROUGHPUT

TITLE = "Throughput versus peak memory"


def memory_column(rows: pd.DataFrame) -> str | None:
    """GPU memory where the group recorded it (GPU regimes), else the process peak RSS.

    A group is one regime and variant, so torch's allocator peak (gpu_dataloader) and DALI's
    NVML process figure (dali) never share a panel or an axis: each axis is labelled with its own.
    """
    for col in ("gpu_peak_allocated_mb", "gpu_nvml_used_mb", "peak_rss_mb"):
        if col in rows and pd.to_numeric(rows[col], errors="coerce").notna().any():
            return col
    return None


LABELS = {
    "gpu_peak_allocated_mb": "peak GPU memory allocated (torch allocator), MB",
    "gpu_nvml_used_mb": "GPU memory used by the process (NVML, with context), MB",
    "peak_rss_mb": "peak RSS, MB",
}


def draw(frame: pd.DataFrame) -> Drawn:
    panels = []
    for group in iter_groups(frame):
        ok = group.rows[group.rows["status"] == "ok"]
        col = memory_column(ok)
        if col is not None:
            panels.append((group, ok, col))
    if not panels:
        return empty_figure(TITLE, "no ok rows with peak memory in these results", f"{TITLE}.")
    all_y = pd.concat([ok[MEDIAN_THROUGHPUT] for _, ok, _ in panels])
    grid = LibraryPanelGrid(len(panels), panel_width=3.6, throughputs=all_y)
    for ax, (group, ok, col) in zip(grid.axes, panels, strict=True):
        mem = pd.to_numeric(ok[col], errors="coerce")
        for lib, rows in ok.groupby("library"):
            ax.plot(
                mem[rows.index],
                rows[MEDIAN_THROUGHPUT],
                "o",
                color=library_color(lib),
                ms=5,
                alpha=0.85,
            )
        grid.throughput_axis(ax)
        ax.set_xlabel(LABELS[col])
        ax.set_title(group.label, loc="left", fontsize=9)
    libraries = pd.concat([ok["library"] for _, ok, _ in panels])
    fig = grid.finish(list(libraries), TITLE)
    rows_all = pd.concat([ok for _, ok, _ in panels])
    rows = (
        "ok rows with a recorded peak memory, one dot per transform; gpu_dataloader uses the "
        "torch allocator's peak allocated memory, dali NVML's per-process GPU memory (CUDA "
        "context included; a different quantity, so on its own panel and axis), CPU regimes the "
        "peak resident set size of the measuring process (for micro this includes the decoded "
        "images held in memory)."
    )
    metric = "median throughput (img/s) against peak memory (MB)"
    return Drawn(fig, caption(TITLE, rows_all, metric=metric, rows=rows))
