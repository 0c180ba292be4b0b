"""Worker scaling: DataLoader throughput against the number of workers, per library."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from augbench.analysis.figures.style import (
    Drawn,
    caption,
    empty_figure,
    library_color,
    library_legend_handles,
    log_axis,
    throughput_label,
    use_log_scale,
)
from augbench.analysis.groups import library_order, normalized

TITLE = "Throughput versus DataLoader workers"
PANEL_KEYS = ("machine", "regime", "scope", "batch_size", "variant")


def scaling_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per panel and library: the median over transforms at each worker count, using only the
    transforms that are ok at every worker count of that library (a fixed transform set)."""
    columns = [*PANEL_KEYS, "library", "workers", "median_throughput", "transforms"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    data = normalized(frame)
    data = data[(data["workers"] >= 0) & (data["status"] == "ok")]
    records = []
    for key, rows in data.groupby([*PANEL_KEYS, "library"], sort=True):
        counts = rows["workers"].unique()
        if len(counts) < 2:
            continue
        per = rows.groupby("transform")["workers"].nunique()
        fixed = per[per == len(counts)].index
        part = rows[rows["transform"].isin(fixed)]
        for workers, at in part.groupby("workers"):
            records.append(
                {
                    **dict(zip([*PANEL_KEYS, "library"], key, strict=True)),
                    "workers": workers,
                    "median_throughput": float(at["median_throughput"].median()),
                    "transforms": len(fixed),
                }
            )
    return pd.DataFrame.from_records(records, columns=columns)


def draw(frame: pd.DataFrame) -> Drawn:
    table = scaling_table(frame)
    if table.empty:
        return empty_figure(
            TITLE,
            "no rows with two or more DataLoader worker counts in these results",
            f"{TITLE}.",
        )
    panels = list(table.groupby(list(PANEL_KEYS), sort=True))
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.8 * ncols + 1.6, 3.2 * nrows), squeeze=False)
    log = use_log_scale(table["median_throughput"])
    data = normalized(frame)
    for ax, (key, rows) in zip(axes.flat, panels, strict=False):
        k = dict(zip(PANEL_KEYS, key, strict=True))
        mask = pd.Series(True, index=data.index)
        for col, value in k.items():
            mask &= data[col] == value
        per_transform = data[mask & (data["status"] == "ok") & (data["workers"] >= 0)]
        for lib in library_order(rows["library"]):
            color = library_color(lib)
            mine = rows[rows["library"] == lib].sort_values("workers")
            for _, t_rows in per_transform[per_transform["library"] == lib].groupby("transform"):
                t_rows = t_rows.sort_values("workers")
                ax.plot(
                    t_rows["workers"], t_rows["median_throughput"], color=color, lw=0.6, alpha=0.25
                )
            ax.plot(
                mine["workers"],
                mine["median_throughput"],
                "o-",
                color=color,
                lw=2,
                ms=5,
                label=f"{lib} ({int(mine['transforms'].iloc[0])} transforms)",
            )
        if log:
            log_axis(ax, "y")
        ax.set_xticks(sorted(per_transform["workers"].unique()))
        ax.set_xlabel("DataLoader workers")
        ax.set_ylabel(throughput_label("median throughput", log))
        title = f"{k['machine']}: {k['regime']} · {k['scope']}"
        if k["batch_size"] >= 0:
            title += f" · batch {k['batch_size']}"
        if k["variant"]:
            title += f" · {k['variant']}"
        ax.set_title(title, loc="left", fontsize=9)
        ax.legend(loc="best", frameon=False, fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_axis_off()
    fig.legend(
        handles=library_legend_handles(list(table["library"])),
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        frameon=False,
    )
    fig.suptitle(TITLE, x=0.02, ha="left", fontsize=11)
    fig.tight_layout()
    used = data[(data["workers"] >= 0)]
    rows = (
        "ok rows only; thick lines are the median over the transforms that are ok at every "
        "worker count of that library (count in the legend), thin lines single transforms."
    )
    metric = "median throughput (img/s) per worker count"
    return Drawn(fig, caption(TITLE, used, metric=metric, rows=rows))
