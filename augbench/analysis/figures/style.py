"""Shared look of every figure: stable library colors, status colors, captions, saving.

Colors are keyed by library so that AlbumentationsX is the same blue in every figure of every
run; statuses have their own palette, used only where a figure shows statuses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from augbench.analysis.groups import library_order, regime_order
from augbench.workload import adapters

UNKNOWN_LIBRARY_COLOR = "#555555"  # a library no declaration names (rows of an older run)

STATUS_COLORS: dict[str, str] = {
    "ok": "#4C9F70",
    "early_stopped": "#F0B030",
    "unsupported": "#B8B8B8",
    "skipped": "#DDDDDD",
    "error": "#C8423C",
}

STATUS_LABELS: dict[str, str] = {
    "ok": "full (ok)",
    "early_stopped": "early-stopped",
    "unsupported": "unsupported",
    "skipped": "skipped (hardware absent)",
    "error": "error",
}

# A throughput axis switches to log scale (and says so in its label) above this max/min ratio.
LOG_SCALE_RATIO = 30.0

RC = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "pdf.fonttype": 42,  # editable text in the PDF
}
plt.rcParams.update(RC)


def library_color(library: str) -> str:
    """A library's color in every figure: its declaration's (``Adapter.color``)."""
    if str(library) not in adapters.names():
        return UNKNOWN_LIBRARY_COLOR
    return adapters.declared(str(library)).color or UNKNOWN_LIBRARY_COLOR


@dataclass(frozen=True)
class Drawn:
    """A finished figure and its caption (plain sentences, also valid reStructuredText)."""

    figure: Figure
    caption: str
    # True for the figure that only says its rows are absent (``empty_figure``).
    empty: bool = False


def save(drawn: Drawn, png: Path, pdf: Path, caption: Path) -> None:
    for path in (png, pdf, caption):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    drawn.figure.savefig(png, bbox_inches="tight")
    drawn.figure.savefig(pdf, bbox_inches="tight")
    plt.close(drawn.figure)
    Path(caption).write_text(drawn.caption.strip() + "\n")


def empty_figure(title: str, message: str, caption: str) -> Drawn:
    """The figure drawn when its inputs are absent: it says so instead of failing."""
    fig, ax = plt.subplots(figsize=(6.4, 2.2))
    ax.set_axis_off()
    ax.set_title(title, loc="left")
    ax.text(0.5, 0.45, message, ha="center", va="center", fontsize=11, color="#444444")
    return Drawn(fig, f"{caption} {message[0].upper()}{message[1:]}.", empty=True)


def use_log_scale(values: pd.Series | list[float]) -> bool:
    positive = [float(v) for v in values if v is not None and not math.isnan(v) and v > 0]
    return bool(positive) and max(positive) / min(positive) > LOG_SCALE_RATIO


def throughput_label(metric: str, log: bool) -> str:
    return f"{metric}, img/s" + (" (log scale)" if log else "")


def library_legend_handles(libraries: list[str]) -> list:
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], marker="o", linestyle="", color=library_color(lib), label=lib)
        for lib in library_order(libraries)
    ]


# -- layouts -----------------------------------------------------------------------------------
def stacked_panels(heights: list[float], pad: float) -> tuple[Figure, list]:
    """Full-width panels, one per entry of ``heights`` (its height ratio, and inches), stacked on
    one shared x axis; ``pad`` inches more for the legend and title above them."""
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(8.5, sum(heights) + pad),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    return fig, list(axes[:, 0])


def margin_note(ax, y: float, text: str, color: str) -> None:
    """Small text in the right margin of a panel, level with its data row ``y``."""
    ax.annotate(
        text,
        xy=(1.0, y),
        xycoords=("axes fraction", "data"),
        xytext=(6, 0),
        textcoords="offset points",
        va="center",
        fontsize=7,
        color=color,
        annotation_clip=False,
    )


def finish_legend_above(fig: Figure, handles: list, title: str) -> None:
    """The legend in one row above stacked panels, the title above it, then the layout."""
    fig.legend(
        handles=handles,
        loc="upper center",
        ncols=len(handles),
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
    fig.suptitle(title, x=0.02, ha="left", y=1.04, fontsize=11)
    fig.tight_layout()


class LibraryPanelGrid:
    """Panels of median throughput (y) per library (in its color), at most three a row, with the
    library legend at the right; the y axes are log-scaled where ``throughputs``, every value the
    panels show, span a wide range. The grid's spare cells are blank."""

    def __init__(self, count: int, panel_width: float, throughputs: pd.Series) -> None:
        ncols = min(3, count)
        nrows = math.ceil(count / ncols)
        self.figure, grid = plt.subplots(
            nrows, ncols, figsize=(panel_width * ncols + 1.6, 3.2 * nrows), squeeze=False
        )
        cells = list(grid.flat)
        for ax in cells[count:]:
            ax.set_axis_off()
        self.axes = cells[:count]  # the panels, in reading order
        self.log = use_log_scale(throughputs)

    def throughput_axis(self, ax) -> None:
        """A panel's y axis: median throughput, log-scaled (and labelled so) where the grid is."""
        if self.log:
            log_axis(ax, "y")
        ax.set_ylabel(throughput_label("median throughput", self.log))

    def finish(self, libraries: list[str], title: str) -> Figure:
        """The legend of ``libraries`` at the right, the title above, then the layout."""
        self.figure.legend(
            handles=library_legend_handles(libraries),
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            frameon=False,
        )
        self.figure.suptitle(title, x=0.02, ha="left", fontsize=11)
        self.figure.tight_layout()
        return self.figure


# -- captions ----------------------------------------------------------------------------------
def _list(values: list[str], limit: int = 8) -> str:
    if len(values) <= limit:
        return ", ".join(values)
    return ", ".join(values[:limit]) + f" and {len(values) - limit} more"


def describe_transforms(frame: pd.DataFrame) -> str:
    names = sorted({str(t) for t in frame["transform"].dropna()})
    return f"{len(names)} transform{'s' if len(names) != 1 else ''} ({_list(names)})"


def describe_dataset(frame: pd.DataFrame) -> str:
    parts = []
    for (dataset, num), _ in frame.groupby(["dataset", "num_images"], dropna=False):
        name = "unknown dataset" if pd.isna(dataset) else str(dataset)
        count = "an unrecorded number of" if pd.isna(num) else f"{int(float(num))}"
        parts.append(f"{name}, {count} images per measurement")
    return "; ".join(parts) or "unknown"


def describe_hardware(frame: pd.DataFrame) -> str:
    parts = []
    for (machine, processor), _ in frame.groupby(["machine", "processor"], dropna=False):
        cpu = "" if pd.isna(processor) or not str(processor) else f" ({processor})"
        parts.append(f"{machine}{cpu}")
    return "; ".join(parts) or "unknown"


def describe_regimes(frame: pd.DataFrame) -> str:
    regimes = regime_order(frame["regime"].dropna())
    if len(regimes) == 1:
        return f"Regime: {regimes[0]}."
    return f"Regimes: {', '.join(regimes)}, each in its own bar or panel, never ranked together."


def caption(
    title: str, frame: pd.DataFrame, *, metric: str, rows: str, regimes: str | None = None
) -> str:
    """The caption every figure carries: what, regime, metric, transforms, data, hardware, and
    which row statuses the figure includes."""
    parts = [
        f"{title}.",
        regimes or describe_regimes(frame),
        f"Metric: {metric}.",
        f"Transform set: {describe_transforms(frame)}.",
        f"Dataset: {describe_dataset(frame)}.",
        f"Hardware: {describe_hardware(frame)}.",
        f"Rows: {rows}",
    ]
    return " ".join(p.strip() for p in parts if p.strip())


def status_counts_text(frame: pd.DataFrame) -> str:
    counts = frame["status"].value_counts()
    order = [s for s in STATUS_COLORS if s in counts]
    return ", ".join(f"{counts[s]} {s}" for s in order)


def log_axis(ax, which: str = "x") -> None:
    """Log scale with plain numbers (1,000 rather than 10^3) on the major ticks only."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
