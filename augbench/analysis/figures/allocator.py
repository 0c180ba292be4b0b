"""The allocator effect: each row's time per image under an allocator setting over its time
under glibc (augbench.analysis.allocator_effect), as a dot plot on a log axis with a line at 1.

One row per library · transform (· workers, scope, variant where set), one panel per regime (and
per dataset, i.e. resolution, where there are more than one), one colour and marker per setting.
Left of the line the setting is faster. Rows where glibc page-faulted more pages per image than
one output holds (allocator-bound under glibc) are shaded and carry their fault count.
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from augbench.analysis import allocator_effect
from augbench.analysis.cells import is_true
from augbench.analysis.figures.style import (
    Drawn,
    caption,
    empty_figure,
    finish_legend_above,
    margin_note,
    stacked_panels,
)
from augbench.analysis.groups import library_order, regime_order

TITLE = "Time per image under each allocator setting, relative to glibc"

# Colour and marker per setting, fixed across runs; settings set by hand take the spare ones.
SETTING_STYLES: dict[str, tuple[str, str]] = {
    "glibc-steady": ("#332288", "o"),
    "mimalloc": ("#CC6677", "s"),
    "jemalloc": ("#117733", "^"),
}
SPARE_STYLES: tuple[tuple[str, str], ...] = (
    ("#AA4499", "D"),
    ("#44AA99", "v"),
    ("#999933", "P"),
    ("#882255", "X"),
)
BOUND_SHADE = "#F6E3B4"
BOUND_TEXT = "#8A5A00"
# Ticks of the ratio axis (log scale), those inside its limits.
TICKS: tuple[float, ...] = (
    0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 10.0,
)  # fmt: skip


def setting_styles(settings: list[str]) -> dict[str, tuple[str, str]]:
    spare = iter(SPARE_STYLES * (1 + len(settings) // len(SPARE_STYLES)))
    return {s: SETTING_STYLES.get(s) or next(spare) for s in settings}


def _panel_key(row: pd.Series, split_machine: bool, split_dataset: bool) -> tuple:
    """(sort key, title) of the row's panel: regime, then dataset by resolution, then machine."""
    regimes = regime_order([row["regime"]])
    order: list[object] = [regimes[0]]
    title = [str(row["regime"])]
    if split_dataset:
        resolution = pd.to_numeric(row.get("resolution"), errors="coerce")
        order += [math.inf if pd.isna(resolution) else float(resolution), str(row["dataset"])]
        title.append(f"{int(resolution)} px" if not pd.isna(resolution) else str(row["dataset"]))
    if split_machine:
        order.append(str(row["machine"]))
        title.append(str(row["machine"]))
    return tuple(order), " · ".join(title)


def _row_label(row: pd.Series, many_scopes: bool, many_batches: bool) -> str:
    parts = [str(row["library"]), str(row["transform"])]
    workers = pd.to_numeric(row.get("workers"), errors="coerce")
    if not pd.isna(workers) and workers >= 0:
        parts.append(f"{int(workers)} worker" + ("" if workers == 1 else "s"))
    if many_scopes:
        parts.append(str(row["scope"]))
    batch = pd.to_numeric(row.get("batch_size"), errors="coerce")
    if many_batches and not pd.isna(batch) and batch >= 0:
        parts.append(f"batch {int(batch)}")
    if isinstance(row.get("variant"), str) and row["variant"]:
        parts.append(row["variant"])
    return " · ".join(parts)


def _limits(ratios: pd.Series) -> tuple[float, float]:
    """Log-symmetric limits around 1 that hold every ratio, at least 0.87-1.15."""
    span = max(abs(math.log(float(r))) for r in ratios)
    span = max(span, math.log(1.15)) * 1.12
    return math.exp(-span), math.exp(span)


def _ratio_axis(ax, low: float, high: float) -> None:
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ticks = [t for t in TICKS if low <= t <= high]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.axvline(1.0, color="#333333", lw=1.0, zorder=1)


def _caption_rows(frame: pd.DataFrame, shown: pd.DataFrame) -> pd.DataFrame:
    """The tidy rows of the works the figure shows (all rows when it shows none)."""
    if shown.empty or frame.empty:
        return frame
    works = set(zip(shown["regime"], shown["library"], shown["transform"], strict=True))
    mask = [
        (r, lib, t) in works
        for r, lib, t in zip(frame["regime"], frame["library"], frame["transform"], strict=True)
    ]
    return frame[mask]


def _without(effect: pd.DataFrame, shown: pd.DataFrame) -> str:
    """The setting rows without a ratio, per setting and status, with a reason each."""
    missing = effect[~effect.index.isin(shown.index)]
    if missing.empty:
        return "every setting row has a ratio."
    parts = []
    for (setting, status), rows in missing.groupby(["setting", "status"], sort=True):
        reason = str(rows["reason"].iloc[0])
        more = rows["reason"].nunique() - 1
        parts.append(
            f"{setting}: {len(rows)} {status} ({reason}"
            + (f"; and {more} other reason{'s' if more > 1 else ''}" if more else "")
            + ")"
        )
    return (
        "not drawn (in results/tables/allocator_effect*.csv with their reason): "
        + "; ".join(parts)
        + "."
    )


def draw(frame: pd.DataFrame) -> Drawn:
    effect = allocator_effect.whole_rows(allocator_effect.table(frame))
    shown = allocator_effect.compared(effect)
    present = allocator_effect.settings(frame)
    text = caption(
        TITLE,
        _caption_rows(frame, shown),
        metric="a row's time per image under the allocator setting over the same work's time "
        "under glibc (glibc's median img/s / the setting's median img/s; log scale, the line at "
        "1 is no effect, left of it the setting is faster), pairing rows of the same machine, "
        "regime, scope, library, transform, workers, batch size, variant and dataset; shaded "
        "rows, with their glibc faults per image at the right, were allocator-bound under glibc "
        "(more minor page faults per image in the timed window than one output image has "
        "pages, twice that with DataLoader workers); filled markers: an effect, the ratio's "
        "whole 95 % interval beyond the null spread (the setting's spread over the pairs whose "
        "glibc row does not fault, where no effect is expected; column `effect`: faster or "
        "slower); "
        "hollow: no effect beyond that spread, or not known",
        rows=f"ok rows under {', '.join(present[1:]) or 'another setting'} with an ok glibc "
        f"row; {_without(effect, shown)}",
    )
    why = allocator_effect.figure_absent(frame)
    if why is not None:
        return empty_figure(TITLE, why, text)
    split_machine = shown["machine"].nunique() > 1
    split_dataset = shown["dataset"].nunique() > 1
    shown = shown.assign(
        _panel=[_panel_key(r, split_machine, split_dataset) for _, r in shown.iterrows()]
    )
    regimes = {r: i for i, r in enumerate(regime_order(shown["regime"]))}
    panel_keys = sorted(set(shown["_panel"]), key=lambda k: (regimes[k[0][0]], k[0][1:]))
    setting_names = sorted(set(shown["setting"].astype(str)))
    styles = setting_styles(setting_names)
    panels = []
    for key in panel_keys:
        part = shown[shown["_panel"] == key]
        many_scopes = part["scope"].nunique() > 1
        many_batches = part["batch_size"].nunique() > 1
        labels = [_row_label(r, many_scopes, many_batches) for _, r in part.iterrows()]
        part = part.assign(_label=labels)
        libraries = library_order(part["library"])
        ordered = part.assign(_l=[libraries.index(str(lib)) for lib in part["library"]])
        ordered = ordered.sort_values(["_l", "transform", "workers"], kind="stable")
        panels.append((key, part, list(dict.fromkeys(ordered["_label"]))))
    heights = [0.9 + 0.32 * len(labels) for _, _, labels in panels]
    fig, axes = stacked_panels(heights, pad=1.3)
    low, high = _limits(shown["time_vs_glibc"])
    any_bound = False
    step = 0.5 / max(1, len(setting_names))
    for ax, (key, part, labels) in zip(axes, panels, strict=True):
        _ratio_axis(ax, low, high)
        y_of = {label: len(labels) - 1 - i for i, label in enumerate(labels)}
        for label in labels:
            mine = part[part["_label"] == label]
            bound = mine[mine["glibc_allocator_bound"].map(is_true)]
            if len(bound):
                any_bound = True
                y = y_of[label]
                ax.axhspan(y - 0.45, y + 0.45, color=BOUND_SHADE, zorder=0, lw=0)
                faults = pd.to_numeric(bound["glibc_minor_faults_per_image"]).max()
                margin_note(ax, y, f"{faults:,.0f} faults/img", BOUND_TEXT)
        for i, setting in enumerate(setting_names):
            mine = part[part["setting"] == setting]
            if mine.empty:
                continue
            color, marker = styles[setting]
            offset = (i - (len(setting_names) - 1) / 2) * step
            # Filled: an effect beyond the spread measured where none is expected (the table's
            # `effect` column, faster or slower); hollow: none, or not known.
            sure = mine["effect"].astype(str).isin(["faster", "slower"])
            for part_rows, hollow in ((mine[sure], False), (mine[~sure], True)):
                if part_rows.empty:
                    continue
                ys = [y_of[label] + offset for label in part_rows["_label"]]
                ax.scatter(
                    part_rows["time_vs_glibc"].astype(float), ys, marker=marker, s=28, zorder=3,
                    facecolors="none" if hollow else color, edgecolors=color,
                )  # fmt: skip
        ax.set_yticks(range(len(labels)), list(reversed(labels)), fontsize=7)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.grid(axis="y", visible=False)
        ax.set_title(key[1], loc="left", fontsize=9)
    axes[-1].set_xlabel(
        "← faster with the setting     time per image: setting / glibc (log scale)     "
        "slower with the setting →"
    )
    handles = [
        Line2D([], [], marker=styles[s][1], linestyle="", color=styles[s][0], label=s)
        for s in setting_names
    ]
    if any_bound:
        handles.append(Patch(color=BOUND_SHADE, label="allocator-bound under glibc"))
    finish_legend_above(fig, handles, TITLE)
    return Drawn(fig, text)
