"""Winner counts by regime: how many transforms each library wins, one bar per comparable group."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from augbench.analysis.figures.style import Drawn, caption, empty_figure, library_color
from augbench.analysis.groups import iter_groups, library_order, winners

TITLE = "Transforms won per library, by regime"
NO_WINNER = "no winner (under 2 ok libraries, or a tie)"
NO_WINNER_COLOR = "#E4E4E4"


def counts(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per comparable group: wins per library, transforms without a winner, total."""
    records = []
    for group in iter_groups(frame):
        table = winners(group.rows)
        record: dict[str, object] = {"group": group.label, **group.key}
        for lib in library_order(group.rows["library"]):
            record[lib] = int((table["winner"] == lib).sum())
        record["no_winner"] = int((table["winner"] == "").sum())
        record["contested"] = int((table["contenders"] >= 2).sum())
        record["transforms"] = len(table)
        records.append(record)
    return pd.DataFrame.from_records(records)


def draw(frame: pd.DataFrame) -> Drawn:
    metric = "count of transforms where a library has the highest median throughput"
    rows = (
        "only ok rows compete; a transform with fewer than two ok libraries counts as 'no "
        "winner' (the grey segment), so each bar's length is the group's number of transforms."
    )
    if frame.empty:
        return empty_figure(TITLE, "no rows in these results", f"{TITLE}.")
    table = counts(frame)
    libraries = library_order(frame["library"])
    fig_height = 1.2 + 0.45 * len(table)
    fig, ax = plt.subplots(figsize=(8.0, fig_height))
    y = list(range(len(table)))[::-1]
    left = [0] * len(table)
    for lib in libraries:
        values = table[lib].fillna(0).astype(int).tolist() if lib in table else [0] * len(table)
        ax.barh(y, values, left=left, color=library_color(lib), label=lib, height=0.6)
        for yi, li, v in zip(y, left, values, strict=True):
            if v > 0:
                ax.text(
                    li + v / 2,
                    yi,
                    str(v),
                    ha="center",
                    va="center",
                    color="white",
                    fontsize=8,
                    fontweight="bold",
                )
        left = [a + b for a, b in zip(left, values, strict=True)]
    none = table["no_winner"].astype(int).tolist()
    ax.barh(y, none, left=left, color=NO_WINNER_COLOR, height=0.6, label=NO_WINNER)
    for yi, total, contested in zip(y, table["transforms"], table["contested"], strict=True):
        ax.text(total, yi, f"  {contested}/{total} contested", va="center", fontsize=8)
    ax.set_yticks(y, table["group"].tolist())
    ax.set_xlabel("transforms (count)")
    ax.set_xlim(0, max(table["transforms"].max(), 1) * 1.25)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(TITLE, loc="left")
    handles = [Patch(color=library_color(lib), label=lib) for lib in libraries]
    handles.append(Patch(color=NO_WINNER_COLOR, label=NO_WINNER))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return Drawn(fig, caption(TITLE, frame, metric=metric, rows=rows))
