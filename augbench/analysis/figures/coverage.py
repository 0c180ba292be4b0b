"""Coverage: how many rows of each library and regime are full, early-stopped, unsupported,
skipped or errors, with the denominator written at the end of every bar."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from augbench.analysis.figures.style import (
    STATUS_COLORS,
    STATUS_LABELS,
    Drawn,
    caption,
    empty_figure,
    library_color,
)
from augbench.analysis.groups import iter_groups, library_order

TITLE = "Coverage per library and regime"


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, library): count per status, total and 'ok/total'."""
    records = []
    for group in iter_groups(frame):
        for lib in library_order(group.rows["library"]):
            rows = group.rows[group.rows["library"] == lib]
            record: dict[str, object] = {"group": group.label, "library": lib}
            for status in STATUS_COLORS:
                record[status] = int((rows["status"] == status).sum())
            record["total"] = len(rows)
            record["coverage"] = f"{record['ok']}/{len(rows)}"
            records.append(record)
    return pd.DataFrame.from_records(records)


def draw(frame: pd.DataFrame) -> Drawn:
    if frame.empty:
        return empty_figure(TITLE, "no rows in these results", f"{TITLE}.")
    data = table(frame)
    n = len(data)
    fig, ax = plt.subplots(figsize=(8.5, 1.3 + 0.32 * n + 0.25 * data["group"].nunique()))
    # Bars of one group sit together, with a gap and a group heading between groups.
    y, labels, heads, pos = [], [], [], 0.0
    for group, rows in data.groupby("group", sort=False):
        heads.append((pos, group))
        pos -= 0.8
        for _, row in rows.iterrows():
            y.append(pos)
            labels.append(row["library"])
            pos -= 1.0
        pos -= 0.4
    left = [0] * n
    for status, color in STATUS_COLORS.items():
        values = data[status].tolist()
        ax.barh(y, values, left=left, color=color, height=0.7, label=STATUS_LABELS[status])
        left = [a + b for a, b in zip(left, values, strict=True)]
    xmax = max(data["total"].max(), 1)
    for yi, total, cov in zip(y, data["total"], data["coverage"], strict=True):
        ax.text(total + xmax * 0.01, yi, f"{cov} ok", va="center", fontsize=8)
    for yi, group in heads:
        ax.text(0, yi, group, va="center", ha="left", fontsize=9, fontweight="bold")
    ax.set_yticks(y, labels)
    for tick, lib in zip(ax.get_yticklabels(), labels, strict=True):
        tick.set_color(library_color(lib))
    ax.set_ylim(min(y) - 0.7, 0.6)
    ax.set_xlim(0, xmax * 1.18)
    ax.set_xlabel("rows (transform x setting), count")
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(TITLE, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    rows = (
        "every row is counted: full (ok), early-stopped, unsupported, skipped (hardware absent) "
        "and error, with 'ok/total' written at the end of each bar."
    )
    return Drawn(fig, caption(TITLE, frame, metric="number of result rows per status", rows=rows))
