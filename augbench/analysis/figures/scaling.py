"""Worker scaling: DataLoader throughput against the number of workers, per library."""

from __future__ import annotations

import pandas as pd

from augbench.analysis.figures.style import (
    Drawn,
    LibraryPanelGrid,
    caption,
    empty_figure,
    library_color,
)
from augbench.analysis.groups import library_order, normalized
from augbench.policy import BARE_LOOP_MIN_RATIO, TRANSPORT_BOUND_FRACTION
from augbench.result_format import MEDIAN_THROUGHPUT

TITLE = "Throughput versus DataLoader workers"
PANEL_KEYS = ("machine", "regime", "scope", "batch_size", "variant")


def scaling_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per panel and library: the median over transforms at each worker count, using only the
    transforms that are ok at every worker count of that library (a fixed transform set)."""
    columns = [
        *PANEL_KEYS,
        "library",
        "workers",
        MEDIAN_THROUGHPUT,
        "transforms",
        "transport_throughput",
        "transport_bound",
        "below_bare_loop",
    ]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    data = _with_baselines(normalized(frame))
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
                    MEDIAN_THROUGHPUT: float(at[MEDIAN_THROUGHPUT].median()),
                    "transforms": len(fixed),
                    # The loader alone (the recipe's tail, no augmentation) at this count.
                    "transport_throughput": float(at["_transport"].median()),
                    "transport_bound": int(at["_bound"].sum()),
                    "below_bare_loop": int(at["_below_bare"].sum()),
                }
            )
    return pd.DataFrame.from_records(records, columns=columns)


def _flag(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True or (isinstance(value, bool | int) and bool(value))


def _with_baselines(data: pd.DataFrame) -> pd.DataFrame:
    """Private columns: transport baseline, transport-bound and below-bare-loop flags."""
    data = data.copy()
    for column in ("transport_throughput", "transport_bound", "below_bare_loop"):
        if column not in data.columns:
            data[column] = None
    data["_transport"] = pd.to_numeric(data["transport_throughput"], errors="coerce")
    data["_bound"] = data["transport_bound"].map(_flag)
    data["_below_bare"] = data["below_bare_loop"].map(_flag)
    return data


def draw(frame: pd.DataFrame) -> Drawn:
    table = scaling_table(frame)
    if table.empty:
        return empty_figure(
            TITLE,
            "no rows with two or more DataLoader worker counts in these results",
            f"{TITLE}.",
        )
    panels = list(table.groupby(list(PANEL_KEYS), sort=True))
    grid = LibraryPanelGrid(len(panels), panel_width=3.8, throughputs=table[MEDIAN_THROUGHPUT])
    data = _with_baselines(normalized(frame))
    for ax, (key, rows) in zip(grid.axes, panels, strict=True):
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
                    t_rows["workers"], t_rows[MEDIAN_THROUGHPUT], color=color, lw=0.6, alpha=0.25
                )
                # A transport-bound point measures the loader more than the library: hollow.
                bound = t_rows[t_rows["_bound"]]
                ax.scatter(
                    bound["workers"], bound[MEDIAN_THROUGHPUT], s=22, facecolors="none",
                    edgecolors=color, linewidths=0.9, zorder=3,
                )  # fmt: skip
                # Slower than the bare user loop by more than policy allows: crossed out.
                below = t_rows[t_rows["_below_bare"]]
                ax.scatter(
                    below["workers"], below[MEDIAN_THROUGHPUT], s=26, marker="x",
                    color="black", linewidths=0.9, zorder=4,
                )  # fmt: skip
            if mine["transport_throughput"].notna().any():
                ax.plot(
                    mine["workers"], mine["transport_throughput"], "s--", color=color, lw=1,
                    ms=3, alpha=0.8, label=f"{lib} transport (tail only)",
                )  # fmt: skip
            ax.plot(
                mine["workers"],
                mine[MEDIAN_THROUGHPUT],
                "o-",
                color=color,
                lw=2,
                ms=5,
                label=f"{lib} ({int(mine['transforms'].iloc[0])} transforms)",
            )
        grid.throughput_axis(ax)
        ax.set_xticks(sorted(per_transform["workers"].unique()))
        ax.set_xlabel("DataLoader workers")
        title = f"{k['machine']}: {k['regime']} · {k['scope']}"
        if k["batch_size"] >= 0:
            title += f" · batch {k['batch_size']}"
        if k["variant"]:
            title += f" · {k['variant']}"
        ax.set_title(title, loc="left", fontsize=9)
        ax.legend(loc="best", frameon=False, fontsize=7)
    fig = grid.finish(list(table["library"]), TITLE)
    used = data[(data["workers"] >= 0)]
    rows = (
        "ok rows only; thick lines are the median over the transforms that are ok at every "
        "worker count of that library (count in the legend), thin lines single transforms. "
        "Dashed squares: the transport baseline (the recipe's Normalize/ToTensor tail alone on a "
        "224 crop, same loader): what the DataLoader itself delivers per worker count. Hollow "
        f"circles: transport-bound rows (>= {TRANSPORT_BOUND_FRACTION:.0%} of that baseline): "
        "the loader, not the library, sets their speed. Black x: rows slower than the bare "
        f"user loop (regime_vs_bare < {BARE_LOOP_MIN_RATIO}), listed in the summary."
    )
    metric = "median throughput (img/s) per worker count"
    return Drawn(fig, caption(TITLE, used, metric=metric, rows=rows))
