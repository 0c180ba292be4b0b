"""Per-regime sorted throughput: one dot per library and transform, transforms sorted by their
fastest library, one panel per comparable group, every panel on one common axis."""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.lines import Line2D

from augbench.analysis.figures.style import (
    Drawn,
    caption,
    empty_figure,
    finish_legend_above,
    library_color,
    log_axis,
    margin_note,
    stacked_panels,
    throughput_label,
    use_log_scale,
)
from augbench.analysis.groups import iter_groups, library_order
from augbench.result_format import MEDIAN_THROUGHPUT


def title(regime: str) -> str:
    return f"Median throughput per transform, {regime} regime"


def _sorted_transforms(rows: pd.DataFrame) -> list[str]:
    ok = rows[rows["status"] == "ok"]
    best = ok.groupby("transform")[MEDIAN_THROUGHPUT].max()
    others = sorted(set(rows["transform"]) - set(best.index))
    # Fastest at the top; transforms with no ok row at all go to the bottom.
    return [*best.sort_values(ascending=False).index.tolist(), *others]


def draw(frame: pd.DataFrame, regime: str) -> Drawn:
    groups = list(iter_groups(frame, regime))
    if not groups:
        return empty_figure(
            title(regime), f"no {regime} rows in these results", f"{title(regime)}."
        )
    rows_all = pd.concat([g.rows for g in groups])
    values = pd.concat(
        [
            rows_all.loc[rows_all["status"] == "ok", MEDIAN_THROUGHPUT],
            pd.to_numeric(
                rows_all.loc[rows_all["status"] == "early_stopped", "preflight_throughput"],
                errors="coerce",
            ),
        ]
    ).dropna()
    log = use_log_scale(values)
    libraries = library_order(rows_all["library"])
    heights = [0.8 + 0.32 * g.rows["transform"].nunique() for g in groups]
    fig, axes = stacked_panels(heights, pad=0.6)
    # The first library in matrix order sits highest within its transform's row.
    offsets = {lib: ((len(libraries) - 1) / 2 - i) * 0.12 for i, lib in enumerate(libraries)}
    for ax, group in zip(axes, groups, strict=True):
        order = _sorted_transforms(group.rows)
        ypos = {t: len(order) - 1 - i for i, t in enumerate(order)}
        missing: dict[str, list[str]] = {}
        for _, row in group.rows.iterrows():
            y = ypos[row["transform"]] + offsets[row["library"]]
            color = library_color(row["library"])
            if row["status"] == "ok" and not math.isnan(row[MEDIAN_THROUGHPUT]):
                ax.plot(row[MEDIAN_THROUGHPUT], y, "o", color=color, ms=6)
            elif row["status"] == "early_stopped" and not pd.isna(row["preflight_throughput"]):
                ax.plot(float(row["preflight_throughput"]), y, "o", mfc="none", mec=color, ms=6)
                missing.setdefault(row["transform"], []).append(f"{row['library']}: early-stop")
            else:
                missing.setdefault(row["transform"], []).append(
                    f"{row['library']}: {row['status']}"
                )
        ax.set_yticks(list(ypos.values()), list(ypos.keys()))
        ax.set_ylim(-0.6, len(order) - 0.4)
        ax.grid(axis="y", visible=False)
        for sep in range(len(order) - 1):
            ax.axhline(sep + 0.5, color="#EEEEEE", lw=0.8, zorder=0)
        for t, notes in missing.items():
            margin_note(ax, ypos[t], "; ".join(notes), "#666666")
        ax.set_title(group.label, loc="left", fontsize=9)
    axis = axes[-1]
    if log:
        log_axis(axis, "x")
    elif len(values):
        axis.set_xlim(0, values.max() * 1.08)
    axis.set_xlabel(throughput_label("median throughput", log))
    handles = [
        Line2D([], [], marker="o", ls="", color=library_color(lib), label=lib) for lib in libraries
    ]
    handles.append(
        Line2D(
            [],
            [],
            marker="o",
            ls="",
            mfc="none",
            mec="#555555",
            label="early-stopped (preflight img/s)",
        )
    )
    finish_legend_above(fig, handles, title(regime))
    rows = (
        "filled dots are ok rows (median of every repeated run); open dots are early-stopped "
        "rows at their preflight throughput; unsupported, skipped and error rows are not "
        "plotted but named at the right of their transform. Transforms are sorted by their "
        "fastest library; panels never rank rows of different machines or settings together."
    )
    return Drawn(
        fig, caption(title(regime), rows_all, metric="median throughput (img/s)", rows=rows)
    )
