"""Throughput versus resolution: one column per library, img/s above and megapixels/s below.

A cost proportional to pixels is a flat line of megapixels per second (and a line of slope -1
against pixels in img/s); a falling megapixels/s line is a cost that grows faster than pixels.
Intervals flagged in resolution_scaling.csv (augbench.analysis.resolution) are drawn thick.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from augbench.analysis.figures.style import Drawn, caption, empty_figure, library_color, log_axis
from augbench.analysis.groups import library_order
from augbench.analysis.resolution import SERIES_COLUMNS, scaling_table, swept_rows
from augbench.policy import RESOLUTION_SLOPE_TOLERANCE
from augbench.result_format import MEDIAN_THROUGHPUT

TITLE = "Throughput versus resolution"
PANEL_KEYS = ("machine", "base_dataset", "regime", "scope", "workers", "batch_size", "variant")


def draw(frame: pd.DataFrame) -> Drawn:
    data = swept_rows(frame)
    ok = data[(data["status"] == "ok") & (data[MEDIAN_THROUGHPUT] > 0) & (data["_mp"] > 0)]
    if ok.empty:
        return empty_figure(
            TITLE,
            "no ok rows of a resolution sweep in these results (config resolutions)",
            f"{TITLE}.",
        )
    flags = scaling_table(frame)
    panels = [(key, rows) for key, rows in ok.groupby(list(PANEL_KEYS), sort=True)]
    columns = [(key, lib) for key, rows in panels for lib in library_order(rows["library"])]
    fig, axes = plt.subplots(
        2, len(columns), figsize=(3.4 * len(columns) + 1.2, 6.4), squeeze=False, sharex=True
    )
    transforms = sorted(ok["transform"].astype(str).unique())
    cmap = plt.get_cmap("tab20" if len(transforms) > 10 else "tab10")
    color = {t: cmap(i % cmap.N) for i, t in enumerate(transforms)}
    for col, (key, lib) in enumerate(columns):
        k = dict(zip(PANEL_KEYS, key, strict=True))
        mask = pd.Series(True, index=ok.index)
        for name, value in k.items():
            mask &= ok[name] == value
        mine = ok[mask & (ok["library"] == lib)]
        stopped = _early_stopped(data, k, lib)
        top, bottom = axes[0][col], axes[1][col]
        for transform, rows in mine.groupby("transform", sort=True):
            rows = rows.sort_values("_res")
            x = rows["_res"].to_numpy(dtype=float)
            thr = rows[MEDIAN_THROUGHPUT].to_numpy(dtype=float)
            mps = thr * rows["_mp"].to_numpy(dtype=float)
            style = {"color": color[str(transform)], "marker": "o", "ms": 3.5, "lw": 1.2}
            top.plot(x, thr, label=str(transform), **style)
            bottom.plot(x, mps, **style)
            flagged = _flagged_intervals(flags, k, lib, str(transform))
            for i in range(len(x) - 1):
                if f"{int(x[i])}-{int(x[i + 1])}" in flagged:
                    bottom.plot(x[i : i + 2], mps[i : i + 2], color=style["color"], lw=3.2)
        for transform, rows in stopped.groupby("transform", sort=True):
            # A preflight of a few items, not a measurement: hollow, never joined to the line.
            style = {"s": 22, "facecolors": "none", "edgecolors": color.get(str(transform), "k")}
            top.scatter(rows["_res"], rows["_pre"], **style)
            bottom.scatter(rows["_res"], rows["_pre"] * rows["_mp"], **style)
        for ax in (top, bottom):
            log_axis(ax, "x")
            log_axis(ax, "y")
            ax.set_xticks(sorted(mine["_res"].unique()))
            ax.set_xticklabels([str(int(r)) for r in sorted(mine["_res"].unique())])
        title = f"{lib}" + (f" · {k['regime']}" if k["regime"] != "micro" else "")
        top.set_title(title, loc="left", fontsize=9, color=library_color(lib))
        top.set_ylabel("median img/s (log)")
        bottom.set_ylabel("megapixels/s (log)")
        bottom.set_xlabel("shorter side, px (log)")
        top.legend(loc="best", frameon=False, fontsize=6)
    machines = ", ".join(sorted(ok["machine"].astype(str).unique()))
    fig.suptitle(f"{TITLE} ({machines}); thick: cost grows faster than pixels", x=0.02, ha="left")
    fig.tight_layout()
    rows = (
        "ok rows of the resolution sweep only (each resolution is its own derived dataset: the "
        "staged images resized to that shorter side, docs/resolution.md). Megapixels/s = img/s x "
        "the mean megapixels of the measured images. A flat megapixels/s line is a cost "
        "proportional to pixels; a falling one grows faster than pixels. Thick segments: the "
        "interval's slope of log(s/img) over log(pixels) exceeds 1 by more than "
        f"{RESOLUTION_SLOPE_TOLERANCE} and by more than the two rows' 95% CIs "
        "(results/tables/resolution_scaling.csv, which also lists the rows that were not ok). "
        "Hollow circles: early-stopped rows at their preflight throughput (a few items, not a "
        "measurement; the slow-transform policy stopped them)."
    )
    return Drawn(
        fig, caption(TITLE, ok, metric="median img/s and megapixels/s per resolution", rows=rows)
    )


def _flagged_intervals(flags: pd.DataFrame, key: dict, library: str, transform: str) -> set[str]:
    mask = (flags["library"] == library) & (flags["transform"].astype(str) == transform)
    for name in SERIES_COLUMNS:
        if name in key:
            mask &= flags[name] == key[name]
    found: set[str] = set()
    for value in flags.loc[mask, "faster_than_pixels_between"]:
        found.update(v for v in str(value).split(";") if v and v != "nan")
    return found


def _early_stopped(data: pd.DataFrame, key: dict, library: str) -> pd.DataFrame:
    mask = (data["library"] == library) & (data["status"] == "early_stopped")
    for name, value in key.items():
        mask &= data[name] == value
    rows = data[mask].copy()
    pre = rows.get("preflight_throughput")
    rows["_pre"] = pd.to_numeric(pre, errors="coerce") if pre is not None else float("nan")
    return rows[(rows["_pre"] > 0) & (rows["_mp"] > 0)]
